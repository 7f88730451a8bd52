"""Rows of an embedding matrix: L2 normalisation and the block sizes of row-blocked passes.

Kept out of :mod:`backretrieval.metrics` (which re-exports them) so that a step that only
normalises embeddings (the case study's embedding step) does not import the retrieval kernels,
and its code version does not change with them.
"""

from __future__ import annotations

import numpy as np

#: elements per block of the row-blocked passes (score blocks, finiteness checks)
DEFAULT_BLOCK_ELEMS = 1 << 24
#: rows per block of :func:`normalize`'s divide and norm passes (256 KB of float32: L2-resident)
NORMALIZE_BLOCK_ELEMS = 1 << 16


def block_rows(n_rows: int, n_cols: int, block_elems: int) -> int:
    """Rows per block so that a block holds at most ``block_elems`` elements (at least 1 row)."""
    return max(1, min(n_rows, block_elems // max(1, n_cols)))


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
    step = block_rows(arr.shape[0], arr.shape[1], DEFAULT_BLOCK_ELEMS)
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
    step = block_rows(arr.shape[0], arr.shape[1], NORMALIZE_BLOCK_ELEMS)
    sq = np.empty((step, arr.shape[1]), dtype=arr.dtype)
    for start in range(0, arr.shape[0], step):
        stop = min(arr.shape[0], start + step)
        blk = np.divide(arr[start:stop], scale[start:stop], out=out[start:stop])
        norms = np.sqrt(np.add.reduce(np.multiply(blk, blk, out=sq[: stop - start]), axis=1, keepdims=True))
        norms[norms == 0] = 1
        blk /= norms
    return out
