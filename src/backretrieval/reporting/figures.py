"""Figures: Figure 2 (XLR vs BkR per encoder), BkR per encoder with CIs (data without
parallel texts), Figure 3 (case-study BkR per model across
language pairs) and the heads' loss curves; written atomically with reproducible bytes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util import io
from .._util.io import atomic_path
from ..errors import InputError
from ._common import direction_order

#: the fewest values a box of a box plot summarises; fewer are drawn as points (a box of two
#: values draws its quartiles from two numbers)
MIN_BOX_VALUES = 5


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


def finish_figure(fig, out_base: Path, title: str) -> list[Path]:
    """The findings figures' ending: a small suptitle wrapped to the figure's width, tight
    layout (legends placed outside a panel are kept on the canvas), :func:`save_figure`, closed."""
    import matplotlib.pyplot as plt

    fig.suptitle(wrap_title(title, fig.get_figwidth() - 0.3, 9), fontsize=9)
    fig.tight_layout()
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


#: the colours of the series of a figure: matplotlib's tab10, saturated and told apart in print;
#: beyond ten series a colour repeats with another marker and line style (:func:`series_styles`)
COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def series_styles(names) -> dict[str, tuple[str, str, str]]:
    """``{name: (colour, marker, line style)}``, no two names alike: the i-th name takes colour
    i mod 10 and marker i mod 13 (so two names share both only 130 apart), and the names past
    the tenth a dashed line."""
    return {
        name: (COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)], "-" if i < len(COLORS) else "--")
        for i, name in enumerate(names)
    }


def legend_outside(ax, handles=None, labels=None, *, where: str = "right", ncol: int = 1, **kw):
    """A panel's legend outside its plotting area, where it covers no data: right of the panel
    (``where="right"``) or below its x label (``"below"``); :func:`finish_figure`'s tight layout
    keeps it on the canvas."""
    args = [] if handles is None else [handles] + ([labels] if labels is not None else [])
    place = (
        {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0)}
        if where == "right"
        else {"loc": "upper center", "bbox_to_anchor": (0.5, -0.2)}
    )
    kw.setdefault("fontsize", 7)
    kw.setdefault("frameon", False)
    return ax.legend(*args, ncol=ncol, borderaxespad=0.0, **place, **kw)


def grid_shape(n: int, max_cols: int = 4) -> tuple[int, int]:
    """(rows, columns) of a grid of ``n`` panels with the fewest empty slots (up to ``max_cols``
    columns; on a tie, the most columns)."""
    if n <= max_cols:
        return 1, max(1, n)
    best = min(range(2, max_cols + 1), key=lambda c: (math.ceil(n / c) * c - n, -c))
    return math.ceil(n / best), best


def fig2_frame(metrics: pd.DataFrame, seed: int) -> pd.DataFrame:
    sub = metrics[metrics.seed == seed]
    wide = sub.pivot_table(index=["direction", "encoder"], columns="metric", values="value").reset_index()
    return wide[["direction", "encoder", "xlr_recall", "bkr_recall"]].sort_values(["direction", "encoder"])


#: marker shapes, cycled beside the colours, so that two encoders never share colour and shape
#: (tab20's pairs of light and dark shades are told apart by the marker as well)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "d", "8")


def wrap_title(title: str, width_in: float, fontsize: float) -> str:
    """``title`` wrapped at spaces into lines that fit ``width_in`` inches at ``fontsize`` (a
    character taken as 0.6 em, wider than DejaVu Sans's average), its own line breaks kept: a
    long dataset name on a narrow figure would otherwise run past the figure's edge."""
    import textwrap

    chars = max(20, int(width_in * 72 / (0.6 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) if line else line for line in title.split("\n"))


def fig2_scatter(
    metrics: pd.DataFrame, correlations: pd.DataFrame, seed: int, out_base: Path, title: str, *, k: int
) -> list[Path]:
    """XLR vs BkR per encoder for one seed; one panel per direction, Pearson r and Spearman ρ
    in its title. The encoders are told apart by colour and marker and named in one legend
    below the panels, not beside their points: similar encoders (the multi30k configs' nine
    fastText variants) fall within a few points of each other, where labels overprint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.lines import Line2D

    frame = fig2_frame(metrics, seed)
    directions = direction_order(frame["direction"].unique().tolist())
    # the grid with the fewest empty slots; an empty slot left holds the legend
    nrow, ncol = grid_shape(len(directions), max_cols=5)
    spare = nrow * ncol - len(directions)
    encoders = sorted(frame["encoder"].unique())
    style = {e: (c, m) for e, (c, m, _) in series_styles(encoders).items()}
    width = 3.2 * ncol
    # legend columns of 1.5 in (a marker and a name like "ft-procrustes-5k" at 7 pt), rows of 0.2 in
    leg_cols = max(1, min(len(encoders), int(width // 1.5))) if not spare else max(1, math.ceil(len(encoders) / 12))
    leg_rows = math.ceil(len(encoders) / leg_cols) if not spare else 0
    sns.set_theme(style="whitegrid", context="paper")
    # constrained layout: it keeps room for the legend placed "outside" the panels
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(width, 3.0 * nrow + 0.2 * leg_rows + 0.2), squeeze=False, layout="constrained"
    )
    for ax, d in zip(axes.flat, directions):
        f = frame[frame.direction == d]
        for _, r in f.iterrows():
            color, marker = style[r["encoder"]]
            ax.scatter(
                r["xlr_recall"], r["bkr_recall"], color=color, marker=marker, s=44, edgecolors="white", linewidths=0.3
            )
        c = correlations[
            (correlations.direction == d) & (correlations.seed == seed) & (correlations.method == "bkr_recall")
        ]
        pr = c[c.stat == "pearson"]["value"]
        sr = c[c.stat == "spearman"]["value"]
        corr = f" (r={pr.iloc[0]:.2f}, ρ={sr.iloc[0]:.2f})" if len(pr) and len(sr) else ""
        ax.set_title(d.replace("-", "→") + corr, fontsize=9)
        ax.set_xlabel(f"XLR (Recall@{k})")
        ax.set_ylabel(f"BkR (Recall@{k})")
    handles = [
        Line2D(
            [], [], linestyle="", marker=style[e][1], color=style[e][0], markeredgecolor="white", markersize=7, label=e
        )
        for e in encoders
    ]
    empty = list(axes.flat)[len(directions) :]
    if empty:  # the first empty slot holds the legend (no blank panel), any others are removed
        empty[0].axis("off")
        empty[0].legend(handles=handles, loc="center", ncols=leg_cols, fontsize=7, frameon=False)
        for ax in empty[1:]:
            fig.delaxes(ax)
    else:
        fig.legend(handles=handles, loc="outside lower center", ncols=leg_cols, fontsize=7, frameon=False)
    fig.suptitle(wrap_title(title, width, 10), fontsize=10)
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


def fig2_from_plot_data(frame: pd.DataFrame, seed: int, out_base: Path, title: str, *, k: int) -> list[Path]:
    """Figure 2 redrawn from its committed plot data (``plots/fig2_xlr_vs_bkr.csv``:
    :func:`fig2_frame` of the figure's seed), its r and ρ recomputed from the same values."""
    from ..stats import correlate

    tidy = frame.melt(
        id_vars=["direction", "encoder"], value_vars=["xlr_recall", "bkr_recall"], var_name="metric"
    ).assign(seed=seed)
    return fig2_scatter(tidy, correlate(tidy, candidates=("bkr_recall",)), seed, out_base, title, k=k)


def bkr_bars(
    cis: pd.DataFrame, order: list[str], baseline_label: str, k: int, out_base: Path, title: str
) -> list[Path]:
    """BkR Recall@k per encoder (bars, ``order`` top to bottom) with its CI over seeds, one panel
    per direction, the random baseline (``baseline_label`` rows of ``cis``) as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    rec = cis[cis["metric"] == "bkr_recall"]
    directions = direction_order(rec["direction"].unique().tolist())
    nrow, ncol = grid_shape(len(directions))
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(3.4 * ncol, 0.45 * len(order) * nrow + 1.2), squeeze=False, sharex=True
    )
    colors = dict(zip(order, sns.color_palette("tab10" if len(order) <= 10 else "tab20", len(order))))
    for ax, d in zip(axes.flat, directions):
        f = rec[rec["direction"] == d].set_index("encoder")
        encs = [e for e in order if e in f.index]
        y = np.arange(len(encs))
        mean = f.loc[encs, "mean"].to_numpy(float)
        err = np.vstack([mean - f.loc[encs, "ci_low"].to_numpy(float), f.loc[encs, "ci_high"].to_numpy(float) - mean])
        ax.barh(y, mean, xerr=err, color=[colors[e] for e in encs], capsize=3, height=0.6)
        ax.set_yticks(y, encs, fontsize=7)
        ax.invert_yaxis()
        baseline = baseline_label in f.index
        if baseline:  # named in the axis label: a legend inside would cover bars
            ax.axvline(float(f.loc[baseline_label, "mean"]), color="grey", linestyle="--", linewidth=1)
        ax.set_xlim(0, 1)
        ax.set_title(d.replace("-", "→"), fontsize=9)
        ax.set_xlabel(f"BkR Recall@{k}" + (" (dashed: random)" if baseline else ""))
    for ax in list(axes.flat)[len(directions) :]:
        fig.delaxes(ax)
    fig.suptitle(wrap_title(title, 3.4 * ncol - 0.3, 10), fontsize=10)
    fig.tight_layout()
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


def _stack(ys: list[float], height: float, low: float, high: float) -> list[float]:
    """Label centres for points at display heights ``ys`` (ascending): each as near its point
    as it can be while at least ``height`` above the one below, all within [``low``, ``high``]."""
    out: list[float] = []
    for y in ys:
        out.append(max(y, low, out[-1] + height if out else low))
    over = out[-1] - high if out else 0.0
    if over > 0:  # pushed past the top: move the stack down, keeping the spacing
        out = [y - over for y in out]
        for i in range(len(out) - 2, -1, -1):
            out[i] = min(out[i], out[i + 1] - height)
    return out


def fig3_boxplot(df: pd.DataFrame, t: pd.DataFrame, out_base: Path, title: str, n_annotate: int = 3) -> None:
    """Figure 3: per model a box of its BkR×1000 across language pairs (a head's pair values
    averaged over its training seeds), the pairs as points, the worst pairs named; for a model
    trained with several seeds, each training seed's mean over pairs as a red diamond, so the
    spread over training runs shows beside the spread over pairs.

    The worst pairs' names stand in a column right of their box, stacked so that none prints
    over another (pairs often tie or nearly tie), each joined to its point by a thin line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.lines import Line2D
    from matplotlib.text import Text

    per_pair = df.groupby(["model", "direction"])["bkr_recall"].mean().reset_index()
    per_pair["bkr_x1000"] = per_pair["bkr_recall"] * 1000
    label = dict(zip(t["model"], t["label"]))
    order = list(t["label"])
    per_pair["label"] = per_pair["model"].map(label)
    sns.set_theme(style="whitegrid", context="paper")
    width = 1.3 * len(order) + 2
    fig, ax = plt.subplots(figsize=(width, 4))
    counts = per_pair.groupby("label")["bkr_x1000"].count()
    boxed = all(counts.get(lab, 0) >= MIN_BOX_VALUES for lab in order)
    if boxed:
        # boxes half a slot wide: the other half holds the diamonds and the worst pairs' names
        sns.boxplot(
            data=per_pair, x="label", y="bkr_x1000", order=order, ax=ax, color="#9ecae1", fliersize=0, width=0.5
        )
    else:  # too few pairs for quartiles: the points alone, each model's mean as a short bar
        means = per_pair.groupby("label")["bkr_x1000"].mean()
        for xi, lab in enumerate(order):
            if lab in means:
                ax.hlines(means[lab], xi - 0.22, xi + 0.22, color="#4a4a4a", linewidth=1.2, zorder=2)
        ax.set_xticks(range(len(order)), order)
        ax.set_xlim(-0.5, len(order) - 0.5)
    # the points, with horizontal jitter from a fixed-seed generator (seaborn's stripplot draws
    # its jitter from numpy's global RNG, so the figure files differed between runs)
    rng = np.random.default_rng(0)
    point_x: dict[tuple[str, str], float] = {}
    for xi, lab in enumerate(order):
        pts = per_pair[per_pair["label"] == lab]
        xs = xi + rng.uniform(-0.15, 0.15, size=len(pts))
        point_x.update(zip(zip(pts["label"], pts["direction"]), xs))
        ax.scatter(xs, pts["bkr_x1000"], s=9, color="#08519c", zorder=3, linewidths=0)
    marked = False
    if "training_seed" in df:
        trained = df[df["training_seed"].notna()]
        per_seed = trained.groupby(["model", "training_seed"])["bkr_recall"].mean().reset_index()
        for xi, m in enumerate(t["model"]):
            ys = per_seed.loc[per_seed["model"] == m, "bkr_recall"].to_numpy() * 1000
            if len(ys) > 1:
                ax.scatter(
                    np.full(len(ys), xi + 0.3),
                    ys,
                    s=22,
                    marker="D",
                    color="#cb181d",
                    zorder=4,
                    linewidths=0,
                    label=None if marked else "mean over pairs,\nper training seed",
                )
                marked = True
    handles, _ = ax.get_legend_handles_labels()
    if not boxed:
        handles.append(Line2D([], [], color="#4a4a4a", linewidth=1.2, label="mean over pairs"))
    if handles:  # outside the axes, right: inside, it could cover the points or the names
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, borderaxespad=0
        )
    ax.set_xlabel("")
    ax.set_ylabel("BkR ×1000 (per language pair)")
    ax.set_title(wrap_title(title, width - 0.5, 9), fontsize=9)
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    ax.set_ylim(*ax.get_ylim())  # fixed now: the names are placed in display coordinates
    fig.tight_layout()
    # the layout is final (save_figure does not re-lay it out): place the names in pixels
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    probe = Text(0, 0, "ar→en", fontsize=6, figure=fig)  # a pair's name: its height sets the spacing
    line = probe.get_window_extent(renderer).height + 2 * fig.dpi / 72  # + 2 pt
    box = ax.get_window_extent(renderer)
    to_data = ax.transData.inverted()
    for xi, lab in enumerate(order):
        worst = per_pair[per_pair["label"] == lab].nsmallest(n_annotate, "bkr_x1000")
        worst = worst.sort_values(["bkr_x1000", "direction"])
        pts = ax.transData.transform(
            np.column_stack([[point_x[(lab, d)] for d in worst["direction"]], worst["bkr_x1000"]])
        )
        ys = _stack(list(pts[:, 1]), line, box.y0 + line / 2, box.y1 - line / 2)
        text_x = ax.transData.transform((xi + 0.38, 0))[0]
        for (_, r), (px, py), y in zip(worst.iterrows(), pts, ys):
            ax.annotate(
                r["direction"].replace("-", "→"),
                to_data.transform((px, py)),
                xytext=to_data.transform((text_x, y)),
                fontsize=6,
                ha="left",
                va="center",
                arrowprops={"arrowstyle": "-", "color": "0.45", "linewidth": 0.4, "shrinkA": 1, "shrinkB": 2},
                annotation_clip=False,
            )
    save_figure(fig, out_base)
    plt.close(fig)


def loss_curve_figure(history: dict[str, list[float]], title: str = ""):
    """Train / validation loss per epoch (best validation epoch marked) as an Agg figure; the
    title wrapped to the figure's width."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    for key in ("epoch", "train_loss", "val_loss"):
        if key not in history:
            raise InputError(f"plot_loss_curves: history lacks '{key}'")
    ep, tr, va = history["epoch"], history["train_loss"], history["val_loss"]
    fig = Figure(figsize=(5, 3.2), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(ep, tr, label="train", marker=".")
    ax.plot(ep, va, label="validation", marker=".")
    if va:
        i = int(np.argmin(va))
        ax.axvline(ep[i], color="grey", linestyle="--", linewidth=0.8, label=f"best epoch {int(ep[i])}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    if title:
        ax.set_title(wrap_title(title, 4.6, 10), fontsize=10)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_loss_curves(history: dict[str, list[float]], path_png: str | Path, title: str = "") -> None:
    """:func:`loss_curve_figure` as a PNG, atomically."""
    fig = loss_curve_figure(history, title)
    with atomic_path(path_png, suffix=".png") as tmp:
        fig.savefig(tmp, format="png")
