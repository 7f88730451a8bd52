"""The report step: metric CSVs → correlations, significance, Table 1, Figure 2, metrics.json.

Reads only artifacts (no embeddings are computed), so "regenerate the paper's tables and
figures" is ``backretrieval report`` on cached artifacts.
"""

from __future__ import annotations

import math
from pathlib import Path

from .. import stats
from .._util import io
from ..data.prepared import read_meta
from ..errors import InputError
from ..reporting import figures, tables
from ..reporting.significance import significance_table
from . import layout
from .metrics import read_metrics

#: The settings of the report step (params.yaml keys; ``n_seeds`` = ``len(seeds)``).
REPORT_SETTINGS = (
    "run_name",
    "sample_size",
    "n_seeds",
    "recall_k",
    "image_backbone",
    "text_field",
    "figure_seed",
    "bootstrap_B",
    "bootstrap_seed",
)


def figure_base(paths: dict[str, Path], prefix: str) -> Path:
    """The common stem of ``<prefix>_png/_svg/_pdf`` (a figure is written in all three formats)."""
    files = {ext: Path(paths[f"{prefix}_{ext}"]) for ext in ("png", "svg", "pdf")}
    bases = {p.with_suffix("") for p in files.values()}
    if len(bases) != 1 or any(p.suffix != f".{ext}" for ext, p in files.items()):
        raise InputError(
            f"{prefix}: the .png, .svg and .pdf outputs must share one name; got "
            + ", ".join(str(p) for p in files.values())
        )
    return bases.pop()


def build_report(
    *,
    metrics_files: list[Path],
    dataset: Path,
    text_files: dict[str, list[Path]],
    settings: dict,
    correlations_out: Path,
    out: dict[str, Path],
) -> None:
    """Correlations (``correlations_out``) and every report file of ``out`` (names:
    :data:`backretrieval.steps.layout.REPORT_FILES`) from the tidy metric CSVs.

    ``dataset``: the prepared dataset (its ``dataset.json`` names it and says whether it is
    SYNTHETIC); ``text_files``: encoder → its text embeddings, read only to list the encoders
    that were skipped; ``settings``: :func:`report_settings`.
    """
    missing = sorted(set(layout.REPORT_FILES) - set(out))
    if missing:
        raise InputError(f"report: no output path for {missing}")
    lacking = [k for k in REPORT_SETTINGS if k not in settings]
    if lacking:
        raise InputError(f"report settings: missing {lacking} (expected {list(REPORT_SETTINGS)})")
    s = settings
    meta = read_meta(dataset)
    metrics = read_metrics(list(metrics_files))
    correlations = stats.correlate(metrics)
    io.write_csv(correlations_out, correlations)

    sig = significance_table(correlations, metrics)
    io.write_csv(out["significance"], sig)
    marks = {}
    for _, r in sig[sig["test"].str.startswith("Wilcoxon")].iterrows() if len(sig) else []:
        p = r.get("p_bonferroni", r["p"])
        marks[(r["direction"], r["stat"])] = "" if (p is None or math.isnan(p)) else stats.significance_marker(p)

    label = "SYNTHETIC dataset — " if meta.synthetic else ""
    n_enc = len(metrics["encoder"].unique())
    caption = (
        f"{label}{meta.name}, image backbone {s['image_backbone']}, text field '{s['text_field']}', "
        f"N={s['sample_size']}, {s['n_seeds']} seeds, {n_enc} encoders. Correlation across encoders "
        f"between each metric and XLR (Recall@{s['recall_k']}). Marks on the better cell: Wilcoxon signed-rank test of "
        "BkR vs CORR over seeds, Bonferroni-corrected across directions (* p<.05, ** p<.01, *** p<.001)."
    )
    io.write_text(out["table1"], tables.table1_markdown(correlations, f"Table 1 — {s['run_name']}", caption, marks))
    io.write_text(out["table1_tex"], tables.table1_latex(correlations, caption))
    B, bseed = int(s["bootstrap_B"]), int(s["bootstrap_seed"])
    io.write_csv(out["corr_ci"], tables.seed_cis(correlations, ["direction", "method", "stat"], "value", B, bseed))
    recall = metrics[metrics["metric"].isin(["xlr_recall", "bkr_recall", "corr"])]
    io.write_csv(out["recall_ci"], tables.seed_cis(recall, ["direction", "encoder", "metric"], "value", B, bseed))

    fig_seed = s["figure_seed"]
    figures.fig2_scatter(
        metrics,
        correlations,
        fig_seed,
        figure_base(out, "fig2"),
        f"{label}{meta.name}: XLR vs BkR per encoder (seed {fig_seed})",
    )
    io.write_csv(out["fig2_csv"], figures.fig2_frame(metrics, fig_seed))
    io.write_csv(out["means"], tables.encoder_means(metrics))

    skipped = []
    for enc, paths in text_files.items():
        for p in paths:
            if Path(p).exists() and layout.skipped_reason(p):
                skipped.append({"encoder": enc, "reason": layout.skipped_reason(p)})
                break
    mj = tables.metrics_json(
        correlations,
        metrics,
        {
            "run_name": s["run_name"],
            "dataset": meta.name,
            "synthetic": meta.synthetic,
            "sample_size": s["sample_size"],
            "n_seeds": s["n_seeds"],
            "k": s["recall_k"],
            "image_backbone": s["image_backbone"],
            "text_field": s["text_field"],
            "skipped_encoders": skipped,
        },
    )
    io.write_json(out["metrics"], mj)
