"""Which run owns a reports folder, and the refusal of another run writing into it.

A run is its ``run_name``: a rerun under the same name (another config, another copy of the
checkout, a DVC stage) is the same run and may rewrite its reports; a run under another name
naming the same ``reports_dir`` would overwrite the first run's Table 1, figures and metrics.
Two records say who owns a reports folder, neither of them inside it (its files are DVC
outputs and ``backretrieval verify`` compares every one of them):

* the reports' own ``metrics.json`` (``meta.run_name``), committed and versioned with them;
* ``artifacts/.owners/<run_name>.json`` (``{"run_name", "reports_dir"}``), written before a
  run's first job (the workflow's ``onstart``), so a run that has not finished yet owns its
  folder too. It lies beside the runs' artifact folders, not in one: those hold only the
  run's outputs (DVC's, compared file by file between runners).

:func:`check_reports_owner` refuses, at parse time and in ``validate-config``, a run whose
``reports_dir`` (or a folder above it) another run owns, with the way out in one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import ConfigError

#: The folder of the runs' claims, ``<run_name>.json`` each (a run name never starts with '.').
OWNERS = Path("artifacts/.owners")


def _norm(reports_dir: str | Path) -> str:
    return os.path.normpath(str(reports_dir)).replace(os.sep, "/")


def owner_path(cfg: dict) -> Path:
    return OWNERS / f"{cfg['run_name']}.json"


def _metrics_owner(folder: Path) -> str | None:
    try:
        meta = json.loads((folder / "metrics.json").read_text(encoding="utf-8")).get("meta")
    except (OSError, ValueError, AttributeError):
        return None
    owner = meta.get("run_name") if isinstance(meta, dict) else None
    return str(owner) if owner is not None else None


def reports_owners(reports_dir: str | Path, root: Path = Path(".")) -> list[tuple[str, Path, str]]:
    """(owner run_name, record, folder) of every record that claims ``reports_dir`` or a folder
    above it: their ``metrics.json``, and the runs' claims in ``artifacts/.owners/``."""
    rd = Path(_norm(reports_dir))
    found = []
    for folder in (rd, *[p for p in rd.parents if p != Path(".")]):
        owner = _metrics_owner(root / folder)
        if owner is not None:
            found.append((owner, folder / "metrics.json", folder.as_posix()))
    targets = {rd.as_posix(), *(p.as_posix() for p in rd.parents if p != Path("."))}
    for rec in sorted((root / OWNERS).glob("*.json")):
        try:
            claim = json.loads(rec.read_text(encoding="utf-8"))
            run, claimed = str(claim["run_name"]), _norm(claim["reports_dir"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if claimed in targets:
            found.append((run, rec.relative_to(root), claimed))
    return found


def check_reports_owner(cfg: dict, source: str, root: Path = Path(".")) -> None:
    """ConfigError (one line, naming field, owner, record and the way out) if another run owns
    ``cfg['reports_dir']`` or a folder above it."""
    run = cfg["run_name"]
    for owner, record, folder in reports_owners(cfg["reports_dir"], root):
        if owner == run:
            continue
        own = (OWNERS / f"{owner}.json").as_posix()
        if str(record) == own:
            clear = f"rm {own}"
        elif _holds_other_runs(folder, owner, root):  # never advise deleting other runs' reports
            clear = f"move that run's own files out of {folder}/ (it holds other runs' reports too) and rm {own}"
        else:
            clear = f"rm -rf {folder} {own}"
        raise ConfigError(
            f"{source}: field 'reports_dir': {folder!r} holds the reports of run {owner!r} (recorded in "
            f"{record}), not of this run {run!r}: set another reports_dir (or run_name {owner!r} if it is "
            f"that run), or to replace that run's reports remove them first: {clear}"
        )


def _holds_other_runs(folder: str, owner: str, root: Path) -> bool:
    """Whether ``folder`` is the reports root or holds the reports of a run other than ``owner``
    (a ``metrics.json`` or a claim of another run in a folder under it)."""
    from .._util.io import REPORTS_ROOT

    if _norm(folder) in (REPORTS_ROOT, "."):
        return True
    base = root / folder
    for metrics in base.rglob("metrics.json"):
        if metrics.parent != base and _metrics_owner(metrics.parent) not in (None, owner):
            return True
    for rec in (root / OWNERS).glob("*.json"):
        try:
            claim = json.loads(rec.read_text(encoding="utf-8"))
            run, claimed = str(claim["run_name"]), _norm(claim["reports_dir"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if run != owner and claimed.startswith(_norm(folder) + "/"):
            return True
    return False


def claim_reports(cfg: dict) -> Path:
    """Write ``artifacts/.owners/<run_name>.json`` naming this run's ``reports_dir`` (unchanged
    when it already does). Returns its path."""
    from .._util.io import write_json

    path = owner_path(cfg)
    record = {"run_name": cfg["run_name"], "reports_dir": _norm(cfg["reports_dir"])}
    try:
        if json.loads(path.read_text(encoding="utf-8")) == record:
            return path
    except (OSError, ValueError):
        pass
    write_json(path, record)
    return path
