"""Hubness-reducing retrieval scores, named options of XLR and BkR step 1 (the paper uses plain
cosine): CSLS (Conneau et al. 2018) and the ratio margin (Artetxe & Schwenk 2019)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._base import DEFAULT_BLOCK_ELEMS, Columns, _as_pair, _block_rows, _score_buffer

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
    cols = Columns.of(candidates)
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = cols.product(queries[start:stop], score_buf[: stop - start])
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
    cols = Columns.of(c)
    for start in range(0, q.shape[0], step):
        stop = min(q.shape[0], start + step)
        cols.product(q[start:stop], out[start:stop])
        if adjust is not None:
            adjust.apply(out[start:stop], start, stop)
    return out
