"""Section 1: crossed encoder × item bootstrap, pairwise-order accuracy, random effects —
known answers on constructed data."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from backretrieval.errors import InputError
from backretrieval.findings import inference as inf
from backretrieval.metrics import corr


def _seed(seed, query_items, target_items, xlr, bkr, corr_point=None, corr=None):
    return inf.SeedOutcomes(
        seed=seed,
        query_items=np.asarray(query_items),
        target_items=np.asarray(target_items),
        xlr=np.asarray(xlr, float),
        per_query={"bkr": np.asarray(bkr, float)},
        corr_point=corr_point,
        corr=corr,
    )


def _outcomes(rng, E=6, N=80, strength=None):
    """Per-query hits of E encoders of increasing quality; BkR hits correlated with XLR hits."""
    strength = np.linspace(0.1, 0.9, E) if strength is None else np.asarray(strength)
    u = rng.random((E, N))
    xlr = (u < strength[:, None]).astype(float)
    bkr = ((u + 0.3 * rng.random((E, N))) < strength[:, None] * 1.1).astype(float)
    return xlr, bkr


def test_corr_rows_matches_scipy():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(5, 9)), rng.normal(size=(5, 9))
    x[0, :3] = x[0, 3]  # ties
    for i in range(5):
        assert inf.corr_rows(x[i], y[i], "pearson") == pytest.approx(st.pearsonr(x[i], y[i]).statistic, abs=1e-12)
        assert inf.corr_rows(x[i], y[i], "spearman") == pytest.approx(st.spearmanr(x[i], y[i]).statistic, abs=1e-12)
    assert math.isnan(inf.corr_rows(np.ones(4), np.arange(4.0), "pearson"))
    with pytest.raises(InputError, match="stat"):
        inf.corr_rows(x, y, "kendall")


def test_pairwise_order_accuracy_known_answers():
    ref = np.array([1.0, 2.0, 3.0, 4.0])
    assert inf.pairwise_order_accuracy(ref * 3, ref) == 1.0
    assert inf.pairwise_order_accuracy(-ref, ref) == 0.0
    assert inf.pairwise_order_accuracy(np.zeros(4), ref) == 0.5  # metric ties count half
    # one swapped pair of six
    assert inf.pairwise_order_accuracy(np.array([2.0, 1.0, 3.0, 4.0]), ref) == pytest.approx(5 / 6)
    # pairs tied in the reference are not counted
    assert inf.pairwise_order_accuracy(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 2.0])) == 1.0
    assert math.isnan(inf.pairwise_order_accuracy(np.arange(3.0), np.ones(3)))
    # batch form equals the loop
    rng = np.random.default_rng(1)
    m, r = rng.integers(0, 3, size=(7, 5)), rng.integers(0, 3, size=(7, 5))
    batch = inf.pairwise_order_accuracy(m, r)
    for i in range(7):
        pairs = [(a, b) for a in range(5) for b in range(a + 1, 5) if r[i, a] != r[i, b]]
        exp = (
            np.mean(
                [
                    1.0
                    if np.sign(m[i, a] - m[i, b]) == np.sign(r[i, a] - r[i, b])
                    else 0.5
                    if m[i, a] == m[i, b]
                    else 0.0
                    for a, b in pairs
                ]
            )
            if pairs
            else np.nan
        )
        assert (math.isnan(exp) and math.isnan(batch[i])) or batch[i] == pytest.approx(exp)


def test_point_estimates_are_the_per_seed_means():
    rng = np.random.default_rng(2)
    encoders = [f"e{i}" for i in range(6)]
    seeds = []
    for s in range(3):
        xlr, bkr = _outcomes(rng)
        q = rng.choice(300, size=80, replace=False)
        seeds.append(_seed(s, q, rng.choice(300, size=80, replace=False), xlr, bkr))
    res = inf.crossed_bootstrap(seeds, encoders, {"all": encoders}, n_items=300, B=20, seed=0)
    exp = np.mean([st.pearsonr(s.per_query["bkr"].mean(1), s.xlr.mean(1)).statistic for s in seeds])
    assert res.point[("all", "rho_bkr", "pearson")] == pytest.approx(exp, abs=1e-12)
    # leave-one-out point estimates are there and differ from the full set
    assert ("all-e3", "rho_bkr", "pearson") in res.point
    assert ("all-e3", "rho_bkr", "pearson") not in res.replicates


def test_seeds_that_resplit_the_same_items_get_wider_intervals():
    """25 'seeds' that evaluate the very same items: their per-seed correlations are identical,
    so the seeds-as-replicates interval has zero width, while the crossed bootstrap reports
    the real item- and encoder-level uncertainty."""
    rng = np.random.default_rng(3)
    encoders = [f"e{i}" for i in range(6)]
    xlr, bkr = _outcomes(rng, N=100, strength=np.linspace(0.4, 0.6, 6))  # close encoders
    items = np.arange(100)
    seeds = [_seed(s, items, items, xlr, bkr) for s in range(25)]
    res = inf.crossed_bootstrap(seeds, encoders, {"all": encoders}, n_items=100, B=300, seed=0)
    f = res.frame().set_index(["set", "quantity", "stat"])
    row = f.loc[("all", "rho_bkr", "spearman")]
    assert row["naive_high"] - row["naive_low"] == 0.0
    assert row["high"] - row["low"] > 0.05
    # the same data as ONE seed gives the same crossed interval: seeds add no information here
    one = inf.crossed_bootstrap(seeds[:1], encoders, {"all": encoders}, n_items=100, B=300, seed=0)
    np.testing.assert_allclose(
        one.replicates[("all", "rho_bkr", "spearman")], res.replicates[("all", "rho_bkr", "spearman")]
    )


def test_items_shared_across_seeds_share_their_weight():
    """A replicate that draws an item twice counts it twice in every seed: with the items of
    seed 0 and seed 1 being the same ids in another order, the replicates of the two seeds agree."""
    rng = np.random.default_rng(4)
    encoders = [f"e{i}" for i in range(5)]
    xlr, bkr = _outcomes(rng, E=5, N=50)
    perm = rng.permutation(50)
    s0 = _seed(0, np.arange(50), np.arange(50), xlr, bkr)
    # seed 1: the same items in another order (column j is item perm[j], with its outcomes)
    s1 = _seed(1, perm, perm, xlr[:, perm], bkr[:, perm])
    both = inf.crossed_bootstrap([s0, s1], encoders, {"all": encoders}, n_items=50, B=50, seed=9)
    only0 = inf.crossed_bootstrap([s0], encoders, {"all": encoders}, n_items=50, B=50, seed=9)
    np.testing.assert_allclose(
        both.replicates[("all", "rho_bkr", "pearson")], only0.replicates[("all", "rho_bkr", "pearson")]
    )


def test_bootstrap_is_deterministic_and_seeded():
    rng = np.random.default_rng(5)
    encoders = [f"e{i}" for i in range(6)]
    xlr, bkr = _outcomes(rng)
    seeds = [_seed(0, np.arange(80), np.arange(80, 160), xlr, bkr)]
    a = inf.crossed_bootstrap(seeds, encoders, {"all": encoders}, n_items=160, B=40, seed=1)
    b = inf.crossed_bootstrap(seeds, encoders, {"all": encoders}, n_items=160, B=40, seed=1)
    c = inf.crossed_bootstrap(seeds, encoders, {"all": encoders}, n_items=160, B=40, seed=2)
    key = ("all", "rho_bkr", "pearson")
    assert np.array_equal(a.replicates[key], b.replicates[key], equal_nan=True)
    assert not np.array_equal(a.replicates[key], c.replicates[key], equal_nan=True)
    assert a.frame().equals(b.frame())


def test_corr_resampler_reproduces_corr_and_diff_is_paired():
    rng = np.random.default_rng(6)
    N, E = 30, 4
    q_img, t_img = rng.normal(size=(N, 8)).astype(np.float32), rng.normal(size=(N, 8)).astype(np.float32)
    texts = [
        (
            q_img + s * rng.normal(size=q_img.shape).astype(np.float32),
            t_img + s * rng.normal(size=t_img.shape).astype(np.float32),
        )
        for s in (0.1, 0.5, 1.0, 3.0)
    ]
    fn = inf.corr_resampler(q_img, t_img, texts, max_pairs=None, seed=0)
    full = fn(np.arange(N), np.arange(N))
    exp = [corr(s, t, q_img, t_img) for s, t in texts]
    np.testing.assert_allclose(full, exp, rtol=0, atol=1e-6)
    # repeated rows: CORR of the expanded matrices
    rq, rt = np.array([0, 0, 1, 2, 5, 5, 5]), np.array([3, 4, 4, 9])
    np.testing.assert_allclose(fn(rq, rt), [corr(s[rq], t[rt], q_img[rq], t_img[rt]) for s, t in texts], atol=1e-6)
    # pair subsample: an estimate, deterministic for its seed
    sub = inf.corr_resampler(q_img, t_img, texts, max_pairs=200, seed=3)
    assert np.array_equal(sub(np.arange(N), np.arange(N)), sub(np.arange(N), np.arange(N)))

    xlr = np.tile(np.linspace(0.2, 0.8, E)[:, None], (1, N))
    bkr = xlr.copy()
    seeds = [_seed(0, np.arange(N), np.arange(N, 2 * N), xlr, bkr, corr_point=np.array(exp), corr=fn)]
    res = inf.crossed_bootstrap(
        seeds, [f"e{i}" for i in range(E)], {"all": [f"e{i}" for i in range(E)]}, n_items=2 * N, B=30, seed=0
    )
    d = res.replicates[("all", "rho_diff", "spearman")]
    b_ = res.replicates[("all", "rho_bkr", "spearman")]
    c_ = res.replicates[("all", "rho_corr", "spearman")]
    np.testing.assert_allclose(d, b_ - c_)
    assert res.point[("all", "rho_diff", "spearman")] == pytest.approx(
        res.point[("all", "rho_bkr", "spearman")] - res.point[("all", "rho_corr", "spearman")]
    )


def test_bad_inputs_are_named():
    encoders = ["a", "b", "c"]
    s = _seed(0, [0, 1], [2, 3], np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(InputError, match="unknown encoders"):
        inf.crossed_bootstrap([s], encoders, {"x": ["a", "zz", "c"]}, n_items=4, B=5)
    with pytest.raises(InputError, match=">= 3 encoders"):
        inf.crossed_bootstrap([s], encoders, {"x": ["a", "b"]}, n_items=4, B=5)
    with pytest.raises(InputError, match="expected \\(3, 2\\)"):
        inf.crossed_bootstrap(
            [_seed(0, [0, 1], [2, 3], np.ones((2, 2)), np.ones((3, 2)))], encoders, {"all": encoders}, n_items=4, B=5
        )
    with pytest.raises(InputError, match="index outside"):
        inf.crossed_bootstrap([s], encoders, {"all": encoders}, n_items=3, B=5)


def test_random_effects_known_answers():
    # homogeneous effects with equal SEs: tau² = 0, the estimate is their mean, SE = se/sqrt(k)
    r = inf.random_effects_summary([0.1, 0.1, 0.1, 0.1], [0.05] * 4)
    assert r.estimate == pytest.approx(0.1) and r.tau2 == pytest.approx(0) and r.se == pytest.approx(0.025)
    # Paule-Mandel by hand: tau² solves Q(tau²) = k - 1 (0 when Q(0) < k - 1)
    from scipy.optimize import brentq

    y, s = np.array([0.3, -0.1, 0.2, 0.5, 0.05]), np.array([0.1, 0.12, 0.08, 0.2, 0.1])

    def q_minus_df(t):
        w = 1 / (s**2 + t)
        mu = np.sum(w * y) / np.sum(w)
        return np.sum(w * (y - mu) ** 2) - (len(y) - 1)

    tau2 = brentq(q_minus_df, 0, 10, xtol=1e-14)
    wr = 1 / (s**2 + tau2)
    r = inf.random_effects_summary(y, s)
    assert r.tau2 == pytest.approx(tau2, rel=1e-4)
    assert r.estimate == pytest.approx(np.sum(wr * y) / np.sum(wr), rel=1e-5)
    assert r.se == pytest.approx(1 / np.sqrt(np.sum(wr)), rel=1e-4)
    assert (r.n_positive, r.n_negative) == (4, 1)
    assert r.sign_pvalue == pytest.approx(st.binomtest(4, 5).pvalue)
    with pytest.raises(InputError, match="SEs > 0"):
        inf.random_effects_summary([0.1, 0.2], [0.0, 0.1])


def test_i2_is_the_truncated_share_of_heterogeneity():
    # I² = max(0, (Q - df) / Q) with Q the fixed-effect heterogeneity statistic
    for y, s in (([0.1, 0.11, 0.09, 0.1], [0.05] * 4), ([0.3, -0.1, 0.2, 0.5, 0.05], [0.1, 0.12, 0.08, 0.2, 0.1])):
        y, s = np.array(y), np.array(s)
        w = 1 / s**2
        q = np.sum(w * (y - np.sum(w * y) / np.sum(w)) ** 2)
        want = max(0.0, (q - (len(y) - 1)) / q)
        assert inf.random_effects_summary(y, s).i2 == pytest.approx(want, abs=1e-12)
        assert 0 <= inf.random_effects_summary(y, s).i2 <= 1


def test_corr_pair_subsample_estimates_corr():
    rng = np.random.default_rng(7)
    N = 200
    q_img, t_img = rng.normal(size=(N, 8)).astype(np.float32), rng.normal(size=(N, 8)).astype(np.float32)
    texts = [
        (
            q_img + s * rng.normal(size=q_img.shape).astype(np.float32),
            t_img + s * rng.normal(size=t_img.shape).astype(np.float32),
        )
        for s in (0.3, 1.0, 3.0)
    ]
    exact = np.array([corr(s, t, q_img, t_img) for s, t in texts])
    fn = inf.corr_resampler(q_img, t_img, texts, max_pairs=20000, seed=1)
    est = fn(np.arange(N), np.arange(N), 0)
    np.testing.assert_allclose(est, exact, atol=0.03)
    assert not np.array_equal(est, fn(np.arange(N), np.arange(N), 1))  # each replicate its own pairs
    # more pairs than exist: the exact kernel on the resampled rows
    rows = np.array([3, 3, 7, 8, 9, 10, 10, 11])
    full = inf.corr_resampler(q_img, t_img, texts, max_pairs=10**6, seed=1)
    np.testing.assert_allclose(
        full(rows, rows, 5), [corr(s[rows], t[rows], q_img[rows], t_img[rows]) for s, t in texts], atol=1e-6
    )
