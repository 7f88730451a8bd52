"""Significance tests and bootstrap confidence intervals for the Backretrieval results.

The paper (Fain, Twomey, Bollegala, SIGIR 2021) calls its differences "statistically
significant" without naming a test. This module names the tests and computes them. Library
first: scipy.stats and statsmodels are used wherever they implement the test; only the two
tests for dependent correlations sharing one variable (Steiger 1980 Z, Williams 1959 t) and
the vectorised pair-bootstrap of a correlation are written here.

Every test returns a :class:`TestResult` carrying the test name, statistic, two-sided p-value,
effect size (with its name) where one is defined, and ``n``. Bootstrap functions return
:class:`BootstrapCI` / :class:`BootstrapDiff`. All randomness comes from
``np.random.default_rng(seed)``: the same inputs and seed give bit-identical results.

Which test answers which question:

* BkR-vs-XLR correlation against CORR-vs-XLR correlation, paired over seeds:
  :func:`paired_tests` (Wilcoxon signed-rank + paired t).
* The same comparison within one seed, where both correlations are computed over the same
  encoders and share the variable XLR: :func:`steiger_z`, :func:`williams_t`.
* Several comparisons at once: :func:`adjust_pvalues` (Bonferroni / Holm).
* Two models on one retrieval metric, paired per query (0/1 hits): :func:`mcnemar_exact`,
  :func:`paired_bootstrap_diff`.
* Uncertainty of a mean / Recall@k / a correlation over ~10 encoders: :func:`bootstrap_ci`,
  :func:`bootstrap_corr_ci`.
* Human study: :func:`mann_whitney` (ratings), :func:`fisher_exact_counts` (yes/no counts).
* Do two metrics rank the same models alike (Bakarov et al. 2018 "benchmark disagreement"):
  :func:`rank_agreement`.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np
import scipy.stats as st
from numpy.typing import ArrayLike, NDArray
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
from statsmodels.stats.multitest import multipletests

from ..errors import InputError

__all__ = [
    "TestResult",
    "BootstrapCI",
    "BootstrapDiff",
    "paired_tests",
    "steiger_z",
    "williams_t",
    "adjust_pvalues",
    "mcnemar_exact",
    "paired_bootstrap_diff",
    "bootstrap_ci",
    "bootstrap_corr_ci",
    "mann_whitney",
    "fisher_exact_counts",
    "rank_agreement",
    "format_p",
    "significance_marker",
]


# --------------------------------------------------------------------------- result types


@dataclass(frozen=True)
class TestResult:
    """One hypothesis test. ``pvalue`` is two-sided; ``nan`` where the test is undefined."""

    __test__ = False  # not a pytest test class despite the name

    test: str
    statistic: float
    pvalue: float
    n: int
    effect_size: float | None = None
    effect_size_name: str | None = None
    df: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (for JSON/CSV), ``extra`` kept as a nested dict."""
        d = asdict(self)
        d["extra"] = dict(self.extra)
        return d


@dataclass(frozen=True)
class BootstrapCI:
    """Percentile bootstrap confidence interval of ``estimate`` (the statistic on the data)."""

    estimate: float
    low: float
    high: float
    confidence_level: float
    method: str
    n: int
    n_resamples: int
    seed: int
    n_valid_resamples: int | None = None  # for correlations: resamples with a defined value

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BootstrapDiff:
    """Paired bootstrap of ``mean(a) - mean(b)`` with a percentile CI and a two-sided p."""

    diff: float
    low: float
    high: float
    pvalue: float
    confidence_level: float
    n: int
    n_resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- validation


def _vector(x: ArrayLike, name: str, *, min_n: int = 1) -> NDArray[np.float64]:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: expected a 1-D array of numbers ({exc})") from exc
    if arr.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size < min_n:
        raise InputError(f"{name}: expected at least {min_n} values, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name}: contains NaN or infinite values")
    return arr


def _same_length(a: NDArray[Any], b: NDArray[Any], name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise InputError(
            f"{name_a} and {name_b} must be paired (same length), got {a.size} and {b.size}"
        )


def _hits(x: ArrayLike, name: str) -> NDArray[np.bool_]:
    arr = _vector(x, name)
    if not np.all((arr == 0) | (arr == 1)):
        bad = arr[(arr != 0) & (arr != 1)][:3]
        raise InputError(f"{name}: expected per-query hits coded 0/1, found values {bad.tolist()}")
    return arr.astype(bool)


def _alpha(alpha: float) -> float:
    if not (0.0 < alpha < 1.0):
        raise InputError(f"alpha: expected a number in (0, 1), got {alpha}")
    return float(alpha)


def _n_resamples(B: int) -> int:
    if int(B) != B or B < 1:
        raise InputError(f"B (number of bootstrap resamples): expected a positive integer, got {B}")
    return int(B)


# --------------------------------------------------------------------------- paired tests


def paired_tests(a: ArrayLike, b: ArrayLike) -> dict[str, TestResult]:
    """Wilcoxon signed-rank and paired t-test of ``a`` against ``b`` (paired, e.g. by seed).

    Typical use: ``a`` = per-seed correlation of BkR with XLR, ``b`` = per-seed correlation of
    CORR with XLR.

    * ``"wilcoxon"``: :func:`scipy.stats.wilcoxon` on ``a - b`` (two-sided, ``zero_method=
      "wilcox"``: zero differences dropped, scipy's ``method="auto"``: exact null distribution
      for small n). Statistic: scipy's ``min(R+, R-)``. Effect size: the **matched-pairs
      rank-biserial correlation** (Kerby 2014) ``(R+ - R-) / (R+ + R-)`` over the nonzero
      differences, ranks of ``|a - b|`` with ties averaged; in [-1, 1], positive when a > b.
    * ``"ttest"``: :func:`scipy.stats.ttest_rel` (two-sided, df = n - 1). Effect size: Cohen's
      ``d_z = mean(a - b) / sd(a - b)`` (sd with ddof=1), equal to ``t / sqrt(n)``.

    Where every difference is zero both tests are undefined: statistic and p are NaN.
    """
    x = _vector(a, "a", min_n=2)
    y = _vector(b, "b", min_n=2)
    _same_length(x, y, "a", "b")
    d = x - y
    n = int(d.size)
    mean_diff = float(d.mean())
    nz = d[d != 0]

    if nz.size == 0:
        nan = float("nan")
        wil = TestResult("Wilcoxon signed-rank", nan, nan, n, nan,
                         "matched-pairs rank-biserial r", None,
                         {"n_nonzero": 0, "mean_diff": mean_diff,
                          "note": "all differences are zero"})
        tt = TestResult("paired t-test", nan, nan, n, nan, "Cohen's d_z", float(n - 1),
                        {"mean_diff": mean_diff, "note": "all differences are zero"})
        return {"wilcoxon": wil, "ttest": tt}

    ranks = st.rankdata(np.abs(nz))
    r_plus = float(ranks[nz > 0].sum())
    r_minus = float(ranks[nz < 0].sum())
    rbc = (r_plus - r_minus) / (r_plus + r_minus)
    w = st.wilcoxon(x, y, zero_method="wilcox", alternative="two-sided", method="auto")
    wil = TestResult(
        test="Wilcoxon signed-rank",
        statistic=float(w.statistic),
        pvalue=float(w.pvalue),
        n=n,
        effect_size=rbc,
        effect_size_name="matched-pairs rank-biserial r",
        extra={"n_nonzero": int(nz.size), "r_plus": r_plus, "r_minus": r_minus,
               "mean_diff": mean_diff, "median_diff": float(np.median(d))},
    )

    sd = float(d.std(ddof=1))
    if sd == 0.0:  # constant nonzero difference: t is infinite, p = 0
        t_stat = math.copysign(math.inf, mean_diff)
        t_p = 0.0
        dz = math.copysign(math.inf, mean_diff)
    else:
        t = st.ttest_rel(x, y, alternative="two-sided")
        t_stat, t_p = float(t.statistic), float(t.pvalue)
        dz = mean_diff / sd
    tt = TestResult(
        test="paired t-test",
        statistic=t_stat,
        pvalue=t_p,
        n=n,
        effect_size=dz,
        effect_size_name="Cohen's d_z",
        df=float(n - 1),
        extra={"mean_diff": mean_diff, "sd_diff": sd},
    )
    return {"wilcoxon": wil, "ttest": tt}


# ------------------------------------------------ dependent correlations sharing one variable


def _check_dependent_corrs(r12: float, r13: float, r23: float, n: int) -> float:
    """Validate inputs; return the determinant of the 3x3 correlation matrix."""
    for name, r in (("r12", r12), ("r13", r13)):
        if not (isinstance(r, (int, float, np.floating, np.integer)) and -1.0 < r < 1.0):
            raise InputError(f"{name}: expected a correlation strictly inside (-1, 1), got {r}")
    if not (isinstance(r23, (int, float, np.floating, np.integer)) and -1.0 <= r23 <= 1.0):
        raise InputError(f"r23: expected a correlation in [-1, 1], got {r23}")
    if int(n) != n or n <= 3:
        raise InputError(f"n: expected an integer sample size > 3, got {n}")
    det = 1.0 - r12**2 - r13**2 - r23**2 + 2.0 * r12 * r13 * r23
    if det < -1e-12:
        raise InputError(
            f"r12={r12}, r13={r13}, r23={r23} cannot all hold at once "
            f"(the 3x3 correlation matrix has negative determinant {det:.3g})"
        )
    return max(det, 0.0)


def steiger_z(r12: float, r13: float, r23: float, n: int, *, pooled: bool = True) -> TestResult:
    """Steiger (1980) Z test of H0: rho12 = rho13 (two correlations sharing variable 1).

    Steiger, J. H. (1980). Tests for comparing elements of a correlation matrix.
    Psychological Bulletin, 87, 245-251 (eqs. 3, 10, 14)::

        Z = sqrt(n - 3) * (atanh(r12) - atanh(r13)) / sqrt(2 - 2 c)
        c = psi / (1 - rbar^2)^2
        psi = r23 (1 - 2 rbar^2) - rbar^2 (1 - 2 rbar^2 - r23^2) / 2

    With ``pooled=True`` (Steiger's recommendation) ``rbar = (r12 + r13) / 2`` in both places;
    with ``pooled=False`` the unpooled Dunn & Clark (1969) form is used:
    ``psi = r23 (1 - r12^2 - r13^2) - r12 r13 (1 - r12^2 - r13^2 - r23^2) / 2`` and
    ``c = psi / ((1 - r12^2)(1 - r13^2))``. Two-sided p from the standard normal.

    Effect size: Cohen's q = atanh(r12) - atanh(r13).
    """
    _check_dependent_corrs(r12, r13, r23, n)
    z12, z13 = math.atanh(r12), math.atanh(r13)
    if pooled:
        rb2 = ((r12 + r13) / 2.0) ** 2
        psi = r23 * (1 - 2 * rb2) - 0.5 * rb2 * (1 - 2 * rb2 - r23**2)
        c = psi / (1 - rb2) ** 2
    else:
        psi = r23 * (1 - r12**2 - r13**2) - 0.5 * r12 * r13 * (1 - r12**2 - r13**2 - r23**2)
        c = psi / ((1 - r12**2) * (1 - r13**2))
    denom = 2.0 - 2.0 * c
    diff = z12 - z13
    if denom <= 0.0:
        z = 0.0 if diff == 0 else math.copysign(math.inf, diff)
    else:
        z = math.sqrt(n - 3) * diff / math.sqrt(denom)
    p = float(2.0 * st.norm.sf(abs(z)))
    return TestResult(
        test="Steiger (1980) Z" + ("" if pooled else " (unpooled, Dunn & Clark 1969)"),
        statistic=float(z),
        pvalue=p,
        n=int(n),
        effect_size=diff,
        effect_size_name="Cohen's q (atanh r12 - atanh r13)",
        extra={"r12": float(r12), "r13": float(r13), "r23": float(r23), "c": float(c),
               "pooled": pooled},
    )


def williams_t(r12: float, r13: float, r23: float, n: int) -> TestResult:
    """Williams' t test of H0: rho12 = rho13 (two correlations sharing variable 1).

    Williams (1959) in the form recommended by Steiger (1980, eq. 7)::

        t = (r12 - r13) * sqrt( (n - 1)(1 + r23) /
                                (2 (n - 1)/(n - 3) |R| + rbar^2 (1 - r23)^3) ),   df = n - 3

    with ``|R| = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23`` and ``rbar = (r12 + r13)/2``.
    Two-sided p from Student's t. Effect size: Cohen's q = atanh(r12) - atanh(r13).
    """
    det = _check_dependent_corrs(r12, r13, r23, n)
    rbar = (r12 + r13) / 2.0
    denom = 2.0 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3
    diff = r12 - r13
    if denom <= 0.0:
        t = 0.0 if diff == 0 else math.copysign(math.inf, diff)
    else:
        t = diff * math.sqrt((n - 1) * (1 + r23) / denom)
    df = n - 3
    p = float(2.0 * st.t.sf(abs(t), df))
    return TestResult(
        test="Williams (1959) t",
        statistic=float(t),
        pvalue=p,
        n=int(n),
        effect_size=math.atanh(r12) - math.atanh(r13),
        effect_size_name="Cohen's q (atanh r12 - atanh r13)",
        df=float(df),
        extra={"r12": float(r12), "r13": float(r13), "r23": float(r23), "det_R": det},
    )


# --------------------------------------------------------------------------- multiplicity


def adjust_pvalues(
    p: ArrayLike, method: Literal["bonferroni", "holm"] = "bonferroni"
) -> NDArray[np.float64]:
    """Family-wise error correction via :func:`statsmodels.stats.multitest.multipletests`.

    Returns the adjusted p-values (capped at 1) in the input order.
    """
    if method not in ("bonferroni", "holm"):
        raise InputError(f"method: expected 'bonferroni' or 'holm', got {method!r}")
    arr = _vector(p, "p")
    if np.any((arr < 0) | (arr > 1)):
        raise InputError(f"p: p-values must lie in [0, 1], got {arr[(arr < 0) | (arr > 1)][:3].tolist()}")
    _, adj, _, _ = multipletests(arr, alpha=0.05, method=method)
    return np.asarray(adj, dtype=np.float64)


# --------------------------------------------------------------------------- model vs model


def mcnemar_exact(hits_a: ArrayLike, hits_b: ArrayLike) -> TestResult:
    """Exact McNemar test of two models' per-query hits (0/1, paired by query).

    :func:`statsmodels.stats.contingency_tables.mcnemar` with ``exact=True``: a two-sided
    binomial test of the discordant counts ``n10`` (a hit, b miss) against ``n01``.
    Statistic: ``min(n10, n01)`` (statsmodels' convention). Effect size: the accuracy
    difference ``(n10 - n01) / n`` = mean(a) - mean(b). ``extra`` holds the 2x2 counts and the
    conditional odds ratio ``n10 / n01``.
    """
    a = _hits(hits_a, "hits_a")
    b = _hits(hits_b, "hits_b")
    _same_length(a, b, "hits_a", "hits_b")
    n11 = int(np.sum(a & b))
    n10 = int(np.sum(a & ~b))
    n01 = int(np.sum(~a & b))
    n00 = int(np.sum(~a & ~b))
    n = int(a.size)
    if n10 + n01 == 0:
        stat, p = 0.0, 1.0  # no discordant pair: binomial(0, 0.5) has P(X <= 0) = 1
    else:
        res = _sm_mcnemar([[n11, n10], [n01, n00]], exact=True)
        stat, p = float(res.statistic), float(min(1.0, res.pvalue))
    odds = (n10 / n01) if n01 else (math.inf if n10 else float("nan"))
    return TestResult(
        test="McNemar exact",
        statistic=stat,
        pvalue=p,
        n=n,
        effect_size=(n10 - n01) / n,
        effect_size_name="accuracy difference (a - b)",
        extra={"n11": n11, "n10": n10, "n01": n01, "n00": n00, "odds_ratio": odds},
    )


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
        diff=float(diff), low=float(low), high=float(high), pvalue=float(p),
        confidence_level=1.0 - alpha, n=n, n_resamples=B, seed=int(seed),
    )


# --------------------------------------------------------------------------- bootstrap CIs

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
            (x,), stat, n_resamples=B, confidence_level=1.0 - alpha, method=method,
            **{_BOOTSTRAP_RNG_KW: np.random.default_rng(seed)},
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return BootstrapCI(estimate=estimate, low=low, high=high, confidence_level=1.0 - alpha,
                       method=method, n=int(x.size), n_resamples=B, seed=int(seed))


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
    return BootstrapCI(estimate=estimate, low=float(low), high=float(high),
                       confidence_level=1.0 - alpha, method=f"percentile ({method}, pairs)",
                       n=n, n_resamples=B, seed=int(seed), n_valid_resamples=int(r.size))


# --------------------------------------------------------------------------- human study


def mann_whitney(ratings_a: ArrayLike, ratings_b: ArrayLike) -> TestResult:
    """Two-sided Mann-Whitney U test (:func:`scipy.stats.mannwhitneyu`, ``method="auto"``).

    Statistic: U of ``ratings_a``. Effect size: rank-biserial correlation
    ``2 U_a / (n_a n_b) - 1 = P(a > b) - P(a < b)`` (ties count half); positive when a's
    ratings tend to be higher.
    """
    a = _vector(ratings_a, "ratings_a")
    b = _vector(ratings_b, "ratings_b")
    res = st.mannwhitneyu(a, b, alternative="two-sided", method="auto")
    u = float(res.statistic)
    na, nb = int(a.size), int(b.size)
    return TestResult(
        test="Mann-Whitney U",
        statistic=u,
        pvalue=float(res.pvalue),
        n=na + nb,
        effect_size=2.0 * u / (na * nb) - 1.0,
        effect_size_name="rank-biserial r",
        extra={"n_a": na, "n_b": nb, "median_a": float(np.median(a)),
               "median_b": float(np.median(b))},
    )


def fisher_exact_counts(a_yes: int, a_total: int, b_yes: int, b_total: int) -> TestResult:
    """Two-sided Fisher exact test of yes-proportions in two groups (scipy.stats.fisher_exact).

    Table ``[[a_yes, a_total - a_yes], [b_yes, b_total - b_yes]]``. Effect size: the sample
    odds ratio ``a_yes (b_total - b_yes) / ((a_total - a_yes) b_yes)`` (may be 0 or inf).
    """
    for name, v in (("a_yes", a_yes), ("a_total", a_total), ("b_yes", b_yes),
                    ("b_total", b_total)):
        if int(v) != v or v < 0:
            raise InputError(f"{name}: expected a non-negative integer count, got {v}")
    if a_total < 1 or b_total < 1:
        raise InputError(f"a_total/b_total: expected positive totals, got {a_total}, {b_total}")
    if a_yes > a_total or b_yes > b_total:
        raise InputError(
            f"yes counts exceed totals: a_yes={a_yes}/a_total={a_total}, "
            f"b_yes={b_yes}/b_total={b_total}"
        )
    table = [[int(a_yes), int(a_total - a_yes)], [int(b_yes), int(b_total - b_yes)]]
    res = st.fisher_exact(table, alternative="two-sided")
    return TestResult(
        test="Fisher exact",
        statistic=float(res.statistic),
        pvalue=float(res.pvalue),
        n=int(a_total + b_total),
        effect_size=float(res.statistic),
        effect_size_name="odds ratio",
        extra={"table": table, "prop_a": a_yes / a_total, "prop_b": b_yes / b_total},
    )


# --------------------------------------------------------------------------- rank agreement


def rank_agreement(
    scores_a: Mapping[str, float], scores_b: Mapping[str, float]
) -> dict[str, TestResult]:
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
        raise InputError(
            f"scores_a/scores_b: must name the same models; only in a: {only_a}, only in b: {only_b}"
        )
    models = sorted(scores_a)
    a = _vector([scores_a[m] for m in models], "scores_a", min_n=3)
    b = _vector([scores_b[m] for m in models], "scores_b", min_n=3)
    if np.all(a == a[0]) or np.all(b == b[0]):
        raise InputError("scores_a/scores_b: rank agreement is undefined when all scores tie")
    sp = st.spearmanr(a, b)
    kt = st.kendalltau(a, b)
    n = len(models)
    return {
        "spearman": TestResult("Spearman rho", float(sp.statistic), float(sp.pvalue), n,
                               extra={"models": models}),
        "kendall": TestResult("Kendall tau-b", float(kt.statistic), float(kt.pvalue), n,
                              extra={"models": models}),
    }


# --------------------------------------------------------------------------- formatting


def format_p(p: float, digits: int = 3) -> str:
    """p-value for tables: ``"0.042"``, ``"<0.001"`` (below ``10**-digits``), ``"n/a"`` for NaN."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    p = float(p)
    if not (0.0 <= p <= 1.0):
        raise InputError(f"p: expected a p-value in [0, 1], got {p}")
    floor = 10.0 ** (-digits)
    if p < floor:
        return f"<{floor:.{digits}f}"
    return f"{p:.{digits}f}"


def significance_marker(p: float, levels: Sequence[float] = (0.05, 0.01, 0.001)) -> str:
    """``"*"`` per level that ``p`` is strictly below: with the defaults ``*`` p<.05, ``**``
    p<.01, ``***`` p<.001, ``""`` otherwise (and for NaN)."""
    if p is None or math.isnan(float(p)):
        return ""
    return "*" * sum(1 for lv in levels if float(p) < lv)
