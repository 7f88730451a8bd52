"""Analysis ``calibration``: BkR → XLR (image-side mixture, regression) and soft BkR, on one run."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...findings.document import RunInfo, markdown_table
from .artifacts import RunArtifacts
from .step import Plugin, Result, query_outcomes, synthetic_note

log = logging.getLogger("backretrieval")


def calibration_points(art: RunArtifacts, soft_m: Sequence[int], n_seeds: int | None = None) -> pd.DataFrame:
    """Per (direction, seed, encoder): XLR@1, XLR@k, MRR, BkR, soft BkR for each m, CORR, and
    the sample's image side (p_hit, p_miss). Soft BkR is recomputed from the embeddings; its
    m=1 column must equal the metrics CSV's BkR (checked)."""
    from ...findings.calibration import image_side
    from ...metrics import BkrImageIndex, nearest_m

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


def run(art: RunArtifacts, s: Mapping[str, Any]) -> Result:
    """calibration.{csv,md,json}, calibration_soft.csv, calibration_points.csv (input of the
    cross-dataset evaluation and of the agreement matrix), figures/calibration.*"""
    from ...findings import calibration as cal

    soft_m = s["soft_m"]
    info = art.info()
    points = calibration_points(art, soft_m, s["n_seeds"])
    cells = cal.cell_means(points)
    preds = []
    for target in ("xlr_r1", "xlr_rk"):
        preds.append(cal.leave_one_group_out(cells, "encoder", target))
    loeo = pd.concat(preds, ignore_index=True)
    summary = cal.error_summary(loeo)
    summary.insert(0, "validation", "leave-one-encoder-out")
    soft_cols = [c for c in cells.columns if c.startswith("soft_bkr_m")]
    soft_cols = sorted(soft_cols, key=lambda c: int(c[len("soft_bkr_m") :]))
    refs = {"XLR@1": "xlr_r1", f"XLR@{art.k}": "xlr_rk", "MRR": "xlr_mrr"}
    soft = cal.soft_agreement(cells, soft_cols, refs)
    label = info.figure_label
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
        "models": list(cal.MODELS),
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
        figures={"calibration": lambda p: cal.plot_calibration(cells, loeo, p, f"{label}: BkR → XLR@1")},
    )


def calibration_numbers(
    cells: pd.DataFrame, summary: pd.DataFrame, soft: pd.DataFrame, refs: dict[str, str]
) -> dict[str, Any]:
    errs = {
        f"{r.model}/{r.target}": {"mae": r.mae, "rmse": r.rmse, "bias": r.bias, "spearman": r.spearman, "n": r.n}
        for r in summary.itertuples()
    }
    mean = soft[soft["direction"] == "mean"]
    soft_n = {f"{r.metric}/{r.reference}/{r.stat}": r.value for r in mean.itertuples()}
    from ...findings.calibration import implied_image_side

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


ANALYSIS = Plugin("calibration", run)
