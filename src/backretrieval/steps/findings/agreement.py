"""Analysis ``agreement``: the agreement matrix of every metric across encoders (Spearman ρ
between per-encoder means, bootstrap CIs over encoders)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...findings.document import RunInfo, markdown_table
from .artifacts import RunArtifacts
from .step import Plugin, Result, synthetic_note

AGREEMENT_METRICS = {
    "XLR R@1": "xlr_r1",
    "XLR R@k": "xlr_rk",
    "XLR MRR": "xlr_mrr",
    "BkR": "bkr",
    "BkR MRR": "bkr_mrr",
    "CORR": "corr",
}


def run(art: RunArtifacts, s: Mapping[str, Any]) -> Result:
    """agreement.{csv,md,json} + figures/agreement_clustermap.* . Per-encoder values
    come from calibration_points.csv (XLR R@1/R@k/MRR, BkR, soft BkR, CORR), the metrics CSVs
    (BkR MRR) and bli.csv (MAP, nearest neighbour), each averaged over directions and seeds."""
    from ...findings.agreement import agreement_matrix, agreement_table, plot_clustermap

    art.require_full_ranks()
    points_file, bli_file = Path(s["points"]), s["bli"]
    soft_m, B, boot_seed = s["soft_m"], s["B"], s["bootstrap_seed"]
    info = art.info()
    points = pd.read_csv(points_file)
    soft_col = f"soft_bkr_m{soft_m}"
    if soft_col not in points.columns:
        raise InputError(f"{points_file}: no column {soft_col!r} (soft BkR with m={soft_m} was not computed)")
    per = points.groupby("encoder")[["xlr_r1", "xlr_rk", "xlr_mrr", "bkr", "corr", soft_col]].mean()
    per["bkr_mrr"] = art.metrics[art.metrics["metric"] == "bkr_mrr"].groupby("encoder")["value"].mean()
    names = {
        **{k.replace("R@k", f"R@{art.k}"): v for k, v in AGREEMENT_METRICS.items()},
        f"soft BkR (m={soft_m})": soft_col,
    }
    if bli_file is not None and Path(bli_file).is_file() and Path(bli_file).stat().st_size > 1:
        bli = pd.read_csv(bli_file)
        if len(bli):
            nn = bli[bli["retrieval"] == "nn"].groupby("encoder")["map"].mean()
            per["bli_map"] = nn
            names["BLI MAP"] = "bli_map"
    names = {k: v for k, v in names.items() if v in per.columns}
    wide = per.rename(columns={v: k for k, v in names.items()})[list(names)]
    table = agreement_table(wide, list(names), B=B, seed=boot_seed)
    matrix = agreement_matrix(table, list(names))
    md = (
        f"## Agreement matrix — {info.label()}\n\nSpearman ρ across encoders between per-encoder means "
        f"(over directions and seeds; BLI over languages, word-vector encoders only) with 95% bootstrap CIs over encoders "
        f"(B={B}).\n\n"
        + markdown_table(table.drop(columns=["encoders"]), 3)
        + "\n### Matrix\n\n"
        + markdown_table(matrix.reset_index().rename(columns={"index": "metric"}), 2)
        + "\n### Per-encoder values\n\n"
        + markdown_table(wide.reset_index(), 4)
    )
    title = f"{info.figure_label}: agreement across encoders (Spearman)"
    numbers = {
        "pairs": {
            f"{r.metric_a} ~ {r.metric_b}": {"spearman": r.spearman, "low": r.low, "high": r.high, "n": r.n_encoders}
            for r in table.itertuples()
        },
        "metrics": list(names),
    }
    answer = agreement_answer(table, info, f"XLR R@{art.k}")
    return Result(
        run=info,
        settings={"B": B, "bootstrap_seed": boot_seed, "soft_m": soft_m},
        numbers=numbers,
        answer=answer,
        files={"agreement.md": md, "agreement.csv": table},
        figures={"agreement_clustermap": lambda p: plot_clustermap(matrix, p, title)},
    )


def agreement_answer(table: pd.DataFrame, info: RunInfo, xlr: str) -> str:
    from ...findings.document import fmt_ci

    ref = table[(table["metric_a"] == xlr) | (table["metric_b"] == xlr)].copy()
    ref["other"] = np.where(ref["metric_a"] == xlr, ref["metric_b"], ref["metric_a"])
    ref = ref[~ref["other"].str.startswith("XLR")].sort_values("spearman", ascending=False)
    parts = [
        f"Agreement with {xlr} across encoders (Spearman, 95% CI over encoders): "
        + "; ".join(f"{r.other} {fmt_ci(r.spearman, r.low, r.high, 2)} (n={r.n_encoders})" for r in ref.itertuples())
        + "."
    ]
    valid = table.dropna(subset=["spearman"])
    if len(valid):
        lo = valid.sort_values("spearman").iloc[0]
        parts.append(
            f"The least agreeing pair is {lo.metric_a} vs {lo.metric_b} (ρ = {lo.spearman:.2f}, n={lo.n_encoders})."
        )
    return " ".join(parts) + synthetic_note(info)


ANALYSIS = Plugin("agreement", run)
