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
    """The findings figures' ending: a small suptitle, tight layout, :func:`save_figure`, closed."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


def fig2_frame(metrics: pd.DataFrame, seed: int) -> pd.DataFrame:
    sub = metrics[metrics.seed == seed]
    wide = sub.pivot_table(index=["direction", "encoder"], columns="metric", values="value").reset_index()
    return wide[["direction", "encoder", "xlr_recall", "bkr_recall"]].sort_values(["direction", "encoder"])


def fig2_scatter(
    metrics: pd.DataFrame, correlations: pd.DataFrame, seed: int, out_base: Path, title: str
) -> list[Path]:
    """XLR vs BkR per encoder for one seed; one panel per direction; Pearson/Spearman in legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    frame = fig2_frame(metrics, seed)
    directions = direction_order(frame["direction"].unique().tolist())
    ncol = min(4, len(directions))
    nrow = math.ceil(len(directions) / ncol)
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 3.0 * nrow), squeeze=False)
    encoders = sorted(frame["encoder"].unique())
    palette = dict(zip(encoders, sns.color_palette("tab10" if len(encoders) <= 10 else "tab20", len(encoders))))
    for ax, d in zip(axes.flat, directions):
        f = frame[frame.direction == d]
        sns.scatterplot(
            data=f, x="xlr_recall", y="bkr_recall", hue="encoder", palette=palette, ax=ax, legend=False, s=40
        )
        for _, r in f.iterrows():
            ax.annotate(
                r["encoder"], (r["xlr_recall"], r["bkr_recall"]), fontsize=6, xytext=(3, 2), textcoords="offset points"
            )
        c = correlations[
            (correlations.direction == d) & (correlations.seed == seed) & (correlations.method == "bkr_recall")
        ]
        pr = c[c.stat == "pearson"]["value"]
        sr = c[c.stat == "spearman"]["value"]
        label = f"r={pr.iloc[0]:.2f}, ρ={sr.iloc[0]:.2f}" if len(pr) and len(sr) else ""
        ax.plot([], [], " ", label=label)
        ax.legend(loc="lower right", fontsize=7, handlelength=0, frameon=True)
        ax.set_title(d.replace("-", "→"), fontsize=9)
        ax.set_xlabel("XLR (Recall@10)")
        ax.set_ylabel("BkR (Recall@10)")
    for ax in list(axes.flat)[len(directions) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


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
    ncol = min(4, len(directions))
    nrow = math.ceil(len(directions) / ncol)
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
        if baseline_label in f.index:
            ax.axvline(float(f.loc[baseline_label, "mean"]), color="grey", linestyle="--", linewidth=1, label="random")
            ax.legend(loc="lower right", fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_title(d.replace("-", "→"), fontsize=9)
        ax.set_xlabel(f"BkR Recall@{k}")
    for ax in list(axes.flat)[len(directions) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


def fig3_boxplot(df: pd.DataFrame, t: pd.DataFrame, out_base: Path, title: str, n_annotate: int = 3) -> None:
    """Figure 3: per model a box of its BkR×1000 across language pairs (a head's pair values
    averaged over its training seeds), the pairs as points, the worst pairs named; for a model
    trained with several seeds, each training seed's mean over pairs as a red diamond, so the
    spread over training runs shows beside the spread over pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    per_pair = df.groupby(["model", "direction"])["bkr_recall"].mean().reset_index()
    per_pair["bkr_x1000"] = per_pair["bkr_recall"] * 1000
    label = dict(zip(t["model"], t["label"]))
    order = list(t["label"])
    per_pair["label"] = per_pair["model"].map(label)
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(1.3 * len(order) + 2, 4))
    sns.boxplot(data=per_pair, x="label", y="bkr_x1000", order=order, ax=ax, color="#9ecae1", fliersize=0)
    # the points, with horizontal jitter from a fixed-seed generator (seaborn's stripplot draws
    # its jitter from numpy's global RNG, so the figure files differed between runs)
    rng = np.random.default_rng(0)
    for xi, lab in enumerate(order):
        ys = per_pair.loc[per_pair["label"] == lab, "bkr_x1000"].to_numpy()
        ax.scatter(xi + rng.uniform(-0.15, 0.15, size=len(ys)), ys, s=9, color="#08519c", zorder=3, linewidths=0)
    if "training_seed" in df:
        trained = df[df["training_seed"].notna()]
        per_seed = trained.groupby(["model", "training_seed"])["bkr_recall"].mean().reset_index()
        marked = False
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
                    label=None if marked else "mean over pairs, per training seed",
                )
                marked = True
        if marked:
            ax.legend(loc="best", fontsize=7, frameon=False)
    for xi, lab in enumerate(order):
        g = per_pair[per_pair["label"] == lab].nsmallest(n_annotate, "bkr_x1000")
        for _, r in g.iterrows():
            ax.annotate(
                r["direction"].replace("-", "→"),
                (xi, r["bkr_x1000"]),
                xytext=(6, 0),
                textcoords="offset points",
                fontsize=6,
                va="center",
            )
    ax.set_xlabel("")
    ax.set_ylabel("BkR ×1000 (per language pair)")
    ax.set_title(title, fontsize=9)
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    fig.tight_layout()
    save_figure(fig, out_base)
    plt.close(fig)


def plot_loss_curves(history: dict[str, list[float]], path_png: str | Path, title: str = "") -> None:
    """Train / validation loss per epoch (best validation epoch marked), PNG via Agg, atomic."""
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
        ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    with atomic_path(path_png, suffix=".png") as tmp:
        fig.savefig(tmp, format="png")
