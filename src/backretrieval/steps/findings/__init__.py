"""Findings steps: thin functions from explicit artifact files to
``<out_dir>/<analysis>.{csv,md,json}`` and figures (see backretrieval.findings.document).

Every step takes its inputs and settings as arguments (the CLI passes them as flags; the
Snakemake rules in workflow/rules/findings.smk name the files): no path comes from the config.
Modules: ``_common`` (the run loader and writers), then one per analysis: ``inference``,
``calibration``, ``bli_agreement``, ``summary`` (across configurations, the documents),
``image_side`` (image quality, sample size, hubness).
"""

from __future__ import annotations

from ._common import RunArtifacts, load_run
from .bli_agreement import agreement_step, bli_step
from .calibration import calibration_step
from .image_side import hubness_step, image_quality_step, parse_degradations, sample_size_step
from .inference import inference_step
from .summary import document_step, summary_records

__all__ = [
    "RunArtifacts",
    "agreement_step",
    "bli_step",
    "calibration_step",
    "document_step",
    "hubness_step",
    "image_quality_step",
    "inference_step",
    "load_run",
    "parse_degradations",
    "sample_size_step",
    "summary_records",
]
