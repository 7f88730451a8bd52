"""Work shared between the encoders of one sample: the image score matrix is computed once,
block by block, and every encoder's BkR ranks are counted from it (``bkr_image_pass``). An
encoder's results and per-query ranks are then the same bits whether it is evaluated alone,
with others or in another order, on any BLAS: no image score is computed twice in matrices of
different heights (OpenBLAS's AVX2 kernels give a row other bits in a matrix of another
height; the earlier design, per-encoder products of the distinct back-retrieved targets, gave
other ranks at near-ties there). Sizes above OpenBLAS's small-matrix path (N = 450, d = 1280)
and below it."""

from __future__ import annotations

import numpy as np
import pytest

import backretrieval.metrics as K


def _encoders(rng: np.random.Generator, n: int, dims: tuple[int, ...]) -> dict[str, dict[str, np.ndarray]]:
    return {
        f"e{i}": {key: rng.standard_normal((n, dim), dtype=np.float32) for key in ("bkr_src", "bkr_tgt", "xlr_tgt")}
        for i, dim in enumerate(dims)
    }


def _run(encs, s_img, t_img, **kw):
    for e in encs.values():
        e["xlr_src"] = e["bkr_src"]  # as the pipeline passes them: the same queries
    kept: dict = {}
    res = K.evaluate_sample(encs, None, s_img, t_img, k=5, corr_seed=1, ranks_out=kept, **kw)
    return res, kept


@pytest.mark.parametrize("n, d_img", [(450, 1280), (151, 24)])
def test_an_encoder_gets_the_same_bits_alone_or_with_others(n, d_img):
    rng = np.random.default_rng(n)
    encs = _encoders(rng, n, (16, 300, 7))
    s_img, t_img = rng.standard_normal((n, d_img), dtype=np.float32), rng.standard_normal((n, d_img), dtype=np.float32)
    res, kept = _run(encs, s_img, t_img)
    for name in encs:
        alone_res, alone_kept = _run({name: encs[name]}, s_img, t_img)
        assert alone_res[name] == res[name]
        for kind in ("xlr", "bkr"):
            assert np.array_equal(alone_kept[name][kind], kept[name][kind])
    rev_res, rev_kept = _run(dict(reversed(list(encs.items()))), s_img, t_img)
    assert rev_res == res and list(rev_kept) == list(reversed(list(kept)))
    # hits only: the index's lookups give the hits of the full ranks
    hits_res, hits_kept = _run(encs, s_img, t_img, full_bkr_ranks=False)
    for name in encs:
        assert hits_res[name]["bkr_recall"] == res[name]["bkr_recall"]
        assert np.array_equal(hits_kept[name]["bkr"], (kept[name]["bkr"] <= 5).astype(np.int64))


def test_the_pass_scores_each_image_pair_once(monkeypatch):
    """One image product per sample, whatever the number of encoders (the N x N x d_img
    product is the largest of a sample with the paper's image features)."""
    rng = np.random.default_rng(0)
    n = 120
    encs = _encoders(rng, n, (16, 8, 12, 20))
    s_img, t_img = rng.standard_normal((n, 64), dtype=np.float32), rng.standard_normal((n, 64), dtype=np.float32)
    calls = []
    real = np.matmul

    def counting(a, b, *args, **kwargs):
        if a.shape[1] == 64:
            calls.append(a.shape[0])
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(np, "matmul", counting)
    _run(encs, s_img, t_img, with_corr=False)
    assert sum(calls) == n  # every target image row scored exactly once
