"""The findings steps: one analysis of one run (:func:`analysis_step`: the run's artifacts
read with the one loader, the registered analysis run, its result written with the one
writer), and the records of every configuration assembled (:mod:`.summary`: the overall
verdict, docs/FINDINGS.md). The analyses themselves are :mod:`backretrieval.findings`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...evaluation.run_artifacts import RunArtifacts
from ...findings.analysis import get
from ...findings.record import FindingsRecord
from ...findings.writer import write_result
from .summary import document_step, summary_records

__all__ = ["analysis_step", "document_step", "summary_records"]


def analysis_step(name: str, artifacts: RunArtifacts, settings: Mapping[str, Any], out_dir: Path) -> FindingsRecord:
    """Run the analysis ``name`` on ``artifacts`` with ``settings`` (its defaults updated by these,
    :meth:`~backretrieval.findings.analysis.Analysis.settings_of`) and write its outputs to
    ``out_dir``: exactly the files it declares (``Analysis.outputs``), else an error before any
    is written."""
    cls = get(name)
    full = cls.settings_of(settings)
    result = cls().run(artifacts, full)
    files, figures = cls.outputs(full)
    if set(result.files) != set(files) or set(result.figures) != set(figures):
        raise RuntimeError(
            f"findings {name}: its result has files {sorted(result.files)} and figures {sorted(result.figures)}, "
            f"but the analysis declares {sorted(files)} and {sorted(figures)} (the workflow's outputs)"
        )
    return write_result(Path(out_dir), name, result)
