"""Analysis ``calibration`` (section 5): from BkR to an estimate of XLR, and soft BkR.

**Image side alone.** For one sample, two numbers describe how informative the image pivot is,
neither using any text:

* ``p_hit`` — the *image-oracle* BkR: step 1 picks, for each query, the target whose *image*
  is nearest to the query's image (what a text encoder that knows the content perfectly would
  retrieve among non-matching targets); steps 2–4 as in BkR. The ceiling of BkR on this sample
  *if* the text side's notion of similarity were the image features' own. It is not a measure
  of image quality: on features that carry no content at all it is still high (it counts how
  often image nearest neighbours are reciprocal), so the mixture below can only be as good as
  that assumption; :func:`implied_image_side` gives the values the encoders' data imply.
* ``p_miss`` — the chance level: the expected BkR hit of a uniformly random target,
  ``#{(t, q): q within the top k for t} / (N_src·N_tgt)`` (≈ k/N; more with ties).

**Mixture.** If an encoder's step 1 finds the content-matching target with probability
XLR@1 and otherwise a random one, ``BkR ≈ p_hit·XLR@1 + p_miss·(1 − XLR@1)``, so
``XLR@1 ≈ (BkR − p_miss) / (p_hit − p_miss)`` (clipped to [0, 1]). Nothing is fitted to XLR,
so its error is an honest out-of-sample error on every encoder and dataset.

**Regressions** (ordinary least squares, :func:`numpy.linalg.lstsq`), fitted on seed means per
(direction, encoder): ``XLR ~ a + b·BkR`` and ``XLR ~ a + b·mixture``; evaluated
leave-one-encoder-out (:func:`leave_one_group_out` over encoders) and leave-one-dataset-out
(over configurations).

**Soft BkR** (:func:`backretrieval.metrics.soft_bkr_hits`): the BkR hits of the top-m retrieved
texts averaged; m=1 is BkR. :func:`soft_agreement` correlates it with XLR@1, XLR@k and MRR.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .analysis import Analysis, Question, Setting
from .answers import synthetic_note
from .result import Result

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation.run_artifacts import RunArtifacts, RunInfo

log = logging.getLogger("backretrieval")

MODELS = ("mixture", "linear_bkr", "linear_mixture")


class Calibration(Analysis):
    """calibration.{csv,md,json}, calibration_soft.csv, calibration_points.csv (input of the
    cross-dataset evaluation and of the agreement matrix), figures/calibration.* . Defaults:
    every seed of the run; soft BkR for m = 1, 3, 5, 10."""

    name = "calibration"
    question = Question(
        5,
        "Calibration: from BkR to an estimate of XLR",
        "Can XLR@1 be estimated from BkR and the image side alone; how does soft BkR agree with XLR?",
    )
    summaries = (
        Question(
            5,
            "Calibration across datasets",
            "How well does a calibration fitted on the other datasets predict XLR on a new one?",
            analysis="calibration_lodo",
        ),
    )
    summary_reads = ("calibration_points.csv",)
    inputs = ("samples", "ranks", "image", "text")
    settings = (
        Setting("soft_m", [1, 3, 5, 10], "m of soft BkR (1 = BkR)", type=int, nargs="+"),
        Setting("max_seeds", None, "only the first seeds of each direction (default: all)", type=int, metavar="N"),
    )
    files = ("calibration.md", "calibration.csv", "calibration_soft.csv", "calibration_points.csv")
    figures = ("calibration",)

    @classmethod
    def summarize(cls, records: Sequence[tuple[Path, Any]], summary_dir: Path) -> list[Any]:
        return [lodo_record(records, summary_dir)]

    def run(self, art: RunArtifacts, s: Mapping[str, Any]) -> Result:
        import pandas as pd

        from .markdown import markdown_table

        soft_m = s["soft_m"]
        info = art.info()
        points = calibration_points(art, soft_m, s["max_seeds"])
        cells = cell_means(points)
        preds = []
        for target in ("xlr_r1", "xlr_rk"):
            preds.append(leave_one_group_out(cells, "encoder", target))
        loeo = pd.concat(preds, ignore_index=True)
        summary = error_summary(loeo)
        summary.insert(0, "validation", "leave-one-encoder-out")
        soft_cols = [c for c in cells.columns if c.startswith("soft_bkr_m")]
        soft_cols = sorted(soft_cols, key=lambda c: int(c[len("soft_bkr_m") :]))
        refs = {"XLR@1": "xlr_r1", f"XLR@{art.k}": "xlr_rk", "MRR": "xlr_mrr"}
        soft = soft_agreement(cells, soft_cols, refs)
        side = points.groupby("direction")[["p_hit", "p_miss"]].mean().reset_index()
        md = (
            f"## Calibration — {info.label()}\n\n{info.scale()}; seed means per (direction, encoder); "
            f"image side: p_hit = image-oracle BkR, p_miss = chance (see backretrieval.findings.calibration).\n\n"
            "### Image side per direction (mean over seeds)\n\n"
            + markdown_table(side, 4)
            + "\n### XLR estimated from BkR, leave one encoder out\n\n"
            + markdown_table(summary, 4)
            + "\n### Soft BkR: correlation across encoders with XLR@1, XLR@k and MRR (mean over directions)\n\n"
            + markdown_table(
                soft[soft["direction"] == "mean"]
                .pivot_table(index=["metric", "stat"], columns="reference", values="value", sort=False)
                .reset_index(),
                3,
            )
        )
        numbers = calibration_numbers(cells, summary, soft, refs)
        settings = {
            "soft_m": sorted(set(int(m) for m in soft_m) | {1}),
            "n_seeds_used": int(points["seed"].nunique()),
            "models": list(MODELS),
        }
        answer, verdict = calibration_answer(numbers, info)
        return Result(
            run=info,
            settings=settings,
            numbers=numbers,
            answer=answer,
            verdict=verdict,
            files={
                "calibration.md": md,
                "calibration.csv": summary,
                "calibration_soft.csv": soft,
                "calibration_points.csv": points,
            },
            figures={"calibration": lambda p: plot_calibration(cells, loeo, p, figure_title(info))},
        )


def calibration_points(art: RunArtifacts, soft_m: Sequence[int], n_seeds: int | None = None) -> pd.DataFrame:
    """Per (direction, seed, encoder): XLR@1, XLR@k, MRR, BkR, soft BkR for each m, CORR, and
    the sample's image side (p_hit, p_miss). Soft BkR is recomputed from the embeddings; its
    m=1 column must equal the metrics CSV's BkR (checked)."""
    import pandas as pd

    from ..evaluation.outcomes import query_outcomes
    from ..metrics import BkrImageIndex, nearest_m

    art.require_full_ranks()
    ms = sorted(set(int(m) for m in soft_m) | {1})
    encoders = art.encoders
    rows = []
    for d in art.directions:
        wide = art.metrics[art.metrics["direction"] == d].pivot_table(
            index=["seed", "encoder"], columns="metric", values="value"
        )
        ranks = art.ranks(d)
        samples = sorted(art.samples[d], key=lambda s: s.seed)
        for s in samples[: n_seeds or len(samples)]:
            emb = art.sample_embeddings(d, s, encoders)
            index = BkrImageIndex.build(emb["q_img"], emb["t_img"], k=art.k)
            side = image_side(emb["q_img"], emb["t_img"], art.k, index=index)
            for e in encoders:
                src, tgt, _ = emb["text"][e]
                top = nearest_m(src, tgt, max(ms))
                csv = wide.loc[(s.seed, e)]
                row: dict[str, Any] = {
                    "dataset": art.meta.name,
                    "direction": d,
                    "seed": s.seed,
                    "encoder": e,
                    "n": len(s.queries),
                    "p_hit": side.p_hit,
                    "p_miss": side.p_miss,
                }
                xr = ranks[f"{e}/{s.seed}/xlr"].astype(np.int64)
                br = query_outcomes(ranks, e, s.seed, "bkr", art.k)
                row.update(
                    xlr_r1=float(np.mean(xr <= 1)),
                    xlr_rk=float(np.mean(xr <= art.k)),
                    xlr_mrr=float(np.mean(1.0 / xr)),
                    bkr=float(np.mean(br)),
                    corr=float(csv["corr"]) if "corr" in csv else float("nan"),
                )
                for m in ms:
                    row[f"soft_bkr_m{m}"] = float(np.mean(index.soft_hits(top[:, :m])))
                if row["soft_bkr_m1"] != row["bkr"] or abs(row["bkr"] - float(csv["bkr_recall"])) > 1e-9:
                    raise InputError(
                        f"{d} seed {s.seed} {e}: recomputed BkR {row['soft_bkr_m1']}, per-query ranks "
                        f"{row['bkr']} and the metrics CSV's {csv['bkr_recall']} differ (stale artifacts?)"
                    )
                rows.append(row)
    return pd.DataFrame(rows)


def calibration_numbers(
    cells: pd.DataFrame, summary: pd.DataFrame, soft: pd.DataFrame, refs: dict[str, str]
) -> dict[str, Any]:
    errs = {
        f"{r.model}/{r.target}": {"mae": r.mae, "rmse": r.rmse, "bias": r.bias, "spearman": r.spearman, "n": r.n}
        for r in summary.itertuples()
    }
    mean = soft[soft["direction"] == "mean"]
    soft_n = {f"{r.metric}/{r.reference}/{r.stat}": r.value for r in mean.itertuples()}
    ph_fit, pm_fit = implied_image_side(cells)
    return {
        "p_hit_mean": float(cells["p_hit"].mean()),
        "p_miss_mean": float(cells["p_miss"].mean()),
        "p_hit_implied": ph_fit,
        "p_miss_implied": pm_fit,
        "xlr_r1_range": [float(cells["xlr_r1"].min()), float(cells["xlr_r1"].max())],
        "loeo": errs,
        "soft": soft_n,
        "references": list(refs),
    }


def calibration_answer(numbers: dict[str, Any], info: RunInfo) -> tuple[str, str]:
    e = numbers["loeo"]
    mix, lin = e.get("mixture/xlr_r1"), e.get("linear_bkr/xlr_r1")
    linm = e.get("linear_mixture/xlr_r1")
    parts = [
        f"The image side alone gives p_hit = {numbers['p_hit_mean']:.3f} (image-oracle BkR) and "
        f"p_miss = {numbers['p_miss_mean']:.4f} (chance) on average; XLR@1 ranges over "
        f"{numbers['xlr_r1_range'][0]:.3f}–{numbers['xlr_r1_range'][1]:.3f} across encoders and directions."
    ]
    if mix:
        parts.append(
            f"The mixture XLR@1 ≈ (BkR − p_miss)/(p_hit − p_miss), fitted to no XLR value, misses XLR@1 by "
            f"MAE {mix['mae']:.3f} (bias {mix['bias']:+.3f}, Spearman {mix['spearman']:.2f}); the line through "
            f"the encoders' (XLR@1, BkR) points implies p_hit = {numbers['p_hit_implied']:.3f} and "
            f"p_miss = {numbers['p_miss_implied']:.4f} instead."
        )
    if lin and linm:
        parts.append(
            f"Fitted leave one encoder out, a line in BkR has MAE {lin['mae']:.3f} and a line in the mixture "
            f"estimate MAE {linm['mae']:.3f}."
        )
    ref = numbers["references"]
    s1 = numbers["soft"].get(f"soft_bkr_m1/{ref[0]}/spearman")
    ms = sorted({k.split("/")[0] for k in numbers["soft"]}, key=lambda c: int(c[len("soft_bkr_m") :]))
    if s1 is not None and len(ms) > 1:
        best = ms[-1]
        parts.append(
            "Soft BkR vs BkR (mean Spearman across encoders with "
            + ", ".join(
                f"{r}: {numbers['soft'][f'soft_bkr_m1/{r}/spearman']:.3f} → {numbers['soft'][f'{best}/{r}/spearman']:.3f}"
                for r in ref
            )
            + f" for m = 1 → {best[len('soft_bkr_m') :]})."
        )
    verdict = ""
    if mix:
        verdict = f"On {info.label()}, the image-side mixture estimates XLR@1 from BkR with MAE {mix['mae']:.3f}."
    return " ".join(parts) + synthetic_note(info), verdict


@dataclass(frozen=True)
class ImageSide:
    p_hit: float
    p_miss: float
    k: int
    n_src: int
    n_tgt: int


def image_side(q_img: np.ndarray, t_img: np.ndarray, k: int, index=None) -> ImageSide:
    """``p_hit`` (image-oracle BkR) and ``p_miss`` (chance) of one sample (module doc).
    ``index``: a prebuilt :class:`~backretrieval.metrics.BkrImageIndex` of these images."""
    from ..metrics import BkrImageIndex, backretrieve

    if index is None:
        index = BkrImageIndex.build(q_img, t_img, k=k)
    t_star = backretrieve(q_img, t_img)  # the target whose image is nearest to the query's image
    p_hit = float(np.mean(index.hits(t_star)))
    p_miss = float(index.codes.size / (index.n_src * index.n_tgt))
    return ImageSide(p_hit=p_hit, p_miss=p_miss, k=k, n_src=index.n_src, n_tgt=index.n_tgt)


def mixture_estimate(bkr: np.ndarray, p_hit: np.ndarray, p_miss: np.ndarray) -> np.ndarray:
    """XLR@1 ≈ (BkR − p_miss) / (p_hit − p_miss), clipped to [0, 1]; NaN where p_hit <= p_miss
    (the image side carries no signal)."""
    bkr, p_hit, p_miss = (np.asarray(a, dtype=np.float64) for a in (bkr, p_hit, p_miss))
    span = p_hit - p_miss
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(span > 0, (bkr - p_miss) / np.where(span > 0, span, 1.0), np.nan)
    return np.clip(est, 0.0, 1.0)


def implied_image_side(cells: pd.DataFrame) -> tuple[float, float]:
    """(p_hit, p_miss) implied by the data: the least-squares line BkR = a + b·XLR@1 over the
    cells gives p_miss = a and p_hit = a + b (the mixture's values if it held exactly)."""
    x, y = cells["xlr_r1"].to_numpy(float), cells["bkr"].to_numpy(float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0:
        return float("nan"), float("nan")
    b, a = np.polyfit(x[ok], y[ok], 1)
    return float(a + b), float(a)


def _design(frame: pd.DataFrame, model: str) -> np.ndarray:
    ones = np.ones(len(frame))
    if model == "linear_bkr":
        return np.column_stack([ones, frame["bkr"].to_numpy(float)])
    if model == "linear_mixture":
        return np.column_stack([ones, frame["mixture"].to_numpy(float)])
    raise InputError(f"model: expected one of {MODELS[1:]}, got {model!r}")


def fit_predict(train: pd.DataFrame, test: pd.DataFrame, model: str, target: str) -> np.ndarray:
    """Predictions of ``target`` on ``test`` from a model fitted on ``train`` (``mixture``: no fit,
    only defined for XLR@1)."""
    if model == "mixture":
        if target != "xlr_r1":
            raise InputError("the mixture estimates XLR@1 only")
        return test["mixture"].to_numpy(float)
    X, y = _design(train, model), train[target].to_numpy(float)
    ok = np.isfinite(X).all(axis=1) & np.isfinite(y)
    if ok.sum() < X.shape[1]:
        return np.full(len(test), np.nan)
    coef, *_ = np.linalg.lstsq(X[ok], y[ok], rcond=None)
    return _design(test, model) @ coef


def cell_means(points: pd.DataFrame) -> pd.DataFrame:
    """Seed means per (dataset, direction, encoder) of every numeric column, plus ``mixture``."""
    import pandas as pd

    keys = [c for c in ("dataset", "direction", "encoder") if c in points.columns]
    num = [c for c in points.columns if c not in keys and c != "seed" and pd.api.types.is_numeric_dtype(points[c])]
    g = points.groupby(keys, sort=True)[num].mean().reset_index()
    g["mixture"] = mixture_estimate(g["bkr"], g["p_hit"], g["p_miss"])
    return g


def leave_one_group_out(cells: pd.DataFrame, group: str, target: str, models: Sequence[str] = MODELS) -> pd.DataFrame:
    """Out-of-group predictions of ``target`` for every cell: each group (an encoder, or a
    dataset) predicted by a model fitted on the others. Rows: the cell keys, group, model,
    truth, prediction, error (prediction − truth)."""
    import pandas as pd

    if group not in cells.columns:
        raise InputError(f"calibration: no column {group!r} to leave out")
    rows = []
    for model in models:
        if model == "mixture" and target != "xlr_r1":
            continue
        for g in sorted(cells[group].unique()):
            test = cells[cells[group] == g]
            train = cells[cells[group] != g]
            pred = fit_predict(train, test, model, target)
            for (_, r), p in zip(test.iterrows(), pred):
                rows.append(
                    {
                        **{c: r[c] for c in ("dataset", "direction", "encoder") if c in cells.columns},
                        "left_out": f"{group}={g}",
                        "model": model,
                        "target": target,
                        "truth": float(r[target]),
                        "prediction": float(p),
                        "error": float(p - r[target]),
                    }
                )
    return pd.DataFrame(rows)


def error_summary(pred: pd.DataFrame, by: Sequence[str] = ("model", "target")) -> pd.DataFrame:
    """MAE, RMSE, mean error (bias) and Spearman of prediction vs truth, per model/target."""
    import pandas as pd

    from ..stats.weighted import corr_rows

    rows = []
    for key, g in pred.groupby(list(by), sort=True):
        e = g["error"].to_numpy(float)
        ok = np.isfinite(e)
        rho = (
            float(corr_rows(g["prediction"].to_numpy(float)[ok], g["truth"].to_numpy(float)[ok], "spearman"))
            if ok.sum() >= 3
            else float("nan")
        )
        key = key if isinstance(key, tuple) else (key,)
        rows.append(
            {
                **dict(zip(by, key)),
                "n": int(ok.sum()),
                "mae": float(np.mean(np.abs(e[ok]))) if ok.any() else float("nan"),
                "rmse": float(np.sqrt(np.mean(e[ok] ** 2))) if ok.any() else float("nan"),
                "bias": float(np.mean(e[ok])) if ok.any() else float("nan"),
                "spearman": rho,
            }
        )
    return pd.DataFrame(rows)


def soft_agreement(cells: pd.DataFrame, soft_columns: Sequence[str], references: Mapping[str, str]) -> pd.DataFrame:
    """Per direction, Pearson and Spearman across encoders between each soft-BkR column and each
    reference (e.g. ``{"XLR@1": "xlr_r1", "XLR@10": "xlr_rk", "MRR": "xlr_mrr"}``), and their
    mean over directions (``direction = "mean"``)."""
    import pandas as pd

    from ..stats.weighted import corr_rows

    rows = []
    for d, g in cells.groupby("direction", sort=True):
        for col in soft_columns:
            for ref_name, ref in references.items():
                for stat in ("pearson", "spearman"):
                    r = (
                        float(corr_rows(g[col].to_numpy(float), g[ref].to_numpy(float), stat))
                        if len(g) >= 3
                        else float("nan")
                    )
                    rows.append({"direction": d, "metric": col, "reference": ref_name, "stat": stat, "value": r})
    out = pd.DataFrame(rows)
    if len(out):
        mean = out.groupby(["metric", "reference", "stat"], sort=False)["value"].mean().reset_index()
        mean.insert(0, "direction", "mean")
        out = pd.concat([out, mean], ignore_index=True)
    return out


def figure_title(info) -> str:
    """The title of ``figures/calibration`` (a :class:`~.document.RunInfo`)."""
    return f"{info.figure_label}: BkR → XLR@1"


def plot_calibration(cells: pd.DataFrame, loeo: pd.DataFrame, out_base, title: str) -> list:
    """Left: BkR vs XLR@1 per (direction, encoder) with the mixture line of the mean image side;
    right: leave-one-encoder-out predictions vs truth for each model. PNG/SVG/PDF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figures import finish_figure, legend_outside, series_styles

    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.2))
    ax = axes[0]
    encoders = sorted(cells["encoder"].unique())
    for enc, (color, marker, _) in series_styles(encoders).items():
        g = cells[cells["encoder"] == enc]
        ax.scatter(
            g["xlr_r1"], g["bkr"], color=color, marker=marker, s=20, edgecolors="white", linewidths=0.3, label=enc
        )
    ax.set_title("BkR vs XLR@1 per direction and encoder", fontsize=9)
    x = np.linspace(0, 1, 50)
    ph, pm = float(cells["p_hit"].mean()), float(cells["p_miss"].mean())
    ax.plot(x, ph * x + pm * (1 - x), "k--", linewidth=1, label=f"mixture (p_hit={ph:.2f}, p_miss={pm:.3f})")
    ax.set_xlabel("XLR@1")
    ax.set_ylabel("BkR (Recall@k)")
    legend_outside(ax, where="right", fontsize=6)
    ax = axes[1]
    sub = loeo[loeo["target"] == "xlr_r1"]
    sns.scatterplot(data=sub, x="truth", y="prediction", hue="model", style="model", ax=ax, s=18)
    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8)
    ax.set_xlabel("XLR@1 (truth)")
    ax.set_ylabel("XLR@1 predicted (leave one encoder out)")
    ax.set_title("leave-one-encoder-out predictions", fontsize=9)
    legend_outside(ax, where="right", fontsize=6, title="model", title_fontsize=6)
    return finish_figure(fig, out_base, title)


def lodo_text(summary: pd.DataFrame, datasets: Sequence[str]) -> tuple[str, str]:
    """(paragraph, verdict) of the leave-one-dataset-out evaluation."""
    if summary.empty:
        return ("Fewer than two datasets have calibration points; no leave-one-dataset-out evaluation.", "")
    parts = [f"Leave one dataset out over {len(datasets)} datasets ({', '.join(datasets)}):"]
    for r in summary.itertuples():
        parts.append(
            f"{r.model} → {r.target}: MAE {r.mae:.3f}, bias {r.bias:+.3f}, Spearman {r.spearman:.2f} (n={r.n})."
        )
    best = summary[summary["target"] == "xlr_r1"].sort_values("mae")
    verdict = ""
    if len(best):
        b = best.iloc[0]
        verdict = f"Predicting XLR@1 on an unseen dataset, the best calibration ({b.model}) has MAE {b.mae:.3f}."
    return " ".join(parts), verdict


# ---- across configurations: leave one dataset out


def lodo_record(records: Sequence[tuple[Path, Any]], summary_dir: Path) -> Any:
    """The record ``calibration_lodo``: the calibration fitted on the other datasets, evaluated
    on each (every configuration's ``calibration_points.csv``, beside its ``calibration``
    record); its tables go to ``summary_dir`` (with two datasets or more)."""
    import pandas as pd

    from .._util import io
    from .markdown import markdown_table
    from .record import FindingsRecord

    frames = []
    for path, rec in records:
        if rec.analysis == "calibration" and rec.status == "ok":
            pts = path.parent / "calibration_points.csv"
            if not pts.is_file():
                raise InputError(f"{pts}: missing; the calibration record {path} names it")
            frames.append(pd.read_csv(pts))
    datasets: list[str] = []
    summary = pd.DataFrame()
    outputs: list[str] = []
    if frames:
        points = pd.concat(frames, ignore_index=True)
        datasets = sorted(points["dataset"].unique())
        if len(datasets) >= 2:
            cells = cell_means(points[[c for c in points.columns if not c.startswith("soft_")]])
            pred = pd.concat(
                [leave_one_group_out(cells, "dataset", t) for t in ("xlr_r1", "xlr_rk")], ignore_index=True
            )
            summary = error_summary(pred)
            io.write_csv(Path(summary_dir) / "calibration_lodo.csv", pred)
            io.write_text(
                Path(summary_dir) / "calibration_lodo.md",
                "## Calibration, leave one dataset out\n\n" + markdown_table(summary, 4),
            )
            outputs = ["calibration_lodo.md", "calibration_lodo.csv"]
    answer, verdict = lodo_text(summary, datasets)
    return FindingsRecord(
        analysis="calibration_lodo",
        run=None,
        settings={"models": list(MODELS)},
        numbers={
            "datasets": datasets,
            "errors": {
                f"{r.model}/{r.target}": {"mae": r.mae, "rmse": r.rmse, "bias": r.bias, "n": r.n}
                for r in summary.itertuples()
            }
            if len(summary)
            else {},
        },
        answer=answer,
        verdict=verdict,
        outputs=tuple(outputs),
    )
