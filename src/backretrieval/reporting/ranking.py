"""Encoders ranked by BkR on one set of samples: the ranking with CIs, every pair of encoders
tested (Holm-adjusted), the random baseline and, where the data has parallel texts, XLR beside
BkR. Every test and interval has the distinct item (the query's image) as its unit: the seeds'
samples overlap, so an item drawn by several seeds is one unit, not several queries
(:func:`backretrieval.stats.item_paired_test`, :func:`backretrieval.stats.item_bootstrap_ci`).

One implementation behind two doors: the pipeline's report of a dataset without parallel texts
(``bkr_report.md``, ``ranking.csv``, ``pairwise.csv``, ``bkr_ci.csv``;
:func:`backretrieval.steps.report.build_bkr_report`) and ``backretrieval rank`` (any dataset,
encoders given on the command line). Both call :func:`rank_encoders` on the tidy metric rows
and the per-query BkR hits, and write :meth:`Ranking.markdown`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ..evaluation.compare import PAIRWISE_COLUMNS, interval_text, pairwise_comparisons
from ..evaluation.core import duplicates_sentence
from ..evaluation.results import random_baseline
from ..stats.items import MIN_ITEMS
from ._common import direction_order

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
#: said where the report step was given no per-query item ids (no tests, no intervals)
NO_UNITS_SENTENCE = (
    "No tests and no intervals: the per-query item ids (the samples) were not given, and a test "
    "that counted an item drawn by several seeds as several queries would overstate the evidence."
)


def per_query_values(metric: str, ranks: np.ndarray, k: int) -> np.ndarray | None:
    """The per-query quantity whose mean over the queries is ``metric`` (``*_recall``: the hit
    rank <= k; ``*_mrr``: 1 / rank); None for a metric without one (CORR)."""
    r = np.asarray(ranks, dtype=np.float64)
    if metric.endswith("_recall"):
        return (r <= k).astype(np.float64)
    if metric.endswith("_mrr"):
        return 1.0 / r
    return None


@dataclass(frozen=True)
class Ranking:
    """What :func:`rank_encoders` computes.

    ``cis`` (``bkr_ci.csv``): per direction, encoder and metric the mean over the seeds with the
    interval of a bootstrap over the distinct items (NaN where none can be estimated honestly:
    CORR has no per-query values; too few items; no variation; ``ci_note`` says which) and the
    random baseline's rows (``n_seeds`` 0); ``ranking`` (``ranking.csv``): :func:`bkr_ranking`;
    ``pairwise`` (``pairwise.csv``): :func:`~backretrieval.evaluation.compare.pairwise_comparisons`;
    ``baseline``: the random baseline at N (k/N, H_N/N) per metric; ``parallel``: XLR was
    measured; ``n_items``: the distinct items (query images) the tests rest on, per direction
    and ``"all"``; ``duplicates``: per direction, target set and seed, the targets whose text
    repeats another target's (:func:`~backretrieval.evaluation.core.duplicate_targets`; empty:
    not counted); ``sample_size``: N."""

    cis: pd.DataFrame
    ranking: pd.DataFrame
    pairwise: pd.DataFrame
    baseline: dict[str, float]
    k: int
    parallel: bool
    n_items: dict[str, int]
    duplicates: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    sample_size: int = 0

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
            "n_items": dict(self.n_items),
            "duplicate_targets": {d: {kind: list(c) for kind, c in v.items()} for d, v in self.duplicates.items()},
        }


def rank_encoders(
    metrics: pd.DataFrame,
    ranks: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]],
    units: Mapping[str, np.ndarray] | None,
    *,
    k: int,
    sample_size: int,
    n_seeds: int,
    B: int,
    seed: int,
    duplicates: Mapping[str, Mapping[str, list[int]]] | None = None,
) -> Ranking:
    """The :class:`Ranking` of the encoders of ``metrics`` (the tidy per-seed rows of the
    metrics step: ``direction, seed, n, encoder, metric, value``) from their per-query ranks
    (``ranks[encoder][direction][kind]``, kind ``bkr`` and, on parallel data, ``xlr``; seeds
    concatenated in seed order) and the item of every query (``units[direction]``, same
    order: the query's image id). ``units`` None: no tests and no intervals (the reports say
    why). XLR is shown where ``metrics`` holds it. ``B``, ``seed``: the bootstrap of every
    interval (and the seed of the permutation tests). ``duplicates``: the repeated target texts
    per direction (:func:`~backretrieval.evaluation.core.duplicate_targets`), stated in the
    report."""
    parallel = "xlr_recall" in set(metrics["metric"])
    shown = BKR_METRICS + (XLR_METRICS if parallel else ())
    rows = []
    sub = metrics[metrics["metric"].isin(shown)]
    for (d, enc, metric), g in sub.groupby(["direction", "encoder", "metric"]):
        vals = g["value"].to_numpy(float)
        vals = vals[np.isfinite(vals)]
        if vals.size == 0:
            continue
        low = high = math.nan
        n_items, note = 0, ""
        kind = metric.split("_", 1)[0]
        pq = ranks.get(enc, {}).get(d, {}).get(kind)
        values = per_query_values(metric, pq, k) if pq is not None else None
        if units is None:
            note = "no item ids"
        elif values is None:
            note = "no per-query values (CORR): no interval"
        else:
            ci = stats.item_bootstrap_ci(values, units[d], B=B, seed=seed)
            low, high, n_items, note = ci.low, ci.high, ci.n_items, ci.note
        rows.append(
            dict(
                direction=d, encoder=enc, metric=metric, mean=float(vals.mean()), ci_low=low, ci_high=high,
                n_seeds=int(vals.size), n_items=n_items, ci_note=note,
            )
        )  # fmt: skip
    cis = pd.DataFrame(rows)
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
    ranking = bkr_ranking(metrics, ranks, units, k, B, seed)
    hits = {enc: {d: np.asarray(r["bkr"]) <= k for d, r in ranks[enc].items()} for enc in ranking["encoder"]}
    if units is not None:
        pairwise = pairwise_comparisons(hits, units, n_seeds=int(n_seeds), B=B, seed=seed)
        dirs = list(units)
        n_items = {d: len(set(units[d].tolist())) for d in dirs}
        n_items["all"] = len(set(np.concatenate([units[d] for d in dirs]).tolist()))
    else:
        pairwise, n_items = pd.DataFrame(columns=PAIRWISE_COLUMNS), {}
    rb = random_baseline(int(sample_size), k)
    baseline = {
        f"{kind}_{m}": rb[key] for kind in base_metrics for m, key in (("recall", "recall_at_k"), ("mrr", "mrr"))
    }
    return Ranking(
        cis=cis, ranking=ranking, pairwise=pairwise, baseline=baseline, k=int(k), parallel=parallel, n_items=n_items,
        duplicates={d: {kind: list(c) for kind, c in v.items()} for d, v in (duplicates or {}).items()},
        sample_size=int(sample_size),
    )  # fmt: skip


def bkr_ranking(
    per_seed: pd.DataFrame,
    ranks: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]],
    units: Mapping[str, np.ndarray] | None,
    k: int,
    B: int,
    seed: int,
) -> pd.DataFrame:
    """The encoders ranked by BkR Recall@k averaged over directions and seeds (best first; ties
    by name).

    ``per_seed``: the tidy metric rows (``encoder, direction, seed, metric, value``);
    ``ranks[encoder][direction][kind]``: per-query ranks pooled over seeds; ``units``: the item
    of every query per direction. CI: :func:`~backretrieval.stats.item_bootstrap_ci` of the
    hits pooled over directions and seeds (the unit: a distinct item; NaN where none can be
    estimated honestly). ``n_queries`` counts the queries, ``n_items`` the distinct items. With
    XLR rows (parallel data) the columns ``xlr_recall``, ``xlr_ci_low``, ``xlr_ci_high`` (the
    same interval) and ``xlr_rank`` (the encoder's place by XLR) follow.
    """
    bkr = per_seed[per_seed["metric"] == "bkr_recall"]
    mean = bkr.groupby(["encoder", "seed"])["value"].mean().groupby("encoder").mean()
    per_dir = bkr.groupby(["encoder", "direction"])["value"].mean()
    mrr = per_seed[per_seed["metric"] == "bkr_mrr"].groupby("encoder")["value"].mean()
    xlr = per_seed[per_seed["metric"] == "xlr_recall"]
    xmean = xlr.groupby(["encoder", "seed"])["value"].mean().groupby("encoder").mean() if len(xlr) else None

    def interval(enc: str, kind: str) -> tuple[float, float, int]:
        by_dir = ranks.get(enc, {})
        dirs = [d for d in by_dir if kind in by_dir[d]]
        if units is None or not dirs:
            return math.nan, math.nan, 0
        hits = np.concatenate([np.asarray(by_dir[d][kind]) <= k for d in dirs]).astype(np.float64)
        ci = stats.item_bootstrap_ci(hits, np.concatenate([units[d] for d in dirs]), B=B, seed=seed)
        return ci.low, ci.high, ci.n_items

    rows = []
    for enc in sorted(mean.index):
        d = per_dir.loc[enc]
        low, high, n_items = interval(enc, "bkr")
        row = dict(
            encoder=enc,
            bkr_recall=float(mean.loc[enc]),
            ci_low=low,
            ci_high=high,
            bkr_mrr=float(mrr.get(enc, float("nan"))),
            worst_direction=str(d.idxmin()),
            n_queries=int(sum(np.asarray(r["bkr"]).size for r in ranks[enc].values())),
            n_items=n_items,
        )
        if xmean is not None:
            have = enc in xmean.index
            xl, xh, _ = interval(enc, "xlr") if have else (math.nan, math.nan, 0)
            row.update(xlr_recall=float(xmean.loc[enc]) if have else math.nan, xlr_ci_low=xl, xlr_ci_high=xh)
        rows.append(row)
    t = pd.DataFrame(rows).sort_values(["bkr_recall", "encoder"], ascending=[False, True], kind="stable")
    t.insert(0, "rank", range(1, len(t) + 1))
    if xmean is not None:
        by_xlr = t.sort_values(["xlr_recall", "encoder"], ascending=[False, True], kind="stable")["encoder"]
        place = {e: i + 1 for i, e in enumerate(by_xlr)}
        t["xlr_rank"] = t["encoder"].map(place).astype(int)
    return t.reset_index(drop=True)


def _ci_txt(mean: float, low: float, high: float) -> str:
    """``0.512 [0.470, 0.553]``; the mean alone (no brackets) where no interval was estimated."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return f"{mean:.3f}"
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def ranking_markdown(r: Ranking, *, title: str, caption: str) -> str:
    """The ranking in Markdown: each encoder against the best one (a paired permutation test
    over distinct items, Holm-adjusted across the pairs), every pair, and BkR Recall@k / MRR /
    CORR per direction with item-bootstrap CIs, each beside the random baseline; how many
    distinct items the tests rest on; on data without parallel texts :data:`NO_XLR_SENTENCE`,
    on parallel data XLR beside BkR (:data:`XLR_SENTENCE`)."""
    k, ranking, pairwise, cis, baseline = r.k, r.ranking, r.pairwise, r.cis, r.baseline
    xlr = r.parallel
    lines = [f"### {title}", "", caption, "", XLR_SENTENCE if xlr else NO_XLR_SENTENCE, ""]
    if r.n_items:
        per_dir = ", ".join(f"{d.replace('-', '→')} {n}" for d, n in r.n_items.items() if d != "all")
        n_q = int(ranking["n_queries"].iloc[0]) if len(ranking) else 0
        lines += [
            f"Unit of every test and interval: the distinct item (the query's image). The seeds' samples overlap, "
            f"so the {n_q} queries of an encoder are {r.n_items['all']} distinct items ({per_dir}); an item drawn "
            "by several seeds counts once.",
            "",
        ]
    else:
        lines += [NO_UNITS_SENTENCE, ""]
    dup = duplicates_sentence(r.duplicates, r.sample_size)
    if dup:
        lines += [dup, ""]
    xlr_head = f" XLR Recall@{k} [95% CI] (rank) |" if xlr else ""
    lines += [
        f"#### Ranking: BkR Recall@{k} averaged over directions",
        "",
        f"| rank | encoder | BkR Recall@{k} [95% CI] | BkR MRR |{xlr_head} worst direction | "
        "best vs this: Δ [95% CI] | p (Holm) |",
        "|---|---|---|---|" + ("---|" if xlr else "") + "---|---|---|",
    ]
    pooled = pairwise[pairwise["direction"] == "all"]
    best = ranking["encoder"].iloc[0] if len(ranking) else None
    for _, row in ranking.iterrows():
        name, cmp_txt, p_txt = row["encoder"], "—", "—"
        if name == best:
            name = f"**{name}**"
        elif len(pooled):
            s = pooled[(pooled["encoder_a"] == best) & (pooled["encoder_b"] == row["encoder"])].iloc[0]
            cmp_txt = f"{s['diff']:+.3f} {interval_text(s['ci_low'], s['ci_high'])}"
            p_txt = stats.format_p(s["p_holm"]) + stats.significance_marker(s["p_holm"])
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
        "| A | B | BkR A − B [95% CI] | A-only / B-only hits | items | p | Holm p (across pairs) |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, s in pooled.iterrows():
        lines.append(
            f"| {s['encoder_a']} | {s['encoder_b']} | {s['diff']:+.3f} {interval_text(s['ci_low'], s['ci_high'])} | "
            f"{s['n10']} / {s['n01']} | {s['n_items']} | {stats.format_p(s['p'])} | "
            f"{stats.format_p(s['p_holm'])}{stats.significance_marker(s['p_holm'])} |"
        )
    per_dir_metrics = ("bkr_recall", "bkr_mrr", *(("xlr_recall",) if xlr else ()), "corr")
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
            for m in per_dir_metrics:
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
        "CIs: percentile bootstrap over the distinct items (each resampled item brings its queries of every seed "
        "and direction); no interval is shown where none can be estimated honestly (CORR has no per-query values; "
        f"fewer than {MIN_ITEMS} items; every item alike). Δ: the pooled difference of the hit rates, "
        "with the same item bootstrap. p: paired permutation test over distinct items (the signs of each item's "
        "summed A − B difference flipped at random); Holm-adjusted across the pairs (per-direction tests, "
        "Holm-adjusted across a pair's directions, are in pairwise.csv). Marks: * p<.05, ** p<.01, *** p<.001. "
        f"Random baseline: the expected score of an encoder that ranks the N targets at random (Recall@{k} = k/N, "
        "MRR = H_N/N).",
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
