"""Section 5: soft BkR (a metric-kernel option), the image side, the mixture and its
leave-one-group-out evaluation — known answers on constructed data and slow loops."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from backretrieval.findings import calibration as cal
from backretrieval.metrics import BkrImageIndex, bkr, bkr_ranks, nearest_m, soft_bkr_hits


def _cos(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


def _slow_soft(src, tgt, s_img, t_img, k, m):
    """Straight from the definition: for each query, its m best targets by (score desc, index
    asc); for each, rank q's image among the source images by cosine with the target's image
    (rank = 1 + #strictly greater); hit if rank <= k; average the m hits."""
    st, ii = _cos(src, tgt), _cos(t_img, s_img)
    out = []
    for q in range(src.shape[0]):
        order = sorted(range(tgt.shape[0]), key=lambda j: (-st[q, j], j))[:m]
        hits = [1 + sum(1 for x in range(s_img.shape[0]) if ii[t, x] > ii[t, q]) <= k for t in order]
        out.append(np.mean(hits))
    return np.array(out)


def _data(seed, n=40, d=6, levels=None):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(4 * n, d)).astype(np.float32)
    if levels:  # quantised values: many exact ties of cosines
        x = np.round(x * levels) / levels
        x[np.all(x == 0, axis=1), 0] = 1
    return x[:n], x[n : 2 * n], x[2 * n : 3 * n], x[3 * n :]


@pytest.mark.parametrize("seed,levels", [(0, None), (1, None), (2, 1), (3, 2)])
@pytest.mark.parametrize("m", [1, 2, 5])
def test_soft_bkr_equals_slow_loop(seed, levels, m):
    src, tgt, s_img, t_img = _data(seed, levels=levels)
    fast = soft_bkr_hits(src, tgt, s_img, t_img, k=5, m=m)
    np.testing.assert_allclose(fast, _slow_soft(src, tgt, s_img, t_img, 5, m), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed,levels", [(0, None), (4, 1)])
def test_soft_bkr_m1_is_bkr_exactly(seed, levels):
    src, tgt, s_img, t_img = _data(seed, n=60, levels=levels)
    hits = soft_bkr_hits(src, tgt, s_img, t_img, k=10, m=1)
    ranks = bkr_ranks(src, tgt, s_img, t_img)
    assert np.array_equal(hits, (ranks <= 10).astype(float))
    assert bkr(src, tgt, s_img, t_img, k=10, top_m=1) == bkr(src, tgt, s_img, t_img, k=10)
    assert bkr(src, tgt, s_img, t_img, k=10, top_m=3) == pytest.approx(
        np.mean(soft_bkr_hits(src, tgt, s_img, t_img, 10, 3))
    )


def test_nearest_m_order_and_ties():
    q = np.array([[1.0, 0.0]], np.float32)
    c = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [1.0, 0.0]], np.float32)
    assert nearest_m(q, c, 4).tolist() == [[1, 2, 4, 3]]  # three-way tie → lowest index first
    with pytest.raises(ValueError, match="m must be"):
        nearest_m(q, c, 6)


def test_soft_hits_rejects_wrong_index():
    src, tgt, s_img, t_img = _data(0)
    idx = BkrImageIndex.build(s_img, t_img, k=3)
    with pytest.raises(ValueError, match="another k"):
        soft_bkr_hits(src, tgt, s_img, t_img, k=5, m=2, index=idx)


def test_image_side_known_answers():
    rng = np.random.default_rng(0)
    n = 200
    base = rng.normal(size=(n, 16))
    # targets are near-copies of other concepts; queries their own concept: the oracle finds them
    q_img = base + 0.01 * rng.normal(size=base.shape)
    t_img = base[rng.permutation(n)] + 0.01 * rng.normal(size=base.shape)
    side = cal.image_side(q_img, t_img, k=10)
    assert side.p_hit == 1.0  # every query's nearest target image is its own concept's copy
    assert side.p_miss == pytest.approx(10 / n, abs=1e-12)  # no ties: exactly k members per target
    # p_hit from its definition on unrelated features (a slow loop): nearest target image, then
    # the rank of the query's own image among the source images for that target image
    a, b = rng.normal(size=(60, 8)), rng.normal(size=(60, 8))
    ab, ba = _cos(a, b), _cos(b, a)
    slow = np.mean([1 + np.sum(ba[int(np.argmax(ab[q]))] > ba[int(np.argmax(ab[q])), q]) <= 5 for q in range(60)])
    assert cal.image_side(a, b, k=5).p_hit == pytest.approx(slow, abs=1e-12)
    # ties at the k-th place add members: p_miss rises above k/N
    tied = np.repeat(np.eye(4), 5, axis=0)  # 20 source images in 4 groups of identical ones
    assert cal.image_side(tied, np.eye(4)[[0, 1, 2, 3, 0]], k=2).p_miss == pytest.approx(5 / 20)


def test_mixture_inverts_the_model():
    p_hit, p_miss = 0.8, 0.05
    x = np.array([0.0, 0.25, 0.5, 1.0])
    bkr_v = p_hit * x + p_miss * (1 - x)
    np.testing.assert_allclose(cal.mixture_estimate(bkr_v, p_hit, p_miss), x, atol=1e-12)
    assert cal.mixture_estimate([0.01], 0.8, 0.05)[0] == 0.0  # clipped
    assert np.isnan(cal.mixture_estimate([0.3], 0.05, 0.05)[0])  # no signal


def _cells():
    rows = []
    for d_i, d in enumerate(["a-b", "b-a"]):
        for e_i in range(6):
            x = 0.1 + 0.15 * e_i
            rows.append(
                {
                    "dataset": "D",
                    "direction": d,
                    "encoder": f"e{e_i}",
                    "xlr_r1": x,
                    "xlr_rk": min(1, 1.5 * x),
                    "xlr_mrr": x,
                    "p_hit": 0.7 + 0.01 * d_i,
                    "p_miss": 0.02,
                    "bkr": (0.7 + 0.01 * d_i) * x + 0.02 * (1 - x),
                }
            )
    c = pd.DataFrame(rows)
    c["mixture"] = cal.mixture_estimate(c["bkr"], c["p_hit"], c["p_miss"])
    return c


def test_leave_one_encoder_out_exact_on_model_data():
    cells = _cells()
    pred = cal.leave_one_group_out(cells, "encoder", "xlr_r1")
    assert set(pred["model"]) == set(cal.MODELS)
    s = cal.error_summary(pred).set_index("model")
    assert s.loc["mixture", "mae"] == pytest.approx(0, abs=1e-12)  # the data follow the mixture
    assert s.loc["linear_mixture", "mae"] == pytest.approx(0, abs=1e-9)
    assert s.loc["linear_bkr", "mae"] > 1e-4  # p_hit differs by direction: a line in BkR is off
    # left-out groups never enter their own fit: a wild encoder changes no other prediction
    wild = cells.copy()
    wild.loc[wild["encoder"] == "e5", "xlr_r1"] = 0.99
    p2 = cal.leave_one_group_out(wild, "encoder", "xlr_r1", models=["linear_bkr"])
    p1 = cal.leave_one_group_out(cells, "encoder", "xlr_r1", models=["linear_bkr"])
    e5 = p2["encoder"] == "e5"
    np.testing.assert_allclose(p2.loc[e5, "prediction"], p1.loc[e5, "prediction"])
    assert not np.allclose(p2.loc[~e5, "prediction"], p1.loc[~e5, "prediction"])


def test_soft_agreement_shape_and_values():
    cells = _cells()
    cells["soft_bkr_m1"] = cells["bkr"]
    cells["soft_bkr_m3"] = -cells["bkr"]
    out = cal.soft_agreement(cells, ["soft_bkr_m1", "soft_bkr_m3"], {"XLR@1": "xlr_r1"})
    mean = out[out["direction"] == "mean"].set_index(["metric", "stat"])["value"]
    assert mean[("soft_bkr_m1", "spearman")] == pytest.approx(1.0)
    assert mean[("soft_bkr_m3", "spearman")] == pytest.approx(-1.0)


def test_implied_image_side_recovers_the_line():
    cells = _cells()
    cells = cells[cells["direction"] == "a-b"]
    ph, pm = cal.implied_image_side(cells)
    assert ph == pytest.approx(0.7) and pm == pytest.approx(0.02)
