"""One paper-scale sample through ``evaluate_sample`` vs its bare matrix products, this tree
against another checkout side by side (the per-sample cost of the metric
jobs), alternating subprocesses, best of ``--repeats``.

    python benchmarks/bench_sample.py                                   # this tree only
    git worktree add /tmp/old <rev> && python benchmarks/bench_sample.py --against /tmp/old

Each run is a fresh subprocess with one BLAS thread (as a ``metrics_part`` job computes) that
imports ``backretrieval`` from that tree's src/ and builds the same SYNTHETIC sample with this
tree's generator (bench_common.sample_encoders: N=10,000 by default, the protocol's
ten text dims, image dim 1280, full BkR ranks, CORR ``max_pairs=1e6``), times
``evaluate_sample`` (CPU s, user + system: page faults count), then the bare products of the
sample (``tgt_img @ src_img.T`` and two text products per encoder, each into a fresh array).
Prints CPU and wall seconds, the ratio to the products, and whether both trees gave identical
results and per-query ranks (sha256 over them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import hashlib, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from bench_common import sample_encoders
from backretrieval.metrics import evaluate_sample

n, count = int(sys.argv[2]), int(sys.argv[3])
encs, s_img, t_img = sample_encoders(n, count)

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

kept = {}
w0, c0 = time.perf_counter(), cpu()
res = evaluate_sample(encs, None, s_img, t_img, k=10, corr_max_pairs=1_000_000, ranks_out=kept)
wall, c = time.perf_counter() - w0, cpu() - c0
h = hashlib.sha256(json.dumps(res, sort_keys=True).encode())
for e in sorted(kept):
    for kind in sorted(kept[e]):
        h.update(np.ascontiguousarray(kept[e][kind], dtype=np.int64).tobytes())
pw, pc = 0.0, 0.0
for a, b in [(t_img, s_img)] + [(e[x], e[y]) for e in encs.values() for x, y in (("xlr_src", "xlr_tgt"), ("bkr_src", "bkr_tgt"))]:
    w1, c1 = time.perf_counter(), cpu()
    out = a @ b.T
    pw, pc = pw + time.perf_counter() - w1, pc + cpu() - c1
    del out
print(json.dumps({"wall": wall, "cpu": c, "prod_wall": pw, "prod_cpu": pc, "sha": h.hexdigest()}))
"""


def _run(tree: Path, n: int, count: int) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree / "src"),
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(HERE), str(n), str(count)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", type=Path, help="another checkout (its src/ and benchmarks/) timed alternately")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--encoders", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    trees = {"this tree": HERE.parent} | ({f"against {a.against}": a.against.resolve()} if a.against else {})
    best: dict[str, dict] = {}
    for _ in range(a.repeats):
        for label, tree in trees.items():
            r = _run(tree, a.n, a.encoders)
            if label not in best or r["cpu"] < best[label]["cpu"]:
                best[label] = r
    print(
        f"\nOne sample, N={a.n:,}, {a.encoders} encoders, one BLAS thread, best of {a.repeats} "
        "(CPU = user + system)\n\n| tree | evaluate_sample wall s | CPU s | bare products CPU s "
        "| CPU × bare products | results + ranks sha256 |\n|---|---|---|---|---|---|"
    )
    for label, r in best.items():
        print(
            f"| {label} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['prod_cpu']:.2f} | "
            f"{r['cpu'] / r['prod_cpu']:.2f} | {r['sha'][:12]} |"
        )
    if len(best) == 2:
        same = len({r["sha"] for r in best.values()}) == 1
        print(f"\nidentical results and per-query ranks in both trees: {same}")


if __name__ == "__main__":
    main()
