"""Figures a reviewer would accept, checked on every figure the project renders
(tests/figure_check.py: no text over text or cut by the canvas, no legend over data, no two
series drawn alike, no empty panel or panel slot, no box of fewer than MIN_BOX_VALUES values),
at the figure sizes the pipeline writes: every findings figure of every committed
configuration redrawn from its committed tables (backretrieval.findings.replot) and the forest
plot from the committed summary; Figure 2 and the BkR bars with every shipped config's encoders
and directions on the worst realistic inputs (the multi30k configs' 14 encoders, nine fastText
variants clustered within a few points of each other, two encoders at XLR 1.0 on the panel's
edge), Figure 3 with every shipped config's case-study models and language pairs and with many
pairs whose worst values coincide, and the heads' loss curves."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from backretrieval.config import load_config
from backretrieval.findings import agreement
from backretrieval.findings.replot import figures_of
from backretrieval.reporting import figures
from backretrieval.stats import correlate
from backretrieval.study import case_study as cs
from figure_check import CLEAN, box_sizes, drawn_texts, figure_problems, overlap
from figure_check import agg as _agg

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [ROOT / "params.yaml", *sorted((ROOT / "config").glob("*.yaml"))]
_drawn_texts = drawn_texts
_overlap = overlap


@pytest.fixture
def captured(monkeypatch):
    """The figures handed to save_figure (nothing written)."""
    figs: list = []

    def keep(fig, out_base, dpi=150):
        figs.append(fig)
        return []

    monkeypatch.setattr(figures, "save_figure", keep)
    return figs


def _metrics_like(encoders: list[str], directions: list[str]) -> pd.DataFrame:
    """A tidy metrics frame (one seed) shaped like a real run's: the strong multilingual
    encoders at or near XLR 1.0 (on the panel's edge), the fastText variants (``ft-*``) in one
    tight cluster (within 0.1 XLR and 0.03 BkR of each other, the first two on one point), the
    weak ones spread below, random near 0."""
    rng = np.random.default_rng(0)
    rows = []
    for d in directions:
        cluster: list[tuple[float, float]] = []
        for e in encoders:
            if e.startswith("ft-"):
                x, y = (0.70 + 0.1 * rng.random(), 0.11 + 0.03 * rng.random()) if len(cluster) != 1 else cluster[0]
                cluster.append((x, y))
            elif e == "random":
                x, y = 0.02 * rng.random(), 0.01 + 0.01 * rng.random()
            elif e in ("e5-small", "use-m"):
                x, y = 1.0 - 0.03 * (e == "use-m") * rng.random(), 0.17 + 0.03 * rng.random()
            else:
                x, y = 0.2 + 0.5 * rng.random(), 0.05 + 0.06 * rng.random()
            for m, v in (("xlr_recall", x), ("bkr_recall", y), ("corr", 0.05 * rng.random())):
                rows.append(dict(direction=d, seed=0, encoder=e, metric=m, value=v, n=500))
    return pd.DataFrame(rows)


def _config_ids(p: Path) -> str:
    return p.name


@pytest.mark.parametrize("path", CONFIGS, ids=_config_ids)
def test_fig2_text_neither_overlaps_nor_leaves_the_figure(path, captured):
    cfg = load_config(path)
    encoders, directions = list(cfg["encoders"]), list(cfg["directions"])
    metrics = _metrics_like(encoders, directions)
    title = f"SYNTHETIC dataset — {cfg['dataset']['name']}: XLR vs BkR per encoder (seed 0)"
    figures.fig2_scatter(metrics, correlate(metrics), 0, Path("unused"), title, k=10)
    (fig,) = captured
    assert figure_problems(fig) == CLEAN


def test_fig2_every_encoder_is_named_once_per_figure(captured):
    """The point labels' replacement still names every encoder (the multi30k set)."""
    cfg = load_config(ROOT / "config/multi30k.yaml")
    encoders = list(cfg["encoders"])
    metrics = _metrics_like(encoders, list(cfg["directions"]))
    figures.fig2_scatter(metrics, correlate(metrics), 0, Path("unused"), "t", k=10)
    (fig,) = captured
    shown = [t.get_text() for t, _ in _drawn_texts(fig, 100)]
    assert all(shown.count(e) >= 1 for e in encoders), sorted(set(encoders) - set(shown))


def _case_results(models: list[str], pairs: list[str], training_seeds=(0, 1, 2), tie: bool = True) -> pd.DataFrame:
    """case-evaluate's tidy rows: per model, pair and sample seed a BkR; heads once per
    training seed. With ``tie``, every model's three worst pairs share one value and the next
    three sit within a point of it (the labels that used to print over each other)."""
    rng = np.random.default_rng(1)
    level = {m: 0.05 + 0.3 * i / max(1, len(models) - 1) for i, m in enumerate(models)}
    rows = []
    for m in models:
        base = level[m] + 0.04 * rng.random(len(pairs))
        if tie and len(pairs) >= 6:
            low = base.min() - 0.02
            base[:3] = low
            base[3:6] = low + 0.001 * np.arange(1, 4)
        for ts in training_seeds if m in cs.HEADS else [None]:
            shift = 0.0 if ts is None else 0.005 * ts
            for d, v in zip(pairs, base):
                for s in (0, 1):
                    rows.append(dict(model=m, training_seed=ts, direction=d, seed=s, n=200, bkr_recall=v + shift))
    df = pd.DataFrame(rows)
    df["training_seed"] = df["training_seed"].astype("Int64")
    return df


def _fig3(models, pairs, chosen, captured, title_name="synthetic-scenes"):
    t = pd.DataFrame({"model": models, "label": [cs._label(m, chosen) for m in models]})
    df = _case_results(models, pairs)
    title = (
        f"SYNTHETIC dataset — {title_name}: BkR per model across language pairs\n"
        "heads: pairs averaged over R=3 training seeds; diamonds: each training seed's mean over pairs"
    )
    with box_sizes() as boxes:
        figures.fig3_boxplot(df, t, Path("unused"), title)
    captured[-1].boxes = boxes
    return captured[-1]


CASE_CONFIGS = [p for p in CONFIGS if load_config(p).get("case_study")]


@pytest.mark.parametrize("path", CASE_CONFIGS, ids=_config_ids)
def test_fig3_text_neither_overlaps_nor_leaves_the_figure(path, captured):
    cfg = load_config(path)
    c = cs.case_cfg(cfg)
    fig = _fig3(cs.models(c), cs.directions(c), c["base_encoders"][0], captured, cfg["dataset"]["name"])
    assert figure_problems(fig, fig.boxes) == CLEAN


@pytest.mark.parametrize("n_models", [3, 6])
def test_fig3_many_pairs_with_coinciding_worst_values(n_models, captured):
    """Seven languages (42 ordered pairs), every model's worst three pairs on one value."""
    langs = ["en", "de", "fr", "es", "ru", "ar", "id"]
    pairs = [f"{a}-{b}" for a in langs for b in langs if a != b]
    models = ["random", "e5-small", "use-m", "char-ngram", "triplet", "tripletxl"][-n_models:]
    fig = _fig3(models, pairs, "use-m", captured)
    assert fig.boxes and min(fig.boxes) == len(pairs)  # boxes: 42 pairs each
    assert figure_problems(fig, fig.boxes) == CLEAN
    # every worst pair is still named (three per model)
    shown = [t.get_text() for t, _ in _drawn_texts(fig, 100)]
    assert sum("→" in s for s in shown) == 3 * n_models


def _agreement_matrix(names: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    a = rng.uniform(-0.3, 1.0, (len(names), len(names)))
    m = (a + a.T) / 2
    np.fill_diagonal(m, 1.0)
    return pd.DataFrame(m, index=names, columns=names)


@pytest.mark.parametrize(
    "names",
    [
        ["soft BkR (m=5)", "CORR", "BkR MRR", "BkR", "XLR MRR", "XLR R@1", "XLR R@10"],
        ["BkR", "CORR", "XLR R@10"],
    ],
    ids=["seven-metrics", "three-metrics"],
)
def test_clustermap_colorbar_is_clear_of_the_dendrograms(names, captured):
    agreement.plot_clustermap(
        _agreement_matrix(names), Path("unused"), "SYNTHETIC — synthetic-scenes: agreement across encoders (Spearman)"
    )
    (fig,) = captured
    _agg(fig).draw()
    renderer = fig.canvas.get_renderer()
    # seaborn's ClusterGrid keeps its axes on the figure: colorbar, two dendrograms, heatmap
    cbar = next(ax for ax in fig.axes if ax.get_label() == "<colorbar>" or ax.get_ylabel() == "Spearman ρ")
    others = [ax for ax in fig.axes if ax is not cbar and ax.get_visible()]
    assert len(others) == 3  # the heatmap and the two dendrograms
    cb = cbar.get_tightbbox(renderer)  # the bar with its ticks and label
    for ax in others:
        assert not _overlap(cb, ax.get_window_extent(renderer)), ax
        assert not _overlap(cb, ax.get_tightbbox(renderer)), ax
    assert figure_problems(fig) == CLEAN


def test_fig2_files_are_byte_identical_when_redrawn(tmp_path):
    """The legend and the constrained layout keep Figure 2's files reproducible."""
    cfg = load_config(ROOT / "config/multi30k_task2.yaml")
    metrics = _metrics_like(list(cfg["encoders"]), list(cfg["directions"]))
    for name in ("one", "two"):
        figures.fig2_scatter(metrics, correlate(metrics), 0, tmp_path / name, "t", k=10)
    for ext in ("png", "svg", "pdf"):
        assert (tmp_path / f"one.{ext}").read_bytes() == (tmp_path / f"two.{ext}").read_bytes(), ext


def test_loss_curve_title_stays_inside_the_figure():
    """A head's loss curve with the longest title the train step writes (SYNTHETIC label,
    dataset name, head, base encoder, training seed, best epoch): wrapped, not cut off."""
    epochs = list(range(1, 41))
    history = {
        "epoch": epochs,
        "train_loss": [0.03 / e for e in epochs],
        "val_loss": [0.02 / e**0.5 for e in epochs],
    }
    fig = figures.loss_curve_figure(
        history,
        "SYNTHETIC dataset — synthetic-scenes: TRIPLETXL on paraphrase-multilingual, training seed 4 (best epoch 40)",
    )
    assert figure_problems(fig) == CLEAN


def test_fig3_shows_points_not_boxes_for_few_pairs(captured):
    """Two language pairs per model (multi30k-task2's case study): no box of two values, the
    points and each model's mean instead."""
    fig = _fig3(["random", "e5-small", "triplet"], ["en-de", "de-en"], "e5-small", captured)
    assert fig.boxes == []
    assert figure_problems(fig, fig.boxes) == CLEAN


# ---------------------------------------------------------------------------- every findings figure


def _findings_figures() -> list:
    """(configuration, analysis, stem) of every figure the committed findings records list."""
    out = []
    for folder in sorted(ROOT.glob("reports/*/findings")):
        for analysis, plots in figures_of(folder).items():
            out += [(folder.parent.name, analysis, stem) for stem in plots]
    return out


FINDINGS_FIGURES = _findings_figures()


def test_every_committed_configuration_has_findings_figures():
    """The parametrised check below sees the figures of every committed configuration."""
    assert {c for c, _, _ in FINDINGS_FIGURES} == {p.parent.name for p in ROOT.glob("reports/*/findings")}
    assert {"multi30k", "multi30k-task2"} <= {c for c, _, _ in FINDINGS_FIGURES}


@pytest.mark.parametrize("run,analysis,stem", FINDINGS_FIGURES, ids=lambda v: str(v))
def test_findings_figure_passes_the_check(run, analysis, stem, captured):
    """Each findings figure redrawn from the committed tables of its configuration."""
    plot = figures_of(ROOT / "reports" / run / "findings")[analysis][stem]
    with box_sizes() as boxes:
        plot(Path("unused"))
    fig = captured[-1]
    assert fig.get_suptitle() or fig.axes[0].get_title()  # titled
    assert figure_problems(fig, boxes) == CLEAN


def test_overall_forest_passes_the_check(captured):
    """The forest plot of the committed summary: titled, the intervals named, the real-data and
    the SYNTHETIC rows in separate panels."""
    from backretrieval.findings.inference.figures import FOREST_TITLE, plot_forest

    summary = ROOT / "reports" / "findings_summary"
    cells = pd.read_csv(summary / "overall.csv")
    pooled = json.loads((summary / "overall.json").read_text())["numbers"]["pooled"]
    plot_forest(cells, pooled, Path("unused"))
    (fig,) = captured
    assert figure_problems(fig) == CLEAN
    title = fig.get_suptitle()
    assert FOREST_TITLE in title and "95% CI for these encoders" in title.replace("\n", " ")
    panels = [ax.get_title() for ax in fig.axes]
    if cells["synthetic"].any() and (~cells["synthetic"].astype(bool)).any():
        assert panels[0] == "real data" and panels[1].startswith("SYNTHETIC")
        real_rows = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert not any(r.startswith("default:") for r in real_rows)


@pytest.mark.parametrize("n_directions", [2, 4, 6])
def test_bkr_bars_pass_the_check(n_directions, captured):
    """The BkR bars of `rank` and bkr_report with the multi30k set of encoders."""
    cfg = load_config(ROOT / "config/multi30k.yaml")
    encoders = list(cfg["encoders"])
    rng = np.random.default_rng(3)
    dirs = ["en-de", "de-en", "en-fr", "fr-en", "en-cs", "cs-en"][:n_directions]
    rows = []
    for d in dirs:
        for e in encoders:
            m = 0.02 if e == "random" else 0.05 + 0.2 * rng.random()
            rows.append(dict(direction=d, encoder=e, metric="bkr_recall", mean=m, ci_low=m - 0.01, ci_high=m + 0.01))
    figures.bkr_bars(pd.DataFrame(rows), encoders, "random", 10, Path("unused"), "t")
    (fig,) = captured
    assert figure_problems(fig) == CLEAN


@pytest.mark.parametrize(
    "run", sorted(p.parents[1].name for p in ROOT.glob("reports/*/plots/fig2_xlr_vs_bkr.csv")), ids=str
)
def test_committed_fig2_redrawn_from_its_plot_data_passes_the_check(run, captured):
    """Figure 2 of every committed configuration, from its committed plot data."""
    frame = pd.read_csv(ROOT / "reports" / run / "plots" / "fig2_xlr_vs_bkr.csv")
    figures.fig2_from_plot_data(frame, 0, Path("unused"), f"{run}: XLR vs BkR per encoder (seed 0)", k=10)
    (fig,) = captured
    assert figure_problems(fig) == CLEAN
