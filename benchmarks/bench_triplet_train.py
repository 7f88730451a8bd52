"""Training time of one TRIPLET / TRIPLETXL head (the case study's default hyper-parameters).

SYNTHETIC inputs: Gaussian title/body embeddings (fixed seed) for ``--langs`` languages x
``--per-lang`` items, width ``--dim``; ``TripletConfig()`` defaults (40 epochs, batch 128,
hidden 512, out 300) on CPU. ``--against FILE`` also times another version of
``backretrieval/triplet.py`` (e.g. ``git show REV:src/backretrieval/triplet.py > /tmp/t.py``)
in the same process, alternating runs, so the ratio is measured side by side.

    python benchmarks/bench_triplet_train.py [--head tripletxl] [--repeats 3] [--against /tmp/t.py]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def load_module(path: str):
    spec = importlib.util.spec_from_file_location("backretrieval._bench_triplet_other", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def make_data(langs: int, per_lang: int, dim: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = langs * per_lang
    latent = rng.normal(size=(n, dim)).astype(np.float32)
    title = latent + 0.5 * rng.normal(size=(n, dim)).astype(np.float32)
    body = latent + 0.5 * rng.normal(size=(n, dim)).astype(np.float32)
    names = np.repeat([f"l{i}" for i in range(langs)], per_lang)
    return title, body, names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--head", choices=["triplet", "tripletxl"], default="tripletxl")
    ap.add_argument("--langs", type=int, default=5)
    ap.add_argument("--per-lang", type=int, default=400)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--against", help="another triplet.py to time side by side")
    args = ap.parse_args(argv)

    import torch

    from backretrieval.study import triplet

    versions = {"this tree": triplet}
    if args.against:
        versions[f"other ({Path(args.against).name})"] = load_module(args.against)
    title, body, names = make_data(args.langs, args.per_lang, args.dim)
    times: dict[str, list[float]] = {k: [] for k in versions}
    for _ in range(args.repeats):
        for name, mod in versions.items():
            cfg = mod.TripletConfig(epochs=args.epochs, device="cpu")
            t0 = time.perf_counter()
            mod.train_heads(title, body, names, cfg, xl=args.head == "tripletxl")
            times[name].append(time.perf_counter() - t0)
    print(
        f"{args.head}: {args.langs} languages x {args.per_lang} items, dim {args.dim}, "
        f"{args.epochs} epochs, torch threads {torch.get_num_threads()}, {args.repeats} repeats"
    )
    base = statistics.median(times["this tree"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(
            f"  {name:28s} median {med:7.2f} s  (runs {', '.join(f'{t:.2f}' for t in ts)})  "
            f"ratio to this tree {med / base:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
