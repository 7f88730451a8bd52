"""Encoders ranked by BkR on one set of samples: the ranking with CIs over seeds, every pair
of encoders (exact McNemar test on the per-query hits, Holm-adjusted), the random baseline and,
where the data has parallel texts, XLR beside BkR.

One implementation behind two doors: the pipeline's report of a dataset without parallel texts
(``bkr_report.md``, ``ranking.csv``, ``pairwise.csv``, ``bkr_ci.csv``;
:func:`backretrieval.steps.report.build_bkr_report`) and ``backretrieval rank`` (any dataset,
encoders given on the command line). Both call :func:`rank_encoders` on the tidy metric rows
and the per-query BkR hits, and write :meth:`Ranking.markdown`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ..evaluation.compare import pairwise_comparisons
from ..evaluation.results import random_baseline
from ._common import direction_order
from .tables import seed_cis

#: the reason printed in place of every XLR table on non-parallel data
NO_XLR_SENTENCE = (
    "No XLR, Table 1 or Figure 2: the dataset is not parallel (its items differ per language), "
    "so there are no ground-truth correspondences between languages to score cross-lingual "
    "retrieval (XLR) against, nor to correlate BkR with. BkR needs none: it judges a retrieved "
    "text by its image."
)
#: what the XLR columns are, on data with parallel texts
XLR_SENTENCE = (
    "The dataset is parallel: XLR (cross-lingual retrieval scored against the translations, the "
    "ground truth BkR does without) is shown beside BkR, with the encoders' rank by XLR; the "
    "ranking and its tests use BkR only."
)
#: the label of the random-baseline rows
RANDOM_BASELINE = "random baseline"
#: the metrics of the per-direction table (``cis``); XLR only where the data has it
BKR_METRICS = ("bkr_recall", "bkr_mrr", "corr")
XLR_METRICS = ("xlr_recall", "xlr_mrr")


@dataclass(frozen=True)
class Ranking:
    """What :func:`rank_encoders` computes.

    ``cis`` (``bkr_ci.csv``): per direction, encoder and metric the mean over seeds with a
    bootstrap CI over seeds, and the random baseline's rows (``n_seeds`` 0); ``ranking``
    (``ranking.csv``): :func:`bkr_ranking`; ``pairwise`` (``pairwise.csv``):
    :func:`~backretrieval.evaluation.compare.pairwise_comparisons`; ``baseline``: the random
    baseline at N (k/N, H_N/N) per metric; ``parallel``: XLR was measured."""

    cis: pd.DataFrame
    ranking: pd.DataFrame
    pairwise: pd.DataFrame
    baseline: dict[str, float]
    k: int
    parallel: bool

    def markdown(self, *, title: str, caption: str) -> str:
        """:func:`ranking_markdown` of this ranking."""
        return ranking_markdown(self, title=title, caption=caption)

    def to_dict(self) -> dict[str, Any]:
        """The tables as JSON-ready records (NaN as null)."""
        return {
            "ranking": _records(self.ranking),
            "pairs": _records(self.pairwise[self.pairwise["direction"] == "all"]),
            "pairs_per_direction": _records(self.pairwise[self.pairwise["direction"] != "all"]),
            "per_direction": _records(self.cis),
            "random_baseline": dict(self.baseline),
            "recall_k": self.k,
            "parallel": self.parallel,
        }


def rank_encoders(
    metrics: pd.DataFrame,
    hits: Mapping[str, Mapping[str, np.ndarray]],
    *,
    k: int,
    sample_size: int,
    n_seeds: int,
    B: int,
    seed: int,
) -> Ranking:
    """The :class:`Ranking` of the encoders of ``metrics`` (the tidy per-seed rows of the
    metrics step: ``direction, seed, n, encoder, metric, value``) from their per-query BkR hits
    (``hits[encoder][direction]``, seeds concatenated in seed order). XLR is shown where
    ``metrics`` holds it (parallel data). ``B``, ``seed``: the bootstrap of every CI and test."""
    parallel = "xlr_recall" in set(metrics["metric"])
    shown = BKR_METRICS + (XLR_METRICS if parallel else ())
    cis = seed_cis(metrics[metrics["metric"].isin(shown)], ["direction", "encoder", "metric"], "value", B, seed)
    base_metrics = ("bkr", "xlr") if parallel else ("bkr",)
    base_rows = []
    for d, n in metrics.groupby("direction")["n"].max().items():
        rb = random_baseline(int(n), k)
        for kind in base_metrics:
            for metric, v in ((f"{kind}_recall", rb["recall_at_k"]), (f"{kind}_mrr", rb["mrr"])):
                base_rows.append(
                    dict(direction=d, encoder=RANDOM_BASELINE, metric=metric, mean=v, ci_low=v, ci_high=v, n_seeds=0)
                )
    cis = pd.concat([cis, pd.DataFrame(base_rows)], ignore_index=True).sort_values(
        ["direction", "encoder", "metric"], kind="stable", ignore_index=True
    )
    ranking = bkr_ranking(metrics, hits, B, seed)
    ordered = {enc: hits[enc] for enc in ranking["encoder"]}
    pairwise = pairwise_comparisons(ordered, n_seeds=int(n_seeds), B=B, seed=seed)
    rb = random_baseline(int(sample_size), k)
    baseline = {
        f"{kind}_{m}": rb[key] for kind in base_metrics for m, key in (("recall", "recall_at_k"), ("mrr", "mrr"))
    }
    return Ranking(cis=cis, ranking=ranking, pairwise=pairwise, baseline=baseline, k=int(k), parallel=parallel)


def bkr_ranking(
    per_seed: pd.DataFrame, hits: Mapping[str, Mapping[str, np.ndarray]], B: int, seed: int
) -> pd.DataFrame:
    """The encoders ranked by BkR Recall@k averaged over directions (best first; ties by name).

    ``per_seed``: the tidy metric rows (``encoder, direction, seed, metric, value``);
    ``hits[encoder][direction]``: per-query hits pooled over seeds (``n_queries`` counts them).
    CI: :func:`~backretrieval.reporting.tables.seed_cis` over seeds of each seed's mean over
    directions. With XLR rows (parallel data) the columns ``xlr_recall``, ``xlr_ci_low``,
    ``xlr_ci_high`` (the same CI) and ``xlr_rank`` (the encoder's place by XLR) follow.
    """
    bkr = per_seed[per_seed["metric"] == "bkr_recall"]
    by_seed = bkr.groupby(["encoder", "seed"], as_index=False)["value"].mean()
    ci = seed_cis(by_seed, ["encoder"], "value", B, seed).set_index("encoder")
    per_dir = bkr.groupby(["encoder", "direction"])["value"].mean()
    mrr = per_seed[per_seed["metric"] == "bkr_mrr"].groupby("encoder")["value"].mean()
    xlr = per_seed[per_seed["metric"] == "xlr_recall"]
    xci = None
    if len(xlr):
        xci = seed_cis(
            xlr.groupby(["encoder", "seed"], as_index=False)["value"].mean(), ["encoder"], "value", B, seed
        ).set_index("encoder")
    rows = []
    for enc in ci.index:
        d = per_dir.loc[enc]
        row = dict(
            encoder=enc,
            bkr_recall=float(ci.loc[enc, "mean"]),
            ci_low=float(ci.loc[enc, "ci_low"]),
            ci_high=float(ci.loc[enc, "ci_high"]),
            bkr_mrr=float(mrr.get(enc, float("nan"))),
            worst_direction=str(d.idxmin()),
            n_queries=int(sum(h.size for h in hits[enc].values())),
        )
        if xci is not None:
            have = enc in xci.index
            row.update(
                xlr_recall=float(xci.loc[enc, "mean"]) if have else math.nan,
                xlr_ci_low=float(xci.loc[enc, "ci_low"]) if have else math.nan,
                xlr_ci_high=float(xci.loc[enc, "ci_high"]) if have else math.nan,
            )
        rows.append(row)
    t = pd.DataFrame(rows).sort_values(["bkr_recall", "encoder"], ascending=[False, True], kind="stable")
    t.insert(0, "rank", range(1, len(t) + 1))
    if xci is not None:
        by_xlr = t.sort_values(["xlr_recall", "encoder"], ascending=[False, True], kind="stable")["encoder"]
        place = {e: i + 1 for i, e in enumerate(by_xlr)}
        t["xlr_rank"] = t["encoder"].map(place).astype(int)
    return t.reset_index(drop=True)


def _ci_txt(mean: float, low: float, high: float) -> str:
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def ranking_markdown(r: Ranking, *, title: str, caption: str) -> str:
    """The ranking in Markdown: each encoder against the best one (the case study's Table 2
    shape: McNemar exact on the pooled per-query hits, Holm-adjusted across the pairs), every
    pair, and BkR Recall@k / MRR / CORR per direction with CIs, each beside the random baseline;
    on data without parallel texts :data:`NO_XLR_SENTENCE`, on parallel data XLR beside BkR
    (:data:`XLR_SENTENCE`)."""
    k, ranking, pairwise, cis, baseline = r.k, r.ranking, r.pairwise, r.cis, r.baseline
    xlr = r.parallel
    lines = [f"### {title}", "", caption, "", XLR_SENTENCE if xlr else NO_XLR_SENTENCE, ""]
    xlr_head = f" XLR Recall@{k} [95% CI, seeds] (rank) |" if xlr else ""
    lines += [
        f"#### Ranking: BkR Recall@{k} averaged over directions",
        "",
        f"| rank | encoder | BkR Recall@{k} [95% CI, seeds] | BkR MRR |{xlr_head} worst direction | "
        "best vs this: Δ [95% CI] | McNemar p (Holm) |",
        "|---|---|---|---|" + ("---|" if xlr else "") + "---|---|---|",
    ]
    pooled = pairwise[pairwise["direction"] == "all"]
    best = ranking["encoder"].iloc[0] if len(ranking) else None
    for _, row in ranking.iterrows():
        name, cmp_txt, p_txt = row["encoder"], "—", "—"
        if name == best:
            name = f"**{name}**"
        else:
            s = pooled[(pooled["encoder_a"] == best) & (pooled["encoder_b"] == row["encoder"])].iloc[0]
            cmp_txt = f"{s['diff']:+.3f} [{s['ci_low']:+.3f}, {s['ci_high']:+.3f}]"
            p_txt = stats.format_p(s["mcnemar_p_holm"]) + stats.significance_marker(s["mcnemar_p_holm"])
        xlr_cell = ""
        if xlr:
            xlr_cell = (
                " n/a |"
                if pd.isna(row["xlr_recall"])
                else f" {_ci_txt(row['xlr_recall'], row['xlr_ci_low'], row['xlr_ci_high'])} ({row['xlr_rank']}) |"
            )
        lines.append(
            f"| {row['rank']} | {name} | {_ci_txt(row['bkr_recall'], row['ci_low'], row['ci_high'])} | "
            f"{row['bkr_mrr']:.3f} |{xlr_cell} {row['worst_direction'].replace('-', '→')} | {cmp_txt} | {p_txt} |"
        )
    xlr_base = f" {baseline['xlr_recall']:.3f} (k/N) |" if xlr else ""
    lines.append(
        f"| — | {RANDOM_BASELINE} | {baseline['bkr_recall']:.3f} (k/N) | {baseline['bkr_mrr']:.3f} (H_N/N) |"
        f"{xlr_base} — | — | — |"
    )
    lines += [
        "",
        "#### Every pair of encoders (hits pooled over directions and seeds)",
        "",
        "| A | B | BkR A − B [95% CI] | A-only / B-only hits | McNemar p | Holm p (across pairs) |",
        "|---|---|---|---|---|---|",
    ]
    for _, s in pooled.iterrows():
        lines.append(
            f"| {s['encoder_a']} | {s['encoder_b']} | {s['diff']:+.3f} [{s['ci_low']:+.3f}, {s['ci_high']:+.3f}] | "
            f"{s['n10']} / {s['n01']} | {stats.format_p(s['mcnemar_p'])} | "
            f"{stats.format_p(s['mcnemar_p_holm'])}{stats.significance_marker(s['mcnemar_p_holm'])} |"
        )
    per_dir = ("bkr_recall", "bkr_mrr", *(("xlr_recall",) if xlr else ()), "corr")
    lines += [
        "",
        "#### Per direction (mean over seeds [95% CI])",
        "",
        f"| direction | encoder | BkR Recall@{k} | BkR MRR |" + (f" XLR Recall@{k} |" if xlr else "") + " CORR |",
        "|---|---|---|---|" + ("---|" if xlr else "") + "---|",
    ]
    order = {e: i for i, e in enumerate(ranking["encoder"])}
    for d in direction_order(cis["direction"].unique().tolist()):
        sub = cis[cis["direction"] == d]
        for enc in sorted(set(sub["encoder"]) - {RANDOM_BASELINE}, key=lambda e: order.get(e, len(order))):
            cells = []
            for m in per_dir:
                c = sub[(sub["encoder"] == enc) & (sub["metric"] == m)]
                cells.append(_ci_txt(*c[["mean", "ci_low", "ci_high"]].iloc[0]) if len(c) else "n/a")
            lines.append(f"| {d.replace('-', '→')} | {enc} | " + " | ".join(cells) + " |")
        b = sub[sub["encoder"] == RANDOM_BASELINE].set_index("metric")["mean"]
        base_cells = [
            f"{b['bkr_recall']:.3f}",
            f"{b['bkr_mrr']:.3f}",
            *([f"{b['xlr_recall']:.3f}"] if xlr else []),
            "—",
        ]
        lines.append(f"| {d.replace('-', '→')} | {RANDOM_BASELINE} | " + " | ".join(base_cells) + " |")
    lines += [
        "",
        "CIs: percentile bootstrap over the seeds (of the seed's value; in the ranking, of the seed's mean "
        "over directions); Δ: paired bootstrap over queries. McNemar: exact test on the per-query BkR hits, "
        "paired by query; Holm-adjusted across the pairs (per-direction tests, Holm-adjusted across a pair's "
        "directions, are in pairwise.csv). Marks: * p<.05, ** p<.01, *** p<.001. Random baseline: the expected "
        f"score of an encoder that ranks the N targets at random (Recall@{k} = k/N, MRR = H_N/N).",
    ]
    return "\n".join(lines) + "\n"


def ranking_caption(
    *,
    dataset: str,
    synthetic: bool,
    parallel: bool,
    image_backbone: str,
    text_field: str,
    sample_size: int,
    n_seeds: int,
    n_encoders: int,
) -> str:
    """The caption of :func:`ranking_markdown`: the data (SYNTHETIC or not, parallel or not) and
    the protocol."""
    label = "SYNTHETIC dataset — " if synthetic else ""
    kind = "" if parallel else " (not parallel)"
    return (
        f"{label}{dataset}{kind}, image backbone {image_backbone}, text field '{text_field}', "
        f"N={sample_size}, {n_seeds} seeds, {n_encoders} encoders."
    )


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain Python values, NaN as None (JSON has no NaN)."""
    out = []
    for row in frame.to_dict(orient="records"):
        rec = {}
        for key, v in row.items():
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            rec[str(key)] = v
        out.append(rec)
    return out
