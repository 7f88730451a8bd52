"""What the analyses share to word their results: the SYNTHETIC note, the verdict as the first
sentence of an answer (:func:`headline`), and the record, Markdown and files of a question-style
analysis (:func:`question_result`: ``image_quality``, ``sample_size``, ``hubness``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .analysis import get
from .markdown import markdown_table
from .result import Result

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation.run_artifacts import RunArtifacts, RunInfo


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
