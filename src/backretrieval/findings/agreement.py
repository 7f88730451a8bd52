"""Section 6b: the agreement matrix — do the metrics we compute rank the encoders alike?
(the benchmark-disagreement view of Bakarov et al. 2018).

Every metric is reduced to one value per encoder (its mean over directions and seeds; BLI: over
languages), then every pair of metrics is compared by Spearman's rho across the encoders that
have both (BLI exists for the word-vector family only, so its pairs have fewer encoders), with
a percentile bootstrap CI over encoders (:func:`backretrieval.stats.bootstrap_corr_ci`). The
matrix is drawn as a seaborn clustermap (average-linkage on 1 − rho).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from ..stats import bootstrap_corr_ci


def agreement_table(
    per_encoder: pd.DataFrame, metrics: Sequence[str], B: int = 1000, seed: int = 0, min_encoders: int = 4
) -> pd.DataFrame:
    """Rows per metric pair (a < b in ``metrics`` order): n encoders, Spearman rho, CI, and the
    encoders' names. ``per_encoder``: index = encoder, one column per metric (NaN = missing).
    Pairs with fewer than ``min_encoders`` encoders, or a constant metric, get NaN."""
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
