"""The findings analyses as plug-ins: each module below is one analysis (an
:class:`~.step.Analysis`, its ``ANALYSIS``) registered in :data:`REGISTRY`; the one step
(:func:`~.step.run_analysis`) loads a run with the one loader (:func:`~.artifacts.load_run`)
and writes ``<out_dir>/<analysis>.{csv,md,json}`` and figures with the one writer
(:func:`~.step.write_result`). ``summary`` assembles the records of every configuration
(the overall verdict, docs/FINDINGS.md).

Adding an analysis: a module with ``ANALYSIS = Plugin("<name>", run)`` and one line below.
"""

from __future__ import annotations

from . import agreement, bli, calibration, hubness, image_quality, inference, sample_size
from .artifacts import RunArtifacts, load_run, text_keys
from .step import Analysis, Plugin, Result, run_analysis, write_result
from .summary import document_step, summary_records

#: every analysis of one run, by name (the record's ``analysis``)
REGISTRY: dict[str, Analysis] = {
    "inference": inference.ANALYSIS,
    "image_quality": image_quality.ANALYSIS,
    "sample_size": sample_size.ANALYSIS,
    "hubness": hubness.ANALYSIS,
    "calibration": calibration.ANALYSIS,
    "bli": bli.ANALYSIS,
    "agreement": agreement.ANALYSIS,
}

__all__ = [
    "REGISTRY",
    "Analysis",
    "Plugin",
    "Result",
    "RunArtifacts",
    "document_step",
    "load_run",
    "run_analysis",
    "summary_records",
    "text_keys",
    "write_result",
]
