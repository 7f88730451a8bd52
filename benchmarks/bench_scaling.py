"""Scaling of one XLR + BkR evaluation with N (wall time, peak RSS), one subprocess per N.

    python benchmarks/bench_scaling.py --child N      # one size; prints a JSON line
    python benchmarks/bench_scaling.py [--quick]      # 1k, 10k (+30k, 100k unless --quick)

SYNTHETIC normalised float32 inputs, d_text=768, d_img=1280 (EfficientNet-Lite0). The BkR
target texts are the XLR target texts (4 input matrices: 2·N·768 + 2·N·1280 floats), so
"input MB" is the part of the peak RSS that is the data itself, not the kernels.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import hwm_mb, make_data, maxrss_mb, md_table, reset_peak_rss, rss_mb, run_child  # noqa: E402

SIZES_QUICK = [1_000, 10_000]
SIZES_FULL = [1_000, 10_000, 30_000, 100_000]


def _peak(hwm0: float | None) -> float:
    """Whole-process peak RSS: max(VmHWM before the reset, VmHWM now); ru_maxrss if no /proc."""
    now = hwm_mb()
    if hwm0 is None or now is None:
        return maxrss_mb()
    return max(hwm0, now)


def child(n: int) -> dict:
    import backretrieval.metrics as M

    data = make_data(n, separate_bkr_target=False)
    input_mb = sum(a.nbytes for k, a in data.items() if k != "tgt2") / 2**20
    base = rss_mb()
    hwm0 = hwm_mb()  # peak of this process so far (data generation)
    resettable = reset_peak_rss()
    c0, t0 = time.process_time(), time.perf_counter()
    # inplace=True: normalise the inputs in place (no full-size copies); results are identical
    r_x = M.xlr(data["src"], data["tgt"], k=10, inplace=True)
    t1 = time.perf_counter()
    r_b = M.bkr(data["src"], data["tgt2"], data["src_img"], data["tgt_img"], k=10, inplace=True)
    t2 = time.perf_counter()
    return {
        "n": n,
        "xlr_s": t1 - t0,
        "bkr_s": t2 - t1,
        "total_s": t2 - t0,
        "cpu_s": time.process_time() - c0,
        "xlr": r_x,
        "bkr": r_b,
        "input_mb": input_mb,
        "rss_before_mb": base,
        "peak_during_mb": hwm_mb() if resettable else None,
        "maxrss_mb": _peak(hwm0),
        "ru_maxrss_mb": maxrss_mb(),
    }


def run(quick: bool = False) -> tuple[str, list[dict]]:
    res = []
    for n in SIZES_QUICK if quick else SIZES_FULL:
        r = run_child("bench_scaling", ["--child", str(n)])
        res.append(r)
        print(f"  scaling N={n}: {r['total_s']:.1f}s, peak {r['maxrss_mb']:.0f} MB", file=sys.stderr, flush=True)
    rows = [
        [
            f"{r['n']:,}",
            r["xlr_s"],
            r["bkr_s"],
            r["total_s"],
            r.get("cpu_s", float("nan")),
            round(r["input_mb"]),
            round(r["rss_before_mb"] or 0),
            round(r["peak_during_mb"]) if r["peak_during_mb"] else "n/a",
            round(r["maxrss_mb"]),
            "yes" if r["maxrss_mb"] < 2048 else "NO",
        ]
        for r in res
    ]
    table = md_table(
        [
            "N",
            "xlr s",
            "bkr s",
            "xlr+bkr wall s",
            "CPU s",
            "inputs MB",
            "RSS before MB",
            "peak during kernels MB",
            "peak RSS of the process MB",
            "< 2 GB",
        ],
        rows,
    )
    return table, res


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", type=int)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child)))
    else:
        print(run(a.quick)[0])
