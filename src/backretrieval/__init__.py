"""Backretrieval: image-pivoted evaluation of cross-lingual text representations.

Library first, in layers (docs/ARCHITECTURE.md): :mod:`.metrics` (XLR, BkR, CORR) and
:mod:`.stats`; :mod:`.encoders`, :mod:`.images` and :mod:`.data`; :mod:`.study` (the case
study) and :mod:`.reporting`; :mod:`.steps` (one function per pipeline step), which the CLI
(:mod:`.cli`) and the workflow call.

The metrics are importable from here too (loaded on first use, so ``import backretrieval``
stays cheap): ``from backretrieval import xlr, bkr, corr``; and so is the one-liner that
evaluates your own encoder, ``backretrieval.evaluate(model, dataset, directions=...)``
(:mod:`.evaluation`).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_METRICS_API = (
    "backretrieve",
    "bkr",
    "bkr_ranks",
    "corr",
    "mean_rank",
    "mrr",
    "normalize",
    "recall_at_k",
    "xlr",
    "xlr_ranks",
)

__all__ = ["__version__", "evaluate", *_METRICS_API]


def __getattr__(name: str) -> Any:
    if name in _METRICS_API:
        from . import metrics

        return getattr(metrics, name)
    if name == "evaluate":
        from .evaluation.run import evaluate

        return evaluate
    raise AttributeError(f"module 'backretrieval' has no attribute {name!r}")
