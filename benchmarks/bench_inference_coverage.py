"""Coverage of the findings' joint encoder × item bootstrap on SIMULATED worlds where the pooled
BkR − CORR difference is known (backretrieval.findings.inference_sim: encoder effects shared by
every cell, item effects shared by the directions and configurations that use the same images).

    python benchmarks/bench_inference_coverage.py [--worlds 200] [--B 500] [--seed 0]

Prints, per statistic, the share of worlds whose 95% pooled interval covers the truth (about
0.95 expected; the binomial SD at 200 worlds is 0.015), the mean interval width and the
replicates dropped (fewer than 3 distinct encoders drawn).
"""

from __future__ import annotations

import argparse
import time

from backretrieval.findings.inference import STATS
from backretrieval.findings.inference_sim import coverage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=200)
    ap.add_argument("--B", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("| stat | worlds | B | coverage of the 95% interval | mean width | dropped replicates | seconds |")
    print("|---|---|---|---|---|---|---|")
    for stat in STATS:
        t0 = time.perf_counter()
        c = coverage(args.worlds, B=args.B, seed=args.seed, stat=stat)
        print(
            f"| {stat} | {c['worlds']} | {c['B']} | {c['coverage']:.3f} | {c['mean_width']:.3f} | "
            f"{c['dropped_replicates']} of {c['worlds'] * c['B']} | {time.perf_counter() - t0:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
