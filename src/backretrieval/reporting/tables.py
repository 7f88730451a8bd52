"""Tables of the paper: Table 1 (BkR and CORR vs XLR) and Table 2 (case study) in Markdown
and LaTeX, bootstrap CIs over seeds, per-encoder means and the DVC metrics file."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ._common import direction_order

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


def _method_cells(t: pd.DataFrame, direction: str, stat: str) -> tuple[dict[str, tuple[float, float]], str]:
    """(mean, sd) of BkR and CORR for one direction and statistic, and which one is better."""
    vals = {}
    for m in ("bkr_recall", "corr"):
        r = t[(t.direction == direction) & (t.method == m) & (t.stat == stat)]
        vals[m] = (float(r["mean"].iloc[0]), float(r["sd"].iloc[0])) if len(r) else (float("nan"), 0.0)
    best = max(vals, key=lambda m: -np.inf if math.isnan(vals[m][0]) else vals[m][0])
    return vals, best


@dataclass(frozen=True)
class Table1Block:
    """One block of Table 1's rows: every direction's correlations across one set of encoders.
    ``name``: the set (``all``, ``core``: the key of the marks); ``label``: the block's heading
    row (e.g. ``all 14 encoders``); ``correlations``: :func:`backretrieval.stats.correlate` of
    the set's metrics."""

    name: str
    label: str
    correlations: pd.DataFrame


def table1_markdown(blocks: Sequence[Table1Block], title: str, caption: str, marks: dict | None = None) -> str:
    """Table 1 layout: per block (all encoders, core encoders) a heading row and one row per
    direction; columns = Pearson/Spearman of BkR and CORR vs XLR.

    Best (higher mean) of BkR vs CORR per statistic in bold. ``marks[(block, direction, stat)]``
    may hold a significance marker appended to the better cell.
    """
    lines = [f"### {title}", "", caption, ""]
    header = ["direction"] + [
        f"{METHOD_LABEL[m]} {STAT_LABEL[s]}" for s in ("pearson", "spearman") for m in ("bkr_recall", "corr")
    ]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    n_seeds = 0
    for block in blocks:
        t = table1_frame(block.correlations)
        n_seeds = max(n_seeds, int(t["n_seeds"].max()) if len(t) else 0)
        lines.append("| " + " | ".join([f"*{block.label}*"] + [""] * (len(header) - 1)) + " |")
        for d in direction_order(t["direction"].unique().tolist()):
            cells = [d.replace("-", "→")]
            for s in ("pearson", "spearman"):
                vals, best = _method_cells(t, d, s)
                for m in ("bkr_recall", "corr"):
                    txt = _fmt(*vals[m])
                    if m == best and not math.isnan(vals[m][0]):
                        txt = f"**{txt}**" + ((marks or {}).get((block.name, d, s), ""))
                    cells.append(txt)
            lines.append("| " + " | ".join(cells) + " |")
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


#: headline.json's keys for metrics.json's correlations with XLR (mean over the directions)
HEADLINE_KEYS = {
    "bkr_pearson": "bkr_r",
    "corr_pearson": "corr_r",
    "bkr_spearman": "bkr_rho",
    "corr_spearman": "corr_rho",
}


def headline_json(mj: dict[str, Any]) -> dict[str, Any]:
    """The run's few headline numbers, DVC's declared metrics (``dvc metrics show`` / ``diff``,
    ``dvc exp show``: a row that fits a terminal): the sample size N, the number of seeds and of encoders; on
    parallel data the correlations of BkR and CORR with XLR (Pearson r, Spearman rho; mean over
    the directions), else the best encoder by BkR and its BkR. Everything else is in metrics.json."""
    meta = mj["meta"]
    out: dict[str, Any] = {
        "sample_size": meta["sample_size"],
        "n_seeds": meta["n_seeds"],
        "n_encoders": len(mj["encoders"]),
    }
    for key, short in HEADLINE_KEYS.items():
        if key in mj.get("correlation_with_xlr", {}):
            out[short] = mj["correlation_with_xlr"][key]["mean_over_directions"]
    if "ranking" in mj and mj["ranking"]:
        best = mj["ranking"][0]
        out["best"] = best
        out["best_bkr"] = mj["encoders"][best].get("bkr")
    return out


def latex_text(text: str) -> str:
    """Plain text (a caption) with LaTeX's special characters %, _ and & escaped."""
    return text.replace("%", "\\%").replace("_", "\\_").replace("&", "\\&")


def table1_latex(
    blocks: Sequence[Table1Block], caption: str, label: str = "tab:bkr-vs-corr", marks: dict | None = None
) -> str:
    """Table 1 as a booktabs LaTeX table: the same blocks and rows as :func:`table1_markdown`
    (best of BkR/CORR per statistic in bold), with the same ``marks[(block, direction, stat)]``
    after the better cell (``$^{***}$``)."""
    out = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        "\\begin{tabular}{lcccc}",
        "\\toprule",
        " & \\multicolumn{2}{c}{Pearson} & \\multicolumn{2}{c}{Spearman} \\\\",
        "\\cmidrule(lr){2-3}\\cmidrule(lr){4-5}",
        "Direction & BkR & CORR & BkR & CORR \\\\",
    ]
    for block in blocks:
        t = table1_frame(block.correlations)
        out += ["\\midrule", f"\\multicolumn{{5}}{{l}}{{\\textit{{{latex_text(block.label)}}}}} \\\\"]
        for d in direction_order(t["direction"].unique().tolist()):
            cells = [d.replace("-", "$\\to$")]
            for s_ in ("pearson", "spearman"):
                vals, best = _method_cells(t, d, s_)
                for m in ("bkr_recall", "corr"):
                    mean, sd = vals[m]
                    txt = "n/a" if math.isnan(mean) else f"{mean:.3f} $\\pm$ {sd:.3f}"
                    if m == best and not math.isnan(mean):
                        mark = (marks or {}).get((block.name, d, s_), "")
                        txt = f"\\textbf{{{txt}}}" + (f"$^{{{mark}}}$" if mark else "")
                    cells.append(txt)
            out.append(" & ".join(cells) + " \\\\")
    esc = latex_text(caption)
    out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{esc}}}", f"\\label{{{label}}}", "\\end{table}"]
    return "\n".join(out) + "\n"


def seed_cis(frame: pd.DataFrame, group_cols: list[str], value_col: str, B: int, seed: int) -> pd.DataFrame:
    """Mean over seeds with a seeded percentile-bootstrap CI (over seeds) per group."""
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
        rows.append(
            {
                **dict(zip(group_cols, key)),
                "mean": float(vals.mean()),
                "ci_low": low,
                "ci_high": high,
                "n_seeds": len(vals),
            }
        )
    return pd.DataFrame(rows)


def _mean_sd(r: pd.Series) -> str:
    """``mean ± sd`` over training seeds (the mean alone for a model with one run)."""
    sd = r.get("sd_over_training_seeds")
    return f"{r['bkr_x1000']:.1f}" + ("" if sd is None or pd.isna(sd) else f" ± {sd:.1f}")


def _runs(r: pd.Series) -> str:
    n = int(r.get("n_training_seeds", 0) or 0)
    return str(n) if n else "— (not trained)"


def _interval(r: pd.Series) -> str:
    if pd.isna(r["ci_low"]) or pd.isna(r["ci_high"]):
        note = r.get("note")
        return f"— ({note})" if isinstance(note, str) and note else "— (one training seed: no interval)"
    return f"[{r['ci_low']:+.1f}, {r['ci_high']:+.1f}]"


def table2_markdown(t: pd.DataFrame, sig: pd.DataFrame, caption: str) -> str:
    """Table 2 (Markdown): per model the mean over training seeds ± sd over training seeds, the
    CI and the worst pair; then each comparison (the paper's: TRIPLETXL vs TRIPLET and each head
    vs its base, over training seeds; the best model vs each other one) as a difference with its
    interval and a plain "decided"."""
    labels = dict(zip(t["model"], t["label"]))
    lines = [
        "### Table 2 — case study: BkR ×1000 per model, averaged over language pairs (heads: mean over R training seeds)",
        "",
        caption,
        "",
        "| model | BkR ×1000 (mean ± sd over training seeds) | training seeds | 95% CI (seeds × pairs) | worst pair |",
        "|---|---|---|---|---|",
    ]
    best = t.loc[0, "model"]
    for _, r in t.iterrows():
        txt = _mean_sd(r)
        if r["model"] == best:
            txt = f"**{txt}**"
        lines.append(
            f"| {r['label']} | {txt} | {_runs(r)} | [{r['ci_low']:.1f}, {r['ci_high']:.1f}] "
            f"| {r['worst_pair'].replace('-', '→')} |"
        )
    if len(sig):
        lines += [
            "",
            "**Comparisons** (a − b, BkR ×1000, 95% interval). The paper's comparisons use the training seeds as the "
            "units: they ask whether training the heads gives that difference reliably on these evaluation samples; "
            "*not decided* means the interval holds 0.",
            "",
            "| comparison | a − b | Δ×1000 | 95% interval | interval over | decided |",
            "|---|---|---|---|---|---|",
        ]
        for _, r in sig.iterrows():
            lines.append(
                f"| {r['comparison']} | {labels.get(r['a'], r['a'])} − {labels.get(r['b'], r['b'])} "
                f"| {r['diff_x1000']:+.1f} | {_interval(r)} | {r['interval']} | {r['decided']} |"
            )
    return "\n".join(lines) + "\n"


def table2_latex(t: pd.DataFrame, source: str = "") -> str:
    """Table 2 (LaTeX): mean ± sd over training seeds and the CI over training seeds × pairs.
    ``source``: the caption's first sentence, naming the data (``SYNTHETIC dataset — <name>``
    on SYNTHETIC data, as Table 1's caption does)."""
    best = t.loc[0, "model"]
    R = int(t["n_training_seeds"].max()) if "n_training_seeds" in t else 1
    out = [
        "\\begin{table}[t]",
        "\\centering",
        "\\begin{tabular}{lrr}",
        "\\toprule",
        "Model & BkR$\\times$1000 & 95\\% CI \\\\",
        "\\midrule",
    ]
    for _, r in t.iterrows():
        v = _mean_sd(r).replace("±", "$\\pm$")
        v = f"\\textbf{{{v}}}" if r["model"] == best else v
        label = str(r["label"]).replace("_", "\\_")
        out.append(f"{label} & {v} & [{r['ci_low']:.1f}, {r['ci_high']:.1f}] \\\\")
    out += [
        "\\bottomrule",
        "\\end{tabular}",
        f"\\caption{{{latex_text(source) + '. ' if source else ''}"
        f"BkR$\\times$1000 per model averaged over language pairs; trained heads: mean over R={R} training "
        "seeds $\\pm$ sd over training seeds; 95\\% CI: bootstrap over training seeds $\\times$ language pairs.}",
        "\\label{tab:bkr-case-study}",
        "\\end{table}",
    ]
    return "\n".join(out) + "\n"


# -------------------------------------------------------------------------------------------
# data without parallel texts: BkR only (the method's main use; the ranking and its report:
# .ranking)


def bkr_metrics_json(
    metrics: pd.DataFrame, ranking: pd.DataFrame, baseline: dict[str, float], meta: dict[str, Any]
) -> dict[str, Any]:
    """The DVC metrics file of a non-parallel dataset: per-encoder means (over seeds and
    directions), the random baseline and the ranking; no correlation with XLR."""
    out: dict[str, Any] = {"meta": meta, "encoders": {}}
    em = metrics.groupby(["encoder", "metric"])["value"].mean().unstack("metric")
    for enc, row in em.iterrows():
        out["encoders"][enc] = {m: round(float(v), 6) for m, v in row.items() if not math.isnan(v)}
    out["random_baseline"] = {m: round(float(v), 6) for m, v in baseline.items()}
    out["ranking"] = ranking["encoder"].tolist()
    return out
