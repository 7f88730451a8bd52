"""The one writer of an analysis's :class:`~.result.Result` (:func:`write_result`): ``<out_dir>/<file>``
for each of the result's files (text or CSV), ``figures/<name>.{png,svg,pdf}`` for each figure, and
the record ``<out_dir>/<analysis>.json``, whose ``outputs`` lists them in that order."""

from __future__ import annotations

from pathlib import Path

from .analysis import FIGURE_FORMATS
from .record import FindingsRecord, write_record
from .result import Csv, Result


def write_result(out_dir: Path, name: str, result: Result) -> FindingsRecord:
    """The one writer: the result's files, figures and record ``<name>.json``."""
    from .._util import io

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
