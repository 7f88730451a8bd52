"""BkR vs CORR as approximations of XLR: the significance table behind the marks of Table 1."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import stats


def significance_table(correlations: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """BkR vs CORR as approximations of XLR, per (direction, statistic).

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
