"""Work shared between the encoders of one sample: the image score matrix the BkR image index
computes is kept (BkrImageIndex.build(keep_scores=True)) and gives every encoder's full BkR
ranks as the per-encoder image products did (random data; blocks that leave a lone row
included). The bits of the scores are equal where the BLAS computes a product's entry
independently of the block's other rows: OpenBLAS does for blocks of >= 2 rows above its
small-matrix sizes (M·N·K > 10^6), the sizes used here (N >= 450, d = 1280) and those of the
default and protocol configs."""

from __future__ import annotations

import numpy as np
import pytest

from backretrieval.metrics import kernels as K


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("n, block_rows", [(450, 450), (451, 150), (451, 90)])
def test_kept_scores_equal_the_pivot_products_bit_for_bit(n, block_rows):
    rng = np.random.default_rng(n + block_rows)
    s_img, t_img = _unit(rng.standard_normal((n, 1280))), _unit(rng.standard_normal((n, 1280)))
    idx = K.BkrImageIndex.build(s_img, t_img, k=3, block_elems=block_rows * n, assume_normalized=True, keep_scores=True)
    plain = K.BkrImageIndex.build(s_img, t_img, k=3, block_elems=block_rows * n, assume_normalized=True)
    assert np.array_equal(idx.codes, plain.codes) and plain.scores is None
    for m in sorted({2, 3, min(n, 17), n}):  # any block of >= 2 pivot rows, as _ranks_of_true_pivots scores them
        rows = np.sort(rng.choice(n, m, replace=False))
        assert np.array_equal(idx.scores[rows], np.matmul(t_img[rows], s_img.T)), m
    for _ in range(3):
        t_star = rng.integers(0, max(1, n // 4), n)  # hubs: many queries share a pivot
        want = K._ranks_of_true(t_img, s_img, np.arange(n), query_rows=t_star)
        assert np.array_equal(idx.ranks_of_sources(t_star), want)
    with pytest.raises(ValueError, match="keep_scores"):
        plain.ranks_of_sources(np.zeros(n, np.int64))


def test_evaluate_sample_with_and_without_the_shared_scores_is_identical():
    rng = np.random.default_rng(3)
    n = 150
    encs = {
        f"e{i}": {
            key: rng.standard_normal((n, dim), dtype=np.float32) for key in ("bkr_src", "bkr_tgt", "xlr_src", "xlr_tgt")
        }
        for i, dim in enumerate((16, 40, 7))
    }
    s_img, t_img = rng.standard_normal((n, 24), dtype=np.float32), rng.standard_normal((n, 24), dtype=np.float32)
    out = []
    for cache in (0, None):
        kept = {}
        res = K.evaluate_sample(encs, None, s_img, t_img, k=5, corr_seed=1, ranks_out=kept, score_cache_bytes=cache)
        out.append((res, kept))
    (res0, kept0), (res1, kept1) = out
    assert res0 == res1
    for enc in encs:
        for kind in ("xlr", "bkr"):
            assert np.array_equal(kept0[enc][kind], kept1[enc][kind])
