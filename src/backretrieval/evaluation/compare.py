"""Which of two encoders has the higher BkR: paired tests on the per-query hits of two results,
with the distinct item as the unit.

Per direction, the BkR hits of every seed's sample are paired query by query; the seeds'
samples overlap (an item is often drawn by several seeds), so the unit of the test is the
distinct item (the query's image): :func:`backretrieval.stats.item_paired_test`, a paired
permutation test of each item's summed difference, and the item-bootstrap interval of
``BkR(A) - BkR(B)`` (the pooled difference over the queries). With several directions the
p-values are Holm-adjusted across them; the verdict uses the adjusted p. Every comparison
says how many distinct items it rests on.

Two results are comparable only if they share the data (dataset content sha256), the samples
of each compared direction (sha256 of the seeded samples: same N, seeds, items), k, the text
field and the image backbone; otherwise :class:`~backretrieval.errors.InputError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ..errors import InputError
from .defaults import DEFAULT_BOOTSTRAP
from .protocol import read_record
from .results import scores_by_direction, unpack_hits


def p_text(p: float) -> str:
    """``p = 0.002``, ``p < 0.001``, ``p = n/a``."""
    f = stats.format_p(p)
    return f"p {f[0]} {f[1:]}" if f.startswith("<") else f"p = {f}"


@dataclass(frozen=True)
class Comparison:
    direction: str
    model_a: str
    model_b: str
    bkr_a: float
    bkr_b: float
    diff: float  # BkR(A) - BkR(B), pooled over seeds
    ci_low: float  # item bootstrap; NaN where no honest interval exists (``note``)
    ci_high: float
    p: float  # paired permutation test over distinct items
    p_adjusted: float  # Holm across the compared directions
    n_items: int  # distinct items (query images) the test and the interval rest on
    n_queries: int
    n_seeds: int
    n10: int  # queries A hits and B misses
    n01: int  # queries B hits and A misses
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def verdict(self, alpha: float = 0.05) -> str:
        src, tgt = self.direction.split("-")
        d = f"{src}→{tgt}"
        p = p_text(self.p_adjusted)
        # the difference is always A - B, as the header says: negative when B wins
        diff = f"{self.model_a} - {self.model_b} = {self.diff:+.3f} {interval_text(self.ci_low, self.ci_high)}, {p}"
        if self.p_adjusted < alpha and self.diff > 0:
            return f"{self.model_a} beats {self.model_b} on {d}: {diff}"
        if self.p_adjusted < alpha and self.diff < 0:
            return f"{self.model_b} beats {self.model_a} on {d}: {diff}"
        return f"no significant difference on {d}: {diff}"


def interval_text(low: float, high: float) -> str:
    """``[+0.012, +0.080]``, or ``[no CI]`` where none could be estimated honestly."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "[no CI]"
    return f"[{low:+.3f}, {high:+.3f}]"


def _label(res: dict[str, Any], fallback: str) -> str:
    return str(res.get("model", {}).get("name") or fallback)


def check_comparable(a: dict[str, Any], b: dict[str, Any], label_a: str = "A", label_b: str = "B") -> list[str]:
    """The directions both results hold, after refusing (InputError) what cannot be paired."""
    da, db = a["dataset"], b["dataset"]
    if da.get("content_sha256") != db.get("content_sha256"):
        raise InputError(
            f"{label_a} and {label_b} were computed on different data ({da.get('name')} sha256 "
            f"{str(da.get('content_sha256'))[:12]}… vs {db.get('name')} sha256 {str(db.get('content_sha256'))[:12]}…): "
            "their queries are not paired; evaluate both models on the same dataset"
        )
    pa, pb = read_record(a["protocol"]), read_record(b["protocol"])
    for key in ("recall_k", "text_field"):
        if pa.get(key) != pb.get(key):
            raise InputError(
                f"{label_a} and {label_b} differ in {key} ({pa.get(key)!r} vs {pb.get(key)!r}); "
                "evaluate both with the same settings"
            )
    if a["image_backbone"].get("id") != b["image_backbone"].get("id"):
        raise InputError(
            f"{label_a} and {label_b} used different image backbones ({a['image_backbone'].get('id')} "
            f"vs {b['image_backbone'].get('id')}); BkR depends on the image side: use the same"
        )
    sa, sb = scores_by_direction(a), scores_by_direction(b)
    common = [d for d in a["protocol"].get("directions", sorted(sa)) if d in sa and d in sb]
    if not common:
        raise InputError(f"{label_a} and {label_b} share no direction ({sorted(sa)} vs {sorted(sb)})")
    for d in common:
        if sa[d].get("samples_sha256") != sb[d].get("samples_sha256"):
            raise InputError(
                f"{label_a} and {label_b} used different samples for {d} (N "
                f"{pa.get('sample_size')} vs {pb.get('sample_size')}, seeds {pa.get('seeds')} vs {pb.get('seeds')}); "
                "evaluate both with the same --sample-size and seeds"
            )
        for sc, lab in ((sa, label_a), (sb, label_b)):
            if "bkr_hits" not in sc[d].get("per_query", {}):
                raise InputError(f"{lab}: no per-query BkR hits for {d}")
    return common


def _pooled_hits(res: dict[str, Any], d: str, label: str) -> np.ndarray:
    n = int(read_record(res["protocol"])["sample_size"])
    try:
        return np.concatenate([unpack_hits(s, n) for s in scores_by_direction(res)[d]["per_query"]["bkr_hits"]])
    except (ValueError, TypeError) as exc:
        raise InputError(f"{label}: per-query BkR hits of {d} cannot be decoded ({exc})") from exc


def _pooled_units(res: dict[str, Any], d: str, label: str) -> np.ndarray:
    """The query images of a direction's seeds, in the order of :func:`_pooled_hits`."""
    units = scores_by_direction(res)[d].get("per_query", {}).get("query_images")
    if units is None:
        raise InputError(
            f"{label}: no per-query image ids for {d} (a result written by an older version): the paired "
            "test's unit is the distinct item; evaluate the model again to write them"
        )
    return np.asarray([str(u) for seed_units in units for u in seed_units], dtype=object)


def compare_results(
    a: dict[str, Any],
    b: dict[str, Any],
    *,
    label_a: str | None = None,
    label_b: str | None = None,
    B: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> list[Comparison]:
    """One :class:`Comparison` per shared direction (in A's order)."""
    la, lb = label_a or _label(a, "A"), label_b or _label(b, "B")
    if la == lb:
        la, lb = f"{la} (A)", f"{lb} (B)"
    common = check_comparable(a, b, la, lb)
    hits_a = {d: _pooled_hits(a, d, la) for d in common}
    hits_b = {d: _pooled_hits(b, d, lb) for d in common}
    units = {d: _pooled_units(a, d, la) for d in common}  # the same samples (checked): A's ids
    return compare_hits(
        hits_a, hits_b, units, label_a=la, label_b=lb, n_seeds=len(a["protocol"]["seeds"]), B=B, seed=seed
    )


def compare_hits(
    hits_a: Mapping[str, np.ndarray],
    hits_b: Mapping[str, np.ndarray],
    units: Mapping[str, np.ndarray],
    *,
    label_a: str,
    label_b: str,
    n_seeds: int,
    B: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> list[Comparison]:
    """One :class:`Comparison` per direction of ``hits_a`` (in its order) from the per-query
    BkR hits of two encoders, pooled over seeds and paired by query; ``units[direction]``: the
    item (query image) of every query, equal for an item drawn by several seeds. The test and
    the interval resample distinct items (:func:`backretrieval.stats.item_paired_test`); the
    p-values are Holm-adjusted across the directions."""
    raw = []
    for d, ha in hits_a.items():
        hb = hits_b[d]
        if ha.shape != hb.shape or units[d].shape != ha.shape:
            raise InputError(
                f"{label_a} and {label_b}: {ha.size} vs {hb.size} per-query hits and {units[d].size} item ids for {d}"
            )
        raw.append((d, ha, hb, stats.item_paired_test(ha, hb, units[d], B=B, seed=seed)))
    adj = stats.adjust_pvalues(np.array([r[3].pvalue for r in raw]), method="holm")
    out = []
    for (d, ha, hb, t), p_adj in zip(raw, adj):
        out.append(
            Comparison(
                direction=d,
                model_a=label_a,
                model_b=label_b,
                bkr_a=float(np.mean(ha)),
                bkr_b=float(np.mean(hb)),
                diff=t.diff,
                ci_low=t.low,
                ci_high=t.high,
                p=t.pvalue,
                p_adjusted=float(p_adj),
                n_items=t.n_items,
                n_queries=t.n_queries,
                n_seeds=n_seeds,
                n10=int(t.n10 or 0),
                n01=int(t.n01 or 0),
                note=t.note,
            )
        )
    return out


#: columns of :func:`pairwise_comparisons`
PAIRWISE_COLUMNS = [
    "direction",
    "encoder_a",
    "encoder_b",
    "bkr_a",
    "bkr_b",
    "diff",
    "ci_low",
    "ci_high",
    "p",
    "p_holm",
    "holm_family",
    "n_items",
    "n_queries",
    "n10",
    "n01",
]


def pairwise_comparisons(
    hits: Mapping[str, Mapping[str, np.ndarray]],
    units: Mapping[str, np.ndarray],
    *,
    n_seeds: int,
    B: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> pd.DataFrame:
    """Every pair of encoders (``hits[encoder][direction]``: per-query BkR hits pooled over
    seeds; pairs in the order of ``hits``, A before B) compared on paired hits with the distinct
    item as the unit (``units[direction]``: every query's item, e.g. its image id).

    Rows with ``direction == "all"``: the hits pooled over every direction (an item queried in
    two directions is one unit where its key is the same), p Holm-adjusted across the pairs (the
    ranking's tests). One row per direction: the :func:`compare_hits` of the pair (what
    ``backretrieval compare`` prints for two results), Holm-adjusted across that pair's
    directions. Columns: :data:`PAIRWISE_COLUMNS`.
    """
    encoders = list(hits)
    pairs = [(a, b) for i, a in enumerate(encoders) for b in encoders[i + 1 :]]
    pooled = []
    dirs = list(hits[encoders[0]]) if encoders else []
    cat_units = np.concatenate([np.asarray(units[d], dtype=object) for d in dirs]) if dirs else np.empty(0, object)
    for a, b in pairs:
        cat_a = np.concatenate([hits[a][d] for d in dirs])
        cat_b = np.concatenate([hits[b][d] for d in dirs])
        pooled.append(
            compare_hits(
                {"all": cat_a},
                {"all": cat_b},
                {"all": cat_units},
                label_a=a,
                label_b=b,
                n_seeds=n_seeds,
                B=B,
                seed=seed,
            )[0]
        )
    across_pairs = stats.adjust_pvalues(np.array([c.p for c in pooled]), method="holm") if pooled else []
    rows = []
    for (a, b), c, p_holm in zip(pairs, pooled, across_pairs):
        rows.append(_pair_row(c, float(p_holm), "pairs"))
        for cd in compare_hits(hits[a], hits[b], units, label_a=a, label_b=b, n_seeds=n_seeds, B=B, seed=seed):
            rows.append(_pair_row(cd, cd.p_adjusted, "directions of the pair"))
    return pd.DataFrame(rows, columns=PAIRWISE_COLUMNS)


def _pair_row(c: Comparison, p_holm: float, family: str) -> dict[str, Any]:
    return dict(
        direction=c.direction,
        encoder_a=c.model_a,
        encoder_b=c.model_b,
        bkr_a=c.bkr_a,
        bkr_b=c.bkr_b,
        diff=c.diff,
        ci_low=c.ci_low,
        ci_high=c.ci_high,
        p=c.p,
        p_holm=p_holm,
        holm_family=family,
        n_items=c.n_items,
        n_queries=c.n_queries,
        n10=c.n10,
        n01=c.n01,
    )


def format_comparison(comps: list[Comparison], a: dict[str, Any], b: dict[str, Any], alpha: float = 0.05) -> str:
    """The verdict per direction in words, with the test details beneath it."""
    prot = read_record(a["protocol"])
    k, n, seeds = prot["recall_k"], prot["sample_size"], len(prot["seeds"])
    lines = [
        f"BkR Recall@{k}: {comps[0].model_a} (A) vs {comps[0].model_b} (B) on {a['dataset']['name']}"
        f"{' (SYNTHETIC data)' if a['dataset'].get('synthetic') else ''}; N={n}, {seeds} seed(s)",
        "difference A - B with the 95% CI of a bootstrap over distinct items; p: paired permutation test over "
        "distinct items (an item drawn by several seeds counts once, its queries' differences summed)"
        f"{', Holm-adjusted over ' + str(len(comps)) + ' directions' if len(comps) > 1 else ''}",
        "",
    ]
    for c in comps:
        lines.append(c.verdict(alpha))
        lines.append(
            f"    BkR A {c.bkr_a:.3f}, B {c.bkr_b:.3f}; {c.n_items} distinct items in {c.n_queries} paired queries "
            f"({c.n_seeds} seeds × N={n}), A-only hits {c.n10}, B-only hits {c.n01}; {p_text(c.p)}"
            f"{' (unadjusted)' if len(comps) > 1 else ''}" + (f"; {c.note}" if c.note else "")
        )
    if a["image_backbone"].get("features_sha256") != b["image_backbone"].get("features_sha256"):
        lines += [
            "",
            "note: the image features of the two runs differ (other machine or library versions?); "
            "the hits are paired by query but were computed with slightly different image sides",
        ]
    return "\n".join(lines)
