"""What an analysis returns (:class:`Result`), the one writer of it (:func:`write_result`) and
the helpers the analyses share.

An analysis computes; it writes nothing. :func:`write_result` writes ``<out_dir>/<file>`` for
each of the result's files (text or CSV), ``figures/<name>.{png,svg,pdf}`` for each figure,
and the record ``<out_dir>/<analysis>.json``, whose ``outputs`` lists them in that order.

Light at import, as the analysis modules that import it (:mod:`.analysis`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .analysis import FIGURE_FORMATS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from .artifacts import RunArtifacts
    from .document import FindingsRecord, RunInfo


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


def write_result(out_dir: Path, name: str, result: Result) -> FindingsRecord:
    """The one writer: the result's files, figures and record ``<name>.json``."""
    from .._util import io
    from .document import FindingsRecord, write_record

    out_dir = Path(out_dir)
    outputs: list[str] = []
    for fname, content in result.files.items():
        if isinstance(content, str):
            io.write_text(out_dir / fname, content)
        elif isinstance(content, Csv):
            io.write_csv(out_dir / fname, content.frame, float_format=content.float_format)
        else:
            io.write_csv(out_dir / fname, content)
        outputs.append(fname)
    for stem, plot in result.figures.items():
        plot(out_dir / "figures" / stem)
        outputs += [f"figures/{stem}.{ext}" for ext in FIGURE_FORMATS]
    rec = FindingsRecord(
        analysis=name,
        run=result.run,
        settings=result.settings,
        numbers=result.numbers,
        answer=result.answer,
        verdict=result.verdict,
        outputs=tuple(outputs),
        status=result.status,
    )
    write_record(out_dir / f"{name}.json", rec)
    return rec


# ---- shared by the analyses ----------------------------------------------------------------


def query_outcomes(ranks: dict[str, np.ndarray], enc: str, seed: int, kind: str, k: int) -> np.ndarray:
    """One encoder's per-query outcomes of one seed: hits at ``k`` of its ``kind`` (xlr, bkr)
    ranks (full ranks: :meth:`RunArtifacts.require_full_ranks`)."""
    import numpy as np

    key = f"{enc}/{seed}/{kind}"
    if key not in ranks:
        raise InputError(f"per-query ranks: no entry {key!r} (metrics and ranks files out of step?)")
    r = ranks[key].astype(np.int64)
    return (r <= k).astype(np.float64)


def synthetic_note(info: RunInfo) -> str:
    return (
        " These are SYNTHETIC data: a demonstration of the method, not evidence about real encoders."
        if info.synthetic
        else ""
    )


def headline(answer: str) -> str:
    """The first sentence of a generated answer (its verdict)."""
    head = re.split(r"(?<=[.!?])\s+(?=[A-Z])", answer.strip(), maxsplit=1)[0]
    return head if head.endswith((".", "!", "?")) else head + "."


def question_markdown(
    analysis: str, run: RunInfo, answer: str, summary: pd.DataFrame, settings: Mapping[str, Any], extra_md: str = ""
) -> str:
    """``<analysis>.md`` of a question-style analysis: title, question, settings, answer, table."""
    from .analysis import get
    from .document import markdown_table

    q = get(analysis).question
    label = "SYNTHETIC data. " if run.synthetic else ""
    md = [
        f"## {q.title}",
        "",
        f"*{q.question}*",
        "",
        f"{label}Configuration `{run.run_name}` ({run.dataset}). Settings: "
        + ", ".join(f"{k}={v}" for k, v in settings.items()),
        "",
        answer,
        "",
        markdown_table(summary),
    ]
    if extra_md:
        md += ["", extra_md]
    return "\n".join(md)


def question_result(
    art: RunArtifacts,
    name: str,
    answer: str,
    settings: Mapping[str, Any],
    numbers: Mapping[str, Any],
    summary: pd.DataFrame,
    samples: pd.DataFrame,
    figure: tuple[str, Callable[[Path, str], object]],
    extra_md: str = "",
) -> Result:
    """The result of a question-style analysis that re-evaluates embeddings (``image_quality``,
    ``sample_size``, ``hubness``): its record over the run's sorted directions, the verdict
    (:func:`headline` of ``answer``), ``<name>.md`` (:func:`question_markdown`, ``extra_md``
    appended), ``<name>.csv`` (``summary``), ``<name>.samples.csv`` (``samples``) and the figure
    ``<name>``: ``figure = (title, plot)``, drawn by ``plot(path_stem, "<dataset>: <title>")``
    (the dataset prefixed ``SYNTHETIC — `` on SYNTHETIC data)."""
    title, plot = figure
    meta = art.dataset_meta()
    info = art.info(sorted_directions=True)
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: {title}"
    return Result(
        run=info,
        settings=settings,
        numbers=numbers,
        answer=answer,
        verdict=headline(answer),
        files={
            f"{name}.md": question_markdown(name, info, answer, summary, settings, extra_md),
            f"{name}.csv": summary,
            f"{name}.samples.csv": samples,
        },
        figures={name: lambda p: plot(p, fig_title)},
    )


def question_files(name: str) -> tuple[str, ...]:
    """The files a question-style analysis ``name`` writes (:func:`question_result`)."""
    return (f"{name}.md", f"{name}.csv", f"{name}.samples.csv")
