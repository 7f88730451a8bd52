"""Readers of the metrics step's tables: the tidy metrics CSVs (``METRIC_COLUMNS``) and the
per-query ranks beside each (``<stem>.ranks.npz``), as the report and the findings read them.

Light at import (pandas is loaded when a table is read): the artifact layout re-exports
:func:`ranks_path`, and the command line builds its parser from the layout."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .._util.io import ranks_path as ranks_path
from ..errors import InputError

if TYPE_CHECKING:
    import pandas as pd


def exact_float(value: float) -> str:
    """A metric value as the metrics step writes it: the shortest text that reads back as the
    same double (``repr``), so the report aggregates exactly the numbers ``backretrieval rank``
    and ``evaluate`` aggregate in memory (ten significant digits changed the tenth digit of a
    mean over seeds)."""
    return repr(float(value))


def read_metric_tables(paths: Iterable[str | Path]) -> tuple[tuple[Path, pd.DataFrame], ...]:
    """Each metrics file with its table as read (for checks that name the file, such as
    :func:`require_full_ranks`, without reading it again)."""
    import pandas as pd

    return tuple((Path(p), pd.read_csv(p)) for p in paths)


def concat_metrics(tables: Iterable[tuple[Path, pd.DataFrame]]) -> pd.DataFrame:
    """The long table of several metrics files (:func:`read_metric_tables`), empty with the
    metric columns when there are none."""
    import pandas as pd

    from .core import METRIC_COLUMNS

    frames = [frame for _, frame in tables]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=METRIC_COLUMNS)


class MetricsRead(NamedTuple):
    """Metrics files as the report and the findings read them: ``files``, each with its table
    (:func:`read_metric_tables`); ``table``, their long table (:func:`concat_metrics`); ``n`` and
    ``k``, the N and the k of Recall@k they record (:func:`metrics_protocol`)."""

    files: tuple[tuple[Path, pd.DataFrame], ...]
    table: pd.DataFrame
    n: int
    k: int


def read_metrics(paths: Iterable[str | Path]) -> MetricsRead:
    """The metrics files at ``paths``, read once, with their one N and k (InputError as
    :func:`metrics_protocol`)."""
    files = read_metric_tables(paths)
    n, k = metrics_protocol(files)
    return MetricsRead(files, concat_metrics(files), n, k)


def metrics_protocol(tables: Iterable[tuple[Path, pd.DataFrame]]) -> tuple[int, int]:
    """The N and the k of Recall@k that the metrics files (:func:`read_metric_tables`) record in
    their ``n`` and ``k`` columns, which every file must have and on which they must agree:
    InputError naming the file without the column, or the files of each value. A file without
    ``k`` was written by an older metrics step: rerun it (k is never guessed)."""
    tables = tuple(tables)
    if not tables:
        raise InputError("no metrics CSV given (--metrics)")
    found: dict[str, dict[int, list[str]]] = {"n": {}, "k": {}}
    for path, frame in tables:
        for col, values in found.items():
            if col not in frame.columns:
                raise InputError(
                    f"{path}: no {col!r} column (the metric columns are {list(_columns())}); written by an "
                    "older metrics step: rerun the metrics step"
                )
            for v in sorted({int(x) for x in frame[col]}):
                values.setdefault(v, []).append(str(path))
    for col, values in found.items():
        if len(values) > 1:
            what = "N" if col == "n" else "k of Recall@k"
            raise InputError(
                f"metrics files with different {what} ({col!r} column): "
                + "; ".join(f"{col}={v}: {', '.join(files)}" for v, files in sorted(values.items()))
                + " (one report or analysis reads the metrics of one protocol)"
            )
        if not values:
            raise InputError(f"{tables[0][0]}: no rows, so no {col!r}")
    (n,), (k,) = found["n"], found["k"]
    return n, k


def _columns() -> list[str]:
    from .core import METRIC_COLUMNS

    return METRIC_COLUMNS


def require_full_ranks(frame: pd.DataFrame, source: str | Path) -> None:
    """Check that the metrics table ``source`` (read as ``frame``) comes with full per-query BkR
    ranks, as the metrics step writes them: a table with BkR Recall@k has BkR MRR
    (``bkr_mrr``, computed from the ranks). A table with ``bkr_recall`` but no ``bkr_mrr`` was
    written by an older metrics step that kept 0/1 BkR hits only (its ``<direction>.ranks.npz``
    holds hits, not ranks): raise :class:`InputError` naming it, instead of reading hits as ranks."""
    metrics = set(frame["metric"])
    if "bkr_recall" in metrics and "bkr_mrr" not in metrics:
        raise InputError(
            f"{source}: BkR Recall@k without bkr_mrr, so its per-query BkR ranks ({ranks_path(Path(source)).name}) "
            "hold hits only (written by an older metrics step); expected full BkR ranks: rerun the metrics step"
        )
