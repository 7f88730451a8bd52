"""Tables and figures of the paper, regenerated from metric artifacts (never edited by hand)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._util import io

METHOD_LABEL = {"bkr_recall": "BkR", "corr": "CORR"}
STAT_LABEL = {"pearson": "Pearson", "spearman": "Spearman"}


def _fmt(mean: float, sd: float, digits: int = 3) -> str:
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def table1_frame(correlations: pd.DataFrame) -> pd.DataFrame:
    """mean and sd over seeds of each (direction, method, stat)."""
    g = correlations.groupby(["direction", "method", "stat"])["value"]
    agg = g.agg(mean="mean", sd=lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0, n_seeds="count")
    return agg.reset_index()


def _direction_order(directions: list[str]) -> list[str]:
    return sorted(directions, key=lambda d: (d.split("-")[0] != "en", d))


def _method_cells(t: pd.DataFrame, direction: str, stat: str) -> tuple[dict[str, tuple[float, float]], str]:
    """(mean, sd) of BkR and CORR for one direction and statistic, and which one is better."""
    vals = {}
    for m in ("bkr_recall", "corr"):
        r = t[(t.direction == direction) & (t.method == m) & (t.stat == stat)]
        vals[m] = (float(r["mean"].iloc[0]), float(r["sd"].iloc[0])) if len(r) else (float("nan"), 0.0)
    best = max(vals, key=lambda m: -np.inf if math.isnan(vals[m][0]) else vals[m][0])
    return vals, best


def save_figure(fig, out_base: Path, dpi: int = 150) -> list[Path]:
    """PNG, SVG and PDF of a figure, atomically, without timestamps (reproducible bytes)."""
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "backretrieval"  # stable SVG element ids
    written = []
    for ext in ("png", "svg", "pdf"):
        p = Path(f"{out_base}.{ext}")
        kw: dict[str, Any] = {"dpi": dpi} if ext == "png" else {}
        if ext == "svg":
            kw["metadata"] = {"Date": None}
        if ext == "pdf":
            kw["metadata"] = {"CreationDate": None, "ModDate": None}
        with io.atomic_path(p) as tmp:
            fig.savefig(tmp, format=ext, **kw)
        written.append(p)
    return written


def table1_markdown(correlations: pd.DataFrame, title: str, caption: str, marks: dict | None = None) -> str:
    """Table 1 layout: rows = directions; columns = Pearson/Spearman of BkR and CORR vs XLR.

    Best (higher mean) of BkR vs CORR per statistic in bold. ``marks[(direction, stat)]`` may
    hold a significance marker appended to the better cell.
    """
    t = table1_frame(correlations)
    lines = [f"### {title}", "", caption, ""]
    header = ["direction"] + [f"{METHOD_LABEL[m]} {STAT_LABEL[s]}" for s in ("pearson", "spearman") for m in ("bkr_recall", "corr")]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for d in _direction_order(t["direction"].unique().tolist()):
        cells = [d.replace("-", "→")]
        for s in ("pearson", "spearman"):
            vals, best = _method_cells(t, d, s)
            for m in ("bkr_recall", "corr"):
                txt = _fmt(*vals[m])
                if m == best and not math.isnan(vals[m][0]):
                    txt = f"**{txt}**" + ((marks or {}).get((d, s), ""))
                cells.append(txt)
        lines.append("| " + " | ".join(cells) + " |")
    n_seeds = int(t["n_seeds"].max()) if len(t) else 0
    lines += ["", f"Mean ± sd over {n_seeds} seeds; bold = better of BkR and CORR."]
    return "\n".join(lines) + "\n"


def encoder_means(metrics: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of every metric per (direction, encoder)."""
    return metrics.groupby(["direction", "encoder", "metric"])["value"].mean().unstack("metric").reset_index()


def metrics_json(correlations: pd.DataFrame, metrics: pd.DataFrame, meta: dict[str, Any]) -> dict[str, Any]:
    """The DVC metrics file: correlation summaries + per-encoder means (averaged over directions)."""
    t = table1_frame(correlations)
    out: dict[str, Any] = {"meta": meta, "correlation_with_xlr": {}, "encoders": {}}
    for (method, stat), g in t.groupby(["method", "stat"]):
        key = f"{METHOD_LABEL[method].lower()}_{stat}"
        out["correlation_with_xlr"][key] = {
            "mean_over_directions": round(float(g["mean"].mean()), 6),
            **{d: round(float(v), 6) for d, v in zip(g["direction"], g["mean"])},
        }
    em = metrics.groupby(["encoder", "metric"])["value"].mean().unstack("metric")
    for enc, row in em.iterrows():
        out["encoders"][enc] = {m: round(float(v), 6) for m, v in row.items() if not math.isnan(v)}
    return out


def fig2_frame(metrics: pd.DataFrame, seed: int) -> pd.DataFrame:
    sub = metrics[metrics.seed == seed]
    wide = sub.pivot_table(index=["direction", "encoder"], columns="metric", values="value").reset_index()
    return wide[["direction", "encoder", "xlr_recall", "bkr_recall"]].sort_values(["direction", "encoder"])


def fig2_scatter(metrics: pd.DataFrame, correlations: pd.DataFrame, seed: int, out_base: Path, title: str) -> list[Path]:
    """XLR vs BkR per encoder for one seed; one panel per direction; Pearson/Spearman in legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    frame = fig2_frame(metrics, seed)
    directions = _direction_order(frame["direction"].unique().tolist())
    ncol = min(4, len(directions))
    nrow = math.ceil(len(directions) / ncol)
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 3.0 * nrow), squeeze=False)
    encoders = sorted(frame["encoder"].unique())
    palette = dict(zip(encoders, sns.color_palette("tab10" if len(encoders) <= 10 else "tab20", len(encoders))))
    for ax, d in zip(axes.flat, directions):
        f = frame[frame.direction == d]
        sns.scatterplot(data=f, x="xlr_recall", y="bkr_recall", hue="encoder", palette=palette, ax=ax, legend=False, s=40)
        for _, r in f.iterrows():
            ax.annotate(r["encoder"], (r["xlr_recall"], r["bkr_recall"]), fontsize=6, xytext=(3, 2), textcoords="offset points")
        c = correlations[(correlations.direction == d) & (correlations.seed == seed) & (correlations.method == "bkr_recall")]
        pr = c[c.stat == "pearson"]["value"]
        sr = c[c.stat == "spearman"]["value"]
        label = f"r={pr.iloc[0]:.2f}, ρ={sr.iloc[0]:.2f}" if len(pr) and len(sr) else ""
        ax.plot([], [], " ", label=label)
        ax.legend(loc="lower right", fontsize=7, handlelength=0, frameon=True)
        ax.set_title(d.replace("-", "→"), fontsize=9)
        ax.set_xlabel("XLR (Recall@10)")
        ax.set_ylabel("BkR (Recall@10)")
    for ax in list(axes.flat)[len(directions):]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


def table1_latex(correlations: pd.DataFrame, caption: str, label: str = "tab:bkr-vs-corr") -> str:
    """Table 1 as a booktabs LaTeX table (best of BkR/CORR per statistic in bold)."""
    t = table1_frame(correlations)
    out = ["\\begin{table}[t]", "\\centering", "\\small", "\\begin{tabular}{lcccc}", "\\toprule",
           " & \\multicolumn{2}{c}{Pearson} & \\multicolumn{2}{c}{Spearman} \\\\",
           "\\cmidrule(lr){2-3}\\cmidrule(lr){4-5}",
           "Direction & BkR & CORR & BkR & CORR \\\\", "\\midrule"]
    for d in _direction_order(t["direction"].unique().tolist()):
        cells = [d.replace("-", "$\\to$")]
        for s_ in ("pearson", "spearman"):
            vals, best = _method_cells(t, d, s_)
            for m in ("bkr_recall", "corr"):
                mean, sd = vals[m]
                txt = "n/a" if math.isnan(mean) else f"{mean:.3f} $\\pm$ {sd:.3f}"
                cells.append(f"\\textbf{{{txt}}}" if m == best and not math.isnan(mean) else txt)
        out.append(" & ".join(cells) + " \\\\")
    esc = caption.replace("%", "\\%").replace("_", "\\_").replace("&", "\\&")
    out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{esc}}}", f"\\label{{{label}}}", "\\end{table}"]
    return "\n".join(out) + "\n"


def seed_cis(frame: pd.DataFrame, group_cols: list[str], value_col: str, B: int, seed: int) -> pd.DataFrame:
    """Mean over seeds with a seeded percentile-bootstrap CI (over seeds) per group."""
    from . import stats

    rows = []
    for key, g in frame.groupby(group_cols):
        vals = g[value_col].to_numpy(float)
        vals = vals[~np.isnan(vals)]
        if len(vals) == 0:
            continue
        if len(vals) > 1 and np.ptp(vals) > 0:
            ci = stats.bootstrap_ci(vals, B=B, seed=seed)
            low, high = ci.low, ci.high
        else:
            low = high = float(vals.mean())
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(group_cols, key)), "mean": float(vals.mean()), "ci_low": low, "ci_high": high,
                     "n_seeds": len(vals)})
    return pd.DataFrame(rows)
