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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._base import (
    DEFAULT_BLOCK_ELEMS,
    GATHER_BLOCK_ELEMS,
    Columns,
    _as_pair,
    _block_rows,
    _check_bkr_shapes,
    _nearest,
    _rank_in_rows,
    _ranks_of_true,
    _score_buffer,
    _scratch,
    mean_rank,
    mrr,
    normalize,
    recall_at_k,
)
from .corr_baseline import CorrImageSide
from .retrieval import _check_retrieval, _HubAdjustment

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
    k: int,
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
    k: int,
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
        k: int,
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
    k: int | None = None,
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
    ``k``: the k of Recall@k the index answers (needed only ``with_index``). Returns ``(index or None, [ranks per t_star])``. A rank depends only on the sample's
    images and the block size (a function of N), never on the other encoders; its hit
    ``rank <= k`` equals the index's membership, both being read from the same scores.
    """
    s_img, t_img = (src_img, tgt_img) if assume_normalized else _as_pair(src_img, tgt_img, "bkr image")
    n_src, n_tgt = s_img.shape[0], t_img.shape[0]
    if with_index and (k is None or k < 1):
        raise ValueError(f"k must be >= 1 for the index (got {k})")
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
    kk = min(k, n_src) if with_index and k is not None else 0
    step = _block_rows(n_tgt, n_src, block_elems)
    qstep = _block_rows(n_src, n_src, gather_elems)
    dtype = np.result_type(t_img.dtype, s_img.dtype)
    score_buf = _scratch("score", (step, n_src), dtype)
    gather_buf = _scratch("gather", (qstep, n_src), dtype)
    mask_buf = _scratch("mask", (max(step, qstep), n_src), bool)
    src_cols = Columns.of(s_img)  # identical source images tie exactly
    parts = []
    for start in range(0, n_tgt, step):
        stop = min(n_tgt, start + step)
        scores = src_cols.product(t_img[start:stop], score_buf[: stop - start])
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
        assert k is not None  # checked above
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
    candidates_ = Columns.of(c)
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = candidates_.product(q[start:stop], score_buf[: stop - start])
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
    k: int,
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
# everything for one sample, sharing work across encoders


def evaluate_sample(
    encoders: dict[str, dict[str, np.ndarray]],
    xlr_img: np.ndarray | None,
    bkr_src_img: np.ndarray,
    bkr_tgt_img: np.ndarray,
    k: int,
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
