"""Evaluate your own encoder on image–text data without translations: one implementation,
four doors.

* library: :func:`evaluate` (tidy per-seed DataFrame), :func:`evaluate_model`
  (an :class:`Evaluation` with ``.summary()`` and per-query ranks), :func:`evaluate_models`;
* CLI: ``backretrieval evaluate`` (a table per direction + a result JSON, :mod:`.results`) and
  ``backretrieval compare`` (paired tests of two results, :mod:`.compare`);
* training: :class:`BackretrievalEvaluator`, a sentence-transformers evaluator (:mod:`.st_evaluator`);
* MTEB: :func:`.mteb_task.backretrieval_task`, a task for ``mteb.evaluate`` (needs mteb 2.x).

Each takes one :class:`.protocol.Protocol` (``sample_size``, ``seeds``, ``recall_k``, text field,
image backbone, CORR's settings; checked once, when made), or its fields as keywords. All of
them open their plan with :func:`.run.open_plan` (the dataset located or prepared, the
checks, the seeded samples of :func:`.run.plan_evaluation`) and compute with
:func:`.core.evaluate_direction`, the core of the pipeline's metrics step. Named datasets and
image sources: :mod:`.datasets`; what ``--encoder`` accepts: :mod:`.models`.
"""

from __future__ import annotations

import importlib
from typing import Any

#: where each public name is defined. Imported on first use (PEP 562), so that importing a light
#: submodule (``.defaults``, ``.datasets``) does not load pandas, SciPy or sentence-transformers:
#: every pipeline step starts through the command line, which reads its defaults from here.
_HOME = {
    "Comparison": "compare",
    "compare_results": "compare",
    "format_comparison": "compare",
    "METRIC_COLUMNS": "core",
    "evaluate_direction": "core",
    "format_table": "results",
    "read_result": "results",
    "result_dict": "results",
    "summarize": "results",
    "write_result": "results",
    "Evaluation": "run",
    "EvaluationPlan": "run",
    "evaluate": "run",
    "evaluate_model": "run",
    "evaluate_models": "run",
    "plan_evaluation": "run",
    "Protocol": "protocol",
    "BackretrievalEvaluator": "st_evaluator",  # imports sentence-transformers
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'backretrieval.evaluation' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
