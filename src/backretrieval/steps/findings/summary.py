"""Findings across configurations: each analysis's summary (its cross-configuration records:
the overall verdict, calibration leave-one-dataset-out, ...), docs/FINDINGS.md and the README's
verdict sentence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..._util import io
from ...findings.analysis import registry, summary_names
from ...findings.record import FindingsRecord, read_record, write_record


def summary_records(record_files: Sequence[Path], summary_dir: Path) -> list[FindingsRecord]:
    """The cross-configuration records from every configuration's records: each analysis's
    summary (:meth:`~backretrieval.findings.analysis.Analysis.summarize`: the records of its
    ``summaries``, e.g. ``overall``, ``calibration_lodo``), in document order; their tables and
    figures go to ``summary_dir``, the records beside them."""
    summary_dir = Path(summary_dir)
    recs = [(Path(p), read_record(p)) for p in record_files]
    out: list[FindingsRecord] = []
    for name, cls in registry().items():
        made = cls.summarize(recs, summary_dir)
        declared = [q.analysis for q in cls.summaries]
        if [r.analysis for r in made] != declared:
            raise RuntimeError(
                f"findings {name}: its summary made the records {[r.analysis for r in made]}, "
                f"but the analysis declares {declared} (its summaries)"
            )
        out += made
    for rec in out:
        write_record(summary_dir / f"{rec.analysis}.json", rec)
    return out


def document_step(
    record_files: Sequence[Path],
    *,
    doc: Path,
    summary_dir: Path,
    readme: Path | None = None,
) -> None:
    """The cross-configuration records, docs/FINDINGS.md, and (``readme``) the README's block."""
    from ...findings.document import render_findings, update_readme_block

    cross_files = {f"{name}.json" for name in summary_names()}
    record_files = sorted({Path(p) for p in record_files if Path(p).name not in cross_files})
    per_run = [read_record(p) for p in record_files]
    cross = summary_records(record_files, summary_dir)
    records = per_run + cross
    doc = Path(doc)
    text = render_findings(records, doc_dir=_posix_rel(doc.parent), summary_dir=_posix_rel(Path(summary_dir)))
    if readme is not None:
        readme = Path(readme)
        new = update_readme_block(readme.read_text(encoding="utf-8"), records, str(readme))
        io.write_text(doc, text)
        if new != readme.read_text(encoding="utf-8"):
            io.write_text(readme, new)
    else:
        io.write_text(doc, text)


def _posix_rel(p: Path) -> str:
    return Path(p).as_posix()
