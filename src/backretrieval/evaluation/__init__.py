"""Evaluate your own encoder on image–text data without translations: one implementation,
four doors.

* library: :func:`evaluate` (tidy per-seed DataFrame), :func:`evaluate_model`
  (an :class:`Evaluation` with ``.summary()`` and per-query ranks), :func:`evaluate_models`;
* CLI: ``backretrieval evaluate`` (a table per direction + a result JSON, :mod:`.results`) and
  ``backretrieval compare`` (paired tests of two results, :mod:`.compare`);
* training: :class:`BackretrievalEvaluator`, a sentence-transformers evaluator (:mod:`.st_evaluator`);
* MTEB: :func:`.mteb_task.backretrieval_task`, a task for ``mteb.evaluate`` (needs mteb 2.x).

All of them plan with :func:`.run.plan_evaluation` (checks + seeded samples) and compute with
:func:`.core.evaluate_direction`, the core of the pipeline's metrics step. Named datasets and
image sources: :mod:`.datasets`; what ``--model`` accepts: :mod:`.models`.
"""

from __future__ import annotations

from typing import Any

from .compare import Comparison, compare_results, format_comparison
from .core import METRIC_COLUMNS, evaluate_direction
from .results import format_table, read_result, result_dict, summarize, write_result
from .run import Evaluation, EvaluationPlan, evaluate, evaluate_model, evaluate_models, plan_evaluation

__all__ = [
    "METRIC_COLUMNS",
    "BackretrievalEvaluator",
    "Comparison",
    "Evaluation",
    "EvaluationPlan",
    "compare_results",
    "evaluate",
    "evaluate_direction",
    "evaluate_model",
    "evaluate_models",
    "format_comparison",
    "format_table",
    "plan_evaluation",
    "read_result",
    "result_dict",
    "summarize",
    "write_result",
]


def __getattr__(name: str) -> Any:
    if name == "BackretrievalEvaluator":  # imports sentence-transformers: only on use
        from .st_evaluator import BackretrievalEvaluator

        return BackretrievalEvaluator
    raise AttributeError(f"module 'backretrieval.evaluation' has no attribute {name!r}")
