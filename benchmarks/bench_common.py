"""Shared helpers of the metric benchmarks: SYNTHETIC embeddings, timers, memory, machine info.

All data here are synthetic (Gaussian "concept" clusters + noise), L2-normalised float32;
every method in a comparison receives the identical arrays in the same process.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

D_TEXT = 768
D_IMG = 1280  # EfficientNet-Lite0 feature size (the project's default backbone)
HERE = Path(__file__).resolve().parent


_CHUNK_ROWS = 8192


def _noisy(
    rng: np.random.Generator,
    centres: np.ndarray,
    noise: float,
    normalise: bool = True,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """centres[rows] + noise·N(0, 1), optionally L2-normalised, built in row chunks.

    The chunks draw the same stream as one full-size draw (numpy's Generator fills row-major
    and row norms are per row), so the data are the same bits as the former one-shot version,
    without its full-size temporaries (gathered centres, noise, ``x*x`` of the norm): the
    N=100k scaling run measures the metric code, not the data generator.
    """
    n = centres.shape[0] if rows is None else rows.shape[0]
    out = np.empty((n, centres.shape[1]), dtype=np.float32)
    for s in range(0, n, _CHUNK_ROWS):
        e = min(n, s + _CHUNK_ROWS)
        x = out[s:e]
        x[...] = rng.standard_normal((e - s, centres.shape[1]), dtype=np.float32)
        x *= noise
        x += centres[s:e] if rows is None else centres[rows[s:e]]
        if normalise:
            x /= np.linalg.norm(x, axis=1, keepdims=True)
    return out


def make_data(
    n: int,
    d_text: int = D_TEXT,
    d_img: int = D_IMG,
    seed: int = 0,
    separate_bkr_target: bool = True,
    text_noise: float = 3.5,
) -> dict[str, np.ndarray]:
    """SYNTHETIC sample of size n (normalised float32), generated from a fixed seed.

    Items belong to ~n/50 concepts; an item's texts = concept centre + item offset + noise
    (so XLR is a fine-grained, non-trivial retrieval), its image = image concept centre +
    noise. src/tgt: aligned XLR pair; tgt2/tgt_img: the BkR target side (other items of the
    same concepts); src_img: source images. With ``separate_bkr_target=False`` the BkR
    target texts are ``tgt`` itself and the target images are those of the source items'
    concepts (saves n·d_text floats of input — used for the memory-scaling runs).
    """
    rng = np.random.default_rng(seed)
    n_conc = max(2, n // 50)
    ct = rng.standard_normal((n_conc, d_text), dtype=np.float32)
    ci = rng.standard_normal((n_conc, d_img), dtype=np.float32)
    ids_s = rng.integers(0, n_conc, n)
    ids_t = rng.integers(0, n_conc, n) if separate_bkr_target else ids_s
    item = _noisy(rng, ct, 1.0, normalise=False, rows=ids_s)
    out = {"src": _noisy(rng, item, text_noise), "tgt": _noisy(rng, item, text_noise)}
    del item
    out["src_img"] = _noisy(rng, ci, 1.0, rows=ids_s)
    if separate_bkr_target:
        out["tgt2"] = _noisy(rng, _noisy(rng, ct, 1.0, normalise=False, rows=ids_t), text_noise)
    else:
        out["tgt2"] = out["tgt"]
    out["tgt_img"] = _noisy(rng, ci, 1.0, rows=ids_t)
    return out


CPU_TIMES: dict[int, float] = {}


def timeit(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Best wall time of ``repeat`` runs (best-of is the least load-sensitive statistic).

    The process CPU time (all threads) of the best run is kept in ``last_cpu()``: on a
    shared, loaded machine it is the more stable number for single-threaded code.
    """
    best, res, cpu = float("inf"), None, float("nan")
    for _ in range(max(1, repeat)):
        c0, t0 = time.process_time(), time.perf_counter()
        res = fn()
        wall, c = time.perf_counter() - t0, time.process_time() - c0
        if wall < best:
            best, cpu = wall, c
    CPU_TIMES[0] = cpu
    return best, res


def measure(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, float, Any]:
    """(best wall s, CPU s of that run, result)."""
    wall, res = timeit(fn, repeat)
    return wall, last_cpu(), res


def last_cpu() -> float:
    """CPU seconds (all threads of this process) of the best run of the last ``timeit``."""
    return CPU_TIMES.get(0, float("nan"))


def reset_peak_rss() -> bool:
    """Reset VmHWM (Linux: write 5 to /proc/self/clear_refs). False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mb() -> float | None:
    kb = _status_kb("VmRSS")
    return None if kb is None else kb / 1024


def hwm_mb() -> float | None:
    kb = _status_kb("VmHWM")
    return None if kb is None else kb / 1024


def maxrss_mb() -> float:
    """ru_maxrss of this process. NB Linux carries a forked parent's RSS high-water mark over
    fork+exec into the child's ru_maxrss, so children of a big parent over-report; the
    children here report ``peak_mb`` (VmHWM of their own address space) instead."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_child(module: str, args: list[str], timeout: float | None = None) -> dict[str, Any]:
    """Run ``python benchmarks/<module>.py args`` in a subprocess; it prints one JSON line last.

    Also adds ``children_maxrss_mb`` from ``getrusage(RUSAGE_CHILDREN)`` (a running maximum
    over all children so far, hence reported only as a cross-check).
    """
    cmd = [sys.executable, str(HERE / f"{module}.py"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ})
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["children_maxrss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return res


def machine_info() -> dict[str, str]:
    info = {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            key, _, val = line.partition(":")
            if key.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "Flags") and key.strip() != "Flags":
                info[key.strip()] = val.strip()
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as fh:
            info["MemTotal"] = f"{int(fh.readline().split()[1]) / 1024**2:.1f} GiB"
    except OSError:
        pass
    try:
        info["loadavg"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = "; ".join(
            f"{p.get('internal_api')} {p.get('version')} {p.get('architecture', '')} threads={p.get('num_threads')}"
            for p in threadpool_info()
        )
    except Exception:  # noqa: BLE001 - optional
        pass
    try:
        import torch

        info["torch"] = f"{torch.__version__} threads={torch.get_num_threads()} cuda={torch.cuda.is_available()}"
    except Exception:  # noqa: BLE001 - optional
        info["torch"] = "not importable"
    return info


def main_quick_n(doc: str | None, run: Callable[[bool, int], tuple[str, Any]]) -> None:
    """``python benchmarks/<script>.py [--quick] [--n N]``: print the script's report."""
    import argparse

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=10_000)
    a = ap.parse_args()
    print(run(a.quick, a.n)[0])


def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def sample_encoders(n: int, count: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """One SYNTHETIC paper-scale sample for ``evaluate_sample``: ``count`` stand-in encoders
    with the protocol's text dims (benchmarks/protocol_data.py), as the pipeline passes them
    (XLR queries = BkR queries), and the sample's source and target image features (1280-d)."""
    from protocol_data import ENCODERS

    encs, img = {}, None
    for i, (name, dim) in enumerate(list(ENCODERS.items())[:count]):
        d = make_data(n, d_text=dim, seed=i)
        encs[name] = {"xlr_src": d["src"], "xlr_tgt": d["tgt"], "bkr_src": d["src"], "bkr_tgt": d["tgt2"]}
        if img is None:
            img = (d["src_img"], d["tgt_img"])
    assert img is not None
    return encs, img[0], img[1]
