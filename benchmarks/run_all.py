"""Run the metric benchmark suite and print one Markdown report.

    python benchmarks/run_all.py [--quick] [--only kernels,baselines,...] [--skip ...]
                                 [--out report.md]

Sections: machine, kernels (ours vs bare matrix products; shared image index), baselines
(per-query argsort; sentence-transformers semantic_search; the fp32 ceiling), bf16screen (an
evaluated alternative: bf16 product + exact re-check), corr (old vs new implementation,
exact and max_pairs, the bare products, the estimator error over seeds),
scaling (N = 1k..100k in subprocesses; --quick: 1k, 10k), projection (paper protocol from the
measured units). All inputs are SYNTHETIC normalised float32 embeddings.
--quick: fewer repeats, corr exact at N=3,000, no N >= 30k.
Encoder throughput (embedding time) is measured separately by benchmarks/throughput.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_common  # noqa: E402

SECTIONS = ["machine", "kernels", "baselines", "bf16screen", "corr", "scaling", "projection"]
SEEDS, ENCODERS, DIRECTIONS, N_PAPER = 25, 10, 8, 10_000


def _hms(s: float) -> str:
    h, rem = divmod(int(round(s)), 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h {m:02d}m {sec:02d}s" if h else f"{m}m {sec:02d}s"


def projection(k: dict, corr_res: dict | None) -> str:
    """Paper protocol: 25 seeds × 10 encoders × 8 directions at N=10,000, from measured units.

    Two columns: from the measured wall times (this machine, as loaded during the run) and
    from the measured CPU seconds (all threads; independent of other processes' load, = the
    wall time on one otherwise idle core, about half that on two for the BLAS-bound parts).
    CORR: ``evaluate_sample`` builds the image side once per sample and ranks each encoder's
    text distances once per cell; without it, every cell pays both.
    """
    if not k or k.get("n") != N_PAPER:
        return "(needs the kernels section at N=10,000)"
    sd = SEEDS * DIRECTIONS  # samples; the image index is built once per sample
    cells = sd * ENCODERS
    corr_t: dict[str, tuple[dict, float, str]] = {}  # label -> (run, scale, note)
    for r in (corr_res or {}).get("runs", []):
        old = " (previous implementation)" if r["impl"] == "old" else ""
        if r["pairs"] == "exact":
            note = "" if r["n"] == N_PAPER else f" (∝N² from N={r['n']:,})"
            corr_t["exact" + old] = (r, (N_PAPER / r["n"]) ** 2, note)
        elif r["n"] <= N_PAPER and float(r["pairs"]) < r["n"] ** 2:
            corr_t.setdefault(r["pairs"] + old, (r, 1.0, ""))

    def unit(name: str, cpu: bool) -> float:
        return k[f"{name}_cpu_s" if cpu else f"{name}_s"]

    rows = []
    for label in (
        "no index: E × (xlr + bkr) per sample",
        "`evaluate_sample`, full_bkr_ranks=True",
        "`evaluate_sample`, full_bkr_ranks=False",
    ):
        for ckey in ["none", *sorted(corr_t, key=lambda x: ("before" in x, not x.startswith("exact"), x))]:
            if "before" in ckey and "True" not in label:
                continue  # the previous implementation: one variant is enough to compare
            tot = []
            for cpu in (False, True):
                if label.startswith("no index"):
                    per_sample, per_cell = 0.0, unit("xlr", cpu) + unit("bkr", cpu)
                else:
                    per_sample = unit("build", cpu)
                    per_cell = unit("xlr", cpu) + unit("rec", cpu)
                    if "True" in label:  # per-encoder image product for BkR MRR / mean rank
                        per_cell += max(0.0, unit("bkr", cpu) - unit("bt", cpu))
                if ckey in corr_t:
                    r, scale, _ = corr_t[ckey]
                    c_build, c_enc = (r["build_cpu_s"], r["spearman_cpu_s"]) if cpu else (r["build_s"], r["spearman_s"])
                    if label.startswith("no index"):
                        per_cell += (c_build + c_enc) * scale
                    else:
                        per_sample += c_build * scale
                        per_cell += c_enc * scale
                tot.append(sd * per_sample + cells * per_cell)
            cname = "none" if ckey == "none" else ckey + corr_t[ckey][2]
            rows.append([label, cname, _hms(tot[0]), f"{tot[0] / 3600:.1f}", f"{tot[1] / 3600:.1f}"])
    return (
        f"{SEEDS} seeds × {ENCODERS} encoders × {DIRECTIONS} directions at N={N_PAPER:,} = {cells} cells, "
        f"{sd} samples (image index and CORR image side shared per seed×direction). Units = this run's "
        "measurements; embedding time excluded (see benchmarks/throughput.py).\n\n"
        + bench_common.md_table(
            ["pipeline variant", "CORR", "projected wall (from this run's wall times)", "hours", "CPU-hours"], rows
        )
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help=f"comma-separated subset of {SECTIONS}")
    ap.add_argument("--skip", default="", help="comma-separated sections to skip")
    ap.add_argument("--n", type=int, default=N_PAPER)
    ap.add_argument(
        "--out",
        type=Path,
        help="also write the report to this Markdown file (and the raw measured numbers to the same name with .json)",
    )
    a = ap.parse_args(argv)
    want = [s for s in SECTIONS if (not a.only or s in a.only.split(",")) and s not in a.skip.split(",")]
    parts: list[str] = [f"# Metric benchmarks ({'quick' if a.quick else 'full'}; {time.strftime('%Y-%m-%d %H:%M')})"]
    kernels_units: dict = {}
    corr_res: dict | None = None
    all_units: dict = {}

    def emit(title: str, body: str) -> None:
        block = f"## {title}\n\n{body}\n"
        parts.append(block)
        print(block, flush=True)

    print(parts[0] + "\n", flush=True)
    t_start = time.perf_counter()
    for sec in want:
        t0 = time.perf_counter()
        if sec == "machine":
            info = bench_common.machine_info()
            emit("Machine", "\n".join(f"- {k}: {v}" for k, v in info.items()))
        elif sec == "kernels":
            import bench_kernels

            body, kernels_units = bench_kernels.run(a.quick, a.n)
            all_units["kernels"] = kernels_units
            emit("XLR + BkR vs bare matrix products; shared image index", body)
        elif sec == "baselines":
            import bench_baselines

            body, all_units["baselines"] = bench_baselines.run(a.quick, a.n)
            emit("Baselines: per-query argsort, sentence-transformers semantic_search", body)
        elif sec == "bf16screen":
            import bench_bf16_screen

            body, all_units["bf16screen"] = bench_bf16_screen.run(a.quick, a.n)
            emit("Evaluated, not adopted: bf16 screening + exact re-check (XLR)", body)
        elif sec == "corr":
            import bench_corr

            body, corr_res = bench_corr.run(a.quick, a.n)
            all_units["corr"] = corr_res
            emit("CORR: previous vs current implementation, exact and max_pairs, bare products, estimator error", body)
        elif sec == "scaling":
            import bench_scaling

            body, all_units["scaling"] = bench_scaling.run(a.quick)
            emit("Scaling of one XLR + BkR (subprocess per N)", body)
        elif sec == "projection":
            emit("Projected wall time of the paper protocol", projection(kernels_units, corr_res))
        print(f"[{sec} took {time.perf_counter() - t0:.0f}s]", file=sys.stderr, flush=True)
    tail = f"_total benchmark wall time {time.perf_counter() - t_start:.0f}s_"
    parts.append(tail)
    print(tail)
    if a.out:
        from backretrieval._util.io import write_json, write_text

        write_text(a.out, "\n".join(parts) + "\n")
        write_json(a.out.with_suffix(".json"), all_units)  # raw measured units
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
