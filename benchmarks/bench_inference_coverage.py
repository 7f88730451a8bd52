"""Coverage of the findings' two questions (encoders fixed, encoders random) on SIMULATED worlds
in the layouts the committed verdict uses (backretrieval.findings.inference_sim): the cells per
configuration and image pool, the shared encoders and their families (the word-vector variants
are one family), as the committed ``reports/*/findings/inference.json`` records give them.

    python benchmarks/bench_inference_coverage.py [--worlds 1000] [--B 200] [--seed 0] [--jobs 2]

Prints, per layout, question and statistic, the share of worlds whose 95% interval covers that
question's truth (the binomial SD at 1,000 worlds is 0.007, at 200 worlds 0.015), and writes
benchmarks/inference_coverage.json, which the verdict cites by layout. A verdict whose layout
is not in that file says so, and tests/test_findings_inference.py fails until this is rerun.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from backretrieval.findings.inference import COVERAGE_FILE
from backretrieval.findings.inference.verdict import verdict_layouts
from backretrieval.findings.inference_sim import coverage
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
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
