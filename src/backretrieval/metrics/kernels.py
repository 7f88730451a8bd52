"""Retrieval metrics of the paper: XLR, BkR, CORR — plus per-query ranks, MRR and mean rank.

All similarities are cosine similarities (rows are L2-normalised first). Conventions:

* **Rank** of the true candidate = 1 + number of candidates with a *strictly* higher score.
  Ties therefore favour the true candidate (a query whose true score ties with k others
  still has rank 1). The same convention is used everywhere.
* **Nearest neighbour** (BkR step 1) = ``argmax`` over candidates; ties → lowest index.
* Recall@k = mean over queries of ``rank <= k``.

Speed and memory: rows are never sorted. Queries are processed in blocks whose score matrix
has at most ``block_elems`` entries (default 2**24 ≈ 64 MB in float32), so no N×N matrix
exists beyond one bounded block. Computation happens in the input dtype (float32 stays
float32 — one BLAS sgemm per block).

**Retrieval scores** (XLR and BkR step 1; the image step always uses cosine): ``retrieval=
"cosine"`` (the paper, the default) or, as named options for hubness studies, ``"csls"``
(Conneau et al. 2018) and ``"margin"`` (the ratio margin of Artetxe & Schwenk 2019, as in
LASER/xSIM); see :func:`retrieval_scores`. The default path is untouched by the options.

BkR's image step is shared by every text encoder evaluated on the same sample:
:func:`bkr_image_pass` computes the image score matrix once, block by block, and ranks every
encoder's queries in the block that holds their back-retrieved target; :class:`BkrImageIndex`
stores, for every target image, the set of source images that would rank within the top k
(ties at the boundary included), so another encoder's BkR hits cost one text retrieval plus
an O(N) lookup. Every image score is computed once, in blocks whose shapes depend only on N,
so a query's BkR rank does not depend on which or how many encoders share the sample, on any
BLAS (some give a product's row other bits in a matrix of another height).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

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


def recall_at_k(ranks: np.ndarray, k: int = 10) -> float:
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


# --------------------------------------------------------------------------------------------
# hubness-reducing retrieval scores (named options; the paper uses plain cosine)
#
# CSLS (Conneau et al. 2018, "Word translation without parallel data", eq. 6):
#     CSLS(x, y) = 2 cos(x, y) − r_T(x) − r_S(y),
#     r_T(x) = mean cosine of x with its k nearest candidates (target side),
#     r_S(y) = mean cosine of y with its k nearest queries (source side); k = 10 in the paper.
# Ratio margin (Artetxe & Schwenk 2019, "Margin-based parallel corpus mining", eq. 2 with the
# ratio of Section 3.1; LASER's mining and xSIM "ratio"):
#     margin(x, y) = cos(x, y) / (r_T(x)/2 + r_S(y)/2); k = 4 in the paper and in LASER.
# Neighbourhoods are taken within the evaluated sets themselves (queries vs candidates).

RETRIEVALS = ("cosine", "csls", "margin")
CSLS_K = 10
MARGIN_K = 4


def _check_retrieval(retrieval: str, retrieval_k: int | None) -> int:
    """The neighbourhood size of ``retrieval`` (its paper's k unless ``retrieval_k``)."""
    if retrieval not in RETRIEVALS:
        raise ValueError(f"retrieval must be one of {RETRIEVALS}, got {retrieval!r}")
    if retrieval_k is None:
        return CSLS_K if retrieval == "csls" else MARGIN_K
    if isinstance(retrieval_k, bool) or not isinstance(retrieval_k, (int, np.integer)) or retrieval_k < 1:
        raise ValueError(f"retrieval_k must be a positive integer, got {retrieval_k!r}")
    return int(retrieval_k)


def _mean_of_top(scores: np.ndarray, k: int) -> np.ndarray:
    """Mean of the k largest values of every row, float64; the k values are sorted before they
    are summed, so the result depends only on the values, not on their order in the row."""
    m = scores.shape[1]
    top = np.sort(np.partition(scores, m - k, axis=1)[:, m - k :], axis=1).astype(np.float64)
    return top.sum(axis=1) / k


def neighbourhood_means(
    queries: np.ndarray, candidates: np.ndarray, k: int, block_elems: int = DEFAULT_BLOCK_ELEMS
) -> tuple[np.ndarray, np.ndarray]:
    """(r_q, r_c): mean cosine of every (normalised) query row with its k most similar
    candidates, and of every candidate with its k most similar queries (k capped at the other
    side's size), float64, in one pass over the query×candidate blocks: r_q from each block's
    rows, r_c from a running top-k of each column. The values are those of the block products
    that XLR / BkR step 1 rank, and equal to :func:`_neighbourhoods_of_matrix` of the full
    matrix assembled from the same blocks."""
    n, m = queries.shape[0], candidates.shape[0]
    if n == 0 or m == 0:
        raise ValueError("neighbourhood of an empty query or candidate set")
    kq, kc = min(int(k), m), min(int(k), n)
    r_q = np.empty(n, dtype=np.float64)
    step = _block_rows(n, m, block_elems)
    score_buf = _score_buffer(step, queries, candidates)
    col_top = np.empty((0, m), dtype=score_buf.dtype)
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = np.matmul(queries[start:stop], candidates.T, out=score_buf[: stop - start])
        r_q[start:stop] = _mean_of_top(scores, kq)
        both = np.concatenate([col_top, scores])
        col_top = both if both.shape[0] <= kc else np.partition(both, both.shape[0] - kc, axis=0)[-kc:]
    return r_q, _mean_of_top(np.ascontiguousarray(col_top.T), kc)


def _neighbourhoods_of_matrix(cosines: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(r_q, r_c) of :func:`neighbourhood_means` from a full query×candidate cosine matrix."""
    n, m = cosines.shape
    return _mean_of_top(cosines, min(int(k), m)), _mean_of_top(np.ascontiguousarray(cosines.T), min(int(k), n))


@dataclass(frozen=True)
class _HubAdjustment:
    """Turns a block of cosines (rows = queries ``start:stop``, all candidates) into CSLS or
    ratio-margin scores in place, in the block's dtype."""

    kind: str
    r_queries: np.ndarray  # r_T: per query, mean cosine with its k nearest candidates
    r_candidates: np.ndarray  # r_S: per candidate, mean cosine with its k nearest queries

    @classmethod
    def build(
        cls,
        queries: np.ndarray | None,
        candidates: np.ndarray | None,
        retrieval: str,
        retrieval_k: int | None,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        cosines: np.ndarray | None = None,
    ) -> _HubAdjustment | None:
        k = _check_retrieval(retrieval, retrieval_k)
        if retrieval == "cosine":
            return None
        if cosines is not None:
            r_q, r_c = _neighbourhoods_of_matrix(cosines, k)
        else:
            if queries is None or candidates is None:
                raise ValueError("retrieval adjustment: queries and candidates, or cosines, are needed")
            r_q, r_c = neighbourhood_means(queries, candidates, k, block_elems)
        if retrieval == "margin" and (r_q.min() + r_c.min()) <= 0:
            raise ValueError(
                "margin retrieval: a query and a candidate have a non-positive mean neighbourhood "
                "similarity sum; the ratio margin is undefined there (use csls or cosine)"
            )
        return cls(retrieval, r_q, r_c)

    def apply(self, scores: np.ndarray, start: int, stop: int) -> None:
        dt = scores.dtype
        r_q = self.r_queries[start:stop, None].astype(dt)
        r_c = self.r_candidates[None, :].astype(dt)
        if self.kind == "csls":
            scores *= 2
            scores -= r_q
            scores -= r_c
        else:  # ratio margin
            scores /= (r_q + r_c) / 2


def retrieval_scores(
    queries: np.ndarray,
    candidates: np.ndarray,
    retrieval: str = "cosine",
    retrieval_k: int | None = None,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    cosines: np.ndarray | None = None,
) -> np.ndarray:
    """The full (n_queries, n_candidates) score matrix that XLR and BkR step 1 rank by:
    cosine, CSLS or ratio margin (see above), computed with the same blocks as they are (so
    its argmax is :func:`backretrieve`'s choice). For analyses (k-occurrence); O(n·m) memory.

    ``cosines``: this function's own ``"cosine"`` result for the same inputs and block size;
    the CSLS / margin scores are then derived from it without new products (same values)."""
    if cosines is not None:
        _check_retrieval(retrieval, retrieval_k)
        out = np.array(cosines, copy=True)
        adjust = _HubAdjustment.build(None, None, retrieval, retrieval_k, cosines=cosines)
        if adjust is not None:
            adjust.apply(out, 0, out.shape[0])
        return out
    q, c = _as_pair(queries, candidates, "retrieval scores")
    adjust = _HubAdjustment.build(q, c, retrieval, retrieval_k, block_elems)
    out = np.empty((q.shape[0], c.shape[0]), dtype=np.result_type(q.dtype, c.dtype))
    step = _block_rows(q.shape[0], c.shape[0], block_elems)
    for start in range(0, q.shape[0], step):
        stop = min(q.shape[0], start + step)
        np.matmul(q[start:stop], c.T, out=out[start:stop])
        if adjust is not None:
            adjust.apply(out[start:stop], start, stop)
    return out


# --------------------------------------------------------------------------------------------
# XLR


def xlr_ranks(
    src_text: np.ndarray,
    tgt_text: np.ndarray,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    inplace: bool = False,
    *,
    retrieval: str = "cosine",
    retrieval_k: int | None = None,
    extra_candidates: np.ndarray | None = None,
) -> np.ndarray:
    """Per-query rank of the true translation (row i of src matches row i of tgt).

    ``inplace=True`` normalises the inputs in place (they are modified; no copies).
    ``retrieval``/``retrieval_k``: rank by cosine (default), CSLS or ratio margin (see
    :func:`retrieval_scores`). ``extra_candidates``: rows appended to the candidates after
    tgt (distractors, e.g. injected hubs); the true translation of query i stays row i."""
    src, tgt = _as_pair(src_text, tgt_text, "xlr", inplace)
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(f"xlr: src and tgt must be aligned (same rows), got {src.shape[0]} vs {tgt.shape[0]}")
    if extra_candidates is not None:
        extra = normalize(extra_candidates)
        if extra.shape[1] != tgt.shape[1]:
            raise ValueError(f"xlr: extra candidates have dimension {extra.shape[1]}, targets {tgt.shape[1]}")
        tgt = np.concatenate([tgt, extra.astype(tgt.dtype, copy=False)])
    adjust = _HubAdjustment.build(src, tgt, retrieval, retrieval_k, block_elems)
    return _ranks_of_true(src, tgt, np.arange(src.shape[0]), block_elems, adjust=adjust)


def xlr(
    src_text: np.ndarray,
    tgt_text: np.ndarray,
    k: int = 10,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    inplace: bool = False,
    *,
    retrieval: str = "cosine",
    retrieval_k: int | None = None,
) -> float:
    """Ground-truth cross-lingual retrieval Recall@k (the paper's XLR)."""
    return recall_at_k(
        xlr_ranks(src_text, tgt_text, block_elems, inplace, retrieval=retrieval, retrieval_k=retrieval_k), k
    )


# --------------------------------------------------------------------------------------------
# BkR


def _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img) -> None:
    if src_text.shape[0] != src_img.shape[0]:
        raise ValueError(f"bkr: src_text has {src_text.shape[0]} rows but src_img has {src_img.shape[0]}")
    if tgt_text.shape[0] != tgt_img.shape[0]:
        raise ValueError(f"bkr: tgt_text has {tgt_text.shape[0]} rows but tgt_img has {tgt_img.shape[0]}")


def backretrieve(
    src_text: np.ndarray,
    tgt_text: np.ndarray,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    inplace: bool = False,
    *,
    retrieval: str = "cosine",
    retrieval_k: int | None = None,
) -> np.ndarray:
    """BkR step 1: index of the nearest target text for every source text (ties → lowest).
    ``retrieval``: by cosine (the paper, default), CSLS or ratio margin (:func:`retrieval_scores`)."""
    src, tgt = _as_pair(src_text, tgt_text, "bkr text", inplace)
    adjust = _HubAdjustment.build(src, tgt, retrieval, retrieval_k, block_elems)
    return _nearest(src, tgt, block_elems, adjust=adjust)


def bkr_ranks(
    src_text: np.ndarray,
    tgt_text: np.ndarray,
    src_img: np.ndarray,
    tgt_img: np.ndarray,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    inplace: bool = False,
    *,
    retrieval: str = "cosine",
    retrieval_k: int | None = None,
) -> np.ndarray:
    """Per-query Backretrieval rank, exactly the paper's four steps.

    1. t* = nearest target text to source text q (cosine; ties → lowest index);
    2. take the image of t* (row t* of ``tgt_img``);
    3. rank all source images (rows of ``src_img``) by cosine with that image;
    4. return the rank of q's own image (row q of ``src_img``).

    ``retrieval`` (a named option, not the paper's): step 1 by CSLS or ratio margin.
    """
    _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img)
    t_star = backretrieve(src_text, tgt_text, block_elems, inplace, retrieval=retrieval, retrieval_k=retrieval_k)
    s_img, t_img = _as_pair(src_img, tgt_img, "bkr image", inplace)
    return bkr_image_pass(s_img, t_img, [t_star], block_elems=block_elems, assume_normalized=True, with_index=False)[1][
        0
    ]


def bkr(
    src_text: np.ndarray,
    tgt_text: np.ndarray,
    src_img: np.ndarray,
    tgt_img: np.ndarray,
    k: int = 10,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    inplace: bool = False,
    top_m: int = 1,
    *,
    retrieval: str = "cosine",
    retrieval_k: int | None = None,
) -> float:
    """Backretrieval Recall@k (the paper's BkR; k=10 in the paper). ``inplace=True``
    normalises the four inputs in place (they are modified; no copies) — for very large N.

    ``top_m`` > 1: soft BkR (not in the paper, off by default), the mean of the BkR hits of
    the ``top_m`` nearest target texts (see :func:`soft_bkr_hits`; cosine step 1 only);
    ``top_m=1`` is the paper's. ``retrieval`` (a named option, not the paper's): step 1 by
    CSLS or ratio margin (:func:`retrieval_scores`).
    """
    if top_m != 1:
        if retrieval != "cosine":
            raise ValueError(f"bkr: soft BkR (top_m={top_m}) is defined for cosine step 1 only, got {retrieval!r}")
        return float(np.mean(soft_bkr_hits(src_text, tgt_text, src_img, tgt_img, k, top_m, block_elems, inplace)))
    return recall_at_k(
        bkr_ranks(
            src_text, tgt_text, src_img, tgt_img, block_elems, inplace, retrieval=retrieval, retrieval_k=retrieval_k
        ),
        k,
    )


@dataclass(frozen=True)
class BkrImageIndex:
    """Image side of BkR for one sample, shared by every text encoder.

    For each target image t it stores the source images whose rank w.r.t. t is <= k, i.e.
    whose similarity is >= the k-th largest similarity in row t (ties at the boundary are
    members, matching the rank convention). Stored as a sorted array of codes t*n_src + q.
    Memory is O(n_tgt·k), never N×N. Built by :func:`bkr_image_pass` (which can rank every
    encoder's queries in the same pass) or :meth:`build`.
    """

    k: int
    n_src: int
    n_tgt: int
    codes: np.ndarray

    @classmethod
    def build(
        cls,
        src_img: np.ndarray,
        tgt_img: np.ndarray,
        k: int = 10,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        assume_normalized: bool = False,
    ) -> BkrImageIndex:
        index, _ = bkr_image_pass(src_img, tgt_img, (), k, block_elems, assume_normalized=assume_normalized)
        assert index is not None
        return index

    def hits(self, t_star: np.ndarray) -> np.ndarray:
        """hit[q] = source image q is within the top k for target image t_star[q]."""
        t_star = np.asarray(t_star, dtype=np.int64)
        if t_star.shape != (self.n_src,):
            raise ValueError(f"t_star must have one entry per source query ({self.n_src})")
        query = t_star * self.n_src + np.arange(self.n_src)
        pos = np.searchsorted(self.codes, query)
        pos = np.minimum(pos, len(self.codes) - 1)
        return self.codes[pos] == query if len(self.codes) else np.zeros(self.n_src, bool)

    def soft_hits(self, top: np.ndarray) -> np.ndarray:
        """Mean of :meth:`hits` over the columns of ``top`` (n_src, m): per-query soft BkR."""
        top = np.asarray(top, dtype=np.int64)
        if top.ndim != 2 or top.shape[0] != self.n_src or top.shape[1] < 1:
            raise ValueError(f"top must be (n_src={self.n_src}, m >= 1), got shape {top.shape}")
        total = np.zeros(self.n_src, dtype=np.int64)
        for j in range(top.shape[1]):
            total += self.hits(top[:, j])
        return total / top.shape[1]

    def recall(
        self,
        src_text: np.ndarray,
        tgt_text: np.ndarray,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        *,
        retrieval: str = "cosine",
        retrieval_k: int | None = None,
    ) -> float:
        """BkR Recall@k of one text encoder on this sample (step 1 by ``retrieval``)."""
        if src_text.shape[0] != self.n_src or tgt_text.shape[0] != self.n_tgt:
            raise ValueError(
                f"text rows ({src_text.shape[0]}, {tgt_text.shape[0]}) do not match the image index "
                f"({self.n_src}, {self.n_tgt})"
            )
        t_star = backretrieve(src_text, tgt_text, block_elems, retrieval=retrieval, retrieval_k=retrieval_k)
        return float(np.mean(self.hits(t_star)))


def bkr_image_pass(
    src_img: np.ndarray,
    tgt_img: np.ndarray,
    t_stars: Sequence[np.ndarray],
    k: int = 10,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    gather_elems: int = GATHER_BLOCK_ELEMS,
    *,
    assume_normalized: bool = False,
    with_index: bool = True,
) -> tuple[BkrImageIndex | None, list[np.ndarray]]:
    """BkR's image steps 3–4 for one sample and any number of text encoders, in one pass.

    The image score matrix ``tgt_img @ src_img.T`` is computed once, ``block_elems`` entries
    (a block of target rows) at a time. From each block: the :class:`BkrImageIndex` codes of
    its rows (``with_index``), and for every ``t_star`` of ``t_stars`` (an encoder's
    back-retrieved target per source query) the rank of each query q whose target
    t = t_star[q] lies in the block:

        rank[q] = 1 + #{j : <t_img[t], s_img[j]> > <t_img[t], s_img[q]>}

    (gathered, compared and counted ``gather_elems`` entries at a time, in the CPU cache).
    Returns ``(index or None, [ranks per t_star])``. A rank depends only on the sample's
    images and the block size (a function of N), never on the other encoders; its hit
    ``rank <= k`` equals the index's membership, both being read from the same scores.
    """
    s_img, t_img = (src_img, tgt_img) if assume_normalized else _as_pair(src_img, tgt_img, "bkr image")
    n_src, n_tgt = s_img.shape[0], t_img.shape[0]
    if k < 1:
        raise ValueError("k must be >= 1")
    stars = []
    for t_star in t_stars:
        t_star = np.asarray(t_star, dtype=np.int64)
        if t_star.shape != (n_src,):
            raise ValueError(f"t_star must have one entry per source query ({n_src}), got shape {t_star.shape}")
        if n_src and (t_star.min() < 0 or t_star.max() >= n_tgt):
            raise ValueError(f"t_star must index the {n_tgt} target images")
        order = np.argsort(t_star, kind="stable")  # queries grouped by their target's block
        stars.append((t_star, order, t_star[order]))
    ranks = [np.empty(n_src, dtype=np.int64) for _ in stars]
    kk = min(k, n_src)
    step = _block_rows(n_tgt, n_src, block_elems)
    qstep = _block_rows(n_src, n_src, gather_elems)
    dtype = np.result_type(t_img.dtype, s_img.dtype)
    score_buf = _scratch("score", (step, n_src), dtype)
    gather_buf = _scratch("gather", (qstep, n_src), dtype)
    mask_buf = _scratch("mask", (max(step, qstep), n_src), bool)
    st = s_img.T
    parts = []
    for start in range(0, n_tgt, step):
        stop = min(n_tgt, start + step)
        scores = np.matmul(t_img[start:stop], st, out=score_buf[: stop - start])
        if with_index:
            rows, cols = _top_k_members(scores, kk, mask_buf[: stop - start])
            parts.append((rows + start).astype(np.int64) * n_src + cols)
        for (t_star, order, sorted_star), out in zip(stars, ranks, strict=True):
            lo, hi = np.searchsorted(sorted_star, (start, stop))
            for cs in range(lo, hi, qstep):
                q = order[cs : min(hi, cs + qstep)]
                rows_q = np.take(scores, t_star[q] - start, axis=0, out=gather_buf[: len(q)], mode="clip")
                out[q] = _rank_in_rows(rows_q, q, mask_buf)
    index = None
    if with_index:
        codes = np.sort(np.concatenate(parts)) if parts else np.empty(0, np.int64)
        index = BkrImageIndex(k=k, n_src=n_src, n_tgt=n_tgt, codes=codes)
    return index, ranks


def _top_k_members(
    scores: np.ndarray, k: int, mask_buf: np.ndarray | None = None, groups: int = 64
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the entries >= the k-th largest value of their row (ties included).

    Equal to ``np.nonzero(scores >= np.partition(scores, n-k, axis=1)[:, n-k, None])``, and
    cheaper for small k: the k-th largest of the row's column-group maxima is a lower bound
    of the row's k-th largest (the k largest group maxima are k distinct entries), so only the
    few entries above that bound are sorted. Falls back to the partition when a row has fewer
    than k groups.
    """
    m, n = scores.shape
    width = max(1, n // max(groups, k))
    starts = np.arange(0, n, width)
    if len(starts) < k or m == 0:
        kth = np.partition(scores, n - k, axis=1)[:, n - k]
        rows, cols = np.nonzero(scores >= kth[:, None])
        return rows, cols
    group_max = np.maximum.reduceat(scores, starts, axis=1)
    g = group_max.shape[1]
    low = np.partition(group_max, g - k, axis=1)[:, g - k]
    rows, cols = np.nonzero(np.greater_equal(scores, low[:, None], out=mask_buf))
    vals = scores[rows, cols]
    by_row_desc = np.lexsort((-vals, rows))  # every row has >= k candidates
    first = np.searchsorted(rows[by_row_desc], np.arange(m))
    kth = vals[by_row_desc][first + k - 1]
    keep = vals >= kth[rows]
    return rows[keep], cols[keep]


# --------------------------------------------------------------------------------------------
# soft BkR (an option, not in the paper): BkR hits averaged over the top-m retrieved texts


def nearest_m(
    queries: np.ndarray, candidates: np.ndarray, m: int, block_elems: int = DEFAULT_BLOCK_ELEMS
) -> np.ndarray:
    """The ``m`` nearest candidates of every query, best first: (n, m) indices in the order of
    descending cosine, ties → lowest index (so column 0 is :func:`backretrieve`'s choice).
    Inputs are normalised here; block by block, rows never fully sorted."""
    q, c = _as_pair(queries, candidates, "nearest_m")
    n, n_c = q.shape[0], c.shape[0]
    if not 1 <= m <= n_c:
        raise ValueError(f"nearest_m: m must be in [1, {n_c}] (number of candidates), got {m}")
    if m == 1:
        return _nearest(q, c, block_elems)[:, None]
    out = np.empty((n, m), dtype=np.int64)
    step = _block_rows(n, n_c, block_elems)
    score_buf = _score_buffer(step, q, c)
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = np.matmul(q[start:stop], c.T, out=score_buf[: stop - start])
        kth = np.partition(scores, n_c - m, axis=1)[:, n_c - m]  # the m-th largest of each row
        rows, cols = np.nonzero(scores >= kth[:, None])  # >= m entries per row (ties included)
        order = np.lexsort((cols, -scores[rows, cols], rows))  # row, then score desc, then index
        rows, cols = rows[order], cols[order]
        first = np.searchsorted(rows, np.arange(stop - start))
        out[start:stop] = cols[first[:, None] + np.arange(m)]
    return out


def soft_bkr_hits(
    src_text: np.ndarray,
    tgt_text: np.ndarray,
    src_img: np.ndarray,
    tgt_img: np.ndarray,
    k: int = 10,
    m: int = 1,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    inplace: bool = False,
    index: BkrImageIndex | None = None,
) -> np.ndarray:
    """Per-query soft BkR: hit_q = (1/m) Σ_{j<m} [q's image is within the top k source images
    for the image of q's j-th nearest target text] (:func:`nearest_m`; BkR's steps 2-4 for each
    of them). ``m=1`` gives the paper's per-query BkR hits exactly. ``index``: a prebuilt
    :class:`BkrImageIndex` of these images (same ``k``), shared across encoders."""
    _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img)
    if index is None:
        index = BkrImageIndex.build(src_img, tgt_img, k=k, block_elems=block_elems)
    elif index.k != k or index.n_src != src_img.shape[0] or index.n_tgt != tgt_img.shape[0]:
        raise ValueError("soft_bkr_hits: the image index was built for another k or sample")
    src, tgt = _as_pair(src_text, tgt_text, "bkr text", inplace)
    top = nearest_m(src, tgt, m, block_elems)
    return index.soft_hits(top)


# --------------------------------------------------------------------------------------------
# CORR
#
# Spearman's rho is Pearson's r of average ranks (ties share their mean rank, as in
# scipy.stats.rankdata / spearmanr). Ranks are held as *doubled* average ranks D = 2·rank =
# 2·below + ties + 1, which are integers, so every sum is exact:
#     rho = S_ti / sqrt(S_tt · S_ii),   S_xy = Σ_p (D_x[p] − (n+1))·(D_y[p] − (n+1))
#                                             = Σ_p D_x[p]·D_y[p] − n(n+1)²   (Σ_p D[p] = n(n+1)),
#     S_xx = (n³ − n − Σ_ties (t³ − t)) / 3.
# Only the final division is rounded: the value does not depend on block sizes, summation order
# or thread counts. (Float32 ranks would not do: average ranks are half-integers, exact in
# float32 only below 2^23, and N² = 10^8 at N = 10,000.)


def corr(
    src_text: np.ndarray,
    tgt_text: np.ndarray,
    src_img: np.ndarray,
    tgt_img: np.ndarray,
    max_pairs: int | None = None,
    seed: int = 0,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
) -> float:
    """The paper's CORR baseline.

    Spearman correlation between text cosine distances 1 - cos(src_text_i, tgt_text_j) and
    image cosine distances 1 - cos(src_img_i, tgt_img_j) over all source×target pairs (i, j).
    Distances are computed in the input dtype (float32 stays float32), ties are average ranks.

    ``max_pairs``: if set and smaller than the number of pairs, use that many distinct pairs
    chosen by :class:`BandPairs` with ``np.random.default_rng(seed)`` (an estimate; see the
    benchmark for its error) instead of all N_src·N_tgt pairs.
    """
    _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img)
    side = CorrImageSide.build(src_img, tgt_img, max_pairs=max_pairs, seed=seed, block_elems=block_elems)
    return side.spearman(src_text, tgt_text, block_elems=block_elems)


_SMALL_PRODUCT = 1 << 28  # multiply-adds of one tile below which BandPairs uses one BLAS thread
_CONTROLLER: list[ThreadpoolController] = []


def _blas_threads(limit: int | None):
    """``threadpool_limits(limit, user_api="blas")`` through one controller made on first use:
    a fresh ``threadpool_limits`` scans every loaded shared library (milliseconds in a process
    with torch loaded), which dominated many small subsampled CORRs (the bootstrap)."""
    if limit is None:
        return contextlib.nullcontext()
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=limit, user_api="blas")


@dataclass(frozen=True)
class BandPairs:
    """A seeded subsample of ``m`` distinct source×target pairs, laid out for block products.

    Rows and columns are put in random order (``row_perm``, ``col_perm``). Row r of that order
    is paired with the k_r consecutive columns c_r, c_r + 1, …, c_r + k_r − 1 (mod n_t) of the
    column order, where c_r = ⌊r·n_t/n_s⌋ and k_r = ⌊(r+1)·m/n_s⌋ − ⌊r·m/n_s⌋. So every pair
    has the same chance m/(n_s·n_t) to be chosen, none twice; each row is used ⌊m/n_s⌋ or
    ⌈m/n_s⌉ times and each column m/n_t times up to ±2. The pairs of a block of consecutive
    rows lie in a band of one small tile, so their cosines come from one matrix product per
    block instead of two gathered rows per pair. Pair p of the sample is the p-th pair of this
    enumeration (rows in order, columns in order within a row).
    """

    n_src: int
    n_tgt: int
    m: int
    row_perm: np.ndarray
    col_perm: np.ndarray

    @classmethod
    def draw(cls, n_src: int, n_tgt: int, m: int, seed: int) -> BandPairs:
        if not 0 < m < n_src * n_tgt:
            raise ValueError(f"max_pairs must be in [1, {n_src * n_tgt}) for a subsample, got {m}")
        rng = np.random.default_rng(seed)
        return cls(n_src, n_tgt, int(m), rng.permutation(n_src), rng.permutation(n_tgt))

    def _rows(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(first column c_r, number of pairs k_r) of rows r, in the permuted orders."""
        return r * self.n_tgt // self.n_src, (r + 1) * self.m // self.n_src - r * self.m // self.n_src

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(source index, target index) of every pair, in sample order."""
        first, per_row = self._rows(np.arange(self.n_src))
        rows = np.repeat(np.arange(self.n_src), per_row)
        cols = (np.repeat(first - (np.cumsum(per_row) - per_row), per_row) + np.arange(self.m)) % self.n_tgt
        return self.row_perm[rows], self.col_perm[cols]

    def distances(self, a: np.ndarray, b: np.ndarray, block_elems: int = DEFAULT_BLOCK_ELEMS) -> np.ndarray:
        """1 - <a_i, b_j> for the sampled pairs (rows normalised), in sample order."""
        n_s, n_t = self.n_src, self.n_tgt
        k_max = -(-self.m // n_s)
        width = lambda rows: ((rows - 1) * n_t) // n_s + 1 + k_max  # noqa: E731  tile columns
        # rows per tile: the band fills about half of a tile of R rows × (R·n_t/n_s + k_max)
        # columns; at least 32 rows so each product is a real sgemm
        step = min(n_s, max(32, k_max * n_s // n_t))
        while step > 1 and step * width(step) > block_elems:
            step //= 2
        dtype = np.result_type(a.dtype, b.dtype)
        out = np.empty(self.m, dtype=dtype)
        a_buf = np.empty((step, a.shape[1]), dtype=a.dtype)
        b_buf = np.empty((width(step), b.shape[1]), dtype=b.dtype)
        tile_buf = np.empty(step * width(step), dtype=dtype)
        pos = 0
        # small tiles: BLAS threads would only add synchronisation (one thread is faster)
        threads = 1 if step * width(step) * a.shape[1] < _SMALL_PRODUCT else None
        with _blas_threads(threads):
            for s in range(0, n_s, step):
                e = min(n_s, s + step)
                first, per_row = self._rows(np.arange(s, e))
                total = int(per_row.sum())
                c0, w = int(first[0]), int(first[-1] - first[0]) + k_max
                np.take(a, self.row_perm[s:e], axis=0, out=a_buf[: e - s])
                np.take(b, self.col_perm[(c0 + np.arange(w)) % n_t], axis=0, out=b_buf[:w])
                np.matmul(a_buf[: e - s], b_buf[:w].T, out=tile_buf[: (e - s) * w].reshape(e - s, w))
                # entry j of local row u sits at u·w + (c_r − c0) + j of the tile
                at = np.arange(e - s) * w + (first - c0) - (np.cumsum(per_row) - per_row)
                seg = out[pos : pos + total]
                np.take(tile_buf, np.repeat(at, per_row) + np.arange(total), out=seg)
                np.subtract(1, seg, out=seg)
                pos += total
        return out


@dataclass(frozen=True)
class CorrImageSide:
    """Image side of CORR for one sample, shared by every text encoder.

    Holds the doubled average ranks of the image cosine distances, one per pair (all pairs in
    row-major order, or the pairs of ``sample``), and their tie term, so each encoder only
    ranks its own text distances and forms one exact sum of products.
    """

    n_src: int
    n_tgt: int
    sample: BandPairs | None
    img_ranks: np.ndarray  # doubled average ranks (integers), one per pair
    img_ties: int  # Σ over tie groups of t³ − t

    @classmethod
    def build(
        cls,
        src_img: np.ndarray,
        tgt_img: np.ndarray,
        max_pairs: int | None = None,
        seed: int = 0,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        assume_normalized: bool = False,
    ) -> CorrImageSide:
        si, ti = (src_img, tgt_img) if assume_normalized else _as_pair(src_img, tgt_img, "corr image")
        n_s, n_t = si.shape[0], ti.shape[0]
        sample = None
        if max_pairs is not None and max_pairs < n_s * n_t:
            sample = BandPairs.draw(n_s, n_t, max_pairs, seed)
        _check_pair_count(sample.m if sample else n_s * n_t)
        if sample is not None:
            ranks, ties = _doubled_ranks(sample.distances(si, ti, block_elems))
        elif _use_counting(si, n_s * n_t):
            ranks, ties = _all_pairs_ranks_counting(si, ti, block_elems)
        else:
            ranks, ties = _doubled_ranks(_all_distances(si, ti, block_elems))
        return cls(n_s, n_t, sample, ranks, ties)

    def spearman(
        self,
        src_text: np.ndarray,
        tgt_text: np.ndarray,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        assume_normalized: bool = False,
    ) -> float:
        """CORR of one text encoder on this sample (NaN if either side's distances are all tied)."""
        return self.nearest_and_spearman(src_text, tgt_text, block_elems, assume_normalized, nearest=False)[1]

    def nearest_and_spearman(
        self,
        src_text: np.ndarray,
        tgt_text: np.ndarray,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        assume_normalized: bool = False,
        nearest: bool = True,
    ) -> tuple[np.ndarray | None, float]:
        """(BkR step 1: the nearest target text of every source text, CORR) of one encoder.

        Where CORR takes every pair, both come from one product ``src @ tgt.T``, computed in
        the blocks :func:`_nearest` uses (same shapes, so the same bits as its argmax) and
        turned into distances after the argmax; with a pair subsample the nearest texts need
        their own product. ``nearest=False``: CORR only (the first item is None)."""
        st, tt = (src_text, tgt_text) if assume_normalized else _as_pair(src_text, tgt_text, "corr text")
        if st.shape[0] != self.n_src or tt.shape[0] != self.n_tgt:
            raise ValueError("corr: text rows do not match the image side")
        n = self.img_ranks.size
        if self.sample is not None:
            t_star = _nearest(st, tt, block_elems) if nearest else None
            s_raw, ties = _rank_dot(self.sample.distances(st, tt, block_elems), self.img_ranks)
            return t_star, _rho(n, s_raw, ties, self.img_ties)
        t_star = np.empty(self.n_src, dtype=np.int64) if nearest else None
        if _use_counting(st, n):
            counts = _CodeCounts(weighted=True)
            for s, codes in _code_blocks(st, tt, block_elems, nearest_out=t_star):
                counts.add(codes, self.img_ranks[s * self.n_tgt : s * self.n_tgt + codes.size])
            s_raw, ties = counts.rank_sum_product(), counts.ties()
        else:
            s_raw, ties = _rank_dot(_all_distances(st, tt, block_elems, nearest_out=t_star), self.img_ranks)
        return t_star, _rho(n, s_raw, ties, self.img_ties)


def _check_pair_count(n: int) -> None:
    # doubled ranks up to 2n and their sums per distance value up to 2n² stay within int64
    if n >= 1 << 31:
        raise ValueError(f"corr: {n} pairs; at most 2^31 - 1 are supported (use max_pairs)")


def _rho(n: int, s_raw: int, ties_x: int, ties_y: int) -> float:
    """Spearman's rho from Σ D_x·D_y and the tie terms (see the section comment)."""
    s_xy = s_raw - n * (n + 1) ** 2
    s_xx, s_yy = (n**3 - n - ties_x) // 3, (n**3 - n - ties_y) // 3
    if s_xx <= 0 or s_yy <= 0:
        return float("nan")
    return float(np.clip(s_xy / math.sqrt(s_xx * s_yy), -1.0, 1.0))


def _exact_dot(a: np.ndarray, b: np.ndarray) -> int:
    """Σ a·b of two integer arrays, exactly (a Python int): one int64 dot product where no
    partial sum can overflow, else int64 products (a factor split into high and low bits where
    a product could overflow) summed in two halves."""
    a, b = np.asarray(a).ravel().astype(np.int64, copy=False), np.asarray(b).ravel().astype(np.int64, copy=False)
    if a.size == 0:
        return 0
    amax, bmax = int(np.abs(a).max()), int(np.abs(b).max())
    if amax * bmax * a.size < 1 << 63:  # every partial sum of the int64 dot is exact
        return int(np.dot(a, b))
    if amax * bmax >= 1 << 62:
        if amax < bmax:
            a, b, bmax = b, a, amax
        shift = 62 - bmax.bit_length()  # low bits · b < 2^62 (b, the smaller, is below 2^33 here)
        return (_exact_dot(a >> shift, b) << shift) + _exact_dot(a & ((1 << shift) - 1), b)
    return _exact_sum(a * b)


def _exact_sum(x: np.ndarray) -> int:
    """Σ x exactly for int64 |x| < 2^62 and fewer than 2^32 values: the high and low 31 bits
    are summed separately, neither sum can overflow."""
    return (int(np.sum(x >> 31)) << 31) + int(np.sum(x & ((1 << 31) - 1)))


def _tie_term(counts: np.ndarray) -> int:
    """Σ (t³ − t) over tie groups of sizes ``counts``."""
    t = counts[counts > 1].astype(np.int64)
    return _exact_dot(t, t * t) - int(t.sum())


def _doubled_ranks(x: np.ndarray) -> tuple[np.ndarray, int]:
    """(2·average ranks of x as int64, Σ (t³ − t) over its ties); 2·``scipy.stats.rankdata(x)``.

    scipy sorts with a stable mergesort; average ranks do not depend on the order within a
    tie, so any faster sort gives the same ranks (here numpy's vectorised sorts). Equal
    values (also -0.0 and 0.0) are ties, as in scipy.
    """
    x = np.asarray(x).ravel()
    n = x.size
    if x.dtype == np.float32 and n < 1 << 32:
        order, xs = _argsort_float32(x)
    else:
        order = np.argsort(x, kind="quicksort")
        xs = x[order]
    ranks = np.empty(n, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    if starts.size == n:  # no ties: rank = position in the sorted order
        ranks[order] = np.arange(2, 2 * n + 1, 2)
        return ranks, 0
    ends = np.concatenate((starts[1:], [n]))
    ranks[order] = np.repeat(starts + ends + 1, ends - starts)
    return ranks, _tie_term(ends - starts)


def _rank_dot(x: np.ndarray, other: np.ndarray) -> tuple[int, int]:
    """(Σ_p D[p]·other[p], Σ (t³ − t) over the ties of x), D = doubled average ranks of x,
    ``other`` non-negative integers. Sorts x with ``other`` as payload (packed into one uint64
    for float32), so neither ranks in the original order nor an index array are needed: each
    position in the sorted order carries its tie group's doubled rank."""
    x = np.asarray(x).ravel()
    n = x.size
    if n == 0:
        return 0, 0
    if x.dtype == np.float32 and int(other.max()) < 1 << 32 and int(other.min()) >= 0:
        packed, high, low = _packed(x, other)
        packed.sort()
        new_group = np.empty(n, dtype=bool)
        new_group[0] = True
        np.not_equal(high[1:], high[:-1], out=new_group[1:])
        payload = low.astype(np.int64)
    else:
        order = np.argsort(x, kind="quicksort")
        keys, payload = x[order], other[order].astype(np.int64)
        new_group = np.concatenate(([True], keys[1:] != keys[:-1]))
    starts = np.flatnonzero(new_group)
    if starts.size == n:  # no ties: D = 2, 4, …, 2n in sorted order
        return _exact_dot(np.arange(2, 2 * n + 1, 2), payload), 0
    ends = np.append(starts[1:], n)
    doubled = np.repeat(starts + ends + 1, ends - starts)  # D of every sorted position
    return _exact_dot(doubled, payload), _tie_term(ends - starts)


def _float32_keys(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """uint32 keys with the order of the float32 values x; equal keys ⇔ equal values (+ 0
    turns -0.0 into 0.0, so both zeros share one key): the sign bit is flipped for values >= 0,
    every bit for negative ones (XOR with 0x80000000 or 0xFFFFFFFF). Written into ``out``
    (any uint32 array of x's shape, e.g. a strided half of a uint64 array) if given."""
    bits = np.add(x, np.float32(0)).view(np.uint32)
    mask = (bits.view(np.int32) >> 31).view(np.uint32)  # arithmetic shift: 0 or 0xFFFFFFFF
    mask |= np.uint32(1 << 31)
    return np.bitwise_xor(bits, mask, out=out if out is not None else bits)


def _packed(x: np.ndarray, payload: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """uint64 values key(x)·2^32 + payload (payload: integers in [0, 2^32)), and their high
    (key) and low (payload) uint32 halves as views: sorting the packed values sorts x with its
    payload, and the halves read the sorted keys and payloads without shifts or copies."""
    packed = np.empty(x.size, dtype=np.uint64)
    halves = packed.view(np.uint32)
    low, high = (halves[0::2], halves[1::2]) if np.little_endian else (halves[1::2], halves[0::2])
    _float32_keys(x, out=high)
    np.copyto(low, payload, casting="unsafe")
    return packed, high, low


def _argsort_float32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(an argsort of x, integer keys of x in that order; equal keys ⇔ equal values).

    Packs an order-preserving 32-bit key of each value with its index into one uint64 and
    sorts those with numpy's vectorised integer sort, which is faster than ``np.argsort``.
    """
    packed, high, low = _packed(x, np.arange(x.size, dtype=np.uint32))
    packed.sort()
    return low.astype(np.intp), high


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based; ties share their mean rank), identical to
    ``scipy.stats.rankdata(x, method="average")``."""
    return _doubled_ranks(x)[0] / 2.0


def _all_distances(a: np.ndarray, b: np.ndarray, block_elems: int, nearest_out: np.ndarray | None = None) -> np.ndarray:
    """1 - <a_i, b_j> for all (row of a, row of b) pairs, row-major, in a's dtype; with
    ``nearest_out``, also argmax_j <a_i, b_j> of every row (ties → lowest), from the same
    block products as :func:`_nearest`."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.result_type(a.dtype, b.dtype))
    step = _block_rows(a.shape[0], b.shape[0], block_elems)
    ct = b.T
    for s in range(0, a.shape[0], step):
        e = min(a.shape[0], s + step)
        scores = np.matmul(a[s:e], ct, out=out[s:e])
        if nearest_out is not None:
            nearest_out[s:e] = np.argmax(scores, axis=1)
        np.subtract(1, scores, out=scores)
    return out.ravel()


# All pairs, float32, at least _COUNTING_MIN_PAIRS of them: ranks by counting, not sorting. The
# float32 distance fl(1 − s) of a float32 cosine s is always a multiple of 2^-24 (for
# |1 − s| < 1/2, s lies in (1/2, 3/2), where 1 − s is exact (Sterbenz) and s a multiple of
# ulp(s) ≥ 2^-24; otherwise |fl(1 − s)| ≥ 1/2, whose ulp is ≥ 2^-24). So code = 2^24·fl(1 − s)
# is an exact integer, equal codes are equal distances and the order is the same; for
# normalised rows |code| ≤ 2^25 + a few, a range small enough to count every code.
_CODE_SCALE = np.float32(1 << 24)
# Cosines of normalised rows are within [-1, 1] up to rounding (allowed: 2^-8), so their codes
# lie in [_CODE_MIN, _CODE_MAX]. Count tables span that range; np.zeros maps it lazily, so only
# the pages of the codes that occur (a few MB to ~100 MB) become resident.
_CODE_MIN, _CODE_MAX = -(1 << 16), (1 << 25) + (1 << 16)
_CHUNK = 1 << 20


# Below this many pairs, sorting them is cheaper than a pass over the ~2^25 possible codes;
# above, counting is faster and needs 4 bytes per pair instead of ~30.
_COUNTING_MIN_PAIRS = 1 << 24


def _use_counting(x: np.ndarray, n_pairs: int) -> bool:
    return x.dtype == np.float32 and n_pairs >= _COUNTING_MIN_PAIRS


def _code_blocks(
    a: np.ndarray,
    b: np.ndarray,
    block_elems: int,
    out: np.ndarray | None = None,
    nearest_out: np.ndarray | None = None,
):
    """Yield (start row, codes) per row block of the float32 distances 1 − a @ b.T: codes =
    2^24·fl(1 − s), exact integers. Written into ``out`` (n_a × n_b, integer) if given. With
    ``nearest_out``, also argmax_j <a_i, b_j> per row, from the same block products as
    :func:`_nearest`."""
    step = _block_rows(a.shape[0], b.shape[0], block_elems)
    score_buf = _score_buffer(step, a, b)
    code_buf: np.ndarray = np.empty(score_buf.shape, dtype=np.int32) if out is None else out
    ct = b.T
    for s in range(0, a.shape[0], step):
        e = min(a.shape[0], s + step)
        scores = np.matmul(a[s:e], ct, out=score_buf[: e - s])
        if nearest_out is not None:
            nearest_out[s:e] = np.argmax(scores, axis=1)
        codes = out[s:e] if out is not None else code_buf[: e - s]
        np.subtract(1, scores, out=scores)
        np.multiply(scores, _CODE_SCALE, out=codes, casting="unsafe")  # exact (see above)
        yield s, codes.reshape(-1)


class _CodeCounts:
    """Number of pairs (and optionally the sum of an integer weight) per distance code."""

    def __init__(self, weighted: bool):
        size = _CODE_MAX - _CODE_MIN + 1
        self.counts = np.zeros(size, np.int64)
        self.sums = np.zeros(size, np.int64) if weighted else None
        self.lo, self.hi = _CODE_MAX, _CODE_MIN  # range of the codes seen

    def add(self, codes: np.ndarray, weights: np.ndarray | None = None) -> None:
        lo, hi = int(codes.min()), int(codes.max())
        if lo < _CODE_MIN or hi > _CODE_MAX:
            raise ValueError("corr: cosine similarities outside [-1, 1] beyond rounding; rows must be L2-normalised")
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        for s in range(0, codes.size, _CHUNK):  # int64 operands: numpy's fast ufunc.at loop
            idx = codes[s : s + _CHUNK].astype(np.int64)
            idx -= _CODE_MIN
            np.add.at(self.counts, idx, 1)
            if self.sums is not None:
                assert weights is not None, "a weighted count needs weights"
                np.add.at(self.sums, idx, weights[s : s + _CHUNK].astype(np.int64))

    def _used(self, table: np.ndarray) -> np.ndarray:
        return table[self.lo - _CODE_MIN : self.hi - _CODE_MIN + 1]

    def doubled_ranks(self) -> np.ndarray:
        """Doubled average rank of every code from ``lo`` to ``hi`` (2·below + count + 1)."""
        counts = self._used(self.counts)
        ranks = np.cumsum(counts)  # in place from here: the range can span ~2^25 codes
        ranks -= counts
        ranks *= 2
        ranks += counts
        ranks += 1
        return ranks

    def rank_sum_product(self) -> int:
        """Σ over pairs of (doubled rank of the pair's code)·weight = Σ_code rank·sum."""
        assert self.sums is not None, "rank_sum_product needs a weighted count"
        return _exact_dot(self.doubled_ranks(), self._used(self.sums))

    def ties(self) -> int:
        return _tie_term(self._used(self.counts))


def _all_pairs_ranks_counting(a: np.ndarray, b: np.ndarray, block_elems: int) -> tuple[np.ndarray, int]:
    """Doubled average ranks of all distances 1 − <a_i, b_j> (row-major) and their tie term,
    by counting distance codes: one pass stores the codes and counts them, one replaces each
    code by its rank. int32 ranks (4 bytes per pair) where they fit."""
    n = a.shape[0] * b.shape[0]
    grid = np.empty((a.shape[0], b.shape[0]), dtype=np.int32 if 2 * n < 1 << 31 else np.int64)
    counts = _CodeCounts(weighted=False)
    for _, codes in _code_blocks(a, b, block_elems, out=grid):
        counts.add(codes)
    table = counts.doubled_ranks().astype(grid.dtype)  # ranks ≤ 2n fit
    ranks = grid.reshape(-1)
    buf = np.empty(min(n, _CHUNK), dtype=ranks.dtype)
    for s in range(0, n, _CHUNK):
        chunk = ranks[s : s + _CHUNK]
        chunk -= counts.lo
        chunk[...] = np.take(table, chunk, out=buf[: chunk.size])
    return ranks, counts.ties()


# --------------------------------------------------------------------------------------------
# everything for one sample, sharing work across encoders


def evaluate_sample(
    encoders: dict[str, dict[str, np.ndarray]],
    xlr_img: np.ndarray | None,
    bkr_src_img: np.ndarray,
    bkr_tgt_img: np.ndarray,
    k: int = 10,
    corr_max_pairs: int | None = None,
    corr_seed: int = 0,
    full_bkr_ranks: bool = True,
    ranks_out: dict[str, dict[str, np.ndarray]] | None = None,
    with_corr: bool = True,
    retrieval: str = "cosine",
    retrieval_k: int | None = None,
) -> dict[str, dict[str, float]]:
    """Metrics of several encoders on one seed's sample; image work done once.

    ``encoders[name]`` holds ``xlr_src``/``xlr_tgt`` (aligned, optional) and
    ``bkr_src``/``bkr_tgt`` (non-matching sets) text embeddings. Returns
    ``{name: {metric: value}}`` with xlr_recall, xlr_mrr, xlr_mean_rank, bkr_recall,
    (bkr_mrr, bkr_mean_rank if ``full_bkr_ranks``) and corr (if ``with_corr``).
    If ``ranks_out`` is a dict, per-query ranks are stored in it: ``ranks_out[name]`` =
    ``{"xlr": ranks, "bkr": ranks or hits}`` (BkR hits as 0/1 when not ``full_bkr_ranks``).

    The image score matrix is computed once per sample (:func:`bkr_image_pass`, after every
    encoder's text step): with full BkR ranks it ranks every encoder's queries, else it builds
    the :class:`BkrImageIndex` whose lookups give the hits. No N×N matrix is kept.
    ``retrieval``/``retrieval_k``: XLR and BkR step 1 by cosine (the paper, default), CSLS or
    ratio margin (:func:`retrieval_scores`); CORR and the image step are unaffected.
    """
    del xlr_img  # XLR needs no images; kept for signature symmetry
    _check_retrieval(retrieval, retrieval_k)
    s_img, t_img = _as_pair(bkr_src_img, bkr_tgt_img, "bkr image")
    corr_side = (
        CorrImageSide.build(s_img, t_img, max_pairs=corr_max_pairs, seed=corr_seed, assume_normalized=True)
        if with_corr
        else None
    )
    rows: dict[str, dict[str, float]] = {}
    xlr_kept: dict[str, np.ndarray] = {}
    t_stars: dict[str, np.ndarray] = {}
    corrs: dict[str, float] = {}
    for name, emb in encoders.items():
        row: dict[str, float] = {}
        b_src, b_tgt = _as_pair(emb["bkr_src"], emb["bkr_tgt"], f"{name} bkr text")
        xs, xt = emb.get("xlr_src"), emb.get("xlr_tgt")
        if xs is not None and xt is not None:
            if xs is emb["bkr_src"] and (x_tgt := normalize(xt)).dtype == b_src.dtype:
                # the same queries as BkR (the pipeline's case): normalised once, same bits
                x_src = b_src
                if x_src.shape[1] != x_tgt.shape[1]:
                    raise ValueError(f"{name} xlr text: dimension mismatch {x_src.shape[1]} vs {x_tgt.shape[1]}")
            else:
                x_src, x_tgt = _as_pair(xs, xt, f"{name} xlr text")
            if x_src.shape[0] != x_tgt.shape[0]:
                raise ValueError(f"{name}: xlr src and tgt must be aligned")
            x_adjust = _HubAdjustment.build(x_src, x_tgt, retrieval, retrieval_k)
            r = _ranks_of_true(x_src, x_tgt, np.arange(x_src.shape[0]), adjust=x_adjust)
            row.update(xlr_recall=recall_at_k(r, k), xlr_mrr=mrr(r), xlr_mean_rank=mean_rank(r))
            xlr_kept[name] = r
        _check_bkr_shapes(b_src, b_tgt, s_img, t_img)
        if corr_side is not None and retrieval == "cosine":  # one product for both where CORR takes all pairs
            t_star, corrs[name] = corr_side.nearest_and_spearman(b_src, b_tgt, assume_normalized=True)
            assert t_star is not None
            t_stars[name] = t_star
        else:
            adjust = _HubAdjustment.build(b_src, b_tgt, retrieval, retrieval_k)
            t_stars[name] = _nearest(b_src, b_tgt, adjust=adjust)
            if corr_side is not None:
                corrs[name] = corr_side.spearman(b_src, b_tgt, assume_normalized=True)
        rows[name] = row
    index: BkrImageIndex | None = None
    bkr_ranks_: list[np.ndarray] = []
    if encoders:
        index, bkr_ranks_ = bkr_image_pass(
            s_img,
            t_img,
            list(t_stars.values()) if full_bkr_ranks else (),
            k,
            assume_normalized=True,
            with_index=not full_bkr_ranks,
        )
    out: dict[str, dict[str, float]] = {}
    for i, name in enumerate(encoders):
        row = rows[name]
        kept: dict[str, np.ndarray] = {}
        if name in xlr_kept:
            kept["xlr"] = xlr_kept[name]
        if full_bkr_ranks:
            r = bkr_ranks_[i]
            row["bkr_recall"] = float(np.mean(r <= k))
            row.update(bkr_mrr=mrr(r), bkr_mean_rank=mean_rank(r))
            kept["bkr"] = r
        else:
            assert index is not None
            hits = index.hits(t_stars[name])
            row["bkr_recall"] = float(np.mean(hits))
            kept["bkr"] = hits.astype(np.int64)
        if corr_side is not None:
            row["corr"] = corrs[name]
        if ranks_out is not None:
            ranks_out[name] = kept
        out[name] = row
    return out
