"""Seeded bootstrap: percentile CIs of a statistic and of a correlation, and the paired
bootstrap of a difference of hit rates. All randomness from ``np.random.default_rng(seed)``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import scipy.stats as st
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError
from ._common import BootstrapCI, BootstrapDiff, _alpha, _hits, _n_resamples, _same_length, _vector


def paired_bootstrap_diff(
    hits_a: ArrayLike,
    hits_b: ArrayLike,
    B: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> BootstrapDiff:
    """Paired (query-level) bootstrap of ``mean(hits_a) - mean(hits_b)``.

    Resampling n queries with replacement and counting the discordant ones is the same as
    drawing the four cell counts of the paired 2x2 table from Multinomial(n, observed cell
    proportions); this is done for all ``B`` resamples at once (exact, O(B) memory whatever n).

    * CI: percentile interval of the bootstrap differences at level ``1 - alpha``.
    * p (two-sided): the bootstrap distribution shifted to the null (Efron & Tibshirani 1993,
      ch. 16), ``p = (1 + #{|d*_b - d| >= |d|}) / (B + 1)``; ``p = 1`` when ``d = 0``.
    """
    a = _hits(hits_a, "hits_a")
    b = _hits(hits_b, "hits_b")
    _same_length(a, b, "hits_a", "hits_b")
    B = _n_resamples(B)
    alpha = _alpha(alpha)
    n = int(a.size)
    n10 = int(np.sum(a & ~b))
    n01 = int(np.sum(~a & b))
    diff = (n10 - n01) / n
    rng = np.random.default_rng(seed)
    probs = np.array([n10, n01, n - n10 - n01], dtype=np.float64) / n
    counts = rng.multinomial(n, probs, size=B)
    boot = (counts[:, 0] - counts[:, 1]) / n
    low, high = np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0])
    if diff == 0.0:
        p = 1.0
    else:
        extreme = int(np.sum(np.abs(boot - diff) >= abs(diff) - 1e-12))
        p = (1 + extreme) / (B + 1)
    return BootstrapDiff(
        diff=float(diff),
        low=float(low),
        high=float(high),
        pvalue=float(p),
        confidence_level=1.0 - alpha,
        n=n,
        n_resamples=B,
        seed=int(seed),
    )


_BOOTSTRAP_RNG_KW = "rng" if "rng" in inspect.signature(st.bootstrap).parameters else "random_state"


def bootstrap_ci(
    values: ArrayLike,
    stat: Callable[..., Any] = np.mean,
    B: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    method: Literal["percentile", "basic", "BCa"] = "percentile",
) -> BootstrapCI:
    """Bootstrap CI of ``stat(values)`` with :func:`scipy.stats.bootstrap`.

    ``values`` are per-item numbers or 0/1 hits (then ``stat=np.mean`` gives Recall@k).
    ``stat`` must accept an ``axis`` keyword (numpy reductions do), so scipy can vectorise it.
    The generator is ``np.random.default_rng(seed)``: deterministic for a seed.
    """
    x = _vector(values, "values", min_n=2)
    B = _n_resamples(B)
    alpha = _alpha(alpha)
    if method not in ("percentile", "basic", "BCa"):
        raise InputError(f"method: expected 'percentile', 'basic' or 'BCa', got {method!r}")
    estimate = float(stat(x))
    if np.all(x == x[0]):  # every resample is the data itself
        low = high = estimate
    else:
        res = st.bootstrap(
            (x,),
            stat,
            n_resamples=B,
            confidence_level=1.0 - alpha,
            method=method,
            **{_BOOTSTRAP_RNG_KW: np.random.default_rng(seed)},
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return BootstrapCI(
        estimate=estimate,
        low=low,
        high=high,
        confidence_level=1.0 - alpha,
        method=method,
        n=int(x.size),
        n_resamples=B,
        seed=int(seed),
    )


def _rowwise_pearson(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    num = np.einsum("ij,ij->i", xc, yc)
    den = np.sqrt(np.einsum("ij,ij->i", xc, xc) * np.einsum("ij,ij->i", yc, yc))
    out = np.full(x.shape[0], np.nan)
    ok = den > 1e-12 * (1.0 + np.abs(num))
    out[ok] = np.clip(num[ok] / den[ok], -1.0, 1.0)
    return out


def bootstrap_corr_ci(
    x: ArrayLike,
    y: ArrayLike,
    method: Literal["pearson", "spearman"] = "pearson",
    B: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> BootstrapCI:
    """Percentile bootstrap CI of the Pearson or Spearman correlation, resampling (x, y) pairs.

    Meant for correlations across ~10 encoders. Written here (not scipy.stats.bootstrap)
    because with so few pairs some resamples have a constant x or y, where the correlation is
    undefined: those resamples are dropped (``n_valid_resamples`` says how many remain) instead
    of turning the whole interval into NaN. Spearman = Pearson on within-resample average ranks.
    All ``B`` resamples are drawn and evaluated at once from ``np.random.default_rng(seed)``.
    """
    xv = _vector(x, "x", min_n=3)
    yv = _vector(y, "y", min_n=3)
    _same_length(xv, yv, "x", "y")
    if method not in ("pearson", "spearman"):
        raise InputError(f"method: expected 'pearson' or 'spearman', got {method!r}")
    B = _n_resamples(B)
    alpha = _alpha(alpha)
    n = int(xv.size)
    if np.all(xv == xv[0]) or np.all(yv == yv[0]):
        raise InputError(f"x/y: the {method} correlation is undefined for a constant input")
    if method == "pearson":
        estimate = float(st.pearsonr(xv, yv).statistic)
    else:
        estimate = float(st.spearmanr(xv, yv).statistic)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(B, n))
    xb, yb = xv[idx], yv[idx]
    if method == "spearman":
        xb = st.rankdata(xb, axis=1)
        yb = st.rankdata(yb, axis=1)
    r = _rowwise_pearson(xb, yb)
    r = r[np.isfinite(r)]
    if r.size == 0:
        raise InputError("x/y: no bootstrap resample has a defined correlation")
    low, high = np.quantile(r, [alpha / 2.0, 1.0 - alpha / 2.0])
    return BootstrapCI(
        estimate=estimate,
        low=float(low),
        high=float(high),
        confidence_level=1.0 - alpha,
        method=f"percentile ({method}, pairs)",
        n=n,
        n_resamples=B,
        seed=int(seed),
        n_valid_resamples=int(r.size),
    )
