"""Shared pieces of the metric kernels: L2 normalisation, Recall@k / MRR / mean rank of rank
arrays, and the blocked rank and nearest-neighbour passes (inputs already normalised).

Conventions (every kernel follows them): the rank of the true candidate is 1 + the number of
candidates with a *strictly* higher score; the nearest neighbour is ``argmax`` over candidates,
ties going to the lowest index. Queries are processed in blocks whose score matrix has at most
``block_elems`` entries, so no N×N matrix exists beyond one bounded block; the score buffers of
those blocks are reused per thread (``_scratch``).

Identical candidates tie exactly: a BLAS product gives two identical columns bits that depend on
where they sit (its blocking and small-matrix paths sum in another order at other positions;
cosines of equal rows differed by up to 5e-7 on real data). Every score block is therefore
computed by :class:`Columns`: with the distinct candidate rows only, each copied out to all of
its duplicates, so equal candidate vectors get bit-equal scores wherever they sit, whatever the
thread count, and "ties → lowest index" holds as documented. Without duplicates the product is
the plain one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .._util.vectors import DEFAULT_BLOCK_ELEMS, NORMALIZE_BLOCK_ELEMS, normalize
from .._util.vectors import block_rows as _block_rows


class ScoreAdjustment(Protocol):
    """What the blocked passes apply to a block of cosines before ranking (rows = queries
    ``start:stop``, all candidates), in place: the CSLS / ratio-margin options of
    :mod:`.retrieval` (its ``_HubAdjustment``)."""

    def apply(self, scores: np.ndarray, start: int, stop: int) -> None: ...


#: rows per chunk of the BkR rank passes that gather a query's score row from the current
#: image block, compare and count (:func:`bkr_image_pass`): the gathered rows and their mask
#: stay in the CPU cache (4 MB + 1 MB), where 64 MB chunks run from memory at about 4x the time
#: (benchmarks/README.md). Counting does not depend on the chunk, so neither do the ranks.
GATHER_BLOCK_ELEMS = 1 << 20


# --------------------------------------------------------------------------------------------
# helpers


def _as_pair(a: np.ndarray, b: np.ndarray, what: str, inplace: bool = False) -> tuple[np.ndarray, np.ndarray]:
    a = normalize(a, inplace)
    b = a if (inplace and b is a) else normalize(b, inplace)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{what}: dimension mismatch {a.shape[1]} vs {b.shape[1]}")
    dt = np.result_type(a.dtype, b.dtype)
    return a.astype(dt, copy=False), b.astype(dt, copy=False)


def _row_hashes(x: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every row's values (-0.0 and 0.0 alike): the float bits times fixed odd
    multipliers, summed modulo 2^64, block by block in the CPU cache. Equal rows get equal
    hashes; :func:`distinct_rows` checks the rare equal hashes of unequal rows exactly."""
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    n, d = x.shape
    words = x.dtype.itemsize // 4
    mult = np.random.default_rng(0x5EED).integers(1, 1 << 63, size=d * words, dtype=np.uint64) | np.uint64(1)
    out = np.empty(n, dtype=np.uint64)
    step = _block_rows(n, d * words, NORMALIZE_BLOCK_ELEMS)
    for start in range(0, n, step):
        blk = np.add(x[start : start + step], x.dtype.type(0))  # -0.0 + 0 = 0.0: one bit pattern per value
        bits = np.ascontiguousarray(blk).view(np.uint32).reshape(blk.shape[0], d * words)
        out[start : start + step] = np.multiply(bits, mult, dtype=np.uint64).sum(axis=1, dtype=np.uint64)
    return out


def distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(first, inverse)`` of the rows of a 2-D float array that has equal rows, else None.

    ``first[u]``: the index of the first row of the u-th distinct value (increasing, so the
    distinct rows keep the order of their first occurrence); ``inverse[i]``: the u of row i, so
    ``x[first][inverse]`` equals ``x``. Rows are equal when every value is (-0.0 == 0.0). Cost:
    one hashing pass over x (:func:`_row_hashes`) and an exact check of the rows whose hash is
    shared, about 1 % of one product with 1,000 queries (benchmarks/README.md)."""
    n = x.shape[0]
    if n < 2 or x.shape[1] == 0:
        return None if n < 2 else (np.zeros(1, np.int64), np.zeros(n, np.int64))
    h = _row_hashes(x)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    shared = np.zeros(n, dtype=bool)
    eq = hs[1:] == hs[:-1]
    if not eq.any():
        return None
    shared[1:] |= eq
    shared[:-1] |= eq
    cand = order[shared]  # rows whose hash another row has: compare their values exactly
    rows = np.add(x[cand], x.dtype.type(0))
    void = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, inv_c = np.unique(void, return_inverse=True)
    lowest = np.full(int(inv_c.max()) + 1, n, dtype=np.int64)
    np.minimum.at(lowest, inv_c, cand)
    label = np.arange(n, dtype=np.int64)
    label[cand] = lowest[inv_c]  # every row labelled by the first row equal to it
    first = np.flatnonzero(label == np.arange(n))
    if first.size == n:
        return None
    return first, np.searchsorted(first, label)


@dataclass(frozen=True)
class Columns:
    """The candidate side of a blocked score product: identical candidate rows get bit-identical
    score columns (module doc). ``rows``: the candidates (n, d); ``distinct``: their distinct
    rows in order of first occurrence (``rows`` itself when all are distinct); ``inverse``:
    the distinct row of every candidate (None when all are distinct)."""

    rows: np.ndarray
    distinct: np.ndarray
    inverse: np.ndarray | None

    @classmethod
    def of(cls, candidates: np.ndarray | Columns) -> Columns:
        if isinstance(candidates, Columns):
            return candidates
        found = distinct_rows(candidates)
        if found is None:
            return cls(candidates, candidates, None)
        first, inverse = found
        return cls(candidates, np.ascontiguousarray(candidates[first]), inverse)

    @property
    def n(self) -> int:
        return self.rows.shape[0]

    @property
    def n_duplicates(self) -> int:
        """Candidates equal to an earlier one."""
        return self.n - self.distinct.shape[0]

    def product(self, queries: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``queries @ rows.T`` into ``out`` (queries × n): one product with the distinct rows,
        copied out to their duplicates (an O(queries × n) gather beside the sgemm)."""
        if self.inverse is None:
            return np.matmul(queries, self.rows.T, out=out)
        dtype = np.result_type(queries.dtype, self.distinct.dtype)
        part = _scratch("distinct", (queries.shape[0], self.distinct.shape[0]), dtype)
        np.matmul(queries, self.distinct.T, out=part)
        return np.take(part, self.inverse, axis=1, out=out)


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
    candidates: np.ndarray | Columns,
    true_idx: np.ndarray,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    adjust: ScoreAdjustment | None = None,
) -> np.ndarray:
    """rank[i] = 1 + #{j : <q_i, c_j> > <q_i, c_true[i]>}, computed block by block.

    The true score is read from the same block of the same matrix product, so it is
    bit-identical to the scores it is compared against. ``adjust`` (optional): the cosines of
    each block are turned into CSLS / margin scores before ranking.
    """
    n = queries.shape[0]
    cols = Columns.of(candidates)
    ranks = np.empty(n, dtype=np.int64)
    step = _block_rows(n, cols.n, block_elems)
    score_buf = _scratch("score", (step, cols.n), np.result_type(queries.dtype, cols.rows.dtype))
    greater_buf = _scratch("mask", (step, cols.n), bool)
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = cols.product(queries[start:stop], score_buf[: stop - start])
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
    candidates: np.ndarray | Columns,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    adjust: ScoreAdjustment | None = None,
) -> np.ndarray:
    """argmax_j <q_i, c_j> for every query (ties → lowest index), block by block; with
    ``adjust``, argmax of the CSLS / margin scores instead."""
    n = queries.shape[0]
    cols = Columns.of(candidates)
    out = np.empty(n, dtype=np.int64)
    step = _block_rows(n, cols.n, block_elems)
    score_buf = _scratch("score", (step, cols.n), np.result_type(queries.dtype, cols.rows.dtype))
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = cols.product(queries[start:stop], score_buf[: stop - start])
        if adjust is not None:
            adjust.apply(scores, start, stop)
        out[start:stop] = np.argmax(scores, axis=1)
    return out


def _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img) -> None:
    if src_text.shape[0] != src_img.shape[0]:
        raise ValueError(f"bkr: src_text has {src_text.shape[0]} rows but src_img has {src_img.shape[0]}")
    if tgt_text.shape[0] != tgt_img.shape[0]:
        raise ValueError(f"bkr: tgt_text has {tgt_text.shape[0]} rows but tgt_img has {tgt_img.shape[0]}")
