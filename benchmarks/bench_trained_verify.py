"""How often `backretrieval verify` fails the case study when nothing but the kernels or the
training seeds changed, and whether it fails when the training really changed.

Trains the case study's TRIPLET and TRIPLETXL heads on the default run's own inputs (the
SYNTHETIC dataset, the chosen base encoder's title/body embeddings and the image features
under ``artifacts/default/``: run ``make run`` first), once per training seed, under several
settings, each in its own process (two at a time, one torch thread each, as the pipeline's
jobs), and evaluates each head's BkR×1000 (mean over the 20 language pairs × 5 sample seeds, as
Table 2). Settings:

- ``default``: this machine's kernels, training seeds 0 … S−1;
- ``other-kernels``: the same seeds under other torch kernels (ATen's generic code, oneDNN
  capped at SSE4.1, MKL's compatible path), which move the last bits as another CPU does;
- real changes, R seeds each: ``epochs-5`` and ``epochs-20`` (fewer epochs), ``alpha-0.3``
  (another margin), ``base-e5-small`` (another base encoder). (A change of settings is also
  caught exactly: ``case_study/metrics.json`` records the training settings; this benchmark
  measures what the outcome test alone catches.)

Then it draws many (run, reference) pairs of R-seed sets and applies verify's own trained
comparison (:func:`backretrieval.reporting.verify.compare_trained`, Welch's t per quantity at
TRAINED_ALPHA / m over TRIPLET, TRIPLETXL and TRIPLETXL − TRIPLET) and reports how often a run
fails: other kernels with the same seeds, the same kernels with other seeds, other kernels with
other seeds; and each real change against the default's seeds 0 … R−1.

    python benchmarks/bench_trained_verify.py [--seeds 30] [--other-seeds 12] [--r 10] [--draws 2000] [--out FILE.json]

The per-seed values are saved (``--out``) and re-read by ``--analyse FILE.json`` without training.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: as tests/test_verify.py's OTHER_KERNELS: moves the heads' last bits on any x86 CPU
OTHER_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "COMPATIBLE"}
REAL_CHANGES = {
    "epochs-5": {"triplet": {"epochs": 5}},
    "epochs-20": {"triplet": {"epochs": 20}},
    "alpha-0.3": {"triplet": {"alpha": 0.3}},
    "base-e5-small": {"base": "e5-small"},
}


# ------------------------------------------------------------------------------------- worker


def worker(setting: str, seeds: list[int], out: Path) -> None:
    """Train both heads for each seed under ``setting`` and write their BkR×1000 per seed."""
    import torch

    torch.set_num_threads(1)
    from backretrieval.config import load_config
    from backretrieval.data.prepared import read_meta
    from backretrieval.data.sampling import draw_sample
    from backretrieval.metrics import BkrImageIndex, backretrieve
    from backretrieval.steps import layout
    from backretrieval.steps.layout import _load
    from backretrieval.study.case_study import case_cfg, case_items, directions
    from backretrieval.study.triplet import TripletConfig, encode, train_heads

    os.chdir(ROOT)
    cfg = load_config("params.yaml")
    cs = case_cfg(cfg)
    change = REAL_CHANGES.get(setting, {})
    base = change.get("base") or json.loads(layout.chosen_base_path(cfg).read_text())["chosen"]
    dataset = layout.dataset_root(cfg)
    items = case_items(dataset, cs)
    titles, bodies, langs, fields = [], [], [], {}
    for lang in cs["languages"]:
        t_idx, t = _load(layout.field_path(cfg, base, lang, "title"))
        b_idx, b = _load(layout.field_path(cfg, base, lang, "body"))
        tr = items[(items["lang"] == lang) & items["split"].isin(cs["train_splits"])]["item_id"].tolist()
        titles.append(t[[t_idx[i] for i in tr]])
        bodies.append(b[[b_idx[i] for i in tr]])
        langs += [lang] * len(tr)
        fields[lang] = (t_idx, t, b)
    # the evaluation's samples and image indices, once
    meta = read_meta(dataset)
    ev = items[items["split"].isin(cs["eval_splits"])]
    image_of = {lang: dict(zip(g["item_id"], g["image_id"])) for lang, g in ev.groupby("lang")}
    img_index, img = _load(layout.image_emb_path(cfg))
    cells = []
    for d in directions(cs):
        src, tgt = d.split("-")
        for seed in cs["seeds"]:
            s = draw_sample(ev, src, tgt, int(cs["sample_size"]), int(seed), parallel=meta.parallel)
            qi = [img_index[image_of[src][i]] for i in s.queries]
            ti = [img_index[image_of[tgt][i]] for i in s.bkr_targets]
            cells.append((src, tgt, s, BkrImageIndex.build(img[qi], img[ti], k=int(cs["recall_k"]))))
    triplet = {**cs["triplet"], **change.get("triplet", {})}
    result: dict[str, dict[str, float]] = {"triplet": {}, "tripletxl": {}}
    for seed in seeds:
        for head in result:
            conf = TripletConfig.from_dict({**triplet, "seed": int(seed)})
            res = train_heads(np.vstack(titles), np.vstack(bodies), np.array(langs), conf, xl=head == "tripletxl")
            reps = {}
            for lang, (t_idx, t, b) in fields.items():
                reps[lang] = (t_idx, encode(res, t, b))
            per_pair: dict[str, list[float]] = {}
            for src, tgt, s, index in cells:
                (si, se), (tix, te) = reps[src], reps[tgt]
                h = index.hits(backretrieve(se[[si[i] for i in s.queries]], te[[tix[i] for i in s.bkr_targets]]))
                per_pair.setdefault(f"{src}-{tgt}", []).append(float(h.mean()))
            result[head][str(seed)] = 1000 * float(np.mean([np.mean(v) for v in per_pair.values()]))
    out.write_text(json.dumps(result))


# -------------------------------------------------------------------------------------- train


def train(settings: dict[str, list[int]], folder: Path) -> tuple[dict[str, dict[str, dict[str, float]]], dict]:
    """Every (setting, seed) in its own worker process, two at a time."""
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(name, s) for name, seeds in settings.items() for s in seeds]
    cost: dict[str, float] = {}

    def one(job: tuple[str, int]) -> None:
        name, seed = job
        env = {**os.environ, **(OTHER_KERNELS if name == "other-kernels" else {}), "OMP_NUM_THREADS": "1"}
        out = folder / f"{name}.{seed}.json"
        if out.is_file():
            return
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, __file__, "--worker", name, "--worker-seeds", str(seed), "--worker-out", str(out)],
            env=env,
            check=True,
        )
        cost[f"{name}.{seed}"] = time.perf_counter() - t0

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(one, jobs))
    values: dict[str, dict[str, dict[str, float]]] = {}
    for name, seeds in settings.items():
        for s in seeds:
            for head, v in json.loads((folder / f"{name}.{s}.json").read_text()).items():
                values.setdefault(name, {}).setdefault(head, {}).update(v)
    return values, cost


# ------------------------------------------------------------------------------------ analyse


def _trained(values: dict[str, dict[str, float]], seeds: list[int]):
    from backretrieval.reporting.verify import XL_MINUS_T, Trained

    t = [values["triplet"][str(s)] for s in seeds]
    xl = [values["tripletxl"][str(s)] for s in seeds]
    out = {"triplet": Trained(tuple(t), tuple(seeds)), "tripletxl": Trained(tuple(xl), tuple(seeds))}
    out[XL_MINUS_T] = Trained(tuple(b - a for a, b in zip(t, xl)), tuple(seeds))
    return out


def fails(run: dict, ref: dict) -> bool:
    from backretrieval.reporting.verify import Report, compare_trained

    rep = Report()
    compare_trained(run, ref, rep)
    return not rep.ok


def analyse(values: dict, r: int, draws: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    default = values["default"]
    pool = sorted(int(s) for s in default["triplet"])
    other = values.get("other-kernels")
    rates: dict[str, dict] = {}

    def rate(name: str, pick) -> None:
        n = sum(fails(*pick()) for _ in range(draws))
        rates[name] = {"fails": n, "draws": draws, "rate": n / draws}

    def same_seeds_other_kernels():
        common = sorted(set(pool) & {int(s) for s in other["triplet"]})
        s = sorted(rng.choice(common, r, replace=False).tolist())
        return _trained(other, s), _trained(default, s)

    def other_seeds(run_values):
        """R seeds of ``run_values`` against R other seeds of the default (disjoint sets)."""
        own = sorted(int(s) for s in run_values["triplet"])

        def pick():
            s = rng.choice(own, r, replace=False).tolist()
            rest = [x for x in pool if x not in s]
            return _trained(run_values, sorted(s)), _trained(
                default, sorted(rng.choice(rest, r, replace=False).tolist())
            )

        return pick

    if other is not None:
        rate("other kernels, same seeds", same_seeds_other_kernels)
        rate("other kernels, other seeds", other_seeds(other))
    if len(pool) >= 2 * r:
        rate("same kernels, other seeds", other_seeds(default))
    first = pool[:r]
    real = {}
    for name in REAL_CHANGES:
        if name in values:
            seeds = sorted(int(s) for s in values[name]["triplet"])[:r]
            real[name] = {
                "fails": fails(_trained(values[name], seeds), _trained(default, first)),
                "triplet": float(np.mean([values[name]["triplet"][str(s)] for s in seeds])),
                "tripletxl": float(np.mean([values[name]["tripletxl"][str(s)] for s in seeds])),
            }
    summary = {
        h: {
            "mean": float(np.mean(list(default[h].values()))),
            "sd": float(np.std(list(default[h].values()), ddof=1)),
            "n": len(default[h]),
        }
        for h in ("triplet", "tripletxl")
    }
    d = [default["tripletxl"][str(s)] - default["triplet"][str(s)] for s in pool]
    summary["tripletxl-triplet"] = {"mean": float(np.mean(d)), "sd": float(np.std(d, ddof=1)), "n": len(d)}
    # how often R seeds decide TRIPLETXL vs TRIPLET the same way as all seeds (paired t interval)
    from scipy import stats

    same = 0
    for _ in range(draws):
        s = rng.choice(len(d), r, replace=False)
        x = np.asarray(d)[s]
        half = stats.t.ppf(0.975, r - 1) * x.std(ddof=1) / np.sqrt(r)
        same += bool(x.mean() - half > 0)
    summary["tripletxl-triplet"][f"decided_ahead_with_R={r}"] = same / draws
    return {"r": r, "draws": draws, "false_alarms": rates, "real_changes": real, "default_spread": summary}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30, help="training seeds of the default setting")
    ap.add_argument("--other-seeds", type=int, default=12, help="training seeds under the other kernels (3x slower)")
    ap.add_argument(
        "--r", type=int, default=None, help="R of a run (default: case_study.training_seeds of params.yaml)"
    )
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--folder", default=".cache/bench_trained_verify", help="per-(setting, seed) results (reused)")
    ap.add_argument("--out", default=None, help="write the per-seed values and the analysis here (JSON)")
    ap.add_argument("--analyse", default=None, help="analyse a saved --out file instead of training")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-seeds", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, [int(s) for s in args.worker_seeds.split(",")], Path(args.worker_out))
        return 0
    if args.r is None:
        import yaml

        args.r = len(yaml.safe_load((ROOT / "params.yaml").read_text())["case_study"]["training_seeds"])
    cost: dict = {}
    if args.analyse:
        values = json.loads(Path(args.analyse).read_text())["values"]
    else:
        settings = {"default": list(range(args.seeds)), "other-kernels": list(range(args.other_seeds))}
        settings.update({name: list(range(args.r)) for name in REAL_CHANGES})
        values, cost = train(settings, ROOT / args.folder)
    res = analyse(values, args.r, args.draws)
    if cost:
        res["seconds_per_seed_both_heads"] = float(np.median(list(cost.values())))
    print(json.dumps(res, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps({"values": values, "analysis": res}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
