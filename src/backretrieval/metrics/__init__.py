"""The paper's retrieval metrics: XLR, BkR, CORR, per-query ranks, MRR and mean rank
(plus CSLS / ratio-margin retrieval as named options of XLR and BkR step 1).

:mod:`.kernels` holds the numpy kernels (the reference implementation, used by the
pipeline); :mod:`.torch_kernels` the same kernels in PyTorch (CUDA when present), checked
against the numpy ones. Importing this package does not import torch.
"""

from .kernels import (
    DEFAULT_BLOCK_ELEMS,
    RETRIEVALS,
    BkrImageIndex,
    CorrImageSide,
    average_ranks,
    backretrieve,
    bkr,
    bkr_image_pass,
    bkr_ranks,
    corr,
    evaluate_sample,
    mean_rank,
    mrr,
    nearest_m,
    neighbourhood_means,
    normalize,
    recall_at_k,
    retrieval_scores,
    soft_bkr_hits,
    xlr,
    xlr_ranks,
)

__all__ = [
    "DEFAULT_BLOCK_ELEMS",
    "RETRIEVALS",
    "BkrImageIndex",
    "CorrImageSide",
    "average_ranks",
    "backretrieve",
    "bkr",
    "bkr_image_pass",
    "bkr_ranks",
    "corr",
    "evaluate_sample",
    "mean_rank",
    "mrr",
    "nearest_m",
    "neighbourhood_means",
    "normalize",
    "recall_at_k",
    "retrieval_scores",
    "soft_bkr_hits",
    "xlr",
    "xlr_ranks",
]
