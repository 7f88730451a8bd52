"""Section 1: joint encoder × item bootstrap, pairwise-order accuracy, pooling —
known answers on constructed data."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from backretrieval.errors import InputError
from backretrieval.findings.inference import COVERAGE_FILE
from backretrieval.metrics import corr
from backretrieval.stats.contributions import corr_contributions
from backretrieval.stats.crossed import SeedOutcomes, crossed_bootstrap, pool_replicates
from backretrieval.stats.questions import bca_interval, random_question_test, two_questions
from backretrieval.stats.weighted import corr_rows, pairwise_order_accuracy, unit_weights, weighted_corr, weighted_ranks


def _seed(seed, query_items, xlr, bkr, corr=None):
    per_query = {"bkr": np.asarray(bkr, float)}
    if corr is not None:
        per_query["corr"] = np.asarray(corr, float)
    return SeedOutcomes(seed=seed, query_items=np.asarray(query_items), xlr=np.asarray(xlr, float), per_query=per_query)


def _keys(n):
    return [f"item{i}" for i in range(n)]


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
        assert corr_rows(x[i], y[i], "pearson") == pytest.approx(st.pearsonr(x[i], y[i]).statistic, abs=1e-12)
        assert corr_rows(x[i], y[i], "spearman") == pytest.approx(st.spearmanr(x[i], y[i]).statistic, abs=1e-12)
    assert math.isnan(corr_rows(np.ones(4), np.arange(4.0), "pearson"))
    with pytest.raises(InputError, match="stat"):
        corr_rows(x, y, "kendall")


def test_pairwise_order_accuracy_known_answers():
    ref = np.array([1.0, 2.0, 3.0, 4.0])
    assert pairwise_order_accuracy(ref * 3, ref) == 1.0
    assert pairwise_order_accuracy(-ref, ref) == 0.0
    assert pairwise_order_accuracy(np.zeros(4), ref) == 0.5  # metric ties count half
    # one swapped pair of six
    assert pairwise_order_accuracy(np.array([2.0, 1.0, 3.0, 4.0]), ref) == pytest.approx(5 / 6)
    # pairs tied in the reference are not counted
    assert pairwise_order_accuracy(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 2.0])) == 1.0
    assert math.isnan(pairwise_order_accuracy(np.arange(3.0), np.ones(3)))
    # batch form equals the loop
    rng = np.random.default_rng(1)
    m, r = rng.integers(0, 3, size=(7, 5)), rng.integers(0, 3, size=(7, 5))
    batch = pairwise_order_accuracy(m, r)
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
        seeds.append(_seed(s, q, xlr, bkr))
    res = crossed_bootstrap(seeds, encoders, {"all": encoders}, _keys(300), B=20, seed=0)
    exp = np.mean([st.pearsonr(s.per_query["bkr"].mean(1), s.xlr.mean(1)).statistic for s in seeds])
    assert res.point[("all", "rho_bkr", "pearson")] == pytest.approx(exp, abs=1e-12)
    # the other aggregation: the correlation of the metrics averaged over the seeds
    avg_b = np.mean([s.per_query["bkr"].mean(1) for s in seeds], axis=0)
    avg_x = np.mean([s.xlr.mean(1) for s in seeds], axis=0)
    assert res.point[("all", "rho_bkr_avg", "spearman")] == pytest.approx(st.spearmanr(avg_b, avg_x).statistic)
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
    seeds = [_seed(s, items, xlr, bkr) for s in range(25)]
    res = crossed_bootstrap(seeds, encoders, {"all": encoders}, _keys(100), B=300, seed=0)
    f = res.frame().set_index(["set", "quantity", "stat"])
    row = f.loc[("all", "rho_bkr", "spearman")]
    assert row["naive_high"] - row["naive_low"] == 0.0
    assert row["high"] - row["low"] > 0.05
    # the same data as ONE seed gives the same crossed interval: seeds add no information here
    one = crossed_bootstrap(seeds[:1], encoders, {"all": encoders}, _keys(100), B=300, seed=0)
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
    s0 = _seed(0, np.arange(50), xlr, bkr)
    # seed 1: the same items in another order (column j is item perm[j], with its outcomes)
    s1 = _seed(1, perm, xlr[:, perm], bkr[:, perm])
    both = crossed_bootstrap([s0, s1], encoders, {"all": encoders}, _keys(50), B=50, seed=9)
    only0 = crossed_bootstrap([s0], encoders, {"all": encoders}, _keys(50), B=50, seed=9)
    np.testing.assert_allclose(
        both.replicates[("all", "rho_bkr", "pearson")],
        only0.replicates[("all", "rho_bkr", "pearson")],
        equal_nan=True,
    )


def test_units_keyed_by_name_are_drawn_jointly_across_cells():
    """Two cells (e.g. two configurations) that list the same images in another order and the
    encoders in another order get the very same weights: identical data give identical
    replicates, and the cell with an extra encoder and extra items still shares every weight."""
    rng = np.random.default_rng(11)
    encoders = [f"e{i}" for i in range(6)]
    xlr, bkr = _outcomes(rng, E=6, N=40)
    keys = _keys(40)
    a = crossed_bootstrap([_seed(0, np.arange(40), xlr, bkr)], encoders, {"all": encoders}, keys, B=60, seed=3)
    perm_i, perm_e = rng.permutation(40), rng.permutation(6)
    keys_b = [keys[i] for i in perm_i] + ["other-image"]
    inv = np.argsort(perm_i)  # query j of cell a is key j = position inv[j] of keys_b
    enc_b = [encoders[e] for e in perm_e]
    b = crossed_bootstrap([_seed(0, inv, xlr[perm_e], bkr[perm_e])], enc_b, {"all": enc_b}, keys_b, B=60, seed=3)
    for q in ("rho_bkr", "rho_bkr_avg", "order_acc_bkr"):
        stat = "pairs" if q.startswith("order") else "spearman"
        np.testing.assert_allclose(a.replicates[("all", q, stat)], b.replicates[("all", q, stat)], equal_nan=True)
    # independent keys: different replicates
    c = crossed_bootstrap(
        [_seed(0, np.arange(40), xlr, bkr)], encoders, {"all": encoders}, _keys(80)[40:], B=60, seed=3
    )
    assert not np.allclose(a.replicates[("all", "rho_bkr", "pearson")], c.replicates[("all", "rho_bkr", "pearson")])


def test_unit_weights_are_poisson_and_keyed():
    w = unit_weights(["x", "y", "z"], 4000, 0, "item")
    assert w.shape == (3, 4000) and (w >= 0).all() and np.array_equal(w, np.round(w))
    assert w.mean() == pytest.approx(1.0, abs=0.05) and w.var() == pytest.approx(1.0, abs=0.08)
    np.testing.assert_array_equal(unit_weights(["z", "x"], 4000, 0, "item"), w[[2, 0]])
    assert not np.array_equal(unit_weights(["x"], 4000, 0, "encoder")[0], w[0])
    assert not np.array_equal(unit_weights(["x"], 4000, 1, "item")[0], w[0])


def test_weighted_corr_is_the_correlation_of_the_repeated_values():
    rng = np.random.default_rng(12)
    for _ in range(30):
        x = rng.integers(0, 4, 7).astype(float)  # ties on purpose
        y = rng.normal(size=7)
        w = rng.integers(0, 3, 7)
        if (w > 0).sum() < 3 or np.unique(np.repeat(x, w)).size < 2:
            continue
        xr, yr = np.repeat(x, w), np.repeat(y, w)
        assert weighted_corr(x, y, w, "pearson") == pytest.approx(st.pearsonr(xr, yr).statistic, abs=1e-12)
        assert weighted_corr(x, y, w, "spearman") == pytest.approx(st.spearmanr(xr, yr).statistic, abs=1e-12)
        np.testing.assert_allclose(weighted_ranks(x, w)[w > 0], st.rankdata(xr)[np.cumsum(w)[w > 0] - 1])


def test_fewer_than_three_distinct_encoders_are_dropped_and_counted():
    """A draw with 2 distinct encoders makes any correlation ±1 or 0 for reasons of the draw
    alone; such replicates are NaN (dropped) and counted, never kept."""
    x, y = np.array([0.1, 0.5, 0.9, 0.2]), np.array([0.3, 0.2, 0.8, 0.1])
    assert np.isnan(weighted_corr(x, y, np.array([5, 0, 3, 0]), "pearson"))
    assert np.isfinite(weighted_corr(x, y, np.array([5, 1, 3, 0]), "pearson"))
    rng = np.random.default_rng(13)
    encoders = [f"e{i}" for i in range(4)]
    xlr, bkr = _outcomes(rng, E=4, N=60)
    res = crossed_bootstrap([_seed(0, np.arange(60), xlr, bkr)], encoders, {"all": encoders}, _keys(60), B=400)
    w = unit_weights(encoders, 400, 0, "encoder")
    few = (w > 0).sum(axis=0) < 3
    assert res.degenerate["all"] == int(few.sum()) > 0
    for q in ("rho_bkr", "rho_bkr_avg"):
        assert np.isnan(res.replicates[("all", q, "pearson")][few]).all()
    f = res.frame().set_index(["set", "quantity", "stat"]).loc[("all", "rho_bkr", "pearson")]
    assert f["n_dropped"] >= few.sum() and f["n_valid"] + f["n_dropped"] == 400


def test_bootstrap_is_deterministic_and_seeded():
    rng = np.random.default_rng(5)
    encoders = [f"e{i}" for i in range(6)]
    xlr, bkr = _outcomes(rng)
    seeds = [_seed(0, np.arange(80), xlr, bkr)]
    a = crossed_bootstrap(seeds, encoders, {"all": encoders}, _keys(160), B=40, seed=1)
    b = crossed_bootstrap(seeds, encoders, {"all": encoders}, _keys(160), B=40, seed=1)
    c = crossed_bootstrap(seeds, encoders, {"all": encoders}, _keys(160), B=40, seed=2)
    key = ("all", "rho_bkr", "pearson")
    assert np.array_equal(a.replicates[key], b.replicates[key], equal_nan=True)
    assert not np.array_equal(a.replicates[key], c.replicates[key], equal_nan=True)
    assert a.frame().equals(b.frame())


def test_corr_contributions_average_to_corr_and_diff_is_paired():
    """CORR's per-query contributions: their mean is the sample's CORR (the project's kernel),
    so CORR is reweighted exactly as BkR and XLR are; the difference is paired."""
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
    c = corr_contributions(q_img, t_img, texts)
    assert c.shape == (E, N)
    np.testing.assert_allclose(c.mean(axis=1), [corr(s, t, q_img, t_img) for s, t in texts], rtol=0, atol=1e-6)
    # slow loop from the formula: Spearman's rho over all pairs = mean of the row contributions
    d_img = (
        1
        - (q_img / np.linalg.norm(q_img, axis=1, keepdims=True))
        @ (t_img / np.linalg.norm(t_img, axis=1, keepdims=True)).T
    )
    s, t = texts[1]
    d_txt = 1 - (s / np.linalg.norm(s, axis=1, keepdims=True)) @ (t / np.linalg.norm(t, axis=1, keepdims=True)).T
    ra, rb = st.rankdata(d_txt.ravel()).reshape(N, N), st.rankdata(d_img.ravel()).reshape(N, N)
    za, zb = (ra - ra.mean()) / ra.std(), (rb - rb.mean()) / rb.std()
    for i in (0, 7, 29):
        assert c[1, i] == pytest.approx(np.mean(za[i] * zb[i]), abs=1e-6)

    xlr = np.tile(np.linspace(0.2, 0.8, E)[:, None], (1, N))
    seeds = [_seed(0, np.arange(N), xlr, xlr.copy(), corr=c)]
    enc = [f"e{i}" for i in range(E)]
    res = crossed_bootstrap(seeds, enc, {"all": enc}, _keys(N), B=30, seed=0)
    d = res.replicates[("all", "rho_diff", "spearman")]
    np.testing.assert_allclose(
        d, res.replicates[("all", "rho_bkr", "spearman")] - res.replicates[("all", "rho_corr", "spearman")]
    )
    assert res.point[("all", "rho_diff", "spearman")] == pytest.approx(
        res.point[("all", "rho_bkr", "spearman")] - res.point[("all", "rho_corr", "spearman")]
    )


def test_pool_replicates_averages_within_replicates_and_drops_undefined():
    a = np.array([0.1, 0.3, np.nan, 0.2, 0.0])
    b = np.array([0.3, 0.1, 0.5, np.nan, 0.2])
    p = pool_replicates([0.2, 0.4], [a, b])
    assert p["estimate"] == pytest.approx(0.3) and p["k"] == 2
    assert p["n_dropped"] == 2 and p["n_valid"] == 3 and p["B"] == 5
    pooled = np.array([0.2, 0.2, 0.1])
    assert p["low"] == pytest.approx(np.quantile(pooled, 0.025)) and p["high"] == pytest.approx(0.2)
    with pytest.raises(InputError, match="one replicate array per cell"):
        pool_replicates([0.1], [a, b])


def test_both_questions_cover_the_truth_in_simulated_worlds():
    """SIMULATED worlds (inference_sim: shared encoders with a clustered family, shared items):
    both questions' 95% intervals cover their own truth in most of 30 worlds (the benchmark runs
    200 in the verdict's layouts and prints the coverage)."""
    from backretrieval.findings.inference_sim import Layout, coverage

    lay = Layout("t", (("a", "A", 2), ("b", "A", 1)), (5, 1, 1, 1))
    c = coverage(30, lay, B=200, seed=0, n_items=150, n_queries=60, n_seeds=2)
    assert set(c["coverage"]) == {"fixed/pearson", "fixed/spearman", "random/pearson", "random/spearman"}
    for k, v in c["coverage"].items():
        assert v >= 0.8, (k, v)
    # encoders random is the wider question
    assert c["mean_width"]["random/pearson"] > c["mean_width"]["fixed/pearson"]


def _no_conditioning(interval: dict, B: int) -> None:
    """What a pooled interval must satisfy: every replicate used (none dropped because an
    encoder draw was degenerate: dropping conditions the interval on the encoders drawn)."""
    assert interval["n_dropped"] == 0, f"{interval['n_dropped']} of {B} replicates dropped"


def test_the_old_pooled_procedure_fails_and_the_new_passes():
    """The old pooled procedure drew the encoders with Poisson weights and dropped every replicate
    in which a cell had fewer than 3 distinct encoders: with 3 encoders that is about 3 in 4
    replicates, and the survivors are the draws that contain all three. The new one (item
    bootstrap + family jackknife) uses every replicate."""
    from backretrieval.findings.inference_sim import Layout, simulated_world

    B = 200
    cells, _, fam = simulated_world(3, Layout("t", (("a", "A", 2),), (1, 1, 1)), n_items=100, n_queries=40, n_seeds=2)
    old_pts, old_reps = [], []
    for cell in cells:
        res = crossed_bootstrap(cell.seeds, cell.encoders, {"all": cell.encoders}, cell.item_keys, B, 0, None)
        old_pts.append(res.point[("all", "rho_diff", "pearson")])
        old_reps.append(res.replicates[("all", "rho_diff", "pearson")])
    old = pool_replicates(old_pts, old_reps)
    with pytest.raises(AssertionError, match="replicates dropped"):
        _no_conditioning(old, B)
    assert old["n_dropped"] > B / 2
    new_pts, new_reps, new_jack, loo = [], [], [], {}
    for cell in cells:
        res = crossed_bootstrap(
            cell.seeds,
            cell.encoders,
            {"all": cell.encoders},
            cell.item_keys,
            B,
            0,
            None,
            resample_encoders=False,
            jackknife_groups=10,
            families=fam,
        )
        key = ("all", "rho_diff", "pearson")
        new_pts.append(res.point[key])
        new_reps.append(res.replicates[key])
        new_jack.append(res.jackknife[key])
        for (sn, f, q, st_), v in res.family_loo.items():
            if (sn, q, st_) == key:
                loo.setdefault(f, []).append(v)
    new = two_questions(new_pts, new_reps, new_jack, loo)
    fixed = new["fixed"]
    _no_conditioning({"n_dropped": B - int(np.isfinite(np.stack(new_reps)).all(axis=0).sum())}, B)
    assert fixed["B"] == B and fixed["low"] <= fixed["estimate"] <= fixed["high"]
    assert np.isfinite(fixed["z0"])


def test_bca_and_two_questions_against_slow_formulas():
    """BCa's z0 and acceleration as Efron (1987) defines them; the encoders-fixed interval as
    max(bootstrap SE, delete-a-group jackknife SE) times Student t on G - 1 df; the
    encoders-random SE as the sum of that item variance and the family jackknife variance, with
    Student t on the Welch-Satterthwaite df of the two; checked by slow loops on small arrays, in
    one case where the bootstrap SE is the larger and one where the jackknife's is (the readings
    "bootstrap SE only", "jackknife SE only" and "normal quantile" differ from the formula in one
    of them)."""
    import scipy.stats as st

    rep = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    jk = np.array([0.40, 0.45, 0.50, 0.70])
    r = bca_interval(0.35, rep, jk)
    assert r["z0"] == pytest.approx(st.norm.ppf(3 / 8))
    d = jk.mean() - jk
    assert r["a"] == pytest.approx(np.sum(d**3) / (6 * np.sum(d**2) ** 1.5))
    fams = {"f1": [0.2, 0.3], "f2": [0.4, 0.5], "f3": [0.3, 0.3]}

    def slow(reps, jacks):
        B, G = len(reps[0]), len(jacks[0])
        T = [sum(r[b] for r in reps) / len(reps) for b in range(B)]
        J = [sum(j[g] for j in jacks) / len(jacks) for g in range(G)]
        mt, mj = sum(T) / B, sum(J) / G
        se_boot = (sum((t - mt) ** 2 for t in T) / (B - 1)) ** 0.5
        se_jack = ((G - 1) / G * sum((j - mj) ** 2 for j in J)) ** 0.5
        se_i = max(se_boot, se_jack)
        loo = [sum(v) / len(v) for v in fams.values()]
        F = len(loo)
        ml = sum(loo) / F
        v_enc = (F - 1) / F * sum((x - ml) ** 2 for x in loo)
        v_it = se_i**2
        df = (v_it + v_enc) ** 2 / (v_it**2 / (G - 1) + v_enc**2 / (F - 1))
        return se_boot, se_jack, se_i, G - 1, (v_it + v_enc) ** 0.5, df

    for reps, jacks in (([rep, rep + 0.1], [jk, jk]), ([rep * 0.1, rep * 0.1], [jk * 3, jk * 3])):
        se_boot, se_jack, se_i, df_i, se_r, df_r = slow(reps, jacks)
        tq = two_questions([0.3, 0.4], reps, jacks, fams)
        assert tq["fixed"]["se_bootstrap"] == pytest.approx(se_boot)
        assert tq["fixed"]["se_jackknife"] == pytest.approx(se_jack)
        assert tq["fixed"]["se"] == pytest.approx(se_i) and tq["fixed"]["df"] == df_i == 3
        assert tq["fixed"]["high"] - 0.35 == pytest.approx(st.t.ppf(0.975, 3) * se_i)
        assert tq["fixed"]["low"] - 0.35 == pytest.approx(-st.t.ppf(0.975, 3) * se_i)
        assert tq["random"]["se"] == pytest.approx(se_r)
        assert tq["random"]["df"] == pytest.approx(df_r) and 2 <= df_r <= 5
        assert tq["random"]["high"] - 0.35 == pytest.approx(st.t.ppf(0.975, df_r) * se_r)
        tval, p = random_question_test(tq["random"])
        assert tval == pytest.approx(0.35 / se_r) and p == pytest.approx(2 * st.t.sf(0.35 / se_r, df_r))
    # the two cases differ in which item SE is the larger
    assert slow([rep, rep + 0.1], [jk, jk])[0] > slow([rep, rep + 0.1], [jk, jk])[1]
    assert slow([rep * 0.1] * 2, [jk * 3] * 2)[0] < slow([rep * 0.1] * 2, [jk * 3] * 2)[1]
    with pytest.raises(InputError, match="undefined replicates"):
        bca_interval(0.3, np.array([0.1, np.nan, 0.2]), jk)


def test_bad_inputs_are_named():
    encoders = ["a", "b", "c"]
    s = _seed(0, [0, 1], np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(InputError, match="unknown encoders"):
        crossed_bootstrap([s], encoders, {"x": ["a", "zz", "c"]}, _keys(4), B=5)
    with pytest.raises(InputError, match=">= 3 encoders"):
        crossed_bootstrap([s], encoders, {"x": ["a", "b"]}, _keys(4), B=5)
    with pytest.raises(InputError, match="expected \\(3, 2\\)"):
        crossed_bootstrap(
            [_seed(0, [0, 1], np.ones((2, 2)), np.ones((3, 2)))], encoders, {"all": encoders}, _keys(4), B=5
        )
    with pytest.raises(InputError, match="index outside"):
        crossed_bootstrap([s], encoders, {"all": encoders}, _keys(1), B=5)


def test_the_committed_verdicts_layouts_have_a_measured_coverage():
    """The coverage the verdict cites was simulated in the verdict's own layouts: every layout of
    the committed records is in benchmarks/inference_coverage.json (the values and how far they
    are from the [0.93, 0.97] target: benchmarks/README.md); a changed layout fails until
    `python benchmarks/bench_inference_coverage.py` is rerun."""
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        from bench_inference_coverage import committed_layouts
    finally:
        sys.path.pop(0)
    cov = json.loads((root / COVERAGE_FILE).read_text(encoding="utf-8"))
    layouts = committed_layouts(root)
    assert layouts, "no committed inference record has an inferential layout"
    missing = [lay.signature() for lay in layouts if lay.signature() not in cov["layouts"]]
    assert not missing, f"layouts without a simulated coverage (rerun the benchmark): {missing}"
    assert cov["worlds"] >= 200
    overall = json.loads((root / "reports/findings_summary/overall.json").read_text(encoding="utf-8"))
    cited = {lay["signature"] for lays in overall["numbers"]["layouts"].values() for lay in lays}
    assert cited == {lay.signature() for lay in layouts}


def test_the_verdict_pools_configurations_by_the_digest_of_their_images_not_by_dataset_name():
    """Two configurations on the same images (different dataset names, one image-pool digest in
    their records) are one pool of 2 + 2 cells; other images make a pool of their own. No dataset
    name is read: a record without a digest falls back to its dataset."""
    from types import SimpleNamespace

    from backretrieval.findings.inference.verdict import MIN_POOL_ENCODERS, verdict_layouts

    encs = [f"e{i}" for i in range(MIN_POOL_ENCODERS)]

    def rec(name, dataset, pool):
        settings = {"encoder_sets": {"all": encs}, "encoder_families": {}}
        if pool is not None:
            settings["image_pool"] = pool
        run = SimpleNamespace(run_name=name, dataset=dataset, directions=("en-de", "de-en"), synthetic=False)
        return SimpleNamespace(run=run, settings=settings)

    same = verdict_layouts([rec("a", "task-one", "abc"), rec("b", "task-two", "abc")])["all"]
    assert same[-1].signature().startswith("4 cells (4 per image pool)"), same[-1].signature()
    other = verdict_layouts([rec("a", "task-one", "abc"), rec("b", "task-two", "xyz")])["all"]
    assert other[-1].signature().startswith("4 cells (2 + 2 per image pool)"), other[-1].signature()
    legacy = verdict_layouts([rec("a", "d1", None), rec("b", "d1", None)])["all"]
    assert legacy[-1].signature().startswith("4 cells (4 per image pool)")
