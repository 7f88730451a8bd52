"""The distinct item as the unit (backretrieval.stats.items): the sign-flip test is scipy's
paired permutation test; re-drawing the same items adds no evidence; under a SIMULATED null of
two equally good encoders on overlapping samples the test keeps its level where the pooled
McNemar test does not; intervals are withheld where they cannot be estimated honestly."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from backretrieval import stats
from backretrieval.errors import InputError
from backretrieval.stats.items import MIN_ITEMS, item_totals, sign_flip_pvalue


def _scipy_p(d: np.ndarray, n_resamples: int = 9999, seed: int = 0) -> float:
    x, y = np.maximum(d, 0), np.maximum(-d, 0)  # x − y = d
    res = st.permutation_test(
        (x, y),
        lambda a, b, axis: np.sum(a - b, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        rng=np.random.default_rng(seed),
    )
    return float(res.pvalue)


@pytest.mark.parametrize("seed", range(4))
def test_sign_flip_p_is_scipys_exact_paired_permutation_p(seed):
    d = np.random.default_rng(seed).integers(-3, 4, size=11).astype(float)
    d = d[d != 0]
    p, exact = sign_flip_pvalue(d)
    assert exact and p == pytest.approx(_scipy_p(d))


def test_sign_flip_p_agrees_with_scipy_by_monte_carlo():
    d = np.random.default_rng(5).normal(0.15, 1.0, size=80)
    p, exact = sign_flip_pvalue(d, B=9999, seed=0)
    assert not exact and abs(p - _scipy_p(d)) < 0.02  # two Monte Carlo estimates of one p
    assert sign_flip_pvalue(np.zeros(0)) == (1.0, True)


def test_item_totals_sum_and_count_each_item_once():
    t = item_totals([1, 0, 1, 1, 0], ["b", "a", "b", "c", "a"])
    assert t.keys == ["b", "a", "c"] and t.sums.tolist() == [2, 0, 1] and t.counts.tolist() == [2, 2, 1]
    with pytest.raises(InputError, match="one key per query"):
        item_totals([1, 0], ["a"])


def test_redrawing_the_same_items_adds_no_evidence():
    """Each item queried once, then every query repeated (as seeds that re-draw the same items):
    the item test's p is unchanged; the pooled McNemar p shrinks as if the data had doubled."""
    rng = np.random.default_rng(6)
    n = 80
    a = (rng.random(n) < 0.55).astype(float)
    b = (rng.random(n) < 0.45).astype(float)
    keys = np.array([f"img{i}" for i in range(n)], dtype=object)
    once = stats.item_paired_test(a, b, keys, B=500, seed=1)
    twice = stats.item_paired_test(np.tile(a, 2), np.tile(b, 2), np.tile(keys, 2), B=500, seed=1)
    assert twice.pvalue == once.pvalue and twice.n_items == once.n_items == n and twice.n_queries == 2 * n
    assert twice.diff == pytest.approx(once.diff)
    assert twice.low == pytest.approx(once.low) and twice.high == pytest.approx(once.high)
    assert stats.mcnemar_exact(np.tile(a, 2), np.tile(b, 2)).pvalue < stats.mcnemar_exact(a, b).pvalue


def _overlapping_null(rng, n_items=150, n=100, seeds=3):
    """Two equally good encoders (SIMULATED): item difficulty shared, an encoder × item effect
    each, seeds drawing n of the n_items items (overlapping)."""
    u = rng.normal(0, 1.5, n_items)
    va, vb = rng.normal(0, 1.2, (2, n_items))
    idx = np.concatenate([rng.choice(n_items, n, replace=False) for _ in range(seeds)])
    z = rng.normal(0, 0.3, idx.size)  # the sample's targets: shared by both encoders
    pa = st.norm.cdf(u[idx] + va[idx] + z)
    pb = st.norm.cdf(u[idx] + vb[idx] + z)
    return (rng.random(idx.size) < pa).astype(float), (rng.random(idx.size) < pb).astype(float), idx


def test_level_under_a_simulated_null_of_overlapping_samples():
    """400 SIMULATED nulls, N=40 of 60 items, 6 seeds (each item queried about 4 times): the
    item test rejects at about alpha (binomial 3-sd band), the pooled McNemar test far more
    often. (The `rank` layouts, with 2,000 nulls each: benchmarks/bench_item_unit.py.)"""
    rng = np.random.default_rng(7)
    item_rej = mc_rej = 0
    sims = 400
    for _ in range(sims):
        a, b, idx = _overlapping_null(rng, n_items=60, n=40, seeds=6)
        item_rej += (
            stats.item_paired_test(a, b, idx, B=50, n_permutations=999, seed=int(rng.integers(1 << 31))).pvalue < 0.05
        )
        mc_rej += stats.mcnemar_exact(a, b).pvalue < 0.05
    sd = (0.05 * 0.95 / sims) ** 0.5
    assert abs(item_rej / sims - 0.05) < 3 * sd, item_rej / sims
    assert mc_rej / sims > 0.05 + 5 * sd, mc_rej / sims


def test_no_interval_where_none_can_be_estimated_honestly():
    few = stats.item_bootstrap_ci([1, 0, 1], ["a", "b", "c"])
    assert not few.has_interval and f"at least {MIN_ITEMS}" in few.note and few.estimate == pytest.approx(2 / 3)
    same = stats.item_bootstrap_ci(np.ones(60), np.arange(60) % 30)
    assert not same.has_interval and "same mean" in same.note
    t = stats.item_paired_test(np.ones(40), np.ones(40), np.arange(40))
    assert t.pvalue == 1.0 and not np.isfinite(t.low) and "same difference" in t.note
    ok = stats.item_bootstrap_ci(np.arange(60) % 2, np.arange(60) % 30, B=300)
    assert ok.has_interval and ok.low < 0.5 < ok.high and ok.n_items == 30 and ok.n_queries == 60


def test_the_difference_interval_is_of_the_pooled_difference():
    rng = np.random.default_rng(8)
    a, b, idx = _overlapping_null(rng)
    t = stats.item_paired_test(a, b, idx, B=400, seed=3)
    ci = stats.item_bootstrap_ci(a, idx, b, B=400, seed=3)
    assert t.diff == pytest.approx(a.mean() - b.mean()) == pytest.approx(ci.estimate)
    assert (t.low, t.high) == (ci.low, ci.high) and t.low < t.diff < t.high
    assert t.n10 == int(np.sum((a == 1) & (b == 0))) and t.n01 == int(np.sum((a == 0) & (b == 1)))
