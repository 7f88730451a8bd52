"""Tests for backretrieval.stats.

Where each expected value comes from is said next to it. Three kinds of reference are used:
(1) numbers published in textbooks / papers / R documentation, (2) an independent exact
computation in this file (enumeration of a null distribution with math.comb/itertools, or a
hand formula), (3) Monte-Carlo simulations (labelled SIMULATED) of a known data-generating
process, checking false-positive rates or CI coverage. Seeds are fixed, so every test is
deterministic.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics

import numpy as np
import pytest
import scipy.stats as st

from backretrieval.errors import InputError
from backretrieval.stats import (
    BootstrapCI,
    TestResult,
    adjust_pvalues,
    bootstrap_ci,
    bootstrap_corr_ci,
    fisher_exact_counts,
    format_p,
    mann_whitney,
    mcnemar_exact,
    paired_bootstrap_diff,
    paired_tests,
    rank_agreement,
    significance_marker,
    steiger_z,
    williams_t,
)

# Hollander & Wolfe (1973, p. 29) depression data: Hamilton scores at first (x) and second
# (y) visit; the example of R's ?wilcox.test, which reports V = 40 for x - y.
HW_X = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
HW_Y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]

# Student (1908) / Cushny & Peebles sleep data (R `datasets::sleep`): extra hours of sleep under
# drug 1 and drug 2 for the same 10 patients. R: t.test(extra ~ group, data = sleep,
# paired = TRUE) gives t = -4.0621, df = 9, p-value = 0.002833, mean difference -1.58.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


# ------------------------------------------------------------------------- paired tests


def _exact_signed_rank_p(d: list[float]) -> float:
    """Two-sided exact Wilcoxon p by enumerating all 2^n sign assignments (no ties/zeros)."""
    ranks = st.rankdata(np.abs(d))
    n = len(d)
    t_obs = sum(r for r, v in zip(ranks, d) if v > 0)
    mean = n * (n + 1) / 4
    count = 0
    total = 0
    for signs in itertools.product((0, 1), repeat=n):
        t = sum(r for r, s in zip(ranks, signs) if s)
        total += 1
        if abs(t - mean) >= abs(t_obs - mean) - 1e-9:
            count += 1
    return count / total


def test_wilcoxon_matches_enumeration_and_published_example():
    res = paired_tests(HW_X, HW_Y)["wilcoxon"]
    d = [a - b for a, b in zip(HW_X, HW_Y)]
    # R's ?wilcox.test: V = R+ = 40, so R- = 45 - 40 = 5 (scipy reports min(R+, R-) = 5)
    assert res.extra["r_plus"] == 40 and res.extra["r_minus"] == 5
    assert res.statistic == 5
    # exact null by enumeration: 10 of 512 subsets have rank sum <= 5, doubled -> 20/512
    assert _exact_signed_rank_p(d) == pytest.approx(20 / 512)
    assert res.pvalue == pytest.approx(20 / 512, abs=1e-12)
    # matched-pairs rank-biserial (Kerby 2014): (40 - 5) / 45
    assert res.effect_size == pytest.approx(35 / 45)
    assert res.n == 9 and res.test == "Wilcoxon signed-rank"


def test_wilcoxon_swapping_sides_flips_effect_only():
    ab = paired_tests(HW_X, HW_Y)
    ba = paired_tests(HW_Y, HW_X)
    assert ba["wilcoxon"].pvalue == pytest.approx(ab["wilcoxon"].pvalue)
    assert ba["wilcoxon"].effect_size == pytest.approx(-ab["wilcoxon"].effect_size)
    assert ba["ttest"].statistic == pytest.approx(-ab["ttest"].statistic)
    assert ba["ttest"].effect_size == pytest.approx(-ab["ttest"].effect_size)


def test_paired_t_sleep_data_matches_R_and_hand_computation():
    res = paired_tests(SLEEP_1, SLEEP_2)["ttest"]
    d = [a - b for a, b in zip(SLEEP_1, SLEEP_2)]
    mean = statistics.fmean(d)
    sd = statistics.stdev(d)
    t_hand = mean / (sd / math.sqrt(len(d)))
    assert mean == pytest.approx(-1.58)
    assert res.statistic == pytest.approx(t_hand, rel=1e-12)
    assert res.statistic == pytest.approx(-4.0621, abs=5e-5)  # R output
    assert res.pvalue == pytest.approx(0.002833, abs=5e-7)  # R output
    assert res.df == 9
    assert res.effect_size == pytest.approx(mean / sd)  # Cohen's d_z
    assert res.effect_size == pytest.approx(res.statistic / math.sqrt(10))


def test_paired_tests_all_zero_differences_are_undefined():
    out = paired_tests([0.3, 0.4, 0.5], [0.3, 0.4, 0.5])
    assert math.isnan(out["wilcoxon"].pvalue) and math.isnan(out["ttest"].pvalue)


def test_paired_tests_bad_input():
    with pytest.raises(InputError, match="same length"):
        paired_tests([1, 2, 3], [1, 2])
    with pytest.raises(InputError, match="NaN"):
        paired_tests([1, np.nan, 3], [1, 2, 3])
    with pytest.raises(InputError, match="at least 2"):
        paired_tests([1], [2])


# ------------------------------------------------------------- Steiger / Williams tests


def test_steiger_z_published_values():
    # Steiger (1980), Psychol. Bull. 87, p. 249, Case A: r12=.4, r13=.5, r23=.1, n=103.
    # The paper prints Z = -.8913 after rounding the covariance to .0042; the unrounded value
    # -0.8887185 is the one in the test suite of the R package cocor (Diedenhofen & Musch 2015).
    r = steiger_z(0.4, 0.5, 0.1, 103)
    assert r.statistic == pytest.approx(-0.8887185, abs=5e-8)
    # depcor (Silver, Hittner & May 2006, Appl. Psychol. Meas. 30, 152-153) example
    # r12=.3, r13=.4, r23=.5, n=100: Z = -1.0718, p = .2838.
    r = steiger_z(0.3, 0.4, 0.5, 100)
    assert r.statistic == pytest.approx(-1.0718, abs=5e-5)
    assert r.pvalue == pytest.approx(0.2838, abs=5e-5)
    # same example, unpooled Dunn & Clark (1969) form: Z = -1.0730, p = .2833 (as above)
    r = steiger_z(0.3, 0.4, 0.5, 100, pooled=False)
    assert r.statistic == pytest.approx(-1.0730, abs=5e-5)
    assert r.pvalue == pytest.approx(0.2833, abs=5e-5)


def test_williams_t_published_values():
    # depcor (Silver, Hittner & May 2006) example r12=.3, r13=.4, r23=.5, n=100:
    # Williams t = -1.0767, df = 97, p = .2843.
    r = williams_t(0.3, 0.4, 0.5, 100)
    assert r.statistic == pytest.approx(-1.0767, abs=5e-5)
    assert r.pvalue == pytest.approx(0.2843, abs=5e-5)
    assert r.df == 97


def test_dependent_corr_algebraic_properties():
    for fn in (steiger_z, williams_t):
        same = fn(0.6, 0.6, 0.3, 20)
        assert same.statistic == 0.0 and same.pvalue == pytest.approx(1.0)
        a, b = fn(0.7, 0.4, 0.5, 30), fn(0.4, 0.7, 0.5, 30)
        assert a.statistic == pytest.approx(-b.statistic) and a.pvalue == pytest.approx(b.pvalue)
        # more shared variance between the two predictors -> more powerful test
        assert fn(0.7, 0.4, 0.8, 30).pvalue < fn(0.7, 0.4, 0.2, 30).pvalue
        # r23 = 0 reduces Steiger's c to a known closed form; Williams' to |R| with r23 = 0
    rb = 0.55
    c0 = (-0.5 * rb**2 * (1 - 2 * rb**2)) / (1 - rb**2) ** 2
    z_hand = math.sqrt(27) * (math.atanh(0.7) - math.atanh(0.4)) / math.sqrt(2 - 2 * c0)
    assert steiger_z(0.7, 0.4, 0.0, 30).statistic == pytest.approx(z_hand)


def test_dependent_corr_false_positive_rate_simulated():
    """SIMULATED: under H0 (rho12 = rho13 = .5, rho23 = .6, n = 40) both tests reject at
    alpha = .05 about 5% of the time (2000 multivariate-normal replications; binomial
    SE ~ 0.005; band = +-4 SE; observed 0.059 / 0.061 with this seed). The naive test that
    treats the two correlations as independent rejects far less often (~0.01 here), so the
    band does detect a missing or wrong covariance term."""
    rng = np.random.default_rng(12345)
    cov = np.array([[1.0, 0.5, 0.5], [0.5, 1.0, 0.6], [0.5, 0.6, 1.0]])
    reps, n = 2000, 40
    data = rng.multivariate_normal(np.zeros(3), cov, size=(reps, n))
    c = data - data.mean(axis=1, keepdims=True)
    s = np.einsum("rni,rnj->rij", c, c)
    sd = np.sqrt(np.einsum("rii->ri", s))
    r = s / sd[:, :, None] / sd[:, None, :]
    rej_s = np.mean([steiger_z(r[k, 0, 1], r[k, 0, 2], r[k, 1, 2], n).pvalue < 0.05 for k in range(reps)])
    rej_w = np.mean([williams_t(r[k, 0, 1], r[k, 0, 2], r[k, 1, 2], n).pvalue < 0.05 for k in range(reps)])
    assert 0.03 <= rej_s <= 0.07
    assert 0.03 <= rej_w <= 0.07
    z_naive = (np.arctanh(r[:, 0, 1]) - np.arctanh(r[:, 0, 2])) / math.sqrt(2 / (n - 3))
    assert not 0.03 <= np.mean(2 * st.norm.sf(np.abs(z_naive)) < 0.05) <= 0.07
    # and they detect a real difference (rho12 = .7 vs rho13 = .3) most of the time
    cov_alt = np.array([[1.0, 0.7, 0.3], [0.7, 1.0, 0.6], [0.3, 0.6, 1.0]])
    data = rng.multivariate_normal(np.zeros(3), cov_alt, size=(300, n))
    power = np.mean([steiger_z(*np.corrcoef(x.T)[[0, 0, 1], [1, 2, 2]], n).pvalue < 0.05 for x in data])
    assert power > 0.8


def test_dependent_corr_bad_input():
    with pytest.raises(InputError, match="negative determinant"):
        steiger_z(0.9, -0.9, 0.9, 50)
    with pytest.raises(InputError, match="r12"):
        williams_t(1.0, 0.5, 0.5, 50)
    with pytest.raises(InputError, match="n:"):
        steiger_z(0.3, 0.4, 0.5, 3)


# ------------------------------------------------------------------------ multiplicity


def test_adjust_pvalues_hand_computed():
    p = [0.01, 0.04, 0.03, 0.005]
    # Bonferroni: p * m
    assert adjust_pvalues(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02])
    # Holm: sorted .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> running max .06
    assert adjust_pvalues(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust_pvalues([0.5, 0.6], "bonferroni") == pytest.approx([1.0, 1.0])
    with pytest.raises(InputError, match="method"):
        adjust_pvalues(p, "fdr_bh")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        adjust_pvalues([0.2, 1.5])


# ----------------------------------------------------------------------- model vs model


def _hits_from_table(n11: int, n10: int, n01: int, n00: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([1] * n11 + [1] * n10 + [0] * n01 + [0] * n00)
    b = np.array([1] * n11 + [0] * n10 + [1] * n01 + [0] * n00)
    return a, b


def test_mcnemar_exact_binomial_by_hand():
    a, b = _hits_from_table(5, 2, 8, 5)
    res = mcnemar_exact(a, b)
    # exact McNemar = two-sided sign test on the 10 discordant pairs:
    # 2 * P(X <= 2), X ~ Bin(10, 1/2) = 2 * (1 + 10 + 45) / 1024
    assert res.pvalue == pytest.approx(2 * sum(math.comb(10, k) for k in range(3)) / 2**10)
    assert res.pvalue == pytest.approx(0.109375)
    assert res.statistic == 2
    assert res.effect_size == pytest.approx((2 - 8) / 20)
    assert (res.extra["n10"], res.extra["n01"]) == (2, 8)
    # symmetric table -> p = 1; no discordant pair -> p = 1
    assert mcnemar_exact(*_hits_from_table(3, 4, 4, 3)).pvalue == pytest.approx(1.0)
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]).pvalue == 1.0


def test_hits_validation():
    with pytest.raises(InputError, match="0/1"):
        mcnemar_exact([1, 2, 0], [1, 0, 0])
    with pytest.raises(InputError, match="same length"):
        paired_bootstrap_diff([1, 0, 1], [1, 0])


def test_paired_bootstrap_diff_behaviour():
    # clearly better: a hits 120 queries b misses, b hits 40 that a misses, n = 1000
    a, b = _hits_from_table(300, 120, 40, 540)
    r1 = paired_bootstrap_diff(a, b, B=2000, seed=7)
    r2 = paired_bootstrap_diff(a, b, B=2000, seed=7)
    assert r1 == r2  # deterministic for a seed
    assert r1.diff == pytest.approx(0.08)
    assert r1.low > 0 and r1.low < r1.diff < r1.high
    assert r1.pvalue < 0.01
    assert paired_bootstrap_diff(a, b, B=2000, seed=8) != r1
    # identical models
    same = paired_bootstrap_diff(a, a, B=500, seed=0)
    assert same.diff == 0 and same.pvalue == 1.0 and same.low == same.high == 0
    # nearly equal models (50 vs 45 discordant of 1000): not significant
    c, d = _hits_from_table(400, 50, 45, 505)
    assert paired_bootstrap_diff(c, d, B=2000, seed=1).pvalue > 0.5


def test_paired_bootstrap_matches_explicit_index_resampling():
    """The multinomial shortcut has the same distribution as resampling query indices:
    compare with an explicit index bootstrap (different random numbers, B = 4000 each) and
    with the analytic variance (p10 + p01 - (p10 - p01)^2) / n."""
    a, b = _hits_from_table(30, 25, 10, 35)
    n = a.size
    res = paired_bootstrap_diff(a, b, B=4000, seed=3, alpha=0.1)
    rng = np.random.default_rng(99)
    idx = rng.integers(0, n, size=(4000, n))
    ref = a[idx].mean(axis=1) - b[idx].mean(axis=1)
    lo, hi = np.quantile(ref, [0.05, 0.95])
    assert res.low == pytest.approx(lo, abs=0.015)
    assert res.high == pytest.approx(hi, abs=0.015)
    sd_analytic = math.sqrt((0.25 + 0.10 - 0.15**2) / n)
    assert (res.high - res.low) == pytest.approx(2 * 1.6449 * sd_analytic, rel=0.1)


# ------------------------------------------------------------------------ bootstrap CIs


def test_bootstrap_ci_deterministic_and_degenerate():
    x = np.random.default_rng(0).normal(size=50)
    r1, r2 = bootstrap_ci(x, B=500, seed=11), bootstrap_ci(x, B=500, seed=11)
    assert r1 == r2
    assert r1.estimate == pytest.approx(x.mean()) and r1.low < r1.estimate < r1.high
    assert bootstrap_ci(x, B=500, seed=12) != r1
    const = bootstrap_ci([1, 1, 1, 1], B=100, seed=0)
    assert (const.low, const.estimate, const.high) == (1.0, 1.0, 1.0)
    # a median works as well (any numpy reduction with an axis keyword)
    med = bootstrap_ci(x, stat=np.median, B=300, seed=0)
    assert med.estimate == pytest.approx(np.median(x)) and med.low <= med.estimate <= med.high


def test_bootstrap_ci_coverage_simulated():
    """SIMULATED: percentile-bootstrap 95% CIs of a mean cover the true value in about 95% of
    200 replications (binomial SE ~ 0.015), for normal data and for 0/1 hits."""
    rng = np.random.default_rng(2024)
    cover_norm = cover_hits = 0
    reps = 200
    for k in range(reps):
        x = rng.normal(loc=2.0, scale=3.0, size=60)
        ci = bootstrap_ci(x, B=500, seed=k)
        cover_norm += ci.low <= 2.0 <= ci.high
        h = (rng.random(200) < 0.3).astype(float)
        ci = bootstrap_ci(h, B=500, seed=k)
        cover_hits += ci.low <= 0.3 <= ci.high
    assert 0.89 <= cover_norm / reps <= 0.99
    assert 0.89 <= cover_hits / reps <= 0.99


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_bootstrap_corr_ci_matches_slow_reference(method):
    rng = np.random.default_rng(5)
    x = rng.normal(size=10)
    y = 0.7 * x + rng.normal(scale=0.5, size=10)
    res = bootstrap_corr_ci(x, y, method=method, B=300, seed=4)
    # reference: same index draws, one scipy call per resample, degenerate resamples dropped
    idx = np.random.default_rng(4).integers(0, 10, size=(300, 10))
    fn = st.pearsonr if method == "pearson" else st.spearmanr
    vals = []
    for row in idx:
        xs, ys = x[row], y[row]
        if np.all(xs == xs[0]) or np.all(ys == ys[0]):
            continue
        vals.append(fn(xs, ys).statistic)
    lo, hi = np.quantile(vals, [0.025, 0.975])
    assert res.low == pytest.approx(lo, abs=1e-9) and res.high == pytest.approx(hi, abs=1e-9)
    assert res.n_valid_resamples == len(vals)
    assert res.estimate == pytest.approx(fn(x, y).statistic)
    assert res == bootstrap_corr_ci(x, y, method=method, B=300, seed=4)


def test_bootstrap_corr_ci_drops_degenerate_resamples():
    # n = 3: each resample is constant with probability 3/27, so ~1/9 of them are dropped
    res = bootstrap_corr_ci([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], B=900, seed=0)
    assert 700 < res.n_valid_resamples < 900
    assert -1.0 <= res.low <= res.high <= 1.0
    with pytest.raises(InputError, match="constant"):
        bootstrap_corr_ci([1, 1, 1, 1], [1, 2, 3, 4])
    with pytest.raises(InputError, match="method"):
        bootstrap_corr_ci([1, 2, 3], [1, 2, 3], method="kendall")  # type: ignore[arg-type]


# ------------------------------------------------------------------------- human study


def _exact_mwu_p(a: list[float], b: list[float]) -> float:
    """Two-sided exact Mann-Whitney p by enumerating all splits of the pooled sample (no ties)."""
    pooled = a + b
    na, nb = len(a), len(b)

    def u(sa):
        return sum((x > y) + 0.5 * (x == y) for x in sa for y in pooled if y not in sa)

    mean = na * nb / 2
    u_obs = u(a)
    splits = list(itertools.combinations(pooled, na))
    extreme = sum(abs(u(list(s)) - mean) >= abs(u_obs - mean) - 1e-9 for s in splits)
    return extreme / len(splits)


def test_mann_whitney_exact_enumeration_and_effect_size():
    res = mann_whitney([1, 2, 3], [4, 5, 6])
    assert res.pvalue == pytest.approx(2 / 20)  # 2 of C(6,3) = 20 splits are as extreme
    assert res.statistic == 0 and res.effect_size == -1.0
    a, b = [1.1, 3.2, 4.5, 6.0], [2.0, 5.1, 7.3, 8.2, 9.9]
    res = mann_whitney(a, b)
    assert res.pvalue == pytest.approx(_exact_mwu_p(a, b))
    # rank-biserial = P(a > b) - P(a < b) by brute force; with ties counting half
    ta, tb = [1, 2, 2, 3, 5], [2, 4, 5, 6]
    gt = sum(x > y for x in ta for y in tb)
    lt = sum(x < y for x in ta for y in tb)
    assert mann_whitney(ta, tb).effect_size == pytest.approx((gt - lt) / 20)


def test_fisher_exact_lady_tasting_tea():
    # Fisher (1935): 8 cups, 4 milk-first; the lady gets 3 of 4 right -> [[3, 1], [1, 3]].
    # Hypergeometric enumeration: P(X = k) = C(4,k) C(4,4-k) / C(8,4); two-sided p sums the
    # outcomes no more probable than the observed one: (1 + 16 + 16 + 1) / 70.
    probs = {k: math.comb(4, k) * math.comb(4, 4 - k) / math.comb(8, 4) for k in range(5)}
    p_two = sum(p for p in probs.values() if p <= probs[3] + 1e-12)
    assert p_two == pytest.approx(34 / 70)
    res = fisher_exact_counts(3, 4, 1, 4)
    assert res.pvalue == pytest.approx(p_two)  # 0.4857 (one-sided would be 17/70 = 0.2429)
    assert res.effect_size == pytest.approx(9.0)  # sample odds ratio 3*3 / (1*1)
    assert fisher_exact_counts(4, 4, 0, 4).pvalue == pytest.approx(2 / 70)
    assert math.isinf(fisher_exact_counts(4, 4, 0, 4).effect_size)
    with pytest.raises(InputError, match="exceed"):
        fisher_exact_counts(5, 4, 1, 4)


# ---------------------------------------------------------------------- rank agreement


def test_rank_agreement_hand_computed():
    a = {"m1": 0.1, "m2": 0.2, "m3": 0.3, "m4": 0.4}
    b = {"m1": 10, "m2": 30, "m3": 20, "m4": 40}  # one adjacent swap
    out = rank_agreement(a, b)
    # Spearman: 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 6 * 2 / 60
    assert out["spearman"].statistic == pytest.approx(0.8)
    # Kendall: (concordant - discordant) / 6 = (5 - 1) / 6
    assert out["kendall"].statistic == pytest.approx(2 / 3)
    # exact Kendall null for n = 4 by enumerating the 24 permutations: P(|tau| >= 2/3)
    taus = [st.kendalltau(range(4), perm).statistic for perm in itertools.permutations(range(4))]
    p_exact = np.mean([abs(t) >= 2 / 3 - 1e-9 for t in taus])
    assert p_exact == pytest.approx(1 / 3)
    assert out["kendall"].pvalue == pytest.approx(p_exact)
    assert out["spearman"].n == 4 and out["kendall"].extra["models"] == ["m1", "m2", "m3", "m4"]
    rev = rank_agreement(a, {k: -v for k, v in a.items()})
    assert rev["spearman"].statistic == pytest.approx(-1) and rev["kendall"].statistic == pytest.approx(-1)


def test_rank_agreement_requires_same_models():
    with pytest.raises(InputError, match="only in a: \\['m4'\\]"):
        rank_agreement({"m1": 1, "m2": 2, "m3": 3, "m4": 4}, {"m1": 1, "m2": 2, "m3": 3})


# --------------------------------------------------------------------------- helpers


def test_format_p_and_markers():
    assert format_p(0.0421) == "0.042"
    assert format_p(0.0004) == "<0.001"
    assert format_p(0.001) == "0.001"
    assert format_p(float("nan")) == "n/a"
    assert format_p(0.5, digits=2) == "0.50"
    with pytest.raises(InputError):
        format_p(1.2)
    assert significance_marker(0.2) == ""
    assert significance_marker(0.05) == ""  # strict inequality
    assert significance_marker(0.049) == "*"
    assert significance_marker(0.009) == "**"
    assert significance_marker(0.0009) == "***"
    assert significance_marker(float("nan")) == ""
    assert significance_marker(0.02, levels=(0.1, 0.05)) == "**"


def test_results_serialise_to_plain_dicts():
    d = paired_tests(HW_X, HW_Y)["wilcoxon"].to_dict()
    assert json.loads(json.dumps(d))["test"] == "Wilcoxon signed-rank"
    assert isinstance(bootstrap_ci([0, 1, 1, 0], B=50), BootstrapCI)
    assert isinstance(steiger_z(0.3, 0.4, 0.5, 100), TestResult)
