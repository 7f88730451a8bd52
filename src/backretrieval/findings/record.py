"""The findings record every analysis writes (:class:`FindingsRecord`), and its reader and writer.

**The contract** (shared by every analysis of :mod:`backretrieval.findings`): each analysis
of one configuration writes, in ``<reports_dir>/findings/``,

* ``<analysis>.csv`` and ``<analysis>.md`` (tables), figures under ``figures/<name>.{png,svg,pdf}``;
* ``<analysis>.json``: one :class:`FindingsRecord` (:func:`write_record`), i.e.::

    {"schema": "backretrieval-findings/1",
     "analysis": "inference",              # an analysis's name (analysis.questions())
     "status": "ok",                       # or "not_applicable" (answer says why)
     "run": {"run_name", "dataset", "synthetic", "reports_dir", "sample_size", "seeds",
             "directions", "encoders", "image_backbone", "k"},   # null: across configurations
     "settings": {...},                    # the analysis' own settings (B, sizes, ...)
     "numbers": {...},                     # the key numbers (JSON values), named
     "answer": "...",                      # the GENERATED paragraph (built from the numbers)
     "verdict": "...",                     # one sentence
     "outputs": ["inference.md", "figures/inference_ci.png", ...]}   # relative to the folder

The records of every configuration (plus the cross-configuration records ``overall`` and
``calibration_lodo``, whose ``run`` is null) make docs/FINDINGS.md (:mod:`.document`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .._util import io
from ..errors import InputError
from ..evaluation.run_artifacts import RunInfo, require_fields
from .analysis import questions, summary_names

SCHEMA_VERSION = "backretrieval-findings/1"
STATUSES = ("ok", "not_applicable")


@dataclass(frozen=True)
class FindingsRecord:
    """One analysis of one configuration (``run``) or across configurations (``run=None``)."""

    analysis: str
    run: RunInfo | None
    settings: Mapping[str, Any]
    numbers: Mapping[str, Any]
    answer: str
    verdict: str
    outputs: tuple[str, ...] = ()
    status: str = "ok"
    schema: str = SCHEMA_VERSION

    def __post_init__(self) -> None:
        known = sorted(q.analysis for q in questions())
        if self.analysis not in known:
            raise InputError(f"findings record: unknown analysis {self.analysis!r}; known: {known}")
        if self.status not in STATUSES:
            raise InputError(f"findings record {self.analysis}: status must be one of {STATUSES}, got {self.status!r}")
        cross = summary_names()
        if (self.run is None) != (self.analysis in cross):
            raise InputError(f"findings record {self.analysis}: 'run' must be null exactly for {cross}")
        for o in self.outputs:
            if PurePosixPath(o).is_absolute() or ".." in PurePosixPath(o).parts:
                raise InputError(f"findings record {self.analysis}: output {o!r} must be relative to its folder")

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "analysis": self.analysis,
            "status": self.status,
            "run": self.run.to_dict() if self.run is not None else None,
            "settings": _jsonable(dict(self.settings)),
            "numbers": _jsonable(dict(self.numbers)),
            "answer": self.answer,
            "verdict": self.verdict,
            "outputs": list(self.outputs),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "findings record") -> FindingsRecord:
        if not isinstance(d, Mapping):
            raise InputError(f"{where}: expected a JSON object")
        require_fields(
            d, ("schema", "analysis", "status", "run", "settings", "numbers", "answer", "verdict", "outputs"), where
        )
        if d["schema"] != SCHEMA_VERSION:
            raise InputError(f"{where}: field 'schema' is {d['schema']!r}, expected {SCHEMA_VERSION!r}")
        for key in ("settings", "numbers"):
            if not isinstance(d[key], Mapping):
                raise InputError(f"{where}: field '{key}' must be an object")
        for key in ("answer", "verdict"):
            if not isinstance(d[key], str):
                raise InputError(f"{where}: field '{key}' must be a string")
        if not isinstance(d["outputs"], list) or not all(isinstance(o, str) for o in d["outputs"]):
            raise InputError(f"{where}: field 'outputs' must be a list of relative paths")
        run = RunInfo.from_dict(d["run"], where) if d["run"] is not None else None
        try:
            return cls(
                analysis=str(d["analysis"]),
                run=run,
                settings=dict(d["settings"]),
                numbers=dict(d["numbers"]),
                answer=d["answer"],
                verdict=d["verdict"],
                outputs=tuple(d["outputs"]),
                status=str(d["status"]),
            )
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from exc


def _jsonable(obj: Any) -> Any:
    """Plain JSON values; non-finite floats become null (JSON has no NaN), numpy scalars plain."""
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    raise InputError(f"findings record: value of type {type(obj).__name__} is not JSON ({obj!r})")


def write_record(path: str | os.PathLike[str], record: FindingsRecord) -> None:
    """The record as deterministic JSON, atomically (``<reports_dir>/findings/<analysis>.json``)."""
    io.write_json(path, record.to_dict())


def read_record(path: str | os.PathLike[str]) -> FindingsRecord:
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{p}: findings record not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not a valid JSON findings record ({exc})") from exc
    return FindingsRecord.from_dict(raw, str(p))


def read_records(paths: Sequence[str | os.PathLike[str]]) -> list[FindingsRecord]:
    """Every record of ``paths`` (files ``*.json`` or folders searched for ``*.json``), sorted."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.glob("*.json"))
        else:
            files.append(p)
    recs = [read_record(f) for f in files]
    return sorted(recs, key=lambda r: (r.run.run_name if r.run else "~", r.analysis))
