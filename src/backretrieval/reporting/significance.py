"""BkR vs CORR as approximations of XLR: the significance table behind the marks of Table 1.

**Table 1's test** (:func:`backretrieval.stats.table1.table1_tests`): the unit of inference
is the items and the encoder families, not the seeds. At N = 500–1000 every seed re-splits the
*same* items, so tests over the seeds treat 25 near-copies of one item sample as independent
replicates and are far too confident. The quantity is Table 1's own: BkR − CORR in their
correlation (Pearson, Spearman) with XLR across the block's encoders (all encoders; core: without
the random and the English-only ones), per seed, averaged over the seeds (the paper's statistic).
The test answers the findings' "encoders random" question
(:func:`backretrieval.stats.questions.two_questions`, the same function): its variance has two
parts, estimated separately and added (a two-way crossed design, encoders × items):

* **items**: the item bootstrap of :func:`backretrieval.stats.crossed.crossed_bootstrap`
  with ``resample_encoders=False`` (Poisson(1) weights keyed by image id, shared by every seed;
  XLR and BkR per-query hits and CORR's per-query contributions reweighted alike);
* **encoders**: the leave-one-family-out jackknife of the same statistic over the block's F
  encoder families, (F − 1)/F · Σ_f (θ_(−f) − θ̄_(·))². A family: the encoders built from the same
  base vectors (the word-vector encoders, e.g. the nine fastText variants), which are not
  independent draws of an encoder; every other encoder is its own family
  (:func:`backretrieval.stats.encoder_sets.encoder_families`, the findings' function).

Resampling the encoders with replacement is avoided on purpose: a draw with fewer than 3
distinct encoders leaves the correlation undefined, and dropping those draws conditions the
bootstrap (probability :func:`~backretrieval.stats.weighted.degenerate_probability`, 0.26
with 5 encoders). The sum of the two variances counts the residual (item × encoder) noise in
both parts, so it errs on the wide side. 95 % CI estimate ± t·SE (two_questions' interval: Student
t on the Welch–Satterthwaite degrees of freedom of the two parts), t = estimate / SE, two-sided p on
the same reference (its dual test,
:func:`~backretrieval.stats.questions.random_question_test`); undefined (no mark) with fewer
than 3 families or fewer than 3 encoders left without some family. The mark comes from the
p-value Holm-adjusted across the table's directions (per block and statistic), * p<.05,
** p<.01, *** p<.001.

The old over-seeds tests stay in :func:`significance_table` for comparison only (all encoders),
labelled with their unit (:data:`SEEDS_UNIT`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import stats

#: the unit label of the over-seeds tests (not Table 1's marks)
SEEDS_UNIT = "seeds (not independent: re-splits of the same items)"


def table1_marks(tests: pd.DataFrame) -> dict[tuple[str, str, str], str]:
    """``{(set, direction, stat): mark}`` of :func:`backretrieval.stats.table1.table1_tests`:
    the Holm-adjusted p-value's * p<.05, ** p<.01, *** p<.001, '' where it is undefined (the one
    source of Table 1's marks in both the Markdown and the LaTeX table)."""
    if tests is None or not len(tests):
        return {}
    return {(r.set, r.direction, r.stat): stats.significance_marker(r.p_holm) for r in tests.itertuples()}


def significance_table(correlations: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """BkR vs CORR over seeds, per (direction, statistic): for comparison only (unit
    :data:`SEEDS_UNIT`; Table 1's marks come from :func:`backretrieval.stats.table1.table1_tests`).

    * across seeds: Wilcoxon signed-rank and paired t-test on the per-seed correlations;
      Bonferroni and Holm corrections across directions (per statistic and test);
    * per seed: Steiger's Z for the dependent correlations r(XLR,BkR) vs r(XLR,CORR) that
      share XLR (Pearson, over encoders), reported as the share of seeds with p < 0.05.
    """
    rows = []
    for (direction, stat_name), g in correlations.groupby(["direction", "stat"]):
        w = g.pivot_table(index="seed", columns="method", values="value").dropna()
        if len(w) < 2 or "bkr_recall" not in w or "corr" not in w:
            continue
        a, b = w["bkr_recall"].to_numpy(), w["corr"].to_numpy()
        tests = stats.paired_tests(a, b)
        for res in tests.values():
            rows.append(
                dict(
                    direction=direction,
                    stat=stat_name,
                    test=res.test,
                    unit=SEEDS_UNIT,
                    n_seeds=len(w),
                    mean_bkr=float(a.mean()),
                    mean_corr=float(b.mean()),
                    statistic=res.statistic,
                    p=res.pvalue,
                    effect=res.effect_size,
                    effect_name=res.effect_size_name,
                )
            )
    sig = pd.DataFrame(rows)
    if len(sig):
        for (_, _), g in sig.groupby(["stat", "test"]):
            p = g["p"].to_numpy(float)
            ok = ~np.isnan(p)
            for method in ("bonferroni", "holm"):
                adj = np.full(len(p), np.nan)
                if ok.any():
                    adj[ok] = stats.adjust_pvalues(p[ok], method=method)
                sig.loc[g.index, f"p_{method}"] = adj
    # Steiger per seed
    wide = metrics.pivot_table(index=["direction", "seed", "encoder"], columns="metric", values="value")
    st_rows = []
    for (direction, seed), g in wide.groupby(level=["direction", "seed"]):
        if "xlr_recall" not in g or len(g) < 4:
            continue
        x, b, c = (g[m].to_numpy(float) for m in ("xlr_recall", "bkr_recall", "corr"))
        if min(np.ptp(x), np.ptp(b), np.ptp(c)) == 0:
            continue
        r12, r13, r23 = np.corrcoef(x, b)[0, 1], np.corrcoef(x, c)[0, 1], np.corrcoef(b, c)[0, 1]
        try:
            res = stats.steiger_z(r12, r13, r23, len(g))
        except Exception:  # |r| == 1 etc.: undefined
            continue
        st_rows.append(dict(direction=direction, seed=seed, z=res.statistic, p=res.pvalue))
    st = pd.DataFrame(st_rows, columns=["direction", "seed", "z", "p"])
    if len(sig) and len(st):
        share = (
            st.groupby("direction")
            .agg(steiger_share_p05=("p", lambda v: float(np.mean(v < 0.05))), steiger_mean_z=("z", "mean"))
            .reset_index()
        )
        sig = sig.merge(share, on="direction", how="left")
    return sig
