"""The findings figures redrawn from a findings folder's committed files, without the run's
artifacts: every figure an analysis draws is a function of the tables it writes beside its
record (``<analysis>.csv``, ``<analysis>.samples.csv``, ``calibration_points.csv``, ...), so a
change to a figure's drawing can be applied to every configuration's committed figures
(``backretrieval findings-figures``) and checked on them (tests/test_figure_legibility.py).

:func:`figures_of` returns, per analysis record of a folder, ``{stem: plot(path_stem)}`` exactly
as the analysis's :class:`~.result.Result` does (same data, same title).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ..errors import InputError
from .record import FindingsRecord, read_record

log = logging.getLogger("backretrieval")

Plot = Callable[[Path], object]


def _csv(folder: Path, name: str):
    import pandas as pd

    path = folder / name
    if not path.is_file():
        raise InputError(f"{path}: missing; the figure is drawn from it")
    return pd.read_csv(path)


def _agreement(folder: Path, rec: FindingsRecord) -> dict[str, Plot]:
    from . import agreement as ag

    matrix = ag.agreement_matrix(_csv(folder, "agreement.csv"), list(rec.numbers["metrics"]))
    title = ag.figure_title(rec.run)  # type: ignore[arg-type]
    return {"agreement_clustermap": lambda p: ag.plot_clustermap(matrix, p, title)}


def _bli(folder: Path, rec: FindingsRecord) -> dict[str, Plot]:
    from . import bli

    frame = _csv(folder, "bli.csv")
    title = bli.figure_title(rec.run)  # type: ignore[arg-type]
    return {"bli": lambda p: bli.plot_bli(frame, p, title)}


def _calibration(folder: Path, rec: FindingsRecord) -> dict[str, Plot]:
    import pandas as pd

    from . import calibration as cal

    cells = cal.cell_means(_csv(folder, "calibration_points.csv"))
    loeo = pd.concat([cal.leave_one_group_out(cells, "encoder", t) for t in ("xlr_r1", "xlr_rk")], ignore_index=True)
    title = cal.figure_title(rec.run)  # type: ignore[arg-type]
    return {"calibration": lambda p: cal.plot_calibration(cells, loeo, p, title)}


def _inference(folder: Path, rec: FindingsRecord) -> dict[str, Plot]:
    from .inference.figures import figure_title, plot_intervals

    frame = _csv(folder, "inference.csv")
    title = figure_title(rec.run)
    return {"inference_ci": lambda p: plot_intervals(frame, p, title)}


def _hubness(folder: Path, rec: FindingsRecord) -> dict[str, Plot]:
    from . import hubness as hb

    per_enc, summary = hb.summarize_hubness(_csv(folder, "hubness.samples.csv"))
    title = f"{rec.run.figure_label}: {hb.FIGURE_TITLE}"  # type: ignore[union-attr]
    return {"hubness": lambda p: hb.plot_hubness(per_enc, summary, p, title)}


def _image_quality(folder: Path, rec: FindingsRecord) -> dict[str, Plot]:
    from . import image_quality as iq

    summary = _csv(folder, "image_quality.csv")
    title = f"{rec.run.figure_label}: {iq.FIGURE_TITLE}"  # type: ignore[union-attr]
    return {"image_quality": lambda p: iq.plot_image_quality(summary, p, title)}


def _sample_size(folder: Path, rec: FindingsRecord) -> dict[str, Plot]:
    from . import sample_size as ss

    stab, per_enc = _csv(folder, "sample_size.csv"), _csv(folder, "sample_size.samples.csv")
    k = int(rec.settings.get("k", rec.run.k))  # type: ignore[union-attr]
    title = f"{rec.run.figure_label}: {ss.FIGURE_TITLE}"  # type: ignore[union-attr]
    return {"sample_size": lambda p: ss.plot_sample_size(stab, per_enc, k, p, title)}


_FIGURES: dict[str, Callable[[Path, FindingsRecord], dict[str, Plot]]] = {
    "agreement": _agreement,
    "bli": _bli,
    "calibration": _calibration,
    "inference": _inference,
    "hubness": _hubness,
    "image_quality": _image_quality,
    "sample_size": _sample_size,
}


def figures_of(folder: str | Path) -> dict[str, dict[str, Plot]]:
    """``{analysis: {stem: plot}}`` of the figures the records of ``folder`` list in their
    outputs (a record without a figure, e.g. not applicable, draws none)."""
    folder = Path(folder)
    out: dict[str, dict[str, Plot]] = {}
    for path in sorted(folder.glob("*.json")):
        rec = read_record(path)
        make = _FIGURES.get(rec.analysis)
        listed = {Path(o).stem for o in rec.outputs if o.startswith("figures/")}
        if make is None or rec.run is None or not listed:
            continue
        plots = make(folder, rec)
        out[rec.analysis] = {stem: plot for stem, plot in plots.items() if stem in listed}
    return out


def replot(folders: list[Path]) -> list[Path]:
    """Redraw every figure of each findings folder into its ``figures/`` (PNG, SVG, PDF)."""
    written: list[Path] = []
    for folder in folders:
        for analysis, plots in figures_of(folder).items():
            for stem, plot in plots.items():
                log.info("findings-figures: %s/figures/%s (%s)", folder, stem, analysis)
                written += list(plot(Path(folder) / "figures" / stem) or [])
    return written
