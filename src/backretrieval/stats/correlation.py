"""Correlations between metrics across models: per (direction, seed) over encoders
(:func:`correlate`, the numbers of Table 1) and rank agreement of two metrics."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import scipy.stats as st

from ..errors import InputError
from ._common import TestResult, _vector


def correlate(metrics: pd.DataFrame, reference: str = "xlr_recall", candidates=("bkr_recall", "corr")) -> pd.DataFrame:
    """Per (direction, seed): Pearson and Spearman across encoders of each candidate metric
    with the reference metric (XLR). Returns tidy rows direction, seed, method, stat, value, n_encoders."""
    wide = metrics.pivot_table(index=["direction", "seed", "encoder"], columns="metric", values="value")
    out = []
    for (direction, seed), g in wide.groupby(level=["direction", "seed"]):
        if reference not in g or g[reference].isna().all():
            continue
        for cand in candidates:
            x, y = g[cand].to_numpy(float), g[reference].to_numpy(float)
            n = len(x)
            if n < 3:
                raise InputError(f"correlation across encoders needs >= 3 encoders, got {n} ({direction})")
            for stat_name, fn in (("pearson", st.pearsonr), ("spearman", st.spearmanr)):
                if np.ptp(x) == 0 or np.ptp(y) == 0:
                    val = float("nan")
                else:
                    val = float(fn(x, y).statistic)
                out.append(
                    dict(direction=direction, seed=int(seed), method=cand, stat=stat_name, value=val, n_encoders=n)
                )
    return pd.DataFrame(out, columns=["direction", "seed", "method", "stat", "value", "n_encoders"])


def rank_agreement(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> dict[str, TestResult]:
    """Do two metrics rank the same models alike? (Bakarov et al. 2018 "benchmark disagreement")

    Spearman rho (:func:`scipy.stats.spearmanr`) and Kendall tau-b
    (:func:`scipy.stats.kendalltau`) between ``scores_a[m]`` and ``scores_b[m]`` over the
    models ``m``; both dicts must name the same models. p-values are two-sided, H0: no
    association. Returns ``{"spearman": ..., "kendall": ...}``; ``extra["models"]`` lists the
    models in the (sorted) order used.
    """
    if set(scores_a) != set(scores_b):
        only_a = sorted(set(scores_a) - set(scores_b))
        only_b = sorted(set(scores_b) - set(scores_a))
        raise InputError(f"scores_a/scores_b: must name the same models; only in a: {only_a}, only in b: {only_b}")
    models = sorted(scores_a)
    a = _vector([scores_a[m] for m in models], "scores_a", min_n=3)
    b = _vector([scores_b[m] for m in models], "scores_b", min_n=3)
    if np.all(a == a[0]) or np.all(b == b[0]):
        raise InputError("scores_a/scores_b: rank agreement is undefined when all scores tie")
    sp = st.spearmanr(a, b)
    kt = st.kendalltau(a, b)
    n = len(models)
    return {
        "spearman": TestResult("Spearman rho", float(sp.statistic), float(sp.pvalue), n, extra={"models": models}),
        "kendall": TestResult("Kendall tau-b", float(kt.statistic), float(kt.pvalue), n, extra={"models": models}),
    }
