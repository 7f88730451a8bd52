"""The tolerances of ``backretrieval verify`` (:mod:`.verify`): :data:`TOLERANCES` is the one
place that states the classes of fields, each with where its number comes from (``backretrieval
verify --tolerances`` prints :func:`tolerance_table`), and :func:`tolerance_for` finds a field's.

Classes:

- **float-level** (recall, MRR, mean rank, CORR, correlations across encoders): a kernel of
  another CPU moves the last bits of the torch encoders' vectors and of the image features.
  ``cross_cpu.json`` (beside this module, written by ``scripts/measure_cross_cpu.py``) holds
  the measured max |Δ| and RMS Δ per encoder between two real CPUs and their propagation
  through the pipeline's own metric code; a field's tolerance is :data:`MARGIN` × the largest
  propagated change of its encoder (all encoders where the field names none), scaled to the
  run's N;
- **trained outcomes** (the case study's heads and the human study rated on them): each
  trained quantity the reports record per training seed (``training_spread`` of
  ``case_study/metrics.json`` and ``case_study/human_study.json``; TRIPLETXL − TRIPLET paired by
  seed, derived from the heads' values) is compared as two samples, the run's R seeds against
  the reference's: Welch's t test, which uses both runs' spreads and, through its degrees of
  freedom, the uncertainty of an sd estimated from few seeds. A quantity fails when its p is
  below :data:`TRAINED_ALPHA` / m (m: the quantities compared), so a run in which nothing but
  the CPU changed fails with probability at most :data:`TRAINED_ALPHA`
  (``benchmarks/bench_trained_verify.py`` measures it). Every other field that names a head
  (CIs, per-seed values, per-pair values, the human study's tallies) is a function of the same
  draws and follows its quantity's comparison; a decision over trained heads that differs is
  listed as borderline. A reference or run without a training spread fails, named; a human
  study rated on one training draw (a single sheet: reports before the multi-seed sheet) has no
  spread on either side, and its outcomes are listed, not compared;
- **decisions** (p-values): compared as decisions at α = 0.05; a flip whose p-values both lie
  in the band :func:`p_band` around α is listed as borderline, not failed; the statistics and
  effect sizes of a test follow its p-value and are not compared by value;
- **counts and settings**: exact; **anything else**: exact.

What is compared (the union of the files of both folders; a file on one side only is a
failure): ``.json`` files leaf by leaf and ``.csv`` files cell by cell (rows matched by their
text columns), numbers by their class, everything else exactly. Other files (Markdown/LaTeX
tables, figures, HTML) render the checked numbers; they are compared byte for byte and a
difference is listed as a note, not a failure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

#: the measured cross-CPU differences and their propagation (scripts/measure_cross_cpu.py)
CROSS_CPU = Path(__file__).with_name("cross_cpu.json")
#: float-level tolerances are this many times the largest propagated change: the propagation
#: is a finite number of noise draws, and the noise model (independent rounding) is a model
MARGIN = 2.0
#: the significance level of the reported tests
ALPHA = 0.05
#: trained outcomes: the false-alarm rate of one `make verify` over all trained quantities
#: together (Bonferroni: each quantity is tested at TRAINED_ALPHA / m)
TRAINED_ALPHA = 0.01


@cache
def measured() -> dict:
    """The committed measurement (cross_cpu.json)."""
    return json.loads(CROSS_CPU.read_text())


def p_band() -> tuple[float, float]:
    """(low, high): a decision flip with both p-values inside is borderline. The band is α
    times/divided by the largest ratio measured between two CPUs' p-values of one test."""
    ratio = float(measured()["p_value_ratio_max"])
    return ALPHA / ratio, min(1.0, ALPHA * ratio)


@dataclass(frozen=True)
class Context:
    """What a field's bound depends on: its encoder (None: not named), the run's N, the field's
    descriptor and the number of seeds."""

    encoder: str | None
    n: int | None
    descriptor: str = ""
    seeds: int | None = None

    def metrics(self, *names: str) -> tuple[str, ...]:
        """The propagated metrics a field reads: XLR's or BkR's where the field names one."""
        for side in ("xlr", "bkr"):
            if side in self.descriptor and not any(o in self.descriptor for o in ("xlr", "bkr") if o != side):
                return tuple(n for n in names if n.startswith(side))
        return names


@dataclass(frozen=True)
class Tolerance:
    """A class of fields: ``pattern`` is searched in a field's descriptor (``<file> <json path
    or column> <the row's text cells>``, lower case); the first matching row of
    :data:`TOLERANCES` applies, and a numeric field no row matches must be equal."""

    name: str
    pattern: str
    why: str
    source: str
    bound: Callable[[Context], float] | None = None
    kind: str = "bound"  # bound | decision | follows | trained


def _encoder_change(enc: str | None, metrics: tuple[str, ...]) -> float:
    per = measured()["propagated"]["per_encoder"]
    rows = [per[enc]] if enc in per else list(per.values())
    return max(float(r[m]) for r in rows for m in metrics)


def _scaled(enc: str | None, metrics: tuple[str, ...], n: int | None, floor: float) -> float:
    """MARGIN × the largest propagated change, scaled from the measured run's N to this run's
    (flips ∝ N² ε: N queries, each with ∝ N competitors near its boundary; a recall or a mean
    rank per query moves ∝ N ε), and never below one flip (``floor``) where anything moved."""
    d = _encoder_change(enc, metrics)
    if d == 0:
        return 0.0
    n0 = int(measured()["propagated"]["sample_size"])
    scale = (n / n0) if n else 1.0
    return max(MARGIN * d * scale, floor)


def _recall(c: Context) -> float:
    metrics = c.metrics("xlr_recall", "bkr_recall", "xlr_mrr", "bkr_mrr")
    return _scaled(c.encoder, metrics, c.n, 1.0 / c.n if c.n else 0.0)


def _mean_rank(c: Context) -> float:
    return _scaled(c.encoder, c.metrics("xlr_mean_rank", "bkr_mean_rank"), c.n, 1.0)


def _corr(c: Context) -> float:
    """MARGIN × the encoder's largest propagated CORR change, and at least one swap of two
    adjacent pair ranks where anything moved: a swap changes Σd² by at most 4M over M = N²
    pairs, so Spearman's rho by at most 24/M² (negligible at N = 1000, not at N = 20)."""
    d = _encoder_change(c.encoder, ("corr",))
    if d == 0:
        return 0.0
    swap = 24.0 / float(c.n) ** 4 if c.n else 0.0
    return max(MARGIN * d, swap)


def _across(c: Context) -> float:
    """A correlation across encoders averaged over S seeds moves by at most the mean of its
    per-seed moves: MARGIN × (their measured mean + 3 sd/√S), the largest over the four
    correlations (S unknown: 1, i.e. about the largest single move)."""
    across = measured()["propagated"]["across_encoders"]
    s = c.seeds or 1
    return MARGIN * max(min(v["max"], v["mean"] + 3 * v["sd"] / math.sqrt(s)) for v in across.values())


TOLERANCES: tuple[Tolerance, ...] = (
    Tolerance(
        "counts and settings",
        r"(^|[ /_])(n_[a-z_]+|counts|k|sample_size|n_seeds|seed|n)( |$)|(^|[ /])training_seeds(\[\d+\])?( |$)",
        why="integers and settings of the run (sizes, seeds, k): equal on every machine",
        source="the run's configuration",
        kind="exact",
    ),
    Tolerance(
        "decisions",
        r"(^|[ /_])p( |$)|(^|[ /_])p_(holm|bonferroni)|_p( |$)|_p_bonferroni|pvalue",
        why=f"a p-value is compared as its decision at α = {ALPHA:g}; a flip with both p-values in the "
        "band is borderline (listed, not failed)",
        source="the band: α ×/÷ the largest ratio of two CPUs' p-values of one test (cross_cpu.json: "
        "p_value_ratio_max)",
        kind="decision",
    ),
    Tolerance(
        "test statistics and effects",
        r"significance|wilcoxon|mannwhitney|fisher|steiger|statistic|effect|_u( |$)|_p05",
        why="a test's statistic, effect size and counts or shares of significant seeds or pairs follow its "
        "p-values, whose decisions are compared; their values are listed, not compared",
        source="the decision of the same test",
        kind="follows",
    ),
    Tolerance(
        "trained outcomes",
        r"^case_study/",
        why=f"a head trained from last-bit-different inputs is another draw of its training: each trained "
        f"quantity's R per-seed values against the reference's by Welch's t test (both spreads; the sd's own "
        f"uncertainty in its degrees of freedom), failing at p < {TRAINED_ALPHA:g}/m over the m quantities; the "
        "fields that name a head follow their quantity",
        source="training_spread of case_study/metrics.json and human_study.json, in both runs",
        kind="trained",
    ),
    Tolerance(
        "correlations across encoders",
        r"pearson|spearman|correlation|kendall|pairwise|rho|estimate|(^| )(low|high|se|seed_sd)( |$)",
        why=f"a mean over S seeds of per-seed Pearson/Spearman across encoders: {MARGIN:g} × (the mean + "
        "3 sd/√S of their propagated per-seed changes, at most the largest one)",
        source="cross_cpu.json: propagated.across_encoders",
        bound=_across,
    ),
    Tolerance(
        "CORR",
        r"(^|[ /_=])corr( |$)",
        why=f"{MARGIN:g} × the largest propagated change of the encoder's CORR (a Spearman over N² pairs: "
        "not scaled with N), at least one swap of two pair ranks (24/N⁴)",
        source="cross_cpu.json: propagated.per_encoder (corr)",
        bound=_corr,
    ),
    Tolerance(
        "mean rank",
        r"mean_rank",
        why=f"{MARGIN:g} × the largest propagated change of the encoder's mean rank, × N/N_measured, at least 1",
        source="cross_cpu.json: propagated.per_encoder (xlr/bkr mean rank)",
        bound=_mean_rank,
    ),
    Tolerance(
        "recall and MRR",
        r"recall|mrr|bkr|xlr|_r1|_rk|p_hit|p_miss|hub_capture|ci_low|ci_high|(^| )mean( |$)",
        why=f"{MARGIN:g} × the largest propagated change of the field's encoder (all encoders where it "
        "names none), × N/N_measured, at least one flip (1/N)",
        source="cross_cpu.json: propagated.per_encoder (xlr/bkr recall and MRR)",
        bound=_recall,
    ),
)


def tolerance_for(descriptor: str) -> Tolerance | None:
    """The class of a numeric field (trained outcomes are found by the head they name instead)."""
    d = descriptor.lower()
    for tol in TOLERANCES:
        if tol.kind != "trained" and re.search(tol.pattern, d):
            return tol
    return None


def tolerance_table() -> str:
    lo, hi = p_band()
    m = measured()
    rows = ["| class | matches | tolerance | where the number comes from |", "|---|---|---|---|"]
    for t in TOLERANCES:
        pattern = t.pattern.replace("|", r"\|")
        why = t.why + (f" (band {lo:.3g} to {hi:.3g})" if t.kind == "decision" else "")
        rows.append(f"| {t.name} | `{pattern}` | {why} | {t.source} |")
    rows.append("| anything else | | exact | no measured reason to differ |")
    this = m["this_cpu"]
    rows += [
        "",
        f"Measured ({m['other_cpu']} vs {this['model']} ({this['isa']}); "
        f"propagated at N = {m['propagated']['sample_size']}, {m['propagated']['cells']} direction × seed "
        f"cells × {m['propagated']['draws']} noise draws):",
        "",
        "| encoder | max abs Δ | RMS Δ | max abs Δcos | recall/MRR | mean rank | CORR |",
        "|---|---|---|---|---|---|---|",
    ]
    per = m["propagated"]["per_encoder"]
    for enc in sorted(set(m["measured"]) | set(per)):
        v, p = m["measured"].get(enc, {}), per.get(enc)
        ctx = Context(enc, int(m["propagated"]["sample_size"]))
        cells = [
            f"{v[k]:.3g}" if k in v else "not measured" for k in ("max_abs_delta", "rms_delta", "max_abs_delta_cos")
        ]
        cells += [f"{_recall(ctx):.3g}", f"{_mean_rank(ctx):.3g}", f"{_corr(ctx):.3g}"] if p else ["", "", ""]
        rows.append(f"| {enc} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
