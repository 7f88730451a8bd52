"""What a run removes before its first job (the workflow's ``onstart``): leftovers of killed
jobs in Snakemake's shadow folder.

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
