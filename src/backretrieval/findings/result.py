"""What an analysis returns (:class:`Result`): the record's fields and the files behind them.

An analysis computes; it writes nothing: the one writer is :func:`.writer.write_result`. Light
at import, as the analysis modules that import it (:mod:`.analysis`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation.run_artifacts import RunInfo


@dataclass(frozen=True)
class Csv:
    """A table written as CSV with its own float format (default: :func:`io.write_csv`'s)."""

    frame: pd.DataFrame
    float_format: str


@dataclass
class Result:
    """What an analysis found on one run: the record's fields and the files behind them.
    ``files``: name → markdown text, DataFrame or :class:`Csv`, written in this order;
    ``figures``: stem → ``plot(path_stem)``, which writes ``<path_stem>.{png,svg,pdf}``."""

    run: RunInfo
    settings: Mapping[str, Any]
    numbers: Mapping[str, Any]
    answer: str
    verdict: str = ""
    files: dict[str, str | pd.DataFrame | Csv] = field(default_factory=dict)
    figures: dict[str, Callable[[Path], object]] = field(default_factory=dict)
    status: str = "ok"
