"""BkR vs CORR as approximations of XLR: the significance table behind the marks of Table 1.

**Table 1's test** (:func:`table1_tests`): the unit of inference is the items and the encoders,
not the seeds. At N = 500–1000 every seed re-splits the *same* items, so tests over the seeds
treat 25 near-copies of one item sample as independent replicates and are far too confident.
The quantity is Table 1's own: BkR − CORR in their correlation (Pearson, Spearman) with XLR
across encoders, per seed, averaged over the seeds (the paper's statistic). Its variance has
two parts, estimated separately and added (a two-way crossed design, encoders × items):

* **items**: the item bootstrap of :func:`backretrieval.findings.inference.crossed_bootstrap`
  with ``resample_encoders=False`` (Poisson(1) weights keyed by image id, shared by every seed;
  XLR and BkR per-query hits and CORR's per-query contributions reweighted alike);
* **encoders**: the leave-one-encoder-out jackknife of the same statistic,
  (E − 1)/E · Σ_e (θ_(−e) − θ̄_(·))² (the same function's leave-one-out point estimates).

Resampling the encoders with replacement is avoided on purpose: a draw with fewer than 3
distinct encoders leaves the correlation undefined, and dropping those draws conditions the
bootstrap (probability :func:`~backretrieval.findings.inference.degenerate_probability`, 0.26
with 5 encoders). The jackknife never produces such a draw (it needs E ≥ 4). The sum of the two
variances counts the residual (item × encoder) noise in both parts, so it errs on the wide
side. z = estimate / SE, two-sided normal p, 95 % CI estimate ± 1.96 SE; the mark comes from
the p-value Holm-adjusted across the table's directions (per statistic), * p<.05, ** p<.01,
*** p<.001.

The old over-seeds tests stay in :func:`significance_table` for comparison only, labelled
with their unit (:data:`SEEDS_UNIT`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.stats as st

from .. import stats

#: the unit label of the over-seeds tests (not Table 1's marks)
SEEDS_UNIT = "seeds (not independent: re-splits of the same items)"
#: the unit label and test name of Table 1's test
ITEMS_UNIT = "items and encoders"
TABLE1_TEST = "encoder jackknife + item bootstrap"
#: fewest encoders the leave-one-encoder-out jackknife needs (each left-out set keeps >= 3)
MIN_JACKKNIFE_ENCODERS = 4


def table1_tests(
    outcomes: Mapping[str, tuple[Sequence, Sequence[str], Sequence[str]]],
    B: int,
    seed: int,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Table 1's test of BkR − CORR (module doc), one row per (direction, stat).

    ``outcomes[direction] = (seed outcomes, item keys, encoders)`` as
    :func:`backretrieval.steps.findings.inference.inference_outcomes` returns them (per-query
    XLR and BkR hits and CORR contributions of every seed). Columns: estimate (mean over seeds
    of BkR − CORR), se, se_items, se_encoders, ci_low, ci_high, z, p, p_holm (across the
    directions, per stat), n_encoders, n_items, n_seeds, B, unit, test. With fewer than
    :data:`MIN_JACKKNIFE_ENCODERS` encoders the test is undefined (NaN, no mark). The marks are
    :func:`table1_marks` of p_holm (not stored: verify compares p-values as decisions).
    """
    from ..findings.inference import STATS, crossed_bootstrap

    zq = float(st.norm.ppf(1 - alpha / 2))
    rows = []
    for direction, (seeds, keys, encoders) in outcomes.items():
        encoders = list(encoders)
        E = len(encoders)
        res = crossed_bootstrap(
            seeds, encoders, {"all": encoders}, list(keys), B=B, seed=seed, leave_one_out="all", resample_encoders=False
        )
        for stat in STATS:
            est = res.point[("all", "rho_diff", stat)]
            rep = res.replicates[("all", "rho_diff", stat)]
            rep = rep[np.isfinite(rep)]
            var_items = float(np.var(rep, ddof=1)) if rep.size >= 2 else float("nan")
            var_enc = float("nan")
            if E >= MIN_JACKKNIFE_ENCODERS:
                loo = np.array([res.point[(f"all-{e}", "rho_diff", stat)] for e in encoders])
                if np.isfinite(loo).all():
                    var_enc = float((E - 1) / E * np.sum((loo - loo.mean()) ** 2))
            se = float(np.sqrt(var_items + var_enc))
            z = est / se if se > 0 else float("nan")
            p = float(2 * st.norm.sf(abs(z))) if np.isfinite(z) else float("nan")
            rows.append(
                dict(
                    direction=direction,
                    stat=stat,
                    test=TABLE1_TEST,
                    unit=ITEMS_UNIT,
                    estimate=float(est),
                    se=se,
                    se_items=float(np.sqrt(var_items)),
                    se_encoders=float(np.sqrt(var_enc)),
                    ci_low=float(est - zq * se),
                    ci_high=float(est + zq * se),
                    z=z,
                    p=p,
                    n_encoders=E,
                    n_items=len(keys),
                    n_seeds=len(seeds),
                    B=int(B),
                )
            )
    out = pd.DataFrame(rows)
    if len(out):
        out["p_holm"] = np.nan
        for _, g in out.groupby("stat"):
            p = g["p"].to_numpy(float)
            ok = np.isfinite(p)
            if ok.any():
                adj = np.full(len(p), np.nan)
                adj[ok] = stats.adjust_pvalues(p[ok], method="holm")
                out.loc[g.index, "p_holm"] = adj
    return out


def table1_marks(tests: pd.DataFrame) -> dict[tuple[str, str], str]:
    """``{(direction, stat): mark}`` of :func:`table1_tests`: the Holm-adjusted p-value's
    * p<.05, ** p<.01, *** p<.001 (the one source of Table 1's marks in both the Markdown and
    the LaTeX table)."""
    if tests is None or not len(tests):
        return {}
    return {(r.direction, r.stat): stats.significance_marker(r.p_holm) for r in tests.itertuples()}


def significance_table(correlations: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """BkR vs CORR over seeds, per (direction, statistic): for comparison only (unit
    :data:`SEEDS_UNIT`; Table 1's marks come from :func:`table1_tests`).

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
