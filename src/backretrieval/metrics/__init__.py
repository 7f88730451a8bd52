"""The paper's retrieval metrics: XLR, BkR, CORR, per-query ranks, MRR and mean rank.

:mod:`.kernels` holds the numpy kernels (the reference implementation, used by the
pipeline); :mod:`.torch_kernels` the same kernels in PyTorch (CUDA when present), checked
against the numpy ones. Importing this package does not import torch.
"""

from .kernels import (
    DEFAULT_BLOCK_ELEMS,
    BkrImageIndex,
    CorrImageSide,
    average_ranks,
    backretrieve,
    bkr,
    bkr_ranks,
    corr,
    evaluate_sample,
    mean_rank,
    mrr,
    nearest_m,
    normalize,
    recall_at_k,
    soft_bkr_hits,
    xlr,
    xlr_ranks,
)

__all__ = [
    "DEFAULT_BLOCK_ELEMS",
    "BkrImageIndex",
    "CorrImageSide",
    "average_ranks",
    "backretrieve",
    "bkr",
    "bkr_ranks",
    "corr",
    "evaluate_sample",
    "mean_rank",
    "mrr",
    "nearest_m",
    "normalize",
    "recall_at_k",
    "soft_bkr_hits",
    "xlr",
    "xlr_ranks",
]
