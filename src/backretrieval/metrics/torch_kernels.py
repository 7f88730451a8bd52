"""PyTorch (GPU-capable) versions of the retrieval kernels in :mod:`backretrieval.metrics`.

Same definitions, same conventions, same bounded-memory block processing:

* **Rank** of the true candidate = 1 + number of candidates with a *strictly* higher score
  (ties favour the true candidate); the true score is read from the same block of the same
  matrix product as the scores it is compared against.
* **Nearest neighbour** (BkR step 1) = argmax with ties → **lowest index**. This is enforced
  explicitly (rows with several maxima are resolved with a masked ``amin`` over column
  indices) instead of relying on ``torch.argmax``'s tie behaviour on every backend.
* Queries are processed in blocks of at most ``block_elems`` score entries.

Inputs are numpy arrays (or anything ``np.asarray`` accepts). They are L2-normalised by
:func:`backretrieval.metrics.normalize` on the host — so both implementations start from
bit-identical normalised matrices — then moved to ``device`` in ``precision``:

``"fp32"`` (default)
    float32 similarities. On CPU the ranks equal those of :mod:`backretrieval.metrics`
    except where two scores differ by a few float32 ulps (different BLAS summation order);
    on data whose dot products are exact in float32 (e.g. entries ±1/2, ±1/4) they are
    identical, ties included (see tests/test_metrics_torch.py).
    "fp32" means IEEE float32 even where the caller enabled TF32 or bf16 products with
    ``torch.set_float32_matmul_precision("high"/"medium")`` (A100/H100/H200 users often do):
    the kernels switch those modes off while they run and restore them after.
``"fp64"``
    float64 similarities (matches numpy's float64 path).
``"fp16"`` / ``"bf16"``
    half-precision similarities: faster on GPUs, but scores are rounded to ~3 (bf16: ~2)
    significant digits, which creates extra ties (they favour the true candidate) and
    changes some ranks. Use :func:`precision_check` to measure the effect on your data;
    the stated tolerance for fp16 is |ΔRecall@10| ≤ 0.01 (checked by the tests and printed
    by ``benchmarks/run_all.py --gpu``). bf16 is coarser and not recommended for ranks.

``device="auto"`` picks CUDA when available, else CPU. Results are returned as numpy arrays.
Half precision on CPU works but is slow (meant for testing the code path only).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import torch

from .._util.device import resolve_device as _resolve_device
from . import kernels as M
from ._base import _check_bkr_shapes

Precision = Literal["fp32", "fp64", "fp16", "bf16"]
F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_BLOCK_ELEMS = M.DEFAULT_BLOCK_ELEMS
_DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "fp64": torch.float64,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}

__all__ = [
    "DEFAULT_BLOCK_ELEMS",
    "PrecisionReport",
    "backretrieve",
    "bkr",
    "bkr_ranks",
    "build_image_index",
    "index_recall",
    "precision_check",
    "recall_at_k",
    "resolve_device",
    "xlr",
    "xlr_ranks",
]

recall_at_k = M.recall_at_k


# --------------------------------------------------------------------------------------------
# helpers


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` → CUDA if available else CPU; anything else is passed to ``torch.device``
    (:func:`backretrieval._util.device.resolve_device`).

    Asking for CUDA where there is none raises ``ValueError`` (instead of a late CUDA error).
    """
    return torch.device(_resolve_device(str(device) if isinstance(device, torch.device) else device))


def _dtype(precision: str) -> torch.dtype:
    try:
        return _DTYPES[precision]
    except KeyError:
        raise ValueError(f"precision must be one of {sorted(_DTYPES)}, got {precision!r}") from None


def _to_device(x: np.ndarray, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Host-normalised copy of ``x`` on ``device`` in ``dtype``."""
    arr = np.ascontiguousarray(M.normalize(x))
    return torch.from_numpy(arr).to(device=device, dtype=dtype)


def _pair(a, b, what: str, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    a_np, b_np = np.asarray(a), np.asarray(b)
    if a_np.ndim != 2 or b_np.ndim != 2:
        raise ValueError(f"{what}: expected 2-D embedding matrices, got shapes {a_np.shape} and {b_np.shape}")
    if a_np.shape[1] != b_np.shape[1]:
        raise ValueError(f"{what}: dimension mismatch {a_np.shape[1]} vs {b_np.shape[1]}")
    return _to_device(a_np, device, dtype), _to_device(b_np, device, dtype)


@contextlib.contextmanager
def _ieee_fp32() -> Iterator[None]:
    """Inside: float32 matrix products are IEEE float32 on every backend, whatever the caller set.

    ``torch.set_float32_matmul_precision("high"/"medium")`` (or the per-backend
    ``fp32_precision`` knobs) make float32 products run in TF32 on CUDA and in TF32/bf16
    through oneDNN on CPUs that have it — ~3 significant digits, which silently changes
    ranks. The kernels switch those knobs to ``"ieee"`` and restore the caller's values on
    exit (also used as a decorator). Half-precision paths are unaffected (their dtype is
    explicit). torch without the per-backend knobs: the global setting is used instead.
    """
    knobs = [
        k
        for k in (
            getattr(torch.backends.cuda, "matmul", None),
            getattr(getattr(torch.backends, "mkldnn", None), "matmul", None),
        )
        if k is not None and hasattr(k, "fp32_precision")
    ]
    if knobs:
        saved = [k.fp32_precision for k in knobs]
        for k in knobs:
            k.fp32_precision = "ieee"
        try:
            yield
        finally:
            for k, v in zip(knobs, saved):
                k.fp32_precision = v
    else:  # pragma: no cover - older torch without the per-backend knobs
        saved_global = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("highest")
        try:
            yield
        finally:
            torch.set_float32_matmul_precision(saved_global)


def _kernel(fn: F) -> F:
    """The kernels' common frame: no autograd, IEEE float32 products (``_ieee_fp32``)."""
    return torch.no_grad()(_ieee_fp32()(fn))


def _block_rows(n_rows: int, n_cols: int, block_elems: int) -> int:
    if block_elems < 1:
        raise ValueError("block_elems must be >= 1")
    return max(1, min(n_rows, block_elems // max(1, n_cols)))


# --------------------------------------------------------------------------------------------
# core kernels (tensors already normalised and on the device)


class _Columns:
    """Candidate side of a block product on the device: identical candidate rows get bit-equal
    score columns (one product with the distinct rows, copied out to the duplicates), as in
    :class:`backretrieval.metrics._base.Columns`: a BLAS/cuBLAS product gives identical columns
    bits that depend on their position, which would break "ties → lowest index"."""

    def __init__(self, candidates: torch.Tensor):
        self.n = int(candidates.shape[0])
        self.inverse: torch.Tensor | None = None
        self.t = candidates.T
        if self.n > 1 and candidates.shape[1] > 0:
            distinct, inverse = torch.unique(candidates, dim=0, return_inverse=True)
            if distinct.shape[0] < self.n:
                self.t, self.inverse = distinct.T.contiguous(), inverse

    def scores(self, queries: torch.Tensor) -> torch.Tensor:
        out = queries @ self.t
        return out if self.inverse is None else out.index_select(1, self.inverse)


@_kernel
def _ranks_of_true(
    queries: torch.Tensor,
    candidates: torch.Tensor,
    true_idx: torch.Tensor,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    query_idx: torch.Tensor | None = None,
) -> torch.Tensor:
    """rank[i] = 1 + #{j : <q_i, c_j> > <q_i, c_true[i]>}, block by block (int64 tensor).

    ``query_idx`` (optional): query i is row ``query_idx[i]`` of ``queries``; each distinct
    row is scored once and shared by the queries that use it (BkR's hub targets), never a full
    gathered image matrix. (The numpy kernels score the whole image matrix once per sample
    instead, ``metrics.bkr_image_pass``; on exact data both give the same ranks, tested.)
    """
    if query_idx is not None:
        return _ranks_of_true_pivots(queries, candidates, true_idx, query_idx, block_elems)
    n = int(queries.shape[0])
    ranks = torch.empty(n, dtype=torch.int64, device=candidates.device)
    step = _block_rows(n, candidates.shape[0], block_elems)
    cols = _Columns(candidates)
    for start in range(0, n, step):
        stop = min(n, start + step)
        scores = cols.scores(queries[start:stop])
        rows = torch.arange(stop - start, device=scores.device)
        true_scores = scores[rows, true_idx[start:stop]]
        ranks[start:stop] = 1 + (scores > true_scores[:, None]).sum(dim=1)
    return ranks


@_kernel
def _ranks_of_true_pivots(
    pivots: torch.Tensor,
    candidates: torch.Tensor,
    true_idx: torch.Tensor,
    query_idx: torch.Tensor,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
) -> torch.Tensor:
    """rank[i] = 1 + #{j : <p_r, c_j> > <p_r, c_true[i]>}, r = query_idx[i]; distinct r scored once."""
    n, n_c = int(query_idx.shape[0]), int(candidates.shape[0])
    ranks = torch.empty(n, dtype=torch.int64, device=candidates.device)
    if n == 0:
        return ranks
    uniq, inv = torch.unique(query_idx, return_inverse=True)
    order = torch.argsort(inv, stable=True)
    bounds = torch.searchsorted(inv[order], torch.arange(len(uniq) + 1, device=inv.device)).tolist()
    step = _block_rows(len(uniq), n_c, block_elems)
    qstep = _block_rows(n, n_c, block_elems)
    cols = _Columns(candidates)
    for us in range(0, len(uniq), step):
        ue = min(len(uniq), us + step)
        scores = cols.scores(pivots[uniq[us:ue]])
        block_queries = order[bounds[us] : bounds[ue]]
        for cs in range(0, len(block_queries), qstep):
            sel = block_queries[cs : cs + qstep]
            rows = scores[inv[sel] - us]
            true_scores = rows[torch.arange(len(sel), device=rows.device), true_idx[sel]]
            ranks[sel] = 1 + (rows > true_scores[:, None]).sum(dim=1)
    return ranks


def _first_argmax(scores: torch.Tensor) -> torch.Tensor:
    """Row-wise argmax with ties → lowest column index (explicit, backend independent)."""
    best, idx = scores.max(dim=1)
    is_max = scores == best[:, None]
    multi = is_max.sum(dim=1) > 1
    if bool(multi.any()):
        cols = torch.arange(scores.shape[1], device=scores.device)
        sub = torch.where(is_max[multi], cols, scores.shape[1])
        idx = idx.clone()
        idx[multi] = sub.amin(dim=1)
    return idx


@_kernel
def _nearest(queries: torch.Tensor, candidates: torch.Tensor, block_elems: int = DEFAULT_BLOCK_ELEMS) -> torch.Tensor:
    n = int(queries.shape[0])
    out = torch.empty(n, dtype=torch.int64, device=candidates.device)
    step = _block_rows(n, candidates.shape[0], block_elems)
    cols = _Columns(candidates)
    for start in range(0, n, step):
        stop = min(n, start + step)
        out[start:stop] = _first_argmax(cols.scores(queries[start:stop]))
    return out


# --------------------------------------------------------------------------------------------
# XLR


def xlr_ranks(
    src_text,
    tgt_text,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    device: str | torch.device = "auto",
    precision: Precision = "fp32",
) -> np.ndarray:
    """Per-query rank of the true translation (row i of src matches row i of tgt)."""
    dev, dt = resolve_device(device), _dtype(precision)
    src, tgt = _pair(src_text, tgt_text, "xlr", dev, dt)
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(f"xlr: src and tgt must be aligned (same rows), got {src.shape[0]} vs {tgt.shape[0]}")
    idx = torch.arange(src.shape[0], device=dev)
    return _ranks_of_true(src, tgt, idx, block_elems).cpu().numpy()


def xlr(
    src_text,
    tgt_text,
    k: int,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    device: str | torch.device = "auto",
    precision: Precision = "fp32",
) -> float:
    """Ground-truth cross-lingual retrieval Recall@k (the paper's XLR)."""
    return recall_at_k(xlr_ranks(src_text, tgt_text, block_elems, device, precision), k)


# --------------------------------------------------------------------------------------------
# BkR


def backretrieve(
    src_text,
    tgt_text,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    device: str | torch.device = "auto",
    precision: Precision = "fp32",
) -> np.ndarray:
    """BkR step 1: index of the nearest target text for every source text (ties → lowest)."""
    dev, dt = resolve_device(device), _dtype(precision)
    src, tgt = _pair(src_text, tgt_text, "bkr text", dev, dt)
    return _nearest(src, tgt, block_elems).cpu().numpy()


def bkr_ranks(
    src_text,
    tgt_text,
    src_img,
    tgt_img,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    device: str | torch.device = "auto",
    precision: Precision = "fp32",
) -> np.ndarray:
    """Per-query Backretrieval rank (the paper's four steps; see ``metrics.bkr_ranks``)."""
    _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img)
    dev, dt = resolve_device(device), _dtype(precision)
    src, tgt = _pair(src_text, tgt_text, "bkr text", dev, dt)
    t_star = _nearest(src, tgt, block_elems)
    del src, tgt
    s_img, t_img = _pair(src_img, tgt_img, "bkr image", dev, dt)
    idx = torch.arange(s_img.shape[0], device=dev)
    return _ranks_of_true(t_img, s_img, idx, block_elems, query_idx=t_star).cpu().numpy()


def bkr(
    src_text,
    tgt_text,
    src_img,
    tgt_img,
    k: int,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    device: str | torch.device = "auto",
    precision: Precision = "fp32",
) -> float:
    """Backretrieval Recall@k (the paper's BkR)."""
    return recall_at_k(bkr_ranks(src_text, tgt_text, src_img, tgt_img, block_elems, device, precision), k)


@_kernel
def build_image_index(
    src_img,
    tgt_img,
    k: int,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    device: str | torch.device = "auto",
    precision: Precision = "fp32",
) -> M.BkrImageIndex:
    """Torch equivalent of ``metrics.BkrImageIndex.build``; returns the same (numpy) index.

    For each target image t: the source images whose similarity is >= the k-th largest in
    row t (boundary ties are members). ``codes`` are identical to the numpy build whenever
    the scores are (see the module docstring on fp32 BLAS differences).
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    dev, dt = resolve_device(device), _dtype(precision)
    s_img, t_img = _pair(src_img, tgt_img, "bkr image", dev, dt)
    n_src, n_tgt = int(s_img.shape[0]), int(t_img.shape[0])
    kk = min(k, n_src)
    step = _block_rows(n_tgt, n_src, block_elems)
    src_cols = _Columns(s_img)
    parts = []
    for start in range(0, n_tgt, step):
        stop = min(n_tgt, start + step)
        scores = src_cols.scores(t_img[start:stop])
        kth = torch.topk(scores, kk, dim=1, largest=True, sorted=True).values[:, -1]
        rows, cols = torch.nonzero(scores >= kth[:, None], as_tuple=True)
        parts.append(((rows + start).to(torch.int64) * n_src + cols).cpu().numpy())
    codes = np.sort(np.concatenate(parts)) if parts else np.empty(0, np.int64)
    return M.BkrImageIndex(k=k, n_src=n_src, n_tgt=n_tgt, codes=codes)


def index_recall(
    index: M.BkrImageIndex,
    src_text,
    tgt_text,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
    device: str | torch.device = "auto",
    precision: Precision = "fp32",
) -> float:
    """BkR Recall@k of one text encoder given a shared image index (torch text retrieval)."""
    n_s, n_t = np.shape(src_text)[0], np.shape(tgt_text)[0]
    if n_s != index.n_src or n_t != index.n_tgt:
        raise ValueError(f"text rows ({n_s}, {n_t}) do not match the image index ({index.n_src}, {index.n_tgt})")
    return float(np.mean(index.hits(backretrieve(src_text, tgt_text, block_elems, device, precision))))


# --------------------------------------------------------------------------------------------
# accuracy of reduced precision


@dataclass(frozen=True)
class PrecisionReport:
    """Ranks in ``precision`` vs fp32 on the same inputs and device."""

    precision: str
    n_queries: int
    frac_rank_differs: float
    max_abs_rank_diff: int
    recall_ref: float
    recall_test: float

    @property
    def recall_diff(self) -> float:
        return self.recall_test - self.recall_ref


def precision_check(
    src,
    tgt,
    precision: Precision = "fp16",
    *,
    k: int,
    device: str | torch.device = "auto",
    block_elems: int = DEFAULT_BLOCK_ELEMS,
) -> PrecisionReport:
    """Compare XLR ranks computed in ``precision`` with fp32 ranks (same device)."""
    ref = xlr_ranks(src, tgt, block_elems, device, "fp32")
    test = xlr_ranks(src, tgt, block_elems, device, precision)
    return PrecisionReport(
        precision=precision,
        n_queries=int(ref.size),
        frac_rank_differs=float(np.mean(ref != test)),
        max_abs_rank_diff=int(np.max(np.abs(ref - test))) if ref.size else 0,
        recall_ref=recall_at_k(ref, k),
        recall_test=recall_at_k(test, k),
    )
