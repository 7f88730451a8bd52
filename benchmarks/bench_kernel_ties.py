"""What exact ties cost: XLR + BkR of the current kernels beside those of an earlier revision,
measured side by side in one run (alternating processes, same data, same machine).

    python benchmarks/bench_kernel_ties.py --before <rev> [--n 10000] [--reps 3]

The kernels take every score block's product with the distinct candidate rows only, so
identical candidates tie exactly (src/backretrieval/metrics/_base.py, ``Columns``). Cost without
duplicates: one hashing pass over the candidates per kernel call; with duplicates the product is
narrower and each block is copied out to the duplicates. ``--before``: a git revision whose
``src/`` is extracted (``git archive``) to a temporary folder and timed in its own processes.

SYNTHETIC normalised float32 inputs (bench_common.make_data): d_text=768, d_img=1280; "with
duplicates": 40 % of the BkR target texts and of the source images replaced by copies of others.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])  # the src/ folder under test
sys.path.insert(0, sys.argv[2])  # benchmarks/ (bench_common)
from bench_common import make_data
import backretrieval.metrics as M
n, dup = int(sys.argv[3]), sys.argv[4] == "1"
d = make_data(n)
src, tgt, tgt2, s_img, t_img = d["src"], d["tgt"], d["tgt2"], d["src_img"], d["tgt_img"]
if dup:  # 40 % of the rows become copies of rows from the rest
    rng = np.random.default_rng(0)
    for x in (tgt2, s_img):
        rows = rng.choice(n, size=int(0.4 * n), replace=False)
        keep = np.setdiff1d(np.arange(n), rows)
        x[rows] = x[rng.choice(keep, size=rows.size)]
M.xlr(src[:500], tgt[:500], k=10)  # warm up (BLAS threads, page faults)
t0 = time.perf_counter()
x = M.xlr(src, tgt, k=10)
b = M.bkr(src, tgt2, s_img, t_img, k=10)
print(json.dumps({"s": time.perf_counter() - t0, "xlr": x, "bkr": b}))
"""


def _extract(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _time(src: Path, n: int, dup: bool) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(src), str(HERE), str(n), "1" if dup else "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="git revision of the kernels to compare against")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        before = _extract(args.before, Path(tmp))
        for dup in (False, True):
            t = {"before": [], "now": []}
            vals = {}
            for _ in range(args.reps):  # alternate, so drifts of the machine hit both alike
                for label, src in (("before", before), ("now", ROOT / "src")):
                    r = _time(src, args.n, dup)
                    t[label].append(r["s"])
                    vals[label] = (r["xlr"], r["bkr"])
                    print(f"  {label} dup={dup}: {r['s']:.2f}s", file=sys.stderr, flush=True)
            tb, tn = sorted(t["before"])[len(t["before"]) // 2], sorted(t["now"])[len(t["now"]) // 2]
            rows.append((dup, tb, tn, vals))
    print(f"N = {args.n}, median of {args.reps} alternating runs, before = {args.before}\n")
    print("| candidates | before s | now s | now / before | XLR before / now | BkR before / now |")
    print("|---|---|---|---|---|---|")
    for dup, tb, tn, vals in rows:
        (xb, bb), (xn, bn) = vals["before"], vals["now"]
        label = "40 % duplicates" if dup else "all distinct"
        print(f"| {label} | {tb:.2f} | {tn:.2f} | {tn / tb:.3f} | {xb:.4f} / {xn:.4f} | {bb:.4f} / {bn:.4f} |")


if __name__ == "__main__":
    main()
