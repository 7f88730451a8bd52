"""What a run removes before its first job (the workflow's ``onstart``): leftovers of killed
jobs in Snakemake's shadow folder, and the report files of an earlier config of the same run
that this config does not make.

Report files (:func:`stale_reports`): a run reusing its ``run_name`` (and ``reports_dir``)
under another config may make other reports, e.g. a parallel dataset's Table 1, Figure 2 and
correlations, then a dataset without parallel texts' BkR report. The files the other config
made would stay beside the new ones, and be read as this run's. Only the report step's known
files (both kinds) and, for a config without a case study, the case study's report files are
candidates; nothing else in the folder (findings, a user's notes) and nothing outside it.

A job with a shadow directory runs in ``.snakemake/shadow/<tmp>/`` and Snakemake removes that
folder when the job ends; a job killed outright (``kill -9``, a power loss) leaves it, with its
partial outputs, and neither ``--unlock`` nor a rerun removes it (Snakemake's own
``--cleanup-shadow`` is a separate command). Every shadow folder belongs to a Snakemake
instance that holds the working directory's lock (``.snakemake/locks/``) while it runs, so
when no other instance holds one, every shadow folder that exists before this run's first
job was left by a killed one: :func:`remove_abandoned_shadows` removes them then, and keeps
them (saying so) while another instance holds a lock.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from . import layout


def remove_abandoned_shadows(
    shadow_path: str | Path, lockdir: str | Path | None, own_locks: Iterable[str | Path]
) -> tuple[list[Path], str | None]:
    """Remove every entry of ``shadow_path`` when ``lockdir`` holds no lock file but this
    instance's (``own_locks``). Returns (removed entries, why nothing was removed or None).
    ``lockdir`` None (a persistence without lock files): nothing is removed."""
    shadow = Path(shadow_path)
    entries = sorted(shadow.iterdir()) if shadow.is_dir() else []
    if not entries:
        return [], None
    if lockdir is None:
        return [], "the locks of other Snakemake instances cannot be seen"
    own = {Path(p).resolve() for p in own_locks}
    others = (
        [p for p in sorted(Path(lockdir).glob("*.lock")) if p.resolve() not in own] if Path(lockdir).is_dir() else []
    )
    if others:
        return [], f"another Snakemake instance holds a lock in this folder ({others[0]})"
    removed = []
    for entry in entries:
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError:
            continue
        removed.append(entry)
    return removed, None


def _parallel_known(cfg: dict) -> bool | None:
    """Whether the dataset has parallel texts; None when its dataset.json cannot be read yet (a
    ``source: prepared`` folder not there): then nothing is judged stale."""
    if cfg["dataset"].get("source") != "prepared":
        return True
    return None if layout.prepared_dataset_json(cfg) is None else layout.dataset_parallel(cfg)


def stale_reports(cfg: dict) -> list[Path]:
    """The files in ``reports_dir`` that another config of this run made and this one does not:
    the report step's files of the other kind (parallel / without parallel texts), and, without
    a case study, the case study's report files."""
    parallel = _parallel_known(cfg)
    if parallel is None:
        return []
    rd = Path(cfg["reports_dir"])
    known = set(layout.REPORT_FILES.values()) | set(layout.BKR_REPORT_FILES.values())
    stale = sorted(known - set(layout.report_files(parallel).values()))
    if not cfg.get("case_study"):
        case = layout.case_reports(cfg).relative_to(rd)
        names = {*layout.CASE_REPORT_FILES.values(), "rating_sheet.html", "human_study.md", "human_study.json"}
        stale += [f"{case.as_posix()}/{n}" for n in sorted(names)]
        stale += [
            p.relative_to(rd).as_posix() for p in sorted((rd / case / "figures").glob("loss_*.png")) if p.is_file()
        ]
    return [rd / rel for rel in stale if (rd / rel).is_file() or (rd / rel).is_symlink()]


def remove_stale_reports(cfg: dict) -> list[Path]:
    """Remove :func:`stale_reports`; returns what was removed."""
    removed = []
    for path in stale_reports(cfg):
        try:
            path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed
