"""The paper protocol's metric phase through the pipeline vs the bare matrix products it needs,
measured side by side in one run.

    python benchmarks/bench_protocol.py --full          # benchmarks/protocol.yaml as it is: 25,000 items,
                                                        # 10 encoders x 8 directions x 25 seeds, N=10,000
    python benchmarks/bench_protocol.py --items 5000 --sample-size 2000 --seeds 4   # scaled down

Data: SYNTHETIC (benchmarks/protocol_data.py: precomputed text vectors of ten stand-in encoders
and precomputed image features), so embedding time is excluded. Steps, in one working
directory (default benchmarks/results/protocol-<sizes>, reused by later runs):

1. generate the data, write the config (benchmarks/protocol.yaml with the sizes given here);
2. `snakemake --cores C` up to the embeddings (prepare, check, embed: not timed);
3. **metric phase**, timed: `snakemake --cores C --forcerun sample <every direction's metrics
   CSV>` (sample, metrics or metrics_part + metrics_gather), wall clock of the whole command;
   then the report rule, timed apart;
4. **floor**, in this process right after: the bare float32 products of every (direction, seed):
   ``tgt_img @ src_img.T`` (N x N x 1280) and per encoder ``src @ tgt.T`` (XLR) and
   ``src @ tgt2.T`` (BkR's text step), each shape timed best of ``--repeats`` with numpy's
   default BLAS threads (all cores), times the number of times the protocol needs it.

Prints a Markdown table: metric-phase wall and CPU time (snakemake and every job it ran), the
floor's, their ratios (goal <= 1.3 in wall time on an idle machine), the report rule, and the
per-job times from Snakemake's benchmark files. On a loaded machine only the CPU ratio means
something (the jobs wait for a core; the floor, timed at another moment, waits less or more).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from protocol_data import D_IMG, ENCODERS, generate  # noqa: E402

from backretrieval.steps import layout  # noqa: E402

CONFIG = HERE / "protocol.yaml"
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


def _config(a: argparse.Namespace) -> dict:
    cfg = yaml.safe_load(CONFIG.read_text())
    cfg["sample_size"] = a.sample_size
    cfg["seeds"] = list(range(a.seeds))
    cfg["directions"] = cfg["directions"][: a.directions]
    cfg["encoders"] = dict(list(cfg["encoders"].items())[: a.encoders])
    cfg["seed_group_size"] = a.seed_group_size or None
    return cfg


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _env() -> dict[str, str]:
    """The jobs' environment: this interpreter's bin first (the rules call `backretrieval`, so the
    benchmark runs without an activated virtual environment), no network."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "HF_HUB_OFFLINE": "1"}


def _snakemake(wd: Path, cfg_file: Path, cores: int, *args: str) -> tuple[float, float]:
    """(wall s, CPU s of snakemake and every job it ran) of one snakemake command."""
    cmd = [
        SNAKEMAKE,
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(wd),
        "--configfile",
        str(cfg_file),
        "--cores",
        str(cores),
        *args,
        "--quiet",
        "rules",
    ]
    t0, c0 = time.perf_counter(), _children_cpu()
    res = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if res.returncode != 0:
        sys.exit(f"snakemake failed ({' '.join(cmd)}):\n{(res.stdout + res.stderr)[-4000:]}")
    return wall, cpu


def _bench_tsvs(wd: Path, run: str, rule: str) -> list[tuple[float, float]]:
    """(wall s, CPU s) of every job of a rule, from Snakemake's benchmark files."""
    out = []
    base = wd / "logs" / run / "benchmarks"
    for p in sorted((base / rule).rglob("*.tsv")) + [f for f in [base / f"{rule}.tsv"] if f.is_file()]:
        with open(p) as fh:
            row = next(csv.DictReader(fh, delimiter="\t"))
        out.append((float(row["s"]), float(row["cpu_time"])))
    return out


def _product_s(n: int, d: int, repeats: int, rng: np.random.Generator) -> tuple[float, float]:
    """(wall s, CPU s) of one N x N x d float32 product, best of ``repeats``."""
    a = rng.standard_normal((n, d), dtype=np.float32)
    b = rng.standard_normal((n, d), dtype=np.float32)
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        _ = a @ b.T
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
        del _
    return best, best_cpu


def floor(n: int, dims: list[int], samples: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    per_dim = {d: _product_s(n, d, repeats, rng) for d in sorted(set(dims) | {D_IMG})}
    out = {"per_dim": per_dim}
    for i, what in enumerate(("s", "cpu_s")):
        per_sample = per_dim[D_IMG][i] + sum(2 * per_dim[d][i] for d in dims)
        out[f"per_sample_{what}"], out[f"total_{what}"] = per_sample, samples * per_sample
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="the protocol as benchmarks/protocol.yaml sets it")
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--sample-size", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--directions", type=int, default=8)
    ap.add_argument("--encoders", type=int, default=10)
    ap.add_argument("--seed-group-size", type=int, default=0, help="0 = one metrics job per direction")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--out", type=Path, help="also write the numbers as JSON")
    a = ap.parse_args()
    if a.full:
        full = yaml.safe_load(CONFIG.read_text())
        a.items, a.sample_size, a.seeds = 25_000, full["sample_size"], len(full["seeds"])
        a.directions, a.encoders = len(full["directions"]), len(full["encoders"])
        a.seed_group_size = full.get("seed_group_size") or 0
    tag = f"protocol-i{a.items}-n{a.sample_size}-s{a.seeds}-d{a.directions}-e{a.encoders}-g{a.seed_group_size}"
    wd = (a.workdir or HERE / "results" / tag).resolve()
    wd.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    generate(wd / "data" / "generated" / "protocol", a.items)
    gen_s = time.perf_counter() - t0
    cfg = _config(a)
    cfg_file = wd / "protocol.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    run = cfg["run_name"]
    embeddings = [str(layout.image_emb_path(cfg))] + [
        str(layout.text_emb_path(cfg, e, lang)) for e in cfg["encoders"] for lang in cfg["languages"]
    ]
    prep_s, _ = _snakemake(wd, cfg_file, a.cores, *embeddings)
    metric_files = [str(layout.metrics_path(cfg, d)) for d in cfg["directions"]]
    metric_s, metric_cpu = _snakemake(wd, cfg_file, a.cores, "--forcerun", "sample", *metric_files)
    report_s, report_cpu = _snakemake(wd, cfg_file, a.cores, "--forcerun", "report")
    samples = len(cfg["directions"]) * len(cfg["seeds"])
    dims = [ENCODERS[e] for e in cfg["encoders"]]
    fl = floor(a.sample_size, dims, samples, a.repeats)
    jobs = {r: _bench_tsvs(wd, run, r) for r in ("metrics", "metrics_gather", "sample")}
    fw, fc = fl["total_s"], fl["total_cpu_s"]
    rows = [
        ("data generation (SYNTHETIC; not in the ratio)", gen_s, None),
        ("prepare + check + embed (precomputed lookups; not in the ratio)", prep_s, None),
        ("**metric phase**: `snakemake --forcerun sample` to every metrics CSV", (metric_s, metric_cpu)),
        ("floor: the bare products (`tgt_img @ src_img.T` + 2 text products per encoder, per sample)", (fw, fc)),
        ("report rule (correlations, significance, tables)", (report_s, report_cpu)),
        ("metric phase + report", (metric_s + report_s, metric_cpu + report_cpu)),
    ]
    print(
        f"\nProtocol: {a.items:,} items, {len(cfg['encoders'])} encoders (dims {dims}), "
        f"{len(cfg['directions'])} directions x {len(cfg['seeds'])} seeds = {samples} samples at N={a.sample_size:,}, "
        f"seed_group_size={cfg['seed_group_size']}, corr_max_pairs={cfg['corr_max_pairs']}, --cores {a.cores}; "
        f"workdir {wd}\n"
    )
    print("| step | wall s | CPU s | wall × floor (goal ≤ 1.3) | CPU × floor |\n|---|---|---|---|---|")
    for name, *vals in rows:
        if vals[-1] is None:
            print(f"| {name} | {vals[0]:.1f} |  |  |  |")
        else:
            w, c = vals[0]
            print(f"| {name} | {w:.1f} | {c:.1f} | {w / fw:.2f} | {c / fc:.2f} |")
    for rule, js in jobs.items():
        if js:
            print(
                f"\n{rule} jobs: {len(js)}, wall per job {min(j[0] for j in js):.1f}–{max(j[0] for j in js):.1f} s, "
                f"CPU sum {sum(j[1] for j in js):.1f} s (a lower bound: Snakemake samples a job's CPU "
                "every 30 s after its first 30 s)",
                end="",
            )
    print(
        f"\nfloor per sample: {fl['per_sample_s']:.2f} s wall, {fl['per_sample_cpu_s']:.2f} s CPU; "
        f"bare product per shape (N×N×d, best of {a.repeats}, wall/CPU s): "
        + ", ".join(f"d={d}: {w:.3f}/{c:.3f}" for d, (w, c) in fl["per_dim"].items())
    )
    if a.out:
        a.out.write_text(
            json.dumps(
                {
                    "args": {k: str(v) for k, v in vars(a).items()},
                    "metric_s": metric_s,
                    "metric_cpu_s": metric_cpu,
                    "report_s": report_s,
                    "report_cpu_s": report_cpu,
                    "prep_s": prep_s,
                    "floor": {**fl, "per_dim": {str(k): v for k, v in fl["per_dim"].items()}},
                    "jobs": jobs,
                    "samples": samples,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
