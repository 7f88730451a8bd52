"""The inference figures: per run, the intervals of BkR's and CORR's correlation with XLR
(``figures/inference_ci``); across configurations, the forest plot of BkR − CORR."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...stats.weighted import STATS
from .verdict import VERDICT_SETS


def figure_title(info) -> str:
    """The title of ``figures/inference_ci`` (a :class:`~backretrieval.evaluation.run_artifacts.RunInfo`)."""
    return f"{info.figure_label}: correlation with XLR across encoders, 95% CIs"


def plot_intervals(frame: pd.DataFrame, out_base, title: str, set_name: str = "all") -> list:
    """Per direction and statistic: BkR's and CORR's correlation with XLR, the crossed-bootstrap
    95% CI (thick) and the seeds-as-replicates CI (thin); PNG/SVG/PDF, reproducible bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ...reporting.figures import finish_figure, legend_outside

    f = frame[(frame["set"] == set_name) & frame["quantity"].isin(["rho_bkr", "rho_corr"])]
    directions = list(dict.fromkeys(f["direction"]))
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(
        1, len(STATS), figsize=(4.2 * len(STATS) + 1.4, 0.45 * len(directions) + 1.6), squeeze=False, sharey=True
    )
    colors = {"rho_bkr": sns.color_palette()[0], "rho_corr": sns.color_palette()[1]}
    labels = {"rho_bkr": "BkR", "rho_corr": "CORR"}
    for ax, stat in zip(axes[0], STATS):
        for j, quantity in enumerate(("rho_bkr", "rho_corr")):
            g = f[(f["stat"] == stat) & (f["quantity"] == quantity)].set_index("direction").reindex(directions)
            y = np.arange(len(directions)) + (j - 0.5) * 0.3
            ax.hlines(y, g["naive_low"], g["naive_high"], color=colors[quantity], linewidth=1.0)
            ax.hlines(y, g["low"], g["high"], color=colors[quantity], linewidth=3.5, alpha=0.45)
            ax.plot(g["estimate"], y, "o", color=colors[quantity], markersize=4, label=labels[quantity])
        ax.set_yticks(np.arange(len(directions)), [d.replace("-", "→") for d in directions])
        ax.invert_yaxis()
        ax.set_xlabel(f"{stat.capitalize()} correlation with XLR (across encoders)")
        ax.set_title(stat.capitalize(), fontsize=9)
    # outside the panels: inside, it covered an interval
    legend_outside(
        axes[0][-1], where="right", title="thick: encoders × items\nthin: seeds as replicates", title_fontsize=6
    )
    return finish_figure(fig, out_base, title)


#: the title of the forest plot (reports/findings_summary/figures/overall_forest)
FOREST_TITLE = "BkR − CORR per configuration and direction"


def plot_forest(cells: pd.DataFrame, pooled: Mapping[str, list], out_base, stat: str = "pearson") -> list:
    """Forest plot: BkR − CORR per configuration × direction with its 95% CI for these encoders
    (items resampled), and the pooled estimates (diamond: that interval; thin line: the interval
    for encoders like these). The real-data rows and the SYNTHETIC rows are separate panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ...reporting.figures import save_figure, wrap_title

    g = cells[cells["stat"] == stat].reset_index(drop=True)
    extra = [
        (f"pooled ({set_name}): {' + '.join(p['configurations'])}", p[stat])
        for set_name in VERDICT_SETS
        for p in (pooled.get(set_name) or [])
        if p["inferential"] and len(p["configurations"]) >= 2 and stat in p
    ]
    real, synthetic = g[~g["synthetic"].astype(bool)], g[g["synthetic"].astype(bool)]
    panels = [(real, extra, "real data")] if len(real) else []
    if len(synthetic):
        panels.append((synthetic, [] if len(real) else extra, "SYNTHETIC data (a demonstration, not evidence)"))
    heights = [len(rows) + len(ext) + 1.2 for rows, ext, _ in panels]
    sns.set_theme(style="whitegrid", context="paper")
    width = 6.4
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(width, 0.26 * sum(heights) + 1.9),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
    )
    for ax, (rows, ext, name) in zip(axes[:, 0], panels):
        labels = [f"{r.run_name}: {r.direction.replace('-', '→')}" for r in rows.itertuples()]
        y = np.arange(len(rows))
        ax.hlines(y, rows["low"], rows["high"], color="#4c72b0", linewidth=1.6)
        ax.plot(rows["diff"], y, "o", color="#4c72b0", markersize=4)
        for i, (lab, p) in enumerate(ext):
            yy = len(rows) + i + 0.5
            rnd = p.get("random") if isinstance(p, Mapping) else None
            fx = p["fixed"]
            if rnd and np.isfinite(rnd.get("low", np.nan)):
                ax.hlines(yy, rnd["low"], rnd["high"], color="#c44e52", linewidth=0.8)
            ax.fill(
                [fx["low"], fx["estimate"], fx["high"], fx["estimate"]], [yy, yy - 0.3, yy, yy + 0.3], color="#c44e52"
            )
            labels.append(lab)
        ax.set_yticks(list(y) + [len(rows) + i + 0.5 for i in range(len(ext))], labels, fontsize=7)
        ax.axvline(0, color="grey", linewidth=0.8)
        ax.invert_yaxis()
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(f"BkR − CORR ({stat.capitalize()} correlation with XLR across encoders)")
    note = (
        "points and diamonds: 95% CI for these encoders (items resampled); "
        "thin line through a diamond: 95% CI for encoders like these (encoder families resampled too)"
    )
    fig.suptitle(wrap_title(f"{FOREST_TITLE}\n{note}", width - 0.3, 8), fontsize=8)
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written
