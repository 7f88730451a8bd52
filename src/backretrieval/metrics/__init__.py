"""The paper's retrieval metrics: XLR, BkR, CORR, per-query ranks, MRR and mean rank
(plus CSLS / ratio-margin retrieval as named options of XLR and BkR step 1).

:mod:`.kernels` holds the numpy XLR and BkR kernels and ``evaluate_sample`` (the reference
implementation, used by the pipeline), :mod:`.corr_baseline` the CORR baseline's exact-rank engine,
:mod:`.retrieval` the CSLS / ratio-margin options and :mod:`._base` the shared rank passes.
"""

from ._base import DEFAULT_BLOCK_ELEMS, mean_rank, mrr, normalize, recall_at_k
from .corr_baseline import CorrImageSide, average_ranks, corr
from .kernels import (
    BkrImageIndex,
    backretrieve,
    bkr,
    bkr_image_pass,
    bkr_ranks,
    evaluate_sample,
    nearest_m,
    soft_bkr_hits,
    xlr,
    xlr_ranks,
)
from .retrieval import RETRIEVALS, neighbourhood_means, retrieval_scores

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
