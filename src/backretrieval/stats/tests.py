"""Hypothesis tests: paired over seeds (Wilcoxon, t), dependent correlations sharing one
variable (Steiger Z, Williams t), multiplicity (Bonferroni / Holm), model vs model on
per-query hits (McNemar exact), human-study ratings (Mann-Whitney U, Fisher exact)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import scipy.stats as st
from numpy.typing import ArrayLike, NDArray
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
from statsmodels.stats.multitest import multipletests

from ..errors import InputError
from ._common import TestResult, _hits, _same_length, _vector

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
        wil = TestResult(
            "Wilcoxon signed-rank",
            nan,
            nan,
            n,
            nan,
            "matched-pairs rank-biserial r",
            None,
            {"n_nonzero": 0, "mean_diff": mean_diff, "note": "all differences are zero"},
        )
        tt = TestResult(
            "paired t-test",
            nan,
            nan,
            n,
            nan,
            "Cohen's d_z",
            float(n - 1),
            {"mean_diff": mean_diff, "note": "all differences are zero"},
        )
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
        extra={
            "n_nonzero": int(nz.size),
            "r_plus": r_plus,
            "r_minus": r_minus,
            "mean_diff": mean_diff,
            "median_diff": float(np.median(d)),
        },
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


# --------------------------------------------------------------------------- dependent correlations


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
        extra={"r12": float(r12), "r13": float(r13), "r23": float(r23), "c": float(c), "pooled": pooled},
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


def adjust_pvalues(p: ArrayLike, method: Literal["bonferroni", "holm"] = "bonferroni") -> NDArray[np.float64]:
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
        extra={"n_a": na, "n_b": nb, "median_a": float(np.median(a)), "median_b": float(np.median(b))},
    )


def fisher_exact_counts(a_yes: int, a_total: int, b_yes: int, b_total: int) -> TestResult:
    """Two-sided Fisher exact test of yes-proportions in two groups (scipy.stats.fisher_exact).

    Table ``[[a_yes, a_total - a_yes], [b_yes, b_total - b_yes]]``. Effect size: the sample
    odds ratio ``a_yes (b_total - b_yes) / ((a_total - a_yes) b_yes)`` (may be 0 or inf).
    """
    for name, v in (("a_yes", a_yes), ("a_total", a_total), ("b_yes", b_yes), ("b_total", b_total)):
        if int(v) != v or v < 0:
            raise InputError(f"{name}: expected a non-negative integer count, got {v}")
    if a_total < 1 or b_total < 1:
        raise InputError(f"a_total/b_total: expected positive totals, got {a_total}, {b_total}")
    if a_yes > a_total or b_yes > b_total:
        raise InputError(f"yes counts exceed totals: a_yes={a_yes}/a_total={a_total}, b_yes={b_yes}/b_total={b_total}")
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
