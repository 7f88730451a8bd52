"""CORR: exact (all N² pairs) vs the seeded ``max_pairs`` subsample — time, peak RSS, error.

    python benchmarks/bench_corr.py [--quick] [--n 10000]
    python benchmarks/bench_corr.py --child N --pairs P|exact   # one run; prints a JSON line

Each run is its own subprocess; "peak during corr" is VmHWM after resetting it once the
data exist (Linux), i.e. the memory corr itself adds on top of its inputs.
SYNTHETIC normalised float32 inputs, d_text=768, d_img=1280.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import hwm_mb, make_data, maxrss_mb, md_table, reset_peak_rss, rss_mb, run_child  # noqa: E402


def _peak(hwm0: float | None) -> float:
    """Whole-process peak RSS: max(VmHWM before the reset, VmHWM now); ru_maxrss if no /proc."""
    now = hwm_mb()
    if hwm0 is None or now is None:
        return maxrss_mb()
    return max(hwm0, now)


def child(n: int, pairs: str) -> dict:
    from backretrieval.metrics import kernels as M

    d = make_data(n)
    base = rss_mb()
    hwm0 = hwm_mb()  # peak of this process so far (data generation)
    ok = reset_peak_rss()
    mp = None if pairs == "exact" else int(float(pairs))
    c0, t0 = time.process_time(), time.perf_counter()
    rho = M.corr(d["src"], d["tgt2"], d["src_img"], d["tgt_img"], max_pairs=mp, seed=0)
    return {"n": n, "pairs": pairs, "s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "rho": rho, "rss_before_mb": base,
            "peak_during_mb": hwm_mb() if ok else None, "maxrss_mb": _peak(hwm0), "ru_maxrss_mb": maxrss_mb()}


def run(quick: bool = False, n: int = 10_000) -> tuple[str, list[dict]]:
    n = min(n, 3_000) if quick else n
    runs = [(n, "exact"), (n, "1e6"), (n, "1e7")]
    if not quick:
        runs.append((100_000, "1e6"))
    res = []
    for nn, p in runs:
        r = run_child("bench_corr", ["--child", str(nn), "--pairs", p])
        res.append(r)
        print(f"  corr N={nn} pairs={p}: {r['s']:.1f}s peak {r['maxrss_mb']:.0f} MB", file=sys.stderr, flush=True)
    exact = {r["n"]: r["rho"] for r in res if r["pairs"] == "exact"}
    rows = []
    for r in res:
        diff = abs(r["rho"] - exact[r["n"]]) if r["n"] in exact and r["pairs"] != "exact" else ""
        total = f"all {r['n'] ** 2:.0e}" if r["pairs"] == "exact" else r["pairs"]
        if r["pairs"] != "exact" and float(r["pairs"]) >= r["n"] ** 2:
            total += " (≥ N², so exact)"
        rows.append([f"{r['n']:,}", total, r["s"], r["cpu_s"], f"{r['rho']:.5f}", f"{diff:.1e}" if diff != "" else "—",
                     round(r["rss_before_mb"] or 0),
                     round(r["peak_during_mb"]) if r["peak_during_mb"] else "n/a", round(r["maxrss_mb"])])
    t = md_table(["N", "pairs", "wall s", "CPU s", "Spearman ρ", "|ρ − exact|", "RSS before MB", "peak during corr MB",
                  "peak RSS of the process MB"], rows)
    return t, res


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", type=int)
    ap.add_argument("--pairs", default="exact")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=10_000)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.pairs)))
    else:
        print(run(a.quick, a.n)[0])
