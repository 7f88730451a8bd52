"""Shared pieces of the metric kernels: L2 normalisation, Recall@k / MRR / mean rank of rank
arrays, and the blocked rank and nearest-neighbour passes (inputs already normalised).

Conventions (every kernel follows them): the rank of the true candidate is 1 + the number of
candidates with a *strictly* higher score; the nearest neighbour is ``argmax`` over candidates,
ties going to the lowest index. Queries are processed in blocks whose score matrix has at most
``block_elems`` entries, so no N×N matrix exists beyond one bounded block; the score buffers of
those blocks are reused per thread (``_scratch``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .retrieval import _HubAdjustment

DEFAULT_BLOCK_ELEMS = 1 << 24
#: rows per chunk of the BkR rank passes that gather a query's score row from the current
#: image block, compare and count (:func:`bkr_image_pass`): the gathered rows and their mask
#: stay in the CPU cache (4 MB + 1 MB), where 64 MB chunks run from memory at about 4x the time
#: (benchmarks/README.md). Counting does not depend on the chunk, so neither do the ranks.
GATHER_BLOCK_ELEMS = 1 << 20
#: rows per block of :func:`normalize`'s divide and norm passes (256 KB of float32: L2-resident)
NORMALIZE_BLOCK_ELEMS = 1 << 16


# --------------------------------------------------------------------------------------------
# helpers


def normalize(x: np.ndarray, inplace: bool = False) -> np.ndarray:
    """L2-normalise rows (float32 stays float32, other dtypes become float64).

    An all-zero row stays all-zero (its cosine with anything is 0). NaN/inf → ValueError.
    ``inplace=True`` overwrites ``x`` (a writeable float32/float64 array) instead of making
    one full-size copy — same arithmetic, same bits; for very large N (memory).
    """
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"expected a 2-D embedding matrix, got shape {arr.shape}")
    can_inplace = inplace and arr.dtype in (np.float32, np.float64) and arr.flags.writeable
    if inplace and not can_inplace:
        raise ValueError("inplace=True needs a writeable float32 or float64 array")
    owned = can_inplace  # may be overwritten: the caller's array (inplace) or our own copy
    if arr.dtype != np.float32 and not can_inplace:
        arr, owned = arr.astype(np.float64), True
    # scale by the largest magnitude first so tiny/huge rows neither underflow nor overflow;
    # finiteness and row maxima per block (no full-size temporaries)
    scale = np.empty((arr.shape[0], 1), dtype=arr.dtype)
    step = _block_rows(arr.shape[0], arr.shape[1], DEFAULT_BLOCK_ELEMS)
    for start in range(0, arr.shape[0], step):
        blk = arr[start : start + step]
        # max |x| as max(max x, -min x): the same value, without an |x| temporary
        row_max = (
            np.maximum(np.max(blk, axis=1, keepdims=True), -np.min(blk, axis=1, keepdims=True))
            if blk.shape[1]
            else np.zeros((blk.shape[0], 1))
        )
        if not np.isfinite(row_max).all():  # max propagates NaN and inf: one pass checks both
            raise ValueError("embedding matrix contains NaN or inf values")
        scale[start : start + step] = row_max
    scale[scale == 0] = 1
    # then divide, square-sum and divide again block by block in the CPU cache (one read and
    # one write of the matrix instead of five passes); row-wise arithmetic as np.linalg.norm
    # does it (sqrt of the pairwise add.reduce of x*x), so the same bits as one call
    out = arr if owned else np.empty(arr.shape, dtype=arr.dtype)
    step = _block_rows(arr.shape[0], arr.shape[1], NORMALIZE_BLOCK_ELEMS)
    sq = np.empty((step, arr.shape[1]), dtype=arr.dtype)
    for start in range(0, arr.shape[0], step):
        stop = min(arr.shape[0], start + step)
        blk = np.divide(arr[start:stop], scale[start:stop], out=out[start:stop])
        norms = np.sqrt(np.add.reduce(np.multiply(blk, blk, out=sq[: stop - start]), axis=1, keepdims=True))
        norms[norms == 0] = 1
        blk /= norms
    return out


def _as_pair(a: np.ndarray, b: np.ndarray, what: str, inplace: bool = False) -> tuple[np.ndarray, np.ndarray]:
    a = normalize(a, inplace)
    b = a if (inplace and b is a) else normalize(b, inplace)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{what}: dimension mismatch {a.shape[1]} vs {b.shape[1]}")
    dt = np.result_type(a.dtype, b.dtype)
    return a.astype(dt, copy=False), b.astype(dt, copy=False)


def _block_rows(n_rows: int, n_cols: int, block_elems: int) -> int:
    return max(1, min(n_rows, block_elems // max(1, n_cols)))


def recall_at_k(ranks: np.ndarray, k: int) -> float:
    """Fraction of queries whose rank is <= k."""
    ranks = np.asarray(ranks)
    if ranks.size == 0:
        raise ValueError("no queries")
    return float(np.mean(ranks <= k))


def mrr(ranks: np.ndarray) -> float:
    """Mean reciprocal rank."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if ranks.size == 0:
        raise ValueError("no queries")
    return float(np.mean(1.0 / ranks))


def mean_rank(ranks: np.ndarray) -> float:
    ranks = np.asarray(ranks, dtype=np.float64)
    if ranks.size == 0:
        raise ValueError("no queries")
    return float(np.mean(ranks))


# --------------------------------------------------------------------------------------------
# core kernels (inputs already normalised)


def _ranks_of_true(
    queries: np.ndarray,
    candidates: np.ndarray,
    true_idx: np.ndarray,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    adjust: _HubAdjustment | None = None,
) -> np.ndarray:
    """rank[i] = 1 + #{j : <q_i, c_j> > <q_i, c_true[i]>}, computed block by block.

    The true score is read from the same block of the same matrix product, so it is
    bit-identical to the scores it is compared against. ``adjust`` (optional): the cosines of
    each block are turned into CSLS / margin scores before ranking.
    """
    n = queries.shape[0]
    ranks = np.empty(n, dtype=np.int64)
    step = _block_rows(n, candidates.shape[0], block_elems)
    ct = candidates.T
    score_buf = _scratch("score", (step, candidates.shape[0]), np.result_type(queries.dtype, candidates.dtype))
    greater_buf = _scratch("mask", (step, candidates.shape[0]), bool)
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = np.matmul(queries[start:stop], ct, out=score_buf[: stop - start])
        if adjust is not None:
            adjust.apply(scores, start, stop)
        ranks[start:stop] = _rank_in_rows(scores, true_idx[start:stop], greater_buf)
    return ranks


def _rank_in_rows(scores: np.ndarray, true_cols: np.ndarray, greater_buf: np.ndarray) -> np.ndarray:
    """1 + #{j : scores[r, j] > scores[r, true_cols[r]]} per row (``greater_buf``: reused mask)."""
    true_scores = scores[np.arange(scores.shape[0]), true_cols]
    return 1 + np.count_nonzero(np.greater(scores, true_scores[:, None], out=greater_buf[: scores.shape[0]]), axis=1)


def _score_buffer(step: int, queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """One score block reused by every block: fresh N-column blocks would be page-faulted in
    again for each block. Same sgemm, same bits."""
    return np.empty((step, candidates.shape[0]), dtype=np.result_type(queries.dtype, candidates.dtype))


_SCRATCH = threading.local()


def _scratch(slot: str, shape: tuple[int, int], dtype: np.typing.DTypeLike) -> np.ndarray:
    """A work buffer of ``shape`` kept per thread and ``slot`` (``"score"``, ``"gather"``,
    ``"mask"``) and reused by the next call: a sample runs ~2 block loops per encoder, and a
    fresh 64 MB block is page-faulted and zeroed by the kernel each time (about 10 % of a
    sample's time at N=10,000, benchmarks/README.md). Only the block loops of
    :func:`_ranks_of_true`, :func:`_nearest` and :func:`bkr_image_pass` use it; none calls
    another while holding a slot, and nothing they return is a view of it. Same products and passes, same bits. Holds at most
    ``block_elems`` entries per slot and dtype (about 150 MB at the default block size)."""
    dtype = np.dtype(dtype)
    need = shape[0] * shape[1]
    pool = getattr(_SCRATCH, "pool", None)
    if pool is None:
        pool = _SCRATCH.pool = {}
    buf = pool.get((slot, dtype))
    if buf is None or buf.size < need:
        buf = pool[(slot, dtype)] = np.empty(need, dtype)
    return buf[:need].reshape(shape)


def _nearest(
    queries: np.ndarray,
    candidates: np.ndarray,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    adjust: _HubAdjustment | None = None,
) -> np.ndarray:
    """argmax_j <q_i, c_j> for every query (ties → lowest index), block by block; with
    ``adjust``, argmax of the CSLS / margin scores instead."""
    n = queries.shape[0]
    out = np.empty(n, dtype=np.int64)
    step = _block_rows(n, candidates.shape[0], block_elems)
    ct = candidates.T
    score_buf = _scratch("score", (step, candidates.shape[0]), np.result_type(queries.dtype, candidates.dtype))
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = np.matmul(queries[start:stop], ct, out=score_buf[: stop - start])
        if adjust is not None:
            adjust.apply(scores, start, stop)
        out[start:stop] = np.argmax(scores, axis=1)
    return out


def _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img) -> None:
    if src_text.shape[0] != src_img.shape[0]:
        raise ValueError(f"bkr: src_text has {src_text.shape[0]} rows but src_img has {src_img.shape[0]}")
    if tgt_text.shape[0] != tgt_img.shape[0]:
        raise ValueError(f"bkr: tgt_text has {tgt_text.shape[0]} rows but tgt_img has {tgt_img.shape[0]}")
