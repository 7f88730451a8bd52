"""Findings across configurations: the overall verdict, calibration leave-one-dataset-out, docs/FINDINGS.md and the README's verdict sentence."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..._util import io
from ...errors import InputError
from ...findings.analysis import FIGURE_FORMATS
from ...findings.markdown import markdown_table
from ...findings.record import FindingsRecord, write_record

log = logging.getLogger("backretrieval")

# ============================================================================================
# across configurations: overall verdict, calibration leave-one-dataset-out, docs/FINDINGS.md,
# the README's verdict sentence


def summary_records(record_files: Sequence[Path], summary_dir: Path) -> list[FindingsRecord]:
    """The cross-configuration records (``overall``, ``calibration_lodo``) from every
    configuration's records; their tables and figures go to ``summary_dir``."""
    from ...findings import calibration as cal
    from ...findings.inference import COVERAGE_FILE
    from ...findings.inference.figures import plot_forest
    from ...findings.inference.verdict import overall_cells, verdict_layouts, verdict_pooled
    from ...findings.inference.verdict_text import overall_text
    from ...findings.record import read_record

    summary_dir = Path(summary_dir)
    recs = [(Path(p), read_record(p)) for p in record_files]
    out = []
    cells = overall_cells([r for _, r in recs])
    inf_recs, inf_reps, stale = [], [], []
    for path, rec in recs:
        if rec.analysis == "inference" and rec.status == "ok" and rec.run is not None:
            if "jackknife_groups" not in rec.settings:  # a record from before the two questions
                stale.append(rec.run.run_name)
                continue
            rp = path.parent / str(rec.settings["replicates_file"])
            if not rp.is_file():
                raise InputError(f"{rp}: missing; the inference record {path} needs its replicate table")
            inf_recs.append(rec)
            inf_reps.append(pd.read_csv(rp))
    cells = cells[~cells["run_name"].isin(stale)].reset_index(drop=True)
    numbers = verdict_pooled(inf_recs, inf_reps)
    numbers["layouts"] = {
        sn: [{"name": lay.name, "signature": lay.signature()} for lay in lays]
        for sn, lays in verdict_layouts(inf_recs).items()
    }
    pooled = numbers["pooled"]
    cov_path = Path(COVERAGE_FILE)  # relative to the working directory (the rule declares it)
    coverage = json.loads(cov_path.read_text(encoding="utf-8")) if cov_path.is_file() else None
    answer, verdict = overall_text(numbers, coverage)
    if stale:
        note = (
            f" Left out: the inference records of {', '.join(sorted(stale))}, made before the joint bootstrap "
            "(no replicate table); rerun their `snakemake findings`."
        )
        if pooled:
            answer, verdict = answer + note, verdict + note
        else:
            verdict = (
                f"No overall verdict: the inference records of {', '.join(sorted(stale))} were made before the "
                "joint encoder × image bootstrap (their cells were treated as independent) and have no replicate "
                "table; rerun their `snakemake findings`."
            )
            answer = verdict
    outputs: list[str] = []
    if len(cells):
        io.write_csv(summary_dir / "overall.csv", cells)
        io.write_text(
            summary_dir / "overall.md",
            "## BkR − CORR per dataset × direction\n\n" + markdown_table(cells, 3) + "\n" + answer + "\n",
        )
        outputs = ["overall.md", "overall.csv"]
        if pooled:
            plot_forest(cells, pooled, summary_dir / "figures" / "overall_forest")
            outputs += [f"figures/overall_forest.{ext}" for ext in FIGURE_FORMATS]
    out.append(
        FindingsRecord(
            analysis="overall",
            run=None,
            settings={
                "method": "per configuration first; pooled over configurations sharing >= 8 encoders; encoders fixed "
                "(item bootstrap) and encoders random (plus a leave-one-family-out jackknife)"
            },
            numbers={**numbers, "n_cells": int(len(cells[cells["stat"] == "pearson"])) if len(cells) else 0},
            answer=answer,
            verdict=verdict,
            outputs=tuple(outputs),
        )
    )
    frames = []
    for path, rec in recs:
        if rec.analysis == "calibration" and rec.status == "ok":
            pts = path.parent / "calibration_points.csv"
            if not pts.is_file():
                raise InputError(f"{pts}: missing; the calibration record {path} names it")
            frames.append(pd.read_csv(pts))
    datasets: list[str] = []
    summary = pd.DataFrame()
    lodo_outputs: list[str] = []
    if frames:
        points = pd.concat(frames, ignore_index=True)
        datasets = sorted(points["dataset"].unique())
        if len(datasets) >= 2:
            cells_c = cal.cell_means(points[[c for c in points.columns if not c.startswith("soft_")]])
            pred = pd.concat(
                [cal.leave_one_group_out(cells_c, "dataset", t) for t in ("xlr_r1", "xlr_rk")], ignore_index=True
            )
            summary = cal.error_summary(pred)
            io.write_csv(summary_dir / "calibration_lodo.csv", pred)
            io.write_text(
                summary_dir / "calibration_lodo.md",
                "## Calibration, leave one dataset out\n\n" + markdown_table(summary, 4),
            )
            lodo_outputs = ["calibration_lodo.md", "calibration_lodo.csv"]
    ans_c, verdict_c = cal.lodo_text(summary, datasets)
    out.append(
        FindingsRecord(
            analysis="calibration_lodo",
            run=None,
            settings={"models": list(cal.MODELS)},
            numbers={
                "datasets": datasets,
                "errors": {
                    f"{r.model}/{r.target}": {"mae": r.mae, "rmse": r.rmse, "bias": r.bias, "n": r.n}
                    for r in summary.itertuples()
                }
                if len(summary)
                else {},
            },
            answer=ans_c,
            verdict=verdict_c,
            outputs=tuple(lodo_outputs),
        )
    )
    for rec in out:
        write_record(summary_dir / f"{rec.analysis}.json", rec)
    return out


def document_step(
    record_files: Sequence[Path],
    *,
    doc: Path,
    summary_dir: Path,
    readme: Path | None = None,
) -> None:
    """The cross-configuration records, docs/FINDINGS.md, and (``readme``) the README's block."""
    from ...findings.document import render_findings, update_readme_block
    from ...findings.record import read_record

    record_files = sorted(
        {Path(p) for p in record_files if Path(p).name not in ("overall.json", "calibration_lodo.json")}
    )
    per_run = [read_record(p) for p in record_files]
    cross = summary_records(record_files, summary_dir)
    records = per_run + cross
    doc = Path(doc)
    text = render_findings(records, doc_dir=_posix_rel(doc.parent), summary_dir=_posix_rel(Path(summary_dir)))
    if readme is not None:
        readme = Path(readme)
        new = update_readme_block(readme.read_text(encoding="utf-8"), records, str(readme))
        io.write_text(doc, text)
        if new != readme.read_text(encoding="utf-8"):
            io.write_text(readme, new)
    else:
        io.write_text(doc, text)


def _posix_rel(p: Path) -> str:
    return Path(p).as_posix()
