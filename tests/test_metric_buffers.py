"""The speed measures of the paper-scale metric jobs change no result: reused work buffers
(``kernels._scratch``), the cache-sized gather chunks of ``bkr_image_pass``, XLR's queries
normalised once, and memory-mapped embedding artifacts (``io.load_npz_mapped``)."""

from __future__ import annotations

import threading
import zipfile

import numpy as np
import pytest

import backretrieval.metrics as K
from backretrieval._util import io
from backretrieval.metrics import _base as B


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _fresh(fn, *args, **kwargs):
    """``fn`` with an empty buffer pool: what every call computed before buffers were reused."""
    B._SCRATCH.pool = {}
    return fn(*args, **kwargs)


def test_reused_buffers_change_no_result_and_nothing_returned_aliases_them():
    rng = np.random.default_rng(0)
    big = [_unit(rng.standard_normal((300, 64))) for _ in range(2)]
    small = [_unit(rng.standard_normal((40, 64))) for _ in range(2)]
    wide = [rng.standard_normal((120, 16)) for _ in range(2)]  # float64 inputs: their own slot
    for a, b in (big, small, wide):
        a, b = K.normalize(a), K.normalize(b)
        want_r = _fresh(B._ranks_of_true, a, b, np.arange(a.shape[0]), block_elems=7 * b.shape[0])
        want_n = _fresh(B._nearest, a, b, block_elems=7 * b.shape[0])
        B._SCRATCH.pool = {}
        first_r = B._ranks_of_true(a, b, np.arange(a.shape[0]), block_elems=7 * b.shape[0])
        first_n = B._nearest(a, b, block_elems=7 * b.shape[0])
        for other in (big, small, wide):  # the pool grows, shrinks its views, changes dtype
            B._ranks_of_true(*(K.normalize(x) for x in other), np.arange(other[0].shape[0]))
            B._nearest(*(K.normalize(x) for x in other))
        assert np.array_equal(first_r, want_r) and np.array_equal(first_n, want_n)
        assert np.array_equal(B._ranks_of_true(a, b, np.arange(a.shape[0]), block_elems=7 * b.shape[0]), want_r)
        assert np.array_equal(B._nearest(a, b, block_elems=7 * b.shape[0]), want_n)


def test_image_pass_with_reused_buffers_changes_no_result():
    rng = np.random.default_rng(1)
    s1, t1 = _unit(rng.standard_normal((200, 96))), _unit(rng.standard_normal((200, 96)))
    s2, t2 = _unit(rng.standard_normal((150, 96))), _unit(rng.standard_normal((150, 96)))
    stars = [rng.integers(0, 200, 200), rng.integers(0, 20, 200)]

    def run(s, t, st):
        index, ranks = K.bkr_image_pass(s, t, st, 5, block_elems=60 * 200, assume_normalized=True)
        return index.codes, ranks

    want_codes, want_ranks = _fresh(run, s1, t1, stars)
    K.bkr_image_pass(s2, t2, [rng.integers(0, 150, 150)], 5, assume_normalized=True)  # other shapes in the pool
    codes, ranks = run(s1, t1, stars)
    assert np.array_equal(codes, want_codes) and all(map(np.array_equal, ranks, want_ranks))
    assert not any(np.shares_memory(r, buf) for r in ranks for buf in B._SCRATCH.pool.values())


def test_threads_get_their_own_buffers():
    rng = np.random.default_rng(2)
    pairs = [(_unit(rng.standard_normal((150, 32))), _unit(rng.standard_normal((150, 32)))) for _ in range(4)]
    want = [_fresh(B._ranks_of_true, a, b, np.arange(150), block_elems=11 * 150) for a, b in pairs]
    got: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        a, b = pairs[i]
        got[i] = [B._ranks_of_true(a, b, np.arange(150), block_elems=11 * 150) for _ in range(20)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(r, want[i]) for i in range(4) for r in got[i])


@pytest.mark.parametrize("gather", [1, 2 * 97, 7 * 97, B.GATHER_BLOCK_ELEMS, K.DEFAULT_BLOCK_ELEMS])
def test_image_pass_ranks_do_not_depend_on_the_gather_chunk(gather):
    rng = np.random.default_rng(3)
    s_img, t_img = _unit(rng.standard_normal((97, 40))), _unit(rng.standard_normal((97, 40)))
    scores = np.matmul(t_img, s_img.T)  # the pass's one block at the default block size
    t_star = rng.integers(0, 20, 97)
    brute = 1 + np.array([np.sum(scores[t_star[q]] > scores[t_star[q], q]) for q in range(97)])
    _, (got,) = K.bkr_image_pass(s_img, t_img, [t_star], 3, gather_elems=gather, assume_normalized=True)
    assert np.array_equal(got, brute)


def test_xlr_queries_normalised_once_give_the_same_bits():
    """The pipeline passes the BkR queries as XLR's queries (the same object): normalised once.
    Passing an equal copy takes the general path; both must agree bit for bit."""
    rng = np.random.default_rng(4)
    n = 120
    src, tgt, tgt2 = (rng.standard_normal((n, 48)).astype(np.float32) for _ in range(3))
    s_img, t_img = rng.standard_normal((n, 64)).astype(np.float32), rng.standard_normal((n, 64)).astype(np.float32)
    shared, copied = {}, {}
    a = K.evaluate_sample(
        {"e": {"bkr_src": src, "bkr_tgt": tgt2, "xlr_src": src, "xlr_tgt": tgt}},
        None,
        s_img,
        t_img,
        k=5,
        ranks_out=shared,
    )
    b = K.evaluate_sample(
        {"e": {"bkr_src": src, "bkr_tgt": tgt2, "xlr_src": src.copy(), "xlr_tgt": tgt}},
        None,
        s_img,
        t_img,
        k=5,
        ranks_out=copied,
    )
    assert a == b
    assert all(np.array_equal(shared["e"][x], copied["e"][x]) for x in ("xlr", "bkr"))
    with pytest.raises(ValueError, match="e xlr text: dimension mismatch"):
        K.evaluate_sample(
            {"e": {"bkr_src": src, "bkr_tgt": tgt2, "xlr_src": src, "xlr_tgt": tgt[:, :10]}}, None, s_img, t_img, k=5
        )


def test_normalize_equals_the_textbook_formula_bits():
    """normalize's max |x| and row norms equal those of np.abs(...).max and np.linalg.norm."""
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        x = (rng.standard_normal((500, 300)) * rng.exponential(size=(500, 1))).astype(dtype)
        x[3] = 0.0
        x[4, :5] = -0.0
        x[6] *= 1e-30
        scale = np.abs(x).max(axis=1, keepdims=True)
        scale[scale == 0] = 1
        y = x / scale
        norms = np.linalg.norm(y, axis=1, keepdims=True)
        norms[norms == 0] = 1
        assert K.normalize(x).tobytes() == (y / norms).tobytes()


def test_mapped_npz_equals_the_read_one(tmp_path):
    rng = np.random.default_rng(6)
    arrays = {
        "emb": rng.standard_normal((300, 7)).astype(np.float32),
        "fortran": np.asfortranarray(rng.standard_normal((5, 3))),
        "ids": np.array(["a", "bé", "c-1"]),
        "empty": np.zeros((0, 4), np.float32),
        "ints": np.arange(9, dtype=np.int64),
    }
    stored, packed = tmp_path / "stored.npz", tmp_path / "packed.npz"
    io.save_npz(stored, **arrays)
    np.savez_compressed(packed, **arrays)
    with zipfile.ZipFile(stored) as zf:
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}
    for path in (stored, packed):
        read, mapped = io.load_npz(path), io.load_npz_mapped(path)
        assert sorted(read) == sorted(mapped) == sorted(arrays)
        for key, want in arrays.items():
            got = mapped[key]
            assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape, key
            assert np.array_equal(got, want) and np.array_equal(read[key], want), key
            assert got.flags.f_contiguous == want.flags.f_contiguous, key
    mapped = io.load_npz_mapped(stored)
    assert not mapped["emb"].flags.writeable  # a read-only mapping: no step can edit an artifact
    with pytest.raises(ValueError):
        mapped["emb"][0, 0] = 1.0
