"""CSLS and ratio-margin retrieval (named options of XLR and BkR step 1): slow loops written
from the formulas, hand-made hub cases, and the default (cosine) path left unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import backretrieval.metrics as M
from backretrieval.metrics import retrieval as R


def cos(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return 0.0 if na == 0 or nb == 0 else float(a @ b / (na * nb))


def slow_r(x, others, k):
    """Mean cosine of x with its k nearest rows of ``others`` (k capped at len(others))."""
    sims = sorted((cos(x, o) for o in others), reverse=True)
    top = sims[: min(k, len(sims))]
    return sum(top) / len(top)


def slow_score(kind, x, y, src, tgt, k):
    """Conneau et al. 2018 eq. 6 (csls) / Artetxe & Schwenk 2019 ratio margin, one pair."""
    c = cos(x, y)
    if kind == "cosine":
        return c
    r_t, r_s = slow_r(x, tgt, k), slow_r(y, src, k)
    if kind == "csls":
        return 2 * c - r_t - r_s
    return c / (r_t / 2 + r_s / 2)


def slow_xlr_ranks(kind, src, tgt, k, extra=()):
    cands = list(tgt) + list(extra)
    out = []
    for i, x in enumerate(src):
        scores = [slow_score(kind, x, y, src, cands, k) for y in cands]
        out.append(1 + sum(s > scores[i] for s in scores))
    return np.array(out)


def slow_backretrieve(kind, src, tgt, k):
    out = []
    for x in src:
        scores = [slow_score(kind, x, y, src, tgt, k) for y in tgt]
        out.append(scores.index(max(scores)))  # ties -> lowest index
    return np.array(out)


def slow_bkr_ranks(kind, src, tgt, simg, timg, k):
    out = []
    for q, t in enumerate(slow_backretrieve(kind, src, tgt, k)):
        scores = [cos(timg[t], s) for s in simg]
        out.append(1 + sum(s > scores[q] for s in scores))
    return np.array(out)


def _data(seed=1, n=23, m=19, d=6, di=4):
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=(n, d))
    hub_dir = rng.normal(size=d)
    src = shared + 0.8 * rng.normal(size=(n, d)) + 1.5 * hub_dir  # anisotropic: hubs appear
    tgt = shared + 0.8 * rng.normal(size=(n, d)) + 1.5 * hub_dir
    tgt2 = rng.normal(size=(m, d)) + 1.5 * hub_dir
    return src, tgt, tgt2, rng.normal(size=(n, di)), rng.normal(size=(m, di))


@pytest.mark.parametrize("kind", ["cosine", "csls", "margin"])
@pytest.mark.parametrize(("k", "block"), [(None, M.DEFAULT_BLOCK_ELEMS), (3, 7), (1, 1), (100, M.DEFAULT_BLOCK_ELEMS)])
def test_against_slow_formula(kind, k, block):
    src, tgt, tgt2, simg, timg = _data()
    kk = {"csls": 10, "margin": 4}.get(kind, 1) if k is None else k
    fast = M.xlr_ranks(src, tgt, block_elems=block, retrieval=kind, retrieval_k=k)
    assert fast.tolist() == slow_xlr_ranks(kind, src, tgt, kk).tolist()
    fast_nn = M.backretrieve(src, tgt2, block_elems=block, retrieval=kind, retrieval_k=k)
    assert fast_nn.tolist() == slow_backretrieve(kind, src, tgt2, kk).tolist()
    fast_b = M.bkr_ranks(src, tgt2, simg, timg, block_elems=block, retrieval=kind, retrieval_k=k)
    assert fast_b.tolist() == slow_bkr_ranks(kind, src, tgt2, simg, timg, kk).tolist()
    assert M.bkr(src, tgt2, simg, timg, k=3, retrieval=kind, retrieval_k=k) == pytest.approx(np.mean(fast_b <= 3))
    index = M.BkrImageIndex.build(simg, timg, k=3)
    assert index.recall(src, tgt2, retrieval=kind, retrieval_k=k) == pytest.approx(np.mean(fast_b <= 3))


@pytest.mark.parametrize("kind", ["csls", "margin"])
def test_options_change_the_ranking_on_anisotropic_data(kind):
    # guards against an option that silently falls back to cosine
    src, tgt, tgt2, _, _ = _data()
    assert not np.array_equal(M.backretrieve(src, tgt2, retrieval=kind), M.backretrieve(src, tgt2))


@pytest.mark.parametrize("kind", ["csls", "margin"])
def test_extra_candidates_against_slow_formula(kind):
    src, tgt, tgt2, _, _ = _data(seed=3)
    extra = tgt2[:4]
    fast = M.xlr_ranks(src, tgt, retrieval=kind, extra_candidates=extra)
    kk = 10 if kind == "csls" else 4
    assert fast.tolist() == slow_xlr_ranks(kind, src, tgt, kk, extra=extra).tolist()
    # distractors never improve cosine ranks
    assert (M.xlr_ranks(src, tgt, extra_candidates=extra) >= M.xlr_ranks(src, tgt)).all()


def test_csls_demotes_a_hand_made_hub():
    # unit vectors at angles (degrees): queries 0, 20, 60; their translations 11 degrees away
    # (-11, 31) or 3 (63), and a hub at 10 that is closer to both of the first two queries.
    # Cosine retrieves the hub twice; CSLS (k=2) penalises its two close queries and gives
    # every query its own translation: 2cos11 - (cos11 + cos31)/2 = 1.044 > 2cos10 - cos10.
    ang = np.deg2rad
    src = np.array([[np.cos(ang(a)), np.sin(ang(a))] for a in (0, 20, 60)])
    tgt = np.array([[np.cos(ang(a)), np.sin(ang(a))] for a in (-11, 31, 63, 10)])
    assert M.backretrieve(src, tgt).tolist() == [3, 3, 2]
    assert M.backretrieve(src, tgt, retrieval="csls", retrieval_k=2).tolist() == [0, 1, 2]
    assert slow_backretrieve("csls", src, tgt, 2).tolist() == [0, 1, 2]
    assert M.backretrieve(src, tgt, retrieval="margin", retrieval_k=2).tolist() == [0, 1, 2]


def test_neighbourhood_means_equal_slow_means_and_repeat_bit_for_bit():
    rng = np.random.default_rng(4)
    q = M.normalize(rng.normal(size=(40, 8)).astype(np.float32))
    c = M.normalize(rng.normal(size=(31, 8)).astype(np.float32))
    r_q, r_c = M.neighbourhood_means(q, c, 5)
    again = M.neighbourhood_means(q, c, 5)
    assert again[0].tobytes() == r_q.tobytes() and again[1].tobytes() == r_c.tobytes()
    for block in (1, 8, 100, M.DEFAULT_BLOCK_ELEMS):  # BLAS may round a 1-row product differently
        b_q, b_c = M.neighbourhood_means(q, c, 5, block_elems=block)
        assert b_q == pytest.approx([slow_r(x, c, 5) for x in q], abs=1e-6)
        assert b_c == pytest.approx([slow_r(y, q, 5) for y in c], abs=1e-6)
        # the running column top-k equals the top-k of the full matrix from the same blocks
        # (retrieval_scores normalises its inputs: compare on the rows it uses)
        full = M.retrieval_scores(q, c, block_elems=block)
        f_q, f_c = R._neighbourhoods_of_matrix(full, 5)
        n_q, n_c = M.neighbourhood_means(M.normalize(q), M.normalize(c), 5, block_elems=block)
        assert f_q.tobytes() == n_q.tobytes() and f_c.tobytes() == n_c.tobytes()
    big_q, big_c = M.neighbourhood_means(q, c, 99)  # k capped at the other side's size
    assert big_q == pytest.approx([slow_r(x, c, 31) for x in q], abs=1e-6)
    assert big_c == pytest.approx([slow_r(y, q, 40) for y in c], abs=1e-6)


def test_scores_from_cosines_are_the_kernel_scores_bit_for_bit():
    src, _, tgt2, _, _ = _data(seed=8, n=50, m=45)
    src, tgt2 = src.astype(np.float32), tgt2.astype(np.float32)
    for block in (7 * 45, M.DEFAULT_BLOCK_ELEMS):
        cos_ = M.retrieval_scores(src, tgt2, block_elems=block)
        for kind in ("csls", "margin"):
            direct = M.retrieval_scores(src, tgt2, kind, block_elems=block)
            assert M.retrieval_scores(None, None, kind, cosines=cos_).tobytes() == direct.tobytes()
            assert np.argmax(direct, axis=1).tolist() == M.backretrieve(src, tgt2, block, retrieval=kind).tolist()


def test_retrieval_scores_match_slow_formula():
    src, _, tgt2, _, _ = _data(seed=7, n=9, m=8)
    for kind in M.RETRIEVALS:
        fast = M.retrieval_scores(src, tgt2, kind, retrieval_k=3, block_elems=5)
        slow = [[slow_score(kind, x, y, src, tgt2, 3) for y in tgt2] for x in src]
        assert fast == pytest.approx(np.array(slow), abs=1e-12)


def test_evaluate_sample_options_equal_the_individual_functions():
    src, tgt, tgt2, simg, timg = _data(seed=5, m=23)
    enc = {
        "a": {"xlr_src": src, "xlr_tgt": tgt, "bkr_src": src, "bkr_tgt": tgt2},
        "b": {
            "xlr_src": src[:, ::-1],
            "xlr_tgt": tgt[:, ::-1] + 0.3,
            "bkr_src": src[:, ::-1],
            "bkr_tgt": tgt2[:, ::-1],
        },
    }
    for kind in M.RETRIEVALS:
        ranks = {}
        res = M.evaluate_sample(enc, None, simg, timg, k=3, ranks_out=ranks, with_corr=False, retrieval=kind)
        for name, e in enc.items():
            xr = M.xlr_ranks(e["xlr_src"], e["xlr_tgt"], retrieval=kind)
            br = M.bkr_ranks(e["bkr_src"], e["bkr_tgt"], simg, timg, retrieval=kind)
            assert ranks[name]["xlr"].tolist() == xr.tolist()
            assert ranks[name]["bkr"].tolist() == br.tolist()
            assert res[name]["bkr_recall"] == float(np.mean(br <= 3))


def test_default_is_cosine_bit_for_bit():
    src, tgt, tgt2, simg, timg = _data(seed=6)
    src, tgt, tgt2 = (x.astype(np.float32) for x in (src, tgt, tgt2))
    assert M.xlr_ranks(src, tgt).tolist() == M.xlr_ranks(src, tgt, retrieval="cosine").tolist()
    a = M.evaluate_sample(
        {"e": {"xlr_src": src, "xlr_tgt": tgt, "bkr_src": src, "bkr_tgt": tgt2}}, None, simg, timg, k=10
    )
    b = M.evaluate_sample(
        {"e": {"xlr_src": src, "xlr_tgt": tgt, "bkr_src": src, "bkr_tgt": tgt2}},
        None,
        simg,
        timg,
        k=10,
        retrieval="cosine",
        retrieval_k=7,
    )
    assert a == b


def test_bad_options_are_clear_errors():
    src, tgt, *_ = _data()
    with pytest.raises(ValueError, match="retrieval must be one of"):
        M.xlr_ranks(src, tgt, retrieval="csl")
    with pytest.raises(ValueError, match="retrieval_k must be a positive integer"):
        M.backretrieve(src, tgt, retrieval="csls", retrieval_k=0)
    with pytest.raises(ValueError, match="retrieval must be one of"):
        M.evaluate_sample({}, None, src, tgt, k=10, retrieval="nope")
    # all cosines negative: the ratio margin's denominator is negative -> refused, not inverted
    q = np.array([[1.0, 0.0], [0.9, 0.1]])
    c = np.array([[-1.0, 0.05], [-0.9, -0.1]])
    with pytest.raises(ValueError, match="ratio margin is undefined"):
        M.backretrieve(q, c, retrieval="margin")


def test_soft_bkr_is_defined_for_cosine_step_1_only():
    rng = np.random.default_rng(3)
    s, t, si, ti = (rng.normal(size=(12, 5)).astype(np.float32) for _ in range(4))
    assert M.bkr(s, t, si, ti, k=3, top_m=1, retrieval="csls") == M.bkr(s, t, si, ti, k=3, retrieval="csls")
    with pytest.raises(ValueError, match="cosine step 1 only"):
        M.bkr(s, t, si, ti, k=3, top_m=2, retrieval="csls")
