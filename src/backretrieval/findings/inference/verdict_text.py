"""The verdict across configurations, in words: the README's verdict (:func:`overall_brief`, at
most :data:`VERDICT_MAX_CHARS` characters, with its table :func:`verdict_table`) and the answer
of docs/FINDINGS.md (:func:`overall_text`), from the numbers of :mod:`.verdict`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...stats.questions import INTERVAL_QUESTIONS, JACKKNIFE_GROUPS
from .verdict import MIN_POOL_ENCODERS, VERDICT_SETS

#: the README's verdict: at most this many characters of prose (the table beside it not counted)
VERDICT_MAX_CHARS = 600
#: how the two encoder sets are named in the verdict's tables
SET_LABELS = {"all": "all", "core": "without random, English-only"}


@dataclass(frozen=True)
class VerdictRow:
    """One row of the verdict's table: a configuration's (or a pooled group's) encoder set."""

    configuration: str
    set_name: str
    n_encoders: int
    pearson: Mapping[str, Any]
    inferential: bool
    pooled: bool
    layout: str  # the name of its simulation layout (numbers["layouts"])

    @property
    def encoders(self) -> str:
        return f"{self.n_encoders} ({SET_LABELS.get(self.set_name, self.set_name)})"


def lean(q: Mapping) -> str:
    """Which metric one interval puts ahead: ``BkR ahead``, ``CORR ahead``, ``neither`` (the
    interval holds 0) or ``undetermined`` (no interval)."""
    low, high = q.get("low"), q.get("high")
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return "undetermined"
    return "BkR ahead" if low > 0 else "CORR ahead" if high < 0 else "neither"


def verdict_rows(numbers: Mapping[str, Any]) -> list[VerdictRow]:
    """Every configuration's encoder sets (descriptive ones included), then the pooled groups
    of at least :data:`MIN_POOL_ENCODERS` shared encoders over two or more configurations."""
    rows = []
    for c in numbers.get("configurations") or []:
        for set_name in VERDICT_SETS:
            conf = c.get(set_name)
            if not conf or "pearson" not in conf:
                continue
            rows.append(
                VerdictRow(
                    configuration=str(c["run_name"]),
                    set_name=set_name,
                    n_encoders=int(conf["n_encoders"]),
                    pearson=conf["pearson"],
                    inferential=int(conf["n_encoders"]) >= MIN_POOL_ENCODERS,
                    pooled=False,
                    layout=f"{set_name}:{c['run_name']}",
                )
            )
    for set_name in VERDICT_SETS:
        for g in (numbers.get("pooled") or {}).get(set_name, []):
            if not g["inferential"] or len(g["configurations"]) < 2 or "pearson" not in g:
                continue
            rows.append(
                VerdictRow(
                    configuration="pooled: " + " + ".join(g["configurations"]),
                    set_name=set_name,
                    n_encoders=int(g["n_encoders"]),
                    pearson=g["pearson"],
                    inferential=True,
                    pooled=True,
                    layout=f"{set_name}:{'+'.join(g['configurations'])}",
                )
            )
    return rows


def _layout_signature(numbers: Mapping[str, Any], row: VerdictRow) -> str | None:
    for lay in (numbers.get("layouts") or {}).get(row.set_name, []):
        if lay["name"] == row.layout:
            return str(lay["signature"])
    return None


def _ci_cell(q: Mapping) -> str:
    from ..markdown import fmt_ci

    low, high = q.get("low"), q.get("high")
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    return fmt_ci(q["estimate"], low, high).split(" ", 1)[1] + f" {lean(q)}"


def verdict_table(numbers: Mapping[str, Any]) -> str:
    """The verdict's small table (Markdown): per tested row (at least :data:`MIN_POOL_ENCODERS`
    encoders) the configuration, its encoders, BkR − CORR (Pearson with XLR) and its 95% interval
    for both questions. The descriptive rows are in :func:`detail_table`."""
    rows = [r for r in verdict_rows(numbers) if r.inferential]
    if not rows:
        return ""
    lines = [
        "| configuration | encoders | BkR − CORR | 95% CI, these encoders | 95% CI, encoders like these |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        p = r.pearson
        lines.append(
            f"| {r.configuration} | {r.encoders} | {p['fixed']['estimate']:.3f} | {_ci_cell(p['fixed'])} "
            f"| {_ci_cell(p['random'])} |"
        )
    return "\n".join(lines) + "\n"


def detail_table(numbers: Mapping[str, Any], coverage: Mapping | None) -> str:
    """docs/FINDINGS.md's table of every row of the verdict: both intervals with the simulated
    coverage of the nominal 95% in the row's layout (benchmarks/bench_inference_coverage.py)
    and BCa's z0 of the item bootstrap; the rows with fewer than :data:`MIN_POOL_ENCODERS`
    encoders with their estimate only (descriptive)."""
    rows = verdict_rows(numbers)
    if not rows:
        return ""
    lines = [
        "| configuration | encoders | families | BkR − CORR | these encoders: 95% CI | coverage | z0 "
        "| encoders like these: 95% CI | coverage |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cov = (coverage or {}).get("layouts") or {}
    for r in rows:
        p = r.pearson
        fams = p["random"].get("n_families")
        head = f"| {r.configuration} | {r.encoders} | {fams if fams is not None else 'n/a'} | {p['fixed']['estimate']:.3f} "
        if not r.inferential:
            lines.append(head + "| descriptive only | | | descriptive only | |")
            continue
        sig = _layout_signature(numbers, r)
        c = cov.get(sig) if sig else None
        c = c.get("coverage", c) if c else None
        fixed_cov = f"{c['fixed/pearson']:.3f}" if c else "not simulated"
        random_cov = f"{c['random/pearson']:.3f}" if c else "not simulated"
        z0 = p["fixed"].get("z0")
        z0s = f"{z0:.2f}" if z0 is not None and np.isfinite(z0) else "n/a"
        lines.append(
            head + f"| {_ci_cell(p['fixed'])} | {fixed_cov} | {z0s} | {_ci_cell(p['random'])} | {random_cov} |"
        )
    return "\n".join(lines) + "\n"


def _share(k: int, n: int) -> str:
    """``k`` of ``n`` in words: none of the n, both, all n, k of the n."""
    if k == 0:
        return f"none of the {n}"
    if k == n:
        return "both" if n == 2 else "the one" if n == 1 else f"all {n}"
    return f"{k} of the {n}"


def overall_brief(numbers: Mapping[str, Any]) -> str:
    """The verdict in at most three sentences (:data:`VERDICT_MAX_CHARS`): the conclusion and
    its scope first (how many tested rows put BkR ahead of CORR, for both questions), which
    rows are descriptive only, and what the numbers of :func:`verdict_table` are."""
    configs = numbers.get("configurations") or []
    if not configs:
        return "No overall verdict yet: no real-data configuration has been analysed."
    rows = verdict_rows(numbers)
    own = [r for r in rows if r.inferential and not r.pooled]
    pooled = [r for r in rows if r.pooled]

    def tally(q: str, side: str) -> tuple[int, int]:
        return (
            sum(lean(r.pearson[q]) == side for r in own),
            sum(lean(r.pearson[q]) == side for r in pooled),
        )

    def where(q: str, side: str) -> str:
        k, kp = tally(q, side)
        if pooled and k == kp == 0:
            return "none of them"
        return f"{_share(k, len(own))} tested rows" + (f" and {_share(kp, len(pooled))} pooled rows" if pooled else "")

    if all(c.get("synthetic") for c in configs):
        scope = "On SYNTHETIC data only (a demonstration of the method, not evidence about real encoders)"
    elif all(str(c["dataset"]).startswith("multi30k") for c in configs):
        scope = "On Multi30K images and captions (not the paper's datasets)"
    else:
        scope = f"On {len(configs)} real-data configurations"
    if not own:
        first = f"{scope}, no configuration has the {MIN_POOL_ENCODERS} encoders a tested row needs."
    else:
        corr = sum(tally(q, "CORR ahead")[0] + tally(q, "CORR ahead")[1] for q in INTERVAL_QUESTIONS)
        first = (
            f"{scope}, BkR tracks XLR across encoders better than CORR for these encoders in "
            f"{where('fixed', 'BkR ahead')}, and for encoders like these in {where('random', 'BkR ahead')}; "
            + ("CORR is ahead in none." if corr == 0 else f"CORR is ahead in {corr} interval{'s' * (corr != 1)}.")
        )
    small = sorted({r.configuration for r in rows if not r.pooled and not r.inferential and r.set_name == "all"})
    if not small:
        second = f"Every row has at least the {MIN_POOL_ENCODERS} encoders a test needs."
    elif len(small) <= 2:
        second = f"{' and '.join(small)} (fewer than {MIN_POOL_ENCODERS} encoders) {'is' if len(small) == 1 else 'are'} descriptive only."
    else:
        second = f"{len(small)} configurations with fewer than {MIN_POOL_ENCODERS} encoders are descriptive only."
    third = (
        "Table: BkR − CORR in Pearson correlation with XLR, mean over directions; 95% intervals for these "
        "encoders (items resampled) and encoders like these (encoder families resampled too)."
    )
    return f"{first} {second} {third}"


def overall_text(numbers: Mapping[str, Any], coverage: Mapping | None = None) -> tuple[str, str]:
    """(answer, verdict). The verdict: :func:`overall_brief` (its table, :func:`verdict_table`,
    is rendered beside it). The answer, for docs/FINDINGS.md: the verdict, then every row with
    its simulated coverage and z0 (:func:`detail_table`), the scope and the method."""
    configs = numbers.get("configurations") or []
    verdict = overall_brief(numbers)
    if not configs:
        return "No real-data configuration has an inference result; no overall verdict.", verdict
    notes = []
    if all(str(c["dataset"]).startswith("multi30k") for c in configs):
        notes.append(
            "All configurations are Multi30K images and captions, not the paper's datasets (STAIR, Multi30K, IKEA)."
        )
    small = sorted({r.configuration for r in verdict_rows(numbers) if not r.pooled and not r.inferential})
    if small:
        notes.append(
            f"Descriptive only ({', '.join(small)}): fewer than {MIN_POOL_ENCODERS} encoders, where a correlation "
            "across encoders takes few values; pooled only where configurations share one set of at least "
            f"{MIN_POOL_ENCODERS} encoders."
        )
    method = (
        "Method: per cell (configuration × direction), BkR − CORR is the mean over the seeds of the per-seed "
        "Pearson correlations across encoders (the paper's statistic), averaged over the configuration's "
        "directions (or the pooled cells). Encoders fixed (*these encoders*): an item-only Poisson bootstrap, "
        "every image keyed by its id so that cells on the same images (both directions; task 1 and task 2 share "
        "test_2016) get the same weight in a replicate; the interval is the estimate ± t·SE, SE the larger of the "
        "replicates' and the delete-a-group item jackknife's, averaged over the cells "
        f"(Student t on {JACKKNIFE_GROUPS - 1} degrees of freedom: the SE is itself estimated), "
        "and nothing is dropped; z0 is BCa's bias correction of the replicates. Encoders random (*encoders like "
        "these*): the same item variance plus a leave-one-family-out jackknife over the shared encoders (the "
        "word-vector variants are one family: they share their base vectors), Student t on the "
        "Welch–Satterthwaite degrees of freedom of the two variances. Coverage: of the nominal 95% interval, "
        "simulated in the row's layout with binary hits and noise shared within a family "
        "(benchmarks/bench_inference_coverage.py --world hits, benchmarks/README.md)"
        + (f" over {coverage['worlds']} worlds." if coverage and "worlds" in coverage else ".")
    )
    answer = "\n\n".join([verdict, detail_table(numbers, coverage).rstrip("\n"), " ".join(notes + [method])])
    return answer, verdict
