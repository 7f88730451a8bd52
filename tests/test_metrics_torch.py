"""metrics_torch (CPU) against the numpy reference kernels in backretrieval.metrics.

Exactness: ranks must be *identical*. On generic float32 data two BLAS libraries may order
the dot-product sums differently, so exact identity is tested (a) on data whose dot products
are exact in float32 whatever the summation order (entries 0, ±1/4 with 16 non-zeros per row:
every product and partial sum is a multiple of 1/16) — these data have many exact ties — and
(b) in float64; generic float32 data are compared on all queries that are not within 1e-5 of
a tie. Reduced precision (fp16) is held to the stated tolerance |ΔRecall@10| <= 0.01.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not importable; metrics_torch untested")

import backretrieval.metrics as M  # noqa: E402
from backretrieval.metrics import torch_kernels as T  # noqa: E402

CPU = "cpu"


def dyadic(rng: np.random.Generator, n: int, d: int, nnz: int = 16) -> np.ndarray:
    """Rows with exactly ``nnz`` entries ±1 (rest 0): normalised entries are ±1/4 (nnz=16).

    Only 2*C(d,16) distinct rows, and d small → many duplicate rows and tied scores.
    """
    x = np.zeros((n, d), np.float32)
    for i in range(n):
        cols = rng.choice(d, size=nnz, replace=False)
        x[i, cols] = rng.choice(np.array([-1.0, 1.0], np.float32), size=nnz)
    return x


def with_duplicates(rng: np.random.Generator, x: np.ndarray, frac: float = 0.3) -> np.ndarray:
    """Copy some rows over others (exact duplicate candidates → exact ties)."""
    x = x.copy()
    n = x.shape[0]
    dst = rng.choice(n, size=int(frac * n), replace=False)
    x[dst] = x[rng.integers(0, n, size=dst.size)]
    return x


def correlated(rng, n, d, noise, dtype=np.float32):
    a = rng.standard_normal((n, d))
    b = a + noise * rng.standard_normal((n, d))
    return a.astype(dtype), b.astype(dtype)


def test_normalised_dyadic_rows_are_exact():
    # the premise of the exactness tests: normalisation gives exactly ±0.25 and 0
    x = M.normalize(dyadic(np.random.default_rng(0), 20, 24))
    assert set(np.unique(np.abs(x)).tolist()) == {0.0, 0.25}


@pytest.mark.parametrize("block_elems", [1, 7, 64, M.DEFAULT_BLOCK_ELEMS])
def test_exact_equal_with_ties(block_elems):
    rng = np.random.default_rng(1)
    n, m, d = 90, 70, 20
    src = with_duplicates(rng, dyadic(rng, n, d))
    tgt = with_duplicates(rng, dyadic(rng, n, d))
    s_img = with_duplicates(rng, dyadic(rng, n, d + 4))
    t_img = with_duplicates(rng, dyadic(rng, m, d + 4))
    tgt2 = with_duplicates(rng, dyadic(rng, m, d))

    r_np = M.xlr_ranks(src, tgt, block_elems=block_elems)
    r_t = T.xlr_ranks(src, tgt, block_elems=block_elems, device=CPU)
    assert r_t.dtype == np.int64
    np.testing.assert_array_equal(r_t, r_np)
    assert r_np.max() > 1  # non-trivial ranks

    t_np = M.backretrieve(src, tgt2, block_elems=block_elems)
    t_t = T.backretrieve(src, tgt2, block_elems=block_elems, device=CPU)
    np.testing.assert_array_equal(t_t, t_np)

    b_np = M.bkr_ranks(src, tgt2, s_img, t_img, block_elems=block_elems)
    b_t = T.bkr_ranks(src, tgt2, s_img, t_img, block_elems=block_elems, device=CPU)
    np.testing.assert_array_equal(b_t, b_np)

    for k in (1, 3, 10):
        idx_np = M.BkrImageIndex.build(s_img, t_img, k=k, block_elems=block_elems)
        idx_t = T.build_image_index(s_img, t_img, k=k, block_elems=block_elems, device=CPU)
        assert (idx_t.k, idx_t.n_src, idx_t.n_tgt) == (k, n, m)
        np.testing.assert_array_equal(idx_t.codes, idx_np.codes)
        # boundary ties make the index larger than k per row on these data
        assert idx_np.codes.size >= m * k
        assert T.index_recall(idx_t, src, tgt2, device=CPU) == idx_np.recall(src, tgt2)
        assert T.index_recall(idx_t, src, tgt2, device=CPU) == M.recall_at_k(b_np, k)


def test_ties_actually_present_and_resolved():
    rng = np.random.default_rng(2)
    src = dyadic(rng, 60, 20)
    tgt = dyadic(rng, 40, 20)
    tgt[5] = tgt[17] = tgt[33] = src[0] * 3  # same direction at three indices
    scores = M.normalize(src) @ M.normalize(tgt).T
    n_max = (scores == scores.max(axis=1, keepdims=True)).sum(axis=1)
    assert (n_max > 1).sum() >= 5  # several rows with tied maxima
    t = T.backretrieve(src, tgt, device=CPU)
    assert t[0] == 5  # lowest of the tied indices
    first = np.array([np.flatnonzero(row == row.max())[0] for row in scores])
    np.testing.assert_array_equal(t, first)


def test_first_argmax_explicit():
    s = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [0.0, -1.0, 5.0, 5.0], [9.0, 1.0, 2.0, 3.0]])
    assert T._first_argmax(s).tolist() == [1, 0, 2, 0]
    h = s.to(torch.float16)
    assert T._first_argmax(h).tolist() == [1, 0, 2, 0]


def test_float64_exact_equal_generic():
    rng = np.random.default_rng(3)
    src, tgt = correlated(rng, 300, 48, 1.5, np.float64)
    s_img, t_img = correlated(rng, 300, 40, 1.0, np.float64)
    np.testing.assert_array_equal(T.xlr_ranks(src, tgt, device=CPU, precision="fp64"), M.xlr_ranks(src, tgt))
    np.testing.assert_array_equal(
        T.bkr_ranks(src, tgt, s_img, t_img, block_elems=500, device=CPU, precision="fp64"),
        M.bkr_ranks(src, tgt, s_img, t_img, block_elems=500),
    )


def test_float32_generic_equal_except_near_ties():
    rng = np.random.default_rng(4)
    src, tgt = correlated(rng, 400, 64, 4.0)
    r_np = M.xlr_ranks(src, tgt)
    r_t = T.xlr_ranks(src, tgt, device=CPU)
    # exact float64 scores tell which queries have a competitor within 1e-5 of the true score
    s64 = M.normalize(src.astype(np.float64)) @ M.normalize(tgt.astype(np.float64)).T
    gap = np.abs(s64 - np.diag(s64)[:, None])
    np.fill_diagonal(gap, np.inf)
    robust = gap.min(axis=1) > 1e-5
    assert robust.mean() > 0.9
    np.testing.assert_array_equal(r_t[robust], r_np[robust])
    assert 0.05 < M.recall_at_k(r_np, 10) < 0.95  # a non-trivial difficulty level
    assert T.xlr(src, tgt, k=10, device=CPU) == pytest.approx(M.xlr(src, tgt, k=10), abs=1 / 400)


def test_fp16_within_stated_tolerance():
    rng = np.random.default_rng(5)
    src, tgt = correlated(rng, 600, 64, 4.0)
    rep = T.precision_check(src, tgt, "fp16", k=10, device=CPU)
    assert rep.n_queries == 600
    assert 0.05 < rep.recall_ref < 0.95
    assert rep.recall_ref == M.xlr(src, tgt, k=10)
    # stated tolerance: |dRecall@10| <= 0.01; rank changes are few and small (rounding only)
    assert abs(rep.recall_diff) <= 0.01
    assert 0 < rep.frac_rank_differs < 0.1
    assert rep.max_abs_rank_diff <= 5


def test_bad_arguments():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="precision"):
        T.xlr_ranks(x, x, device=CPU, precision="fp8")
    with pytest.raises(ValueError, match="dimension mismatch"):
        T.xlr_ranks(x, np.ones((3, 5)), device=CPU)
    with pytest.raises(ValueError, match="aligned"):
        T.xlr_ranks(x, np.ones((2, 4)), device=CPU)
    with pytest.raises(ValueError, match="src_img"):
        T.bkr_ranks(x, x, np.ones((2, 4)), x, device=CPU)
    with pytest.raises(ValueError, match="NaN"):
        T.xlr_ranks(np.full((3, 4), np.nan), x, device=CPU)
    idx = T.build_image_index(x, x, k=2, device=CPU)
    with pytest.raises(ValueError, match="image index"):
        T.index_recall(idx, np.ones((2, 4)), x, device=CPU)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            T.resolve_device("cuda")
        assert T.resolve_device("auto").type == "cpu"


@pytest.mark.parametrize("block", [1, 64, T.DEFAULT_BLOCK_ELEMS])
def test_shared_pivot_ranks_equal_numpy(block):
    """The torch kernel scores each distinct back-retrieved pivot once; with a hub taken by
    half the queries it gives the numpy image pass's ranks (exact dyadic data: every product
    is exact, so no BLAS rounding can split the two)."""
    rng = np.random.default_rng(5)
    piv, cand = M.normalize(dyadic(rng, 19, 32)), M.normalize(dyadic(rng, 41, 32))
    rows = rng.integers(0, 19, size=41)
    rows[rng.permutation(41)[:20]] = 3
    true_idx = np.arange(41)
    want = M.bkr_image_pass(cand, piv, [rows], assume_normalized=True, with_index=False)[1][0]
    got = T._ranks_of_true(
        torch.from_numpy(piv),
        torch.from_numpy(cand),
        torch.from_numpy(true_idx),
        block,
        query_idx=torch.from_numpy(rows),
    )
    assert got.numpy().tolist() == want.tolist()


def _fp32_knobs() -> list[str]:
    return [torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision]


@pytest.mark.parametrize("mode", ["high", "medium"])
def test_fp32_kernels_are_ieee_whatever_the_global_matmul_precision(mode, monkeypatch):
    """A caller's torch.set_float32_matmul_precision("high"/"medium") (TF32 / bf16 products on
    CUDA and oneDNN) must not reach the "fp32" kernels: every matrix product inside them runs
    with the IEEE setting, and the caller's setting is back afterwards. (Recorded at each
    product: on this CPU the reduced modes change float32 products only at the 1e-7 level, too
    little to show in ranks reliably.)"""
    if not hasattr(torch.backends.mkldnn, "matmul") or not hasattr(torch.backends.mkldnn.matmul, "fp32_precision"):
        pytest.skip("this torch has no per-backend fp32_precision knobs")
    rng = np.random.default_rng(7)
    src, tgt = correlated(rng, 300, 64, 4.0)
    s_img, t_img = correlated(rng, 300, 80, 1.0)
    ref = (
        T.xlr_ranks(src, tgt, device=CPU),
        T.bkr_ranks(src, tgt, s_img, t_img, device=CPU),
        T.build_image_index(s_img, t_img, k=10, device=CPU).codes,
    )
    seen: list[tuple[str, ...]] = []
    matmul = torch.Tensor.__matmul__

    def recording_matmul(self, other):
        seen.append(tuple(_fp32_knobs()))
        return matmul(self, other)

    monkeypatch.setattr(torch.Tensor, "__matmul__", recording_matmul)
    before = _fp32_knobs()
    torch.set_float32_matmul_precision(mode)
    try:
        set_by_mode = _fp32_knobs()
        got = (
            T.xlr_ranks(src, tgt, device=CPU),
            T.bkr_ranks(src, tgt, s_img, t_img, device=CPU),
            T.build_image_index(s_img, t_img, k=10, device=CPU).codes,
        )
        after = _fp32_knobs()
    finally:
        torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision = before
    assert set_by_mode != ["ieee", "ieee"]  # the mode does switch the knobs away from IEEE
    assert len(seen) >= 4 and set(seen) == {("ieee", "ieee")}  # xlr, bkr (2), index
    assert after == set_by_mode  # restored
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(g, r)
