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
from ..reporting import figures, tables
from ..reporting.significance import significance_table
from . import layout
from .metrics import read_metrics


def build_report(cfg: dict) -> None:
    run = layout.artifacts_root(cfg)
    reports = Path(cfg["reports_dir"])
    meta = read_meta(layout.dataset_root(cfg))
    metrics = read_metrics([layout.metrics_path(cfg, d) for d in cfg["directions"]])
    correlations = stats.correlate(metrics)
    io.write_csv(run / "correlations.csv", correlations)

    sig = significance_table(correlations, metrics)
    io.write_csv(reports / "significance.csv", sig)
    marks = {}
    for _, r in sig[sig["test"].str.startswith("Wilcoxon")].iterrows() if len(sig) else []:
        p = r.get("p_bonferroni", r["p"])
        marks[(r["direction"], r["stat"])] = "" if (p is None or math.isnan(p)) else stats.significance_marker(p)

    label = "SYNTHETIC dataset — " if meta.synthetic else ""
    n_enc = len(metrics["encoder"].unique())
    caption = (
        f"{label}{meta.name}, image backbone {cfg['image_backbone']}, text field '{cfg['text_field']}', "
        f"N={cfg['sample_size']}, {len(cfg['seeds'])} seeds, {n_enc} encoders. Correlation across encoders "
        f"between each metric and XLR (Recall@{cfg['k']}). Marks on the better cell: Wilcoxon signed-rank test of "
        "BkR vs CORR over seeds, Bonferroni-corrected across directions (* p<.05, ** p<.01, *** p<.001)."
    )
    io.write_text(reports / "table1.md", tables.table1_markdown(correlations, f"Table 1 — {cfg['run_name']}", caption, marks))
    io.write_text(reports / "table1.tex", tables.table1_latex(correlations, caption))
    boot = cfg.get("stats") or {}
    B, bseed = int(boot.get("bootstrap_B", 1000)), int(boot.get("bootstrap_seed", 0))
    io.write_csv(reports / "correlations_ci.csv",
                 tables.seed_cis(correlations, ["direction", "method", "stat"], "value", B, bseed))
    recall = metrics[metrics["metric"].isin(["xlr_recall", "bkr_recall", "corr"])]
    io.write_csv(reports / "recall_ci.csv", tables.seed_cis(recall, ["direction", "encoder", "metric"], "value", B, bseed))

    fig_seed = cfg.get("figure_seed", cfg["seeds"][0])
    fig_dir = reports / "figures"
    figures.fig2_scatter(metrics, correlations, fig_seed, fig_dir / "fig2_scatter",
                           f"{label}{meta.name}: XLR vs BkR per encoder (seed {fig_seed})")
    io.write_csv(reports / "plots" / "fig2_xlr_vs_bkr.csv", figures.fig2_frame(metrics, fig_seed))
    io.write_csv(reports / "plots" / "encoder_means.csv", tables.encoder_means(metrics))

    skipped = []
    for enc in cfg["encoders"]:
        for lang in cfg["languages"]:
            p = layout.text_emb_path(cfg, enc, lang)
            if p.exists() and layout.skipped_reason(p):
                skipped.append({"encoder": enc, "reason": layout.skipped_reason(p)})
                break
    mj = tables.metrics_json(correlations, metrics, {
        "run_name": cfg["run_name"], "dataset": meta.name, "synthetic": meta.synthetic,
        "sample_size": cfg["sample_size"], "n_seeds": len(cfg["seeds"]), "k": cfg["k"],
        "image_backbone": cfg["image_backbone"], "text_field": cfg["text_field"],
        "skipped_encoders": skipped,
    })
    io.write_json(reports / "metrics.json", mj)
