"""The paper protocol's metric phase through the pipeline vs the bare matrix products it needs
(issue 16, goal 3), measured side by side in one run.

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

Prints a Markdown table: metric-phase wall, floor, their ratio (goal <= 1.3), the report rule,
and the per-job times from Snakemake's benchmark files. Times depend on the machine's load:
compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
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


def _snakemake(wd: Path, cfg_file: Path, cores: int, *args: str) -> float:
    cmd = [SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(wd), "--configfile", str(cfg_file),
           "--cores", str(cores), *args, "--quiet", "rules"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"snakemake failed ({' '.join(cmd)}):\n{(res.stdout + res.stderr)[-4000:]}")
    return wall


def _bench_tsvs(wd: Path, run: str, rule: str) -> list[float]:
    out = []
    for p in sorted((wd / "logs" / run / "benchmarks" / rule).rglob("*.tsv")):
        with open(p) as fh:
            out.append(float(next(csv.DictReader(fh, delimiter="\t"))["s"]))
    return out


def _product_s(n: int, d: int, repeats: int, rng: np.random.Generator) -> float:
    a = rng.standard_normal((n, d), dtype=np.float32)
    b = rng.standard_normal((n, d), dtype=np.float32)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        _ = a @ b.T
        best = min(best, time.perf_counter() - t0)
        del _
    return best


def floor(n: int, dims: list[int], samples: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    per_dim = {d: _product_s(n, d, repeats, rng) for d in sorted(set(dims) | {D_IMG})}
    per_sample = per_dim[D_IMG] + sum(2 * per_dim[d] for d in dims)
    return {"per_dim_s": per_dim, "per_sample_s": per_sample, "total_s": samples * per_sample}


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
        str(layout.text_emb_path(cfg, e, lang)) for e in cfg["encoders"] for lang in cfg["languages"]]
    prep_s = _snakemake(wd, cfg_file, a.cores, *embeddings)
    metric_files = [str(layout.metrics_path(cfg, d)) for d in cfg["directions"]]
    metric_s = _snakemake(wd, cfg_file, a.cores, "--forcerun", "sample", *metric_files)
    report_s = _snakemake(wd, cfg_file, a.cores, "--forcerun", "report")
    samples = len(cfg["directions"]) * len(cfg["seeds"])
    dims = [ENCODERS[e] for e in cfg["encoders"]]
    fl = floor(a.sample_size, dims, samples, a.repeats)
    jobs = {r: _bench_tsvs(wd, run, r) for r in ("metrics", "sample")}
    rows = [
        ("data generation (SYNTHETIC, not timed in the ratio)", gen_s, ""),
        ("prepare + check + embed (precomputed lookups, not in the ratio)", prep_s, ""),
        ("**metric phase**: `snakemake --forcerun sample` to every metrics CSV", metric_s, metric_s / fl["total_s"]),
        ("floor: the bare products (`tgt_img @ src_img.T` + 2 text products per encoder, per sample)",
         fl["total_s"], 1.0),
        ("report rule (correlations, significance, tables)", report_s, report_s / fl["total_s"]),
        ("metric phase + report", metric_s + report_s, (metric_s + report_s) / fl["total_s"]),
    ]
    print(f"\nProtocol: {a.items:,} items, {len(cfg['encoders'])} encoders (dims {dims}), "
          f"{len(cfg['directions'])} directions x {len(cfg['seeds'])} seeds = {samples} samples at N={a.sample_size:,}, "
          f"seed_group_size={cfg['seed_group_size']}, corr_max_pairs={cfg['corr_max_pairs']}, --cores {a.cores}; "
          f"workdir {wd}\n")
    print("| step | wall s | × floor (goal ≤ 1.3) |\n|---|---|---|")
    for name, s, r in rows:
        print(f"| {name} | {s:.1f} | {r if r == '' else f'{r:.2f}'} |")
    m = jobs["metrics"]
    if m:
        print(f"\nmetrics jobs: {len(m)}, per job {min(m):.1f}–{max(m):.1f} s, sum {sum(m):.1f} s "
              f"(sum / floor {sum(m) / fl['total_s']:.2f}; floor per sample {fl['per_sample_s']:.2f} s)")
    print("bare product per shape (N×N×d, best of %d): " % a.repeats
          + ", ".join(f"d={d}: {s:.3f} s" for d, s in fl["per_dim_s"].items()))
    if a.out:
        a.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(a).items()}, "metric_s": metric_s,
                                     "report_s": report_s, "prep_s": prep_s, "floor": fl, "jobs": jobs,
                                     "samples": samples}, indent=1))


if __name__ == "__main__":
    main()
