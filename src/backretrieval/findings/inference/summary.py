"""The record ``overall`` across configurations: every configuration's ``inference`` record
with its replicate table pooled into one verdict (:mod:`.verdict`, in words :mod:`.verdict_text`),
its table and forest plot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..._util import io
from ...errors import InputError
from ..analysis import FIGURE_FORMATS
from ..markdown import markdown_table
from ..record import FindingsRecord
from .figures import plot_forest
from .verdict import overall_cells, verdict_layouts, verdict_pooled
from .verdict_text import overall_text


def overall_record(records: Sequence[tuple[Path, Any]], summary_dir: Path, coverage_file: str) -> FindingsRecord:
    """The record ``overall`` from every configuration's records (``(path, FindingsRecord)``;
    an ``inference`` record's replicate table lies beside it); ``coverage_file``: the simulated
    coverage the verdict cites, relative to the working directory (where absent it says so)."""
    summary_dir = Path(summary_dir)
    cells = overall_cells([r for _, r in records])
    inf_recs, inf_reps, stale = [], [], []
    for path, rec in records:
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
    cov_path = Path(coverage_file)
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
    return FindingsRecord(
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
