"""Coverage of the findings' two questions (encoders fixed, encoders random) on SIMULATED worlds
in the layouts the committed verdict uses (backretrieval.findings.inference_sim): the cells per
configuration and image pool, the shared encoders and their families (the word-vector variants
are one family), as the committed ``reports/*/findings/inference.json`` records give them.

    python benchmarks/bench_inference_coverage.py [--worlds 1000] [--B 200] [--seed 0] [--jobs 2]

Prints, per layout, question and statistic, the share of worlds whose 95% interval covers that
question's truth (the binomial SD at 1,000 worlds is 0.007, at 200 worlds 0.015), and writes
benchmarks/inference_coverage.json, which the verdict cites by layout. A verdict whose layout
is not in that file says so, and tests/test_findings_inference.py fails until this is rerun.

    python benchmarks/bench_inference_coverage.py --world hits [--worlds 100] [--seeds 5] [--layouts SUBSTR,...]

The same layouts in the data's own outcome model (backretrieval.findings.inference_sim_hits:
binary XLR and BkR hits, noise shared within an encoder family, each configuration's hit rates
from its committed reports/<run>/metrics.json; 1,000 items, N = 500 per seed as the real runs):
writes benchmarks/inference_coverage_hits.json with every world's outcome, which
tests/test_inference_coverage_hits.py recomputes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from backretrieval.findings.inference import COVERAGE_FILE
from backretrieval.findings.inference.verdict import verdict_layouts
from backretrieval.findings.inference_sim import coverage
from backretrieval.findings.inference_sim_hits import hits_coverage, real_rates
from backretrieval.findings.record import read_record

ROOT = Path(__file__).resolve().parents[1]


def committed_layouts(root: Path = ROOT) -> list:
    """The verdict's layouts, from the committed inference records of every configuration."""
    recs = [read_record(p) for p in sorted(root.glob("reports/*/findings/inference.json"))]
    recs = [r for r in recs if r.status == "ok" and r.run is not None and "jackknife_groups" in r.settings]
    layouts = {lay.signature(): lay for lays in verdict_layouts(recs).values() for lay in lays}
    return [layouts[k] for k in sorted(layouts)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=1000)
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (the numbers do not depend on it)")
    ap.add_argument("--world", choices=["continuous", "hits"], default="continuous")
    ap.add_argument("--seeds", type=int, default=25, help="--world hits: sample seeds per cell (the real runs: 25)")
    ap.add_argument("--layouts", default="", help="--world hits: only layouts whose name holds one of these")
    args = ap.parse_args()
    if args.world == "hits":
        hits_main(args)
        return
    out = {"worlds": args.worlds, "B": args.B, "seed": args.seed, "layouts": {}}
    print("| layout | worlds | fixed, Pearson | fixed, Spearman | random, Pearson | random, Spearman | seconds |")
    print("|---|---|---|---|---|---|---|")
    for lay in committed_layouts():
        t0 = time.perf_counter()
        c = coverage(args.worlds, lay, B=args.B, seed=args.seed, jobs=args.jobs)
        out["layouts"][lay.signature()] = c["coverage"]
        cv = c["coverage"]
        print(
            f"| {lay.signature()} | {args.worlds} | {cv['fixed/pearson']:.3f} | {cv['fixed/spearman']:.3f} | "
            f"{cv['random/pearson']:.3f} | {cv['random/spearman']:.3f} | {time.perf_counter() - t0:.0f} |",
            flush=True,
        )
    (ROOT / COVERAGE_FILE).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


HITS_FILE = "benchmarks/inference_coverage_hits.json"
#: the hits world's design (the real runs: 1,000 items per direction, N = 500)
HITS_DESIGN = {"n_items": 1000, "n_queries": 500}


def layout_rates(lay, root: Path = ROOT) -> dict:
    """Each configuration's real hit rates (:func:`real_rates`) for a layout's encoder count."""
    return {cfg: real_rates(root, cfg, lay.n_encoders) for cfg, _, _ in lay.cells}


def hits_main(args) -> None:
    wanted = [w for w in args.layouts.split(",") if w]
    out = {"world": "hits", "worlds": args.worlds, "B": args.B, "seed": args.seed, "n_seeds": args.seeds, **HITS_DESIGN}
    out["layouts"] = {}
    print(
        "| layout | worlds | fixed, Pearson | fixed, Spearman | random, Pearson | random, Spearman | median abs z0 (P / S) | CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for lay in committed_layouts():
        if wanted and not any(w in lay.name for w in wanted):
            continue
        t0 = time.process_time()
        c = hits_coverage(
            args.worlds,
            lay,
            layout_rates(lay),
            B=args.B,
            seed=args.seed,
            jobs=args.jobs,
            n_seeds=args.seeds,
            **HITS_DESIGN,
        )
        out["layouts"][lay.signature()] = {
            "name": lay.name,
            **{k: c[k] for k in ("coverage", "undefined", "mean_width", "median_abs_z0", "per_world")},
        }
        cv, z = c["coverage"], c["median_abs_z0"]
        print(
            f"| {lay.signature()} | {args.worlds} | {cv['fixed/pearson']:.3f} | {cv['fixed/spearman']:.3f} | "
            f"{cv['random/pearson']:.3f} | {cv['random/spearman']:.3f} | {z['pearson']:.2f} / {z['spearman']:.2f} | "
            f"{time.process_time() - t0:.0f} |",
            flush=True,
        )
    (ROOT / HITS_FILE).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
