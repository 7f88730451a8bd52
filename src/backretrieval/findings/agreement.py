"""Analysis ``agreement`` (section 6b): the agreement matrix — do the metrics we compute rank
the encoders alike? (the benchmark-disagreement view of Bakarov et al. 2018).

Every metric is reduced to one value per encoder (its mean over directions and seeds; BLI: over
languages), then every pair of metrics is compared by Spearman's rho across the encoders that
have both (BLI exists for the word-vector family only, so its pairs have fewer encoders), with
a percentile bootstrap CI over encoders (:func:`backretrieval.stats.bootstrap_corr_ci`). The
matrix is drawn as a seaborn clustermap (average-linkage on 1 − rho).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .analysis import Analysis, Question, Setting
from .answers import synthetic_note
from .result import Result

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation.run_artifacts import RunArtifacts, RunInfo


AGREEMENT_METRICS = {
    "XLR R@1": "xlr_r1",
    "XLR R@k": "xlr_rk",
    "XLR MRR": "xlr_mrr",
    "BkR": "bkr",
    "BkR MRR": "bkr_mrr",
    "CORR": "corr",
}


class Agreement(Analysis):
    """agreement.{csv,md,json} + figures/agreement_clustermap.* . Per-encoder values come from
    calibration_points.csv (XLR R@1/R@k/MRR, BkR, soft BkR, CORR), the metrics CSVs (BkR MRR)
    and bli.csv (MAP, nearest neighbour; where the run has word-vector encoders), each averaged
    over directions and seeds."""

    name = "agreement"
    question = Question(
        6, "Benchmark disagreement: the agreement matrix", "Do the metrics we compute rank the encoders alike?", order=2
    )
    reads = ("calibration_points.csv", "bli.csv")
    settings = (
        Setting("soft_m", 5, "m of the soft BkR in the matrix", type=int),
        Setting("bootstrap", 1000, "bootstrap resamples B", type=int, metavar="B"),
        Setting("bootstrap_seed", 0, "seed of the bootstrap", type=int),
    )
    files = ("agreement.md", "agreement.csv")
    figures = ("agreement_clustermap",)

    def run(self, art: RunArtifacts, s: Mapping[str, Any]) -> Result:
        import pandas as pd

        from .markdown import markdown_table

        art.require_full_ranks()
        points_file, bli_file = art.findings_file("calibration_points.csv"), art.findings_files.get("bli.csv")
        soft_m, B, boot_seed = s["soft_m"], s["bootstrap"], s["bootstrap_seed"]
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
        if bli_file is not None and bli_file.is_file() and bli_file.stat().st_size > 1:
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
        title = figure_title(info)
        numbers = {
            "pairs": {
                f"{r.metric_a} ~ {r.metric_b}": {
                    "spearman": r.spearman,
                    "low": r.low,
                    "high": r.high,
                    "n": r.n_encoders,
                }
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
    from .markdown import fmt_ci

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


def agreement_table(
    per_encoder: pd.DataFrame, metrics: Sequence[str], B: int = 1000, seed: int = 0, min_encoders: int = 4
) -> pd.DataFrame:
    """Rows per metric pair (a < b in ``metrics`` order): n encoders, Spearman rho, CI, and the
    encoders' names. ``per_encoder``: index = encoder, one column per metric (NaN = missing).
    Pairs with fewer than ``min_encoders`` encoders, or a constant metric, get NaN."""
    import pandas as pd

    from ..stats import bootstrap_corr_ci

    missing = [m for m in metrics if m not in per_encoder.columns]
    if missing:
        raise InputError(f"agreement: no column(s) {missing} among {list(per_encoder.columns)}")
    rows = []
    for i, a in enumerate(metrics):
        for b in metrics[i + 1 :]:
            sub = per_encoder[[a, b]].dropna()
            row = {
                "metric_a": a,
                "metric_b": b,
                "n_encoders": len(sub),
                "spearman": np.nan,
                "low": np.nan,
                "high": np.nan,
                "n_valid_resamples": 0,
                "encoders": " ".join(sub.index),
            }
            x, y = sub[a].to_numpy(float), sub[b].to_numpy(float)
            if len(sub) >= min_encoders and np.ptp(x) > 0 and np.ptp(y) > 0:
                ci = bootstrap_corr_ci(x, y, method="spearman", B=B, seed=seed)
                row.update(spearman=ci.estimate, low=ci.low, high=ci.high, n_valid_resamples=ci.n_valid_resamples)
            rows.append(row)
    return pd.DataFrame(rows)


def agreement_matrix(table: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """The symmetric rho matrix (diagonal 1) of :func:`agreement_table`."""
    import pandas as pd

    m = pd.DataFrame(np.eye(len(metrics)), index=list(metrics), columns=list(metrics))
    for r in table.itertuples():
        m.loc[r.metric_a, r.metric_b] = m.loc[r.metric_b, r.metric_a] = r.spearman
    return m


def _colorbar_beside_heatmap(g, width_in: float = 0.15, gap_in: float = 0.2, room_in: float = 1.2) -> None:
    """The clustermap's colorbar right of the heatmap's row labels, level with its top.
    seaborn's default spot, the figure's top-left corner, lies on the dendrograms once the
    figure has room for a title. ``room_in``: inches kept right of the row labels for the
    bar, its tick labels and its label (the heatmap narrowed when the figure lacks them)."""
    fig = g.figure
    width, height = fig.get_size_inches()
    fig.canvas.draw()  # the row labels' extent needs a renderer
    renderer = fig.canvas.get_renderer()
    labels_right = g.ax_heatmap.get_tightbbox(renderer).x1 / fig.dpi
    if labels_right + room_in > width:
        fig.subplots_adjust(right=fig.subplotpars.right - (labels_right + room_in - width) / width)
        fig.canvas.draw()
        labels_right = g.ax_heatmap.get_tightbbox(renderer).x1 / fig.dpi
    heat = g.ax_heatmap.get_position()
    bar_height = min(0.5 * heat.height, 2.0 / height)
    g.ax_cbar.set_position(((labels_right + gap_in) / width, heat.y1 - bar_height, width_in / width, bar_height))


def figure_title(info) -> str:
    """The title of ``figures/agreement_clustermap`` (a :class:`~.document.RunInfo`)."""
    return f"{info.figure_label}: agreement across encoders (Spearman)"


def plot_clustermap(matrix: pd.DataFrame, out_base, title: str) -> list:
    """seaborn clustermap of the agreement matrix (metrics with a NaN entry are left out, as the
    clustering needs every distance); PNG/SVG/PDF with reproducible bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figures import save_figure

    keep = list(matrix.index)
    while keep and matrix.loc[keep, keep].isna().any().any():  # drop the metric with most NaNs
        nan_counts = matrix.loc[keep, keep].isna().sum()
        keep.remove(nan_counts.idxmax())
    if len(keep) < 2:
        raise InputError("agreement: fewer than two metrics with a complete agreement matrix; nothing to cluster")
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    m = matrix.loc[keep, keep]
    dist = np.clip(1.0 - m.to_numpy(float), 0.0, 2.0)
    np.fill_diagonal(dist, 0.0)
    link = linkage(squareform((dist + dist.T) / 2, checks=False), method="average")
    sns.set_theme(style="white", context="paper")
    g = sns.clustermap(
        m,
        row_linkage=link,
        col_linkage=link,
        vmin=-1,
        vmax=1,
        cmap="vlag",
        annot=True,
        fmt=".2f",
        figsize=(1.0 * len(keep) + 3, 1.0 * len(keep) + 2.5),
        cbar_kws={"label": "Spearman ρ"},
        annot_kws={"fontsize": 7},
        dendrogram_ratio=0.12,
        cbar_pos=(0.0, 0.0, 0.01, 0.01),  # moved beside the heatmap below, once the layout is known
    )
    g.figure.suptitle(title, fontsize=9)
    g.figure.subplots_adjust(top=0.9)
    _colorbar_beside_heatmap(g)
    written = save_figure(g.figure, out_base)
    plt.close(g.figure)
    return written
