"""Where a report was made: the ``environment`` block of every ``metrics.json`` (the report
step's and the case study's), and how ``backretrieval verify`` shows two runs' blocks.

The block holds only what is the same for two runs on one machine, whatever ``--cores``
Snakemake was given (runs must be bit-identical across core counts): the numerical stack's
versions, the CPU model and its vector instruction set, the thread settings the run's
processes were configured with, and the hash of the environment lock (requirements.lock).
No timestamps, host names or paths.

``backretrieval verify`` never compares the block field by field (a run on another machine is
expected to differ here); it prints the two runs' blocks side by side and, on a FAIL, says
whether the CPUs or the package versions differ (:func:`environment_diff`,
:func:`environment_cause`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path

from .._util.versions import stack_versions

#: The key of the block in a metrics.json.
ENVIRONMENT = "environment"
#: The environment lock scripts/setup.sh installs with (repository root).
LOCK_FILE = "requirements.lock"
#: The thread variables the workflow sets for a job (Snakemake: the rule's ``threads``, fixed
#: per rule, never the cores given: see backretrieval._util.device.limit_threads).
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: x86 vector levels, highest first; the flags listed beside the level.
X86_LEVELS = ("avx512f", "avx2", "avx", "sse4_2")
X86_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512dq",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)
UNSET = "unset"
NOT_GIVEN = "not given"


# ------------------------------------------------------------------------------------ reading


def _cpuinfo(path: Path = Path("/proc/cpuinfo")) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpu_info(cpuinfo: str | None = None, machine: str | None = None) -> dict[str, str]:
    """``{"model", "machine", "isa", "isa_flags"}`` of this CPU (or of the given /proc/cpuinfo
    text): the model name (platform's processor where /proc/cpuinfo has none), the highest x86
    vector level (:data:`X86_LEVELS`; ``"none"`` below SSE4.2) or ``"sve"``/``"neon"`` on ARM,
    and the vector flags present (comma-separated, in :data:`X86_FLAGS` order)."""
    text = _cpuinfo() if cpuinfo is None else cpuinfo
    machine = platform.machine() if machine is None else machine
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key not in fields:  # the first processor's
            fields[key] = " ".join(value.split())
    model = fields.get("model name") or fields.get("hardware") or fields.get("cpu model") or ""
    if not model and fields.get("cpu implementer"):
        model = f"implementer {fields['cpu implementer']} part {fields.get('cpu part', '?')}"
    model = model or platform.processor() or machine or "unknown"
    flags = set((fields.get("flags") or fields.get("features") or "").split())
    if any(f in flags for f in X86_FLAGS) or machine in ("x86_64", "AMD64", "i686", "i386"):
        isa = next((lvl for lvl in X86_LEVELS if lvl in flags), "none")
        listed = [f for f in X86_FLAGS if f in flags]
    else:
        arm = [name for name, flag in (("neon", "asimd"), ("sve", "sve"), ("sve2", "sve2")) if flag in flags]
        isa = "sve" if "sve" in arm else "neon" if "neon" in arm else "none"
        listed = arm
    return {"model": model, "machine": machine, "isa": isa, "isa_flags": ",".join(listed) or "none"}


def lock_path() -> Path:
    """requirements.lock at the repository root this package runs from (editable install)."""
    return Path(__file__).resolve().parents[3] / LOCK_FILE


def lock_hash(path: Path | None = None) -> str:
    """The first 12 hex digits of the lock file's sha256, or ``"no lock"`` where there is none
    (the package not run from its repository)."""
    p = lock_path() if path is None else Path(path)
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest()[:12]
    except OSError:
        return "no lock"


def thread_settings(model_threads: int | None = None, environ=None) -> dict[str, str]:
    """The thread settings of the run: the :data:`THREAD_VARS` of this (the report) process as
    the workflow set them (the rule's ``threads``: 1; ``"unset"`` outside the workflow), and
    ``model_threads``, the torch/BLAS threads of the model jobs (config ``model_threads``,
    applied by limit_threads; ``"not given"`` when the step was not told)."""
    env = os.environ if environ is None else environ
    out = {v: str(env.get(v, UNSET)) for v in THREAD_VARS}
    out["model_threads"] = NOT_GIVEN if model_threads is None else str(int(model_threads))
    return out


def environment_block(model_threads: int | None = None, lock: Path | None = None) -> dict:
    """The ``environment`` block of a report's metrics.json (JSON shape in the module's doc)."""
    return {
        "packages": stack_versions(),
        "cpu": cpu_info(),
        "threads": thread_settings(model_threads),
        "lock": {"file": LOCK_FILE, "sha256_12": lock_hash(lock)},
    }


# ------------------------------------------------------------------------------------ comparing


def _flat(block) -> dict[str, str]:
    """The block's leaves as ``{"cpu/isa": "avx2", ...}`` (verify's flattening, values as text)."""
    from .verify import _flatten

    return {k: str(v) for k, v in _flatten(block).items()}


def read_environments(files: dict[str, bytes]) -> dict[str, dict[str, str]]:
    """``{metrics.json path: its environment block, flattened}`` of a reports folder's files."""
    out = {}
    for name, data in sorted(files.items()):
        if not name.endswith(".json"):
            continue
        try:
            obj = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(obj, dict) and isinstance(obj.get(ENVIRONMENT), dict):
            out[name] = _flat(obj[ENVIRONMENT])
    return out


def environment_diff(run_files: dict[str, bytes], ref_files: dict[str, bytes]) -> list[str]:
    """The two runs' environments side by side: per group of report files with the same pair
    of blocks, a table ``field | run | reference`` (``*`` marks a row that differs; a file
    without a block shows ``-``). Empty when neither side has a block."""
    run, ref = read_environments(run_files), read_environments(ref_files)
    groups: dict[tuple, list[str]] = {}
    for name in sorted(set(run) | set(ref)):
        a, b = run.get(name, {}), ref.get(name, {})
        groups.setdefault((tuple(sorted(a.items())), tuple(sorted(b.items()))), []).append(name)
    lines = []
    for (a_items, b_items), names in groups.items():
        a, b = dict(a_items), dict(b_items)
        keys = sorted(set(a) | set(b))
        width = max([len(k) for k in keys] + [len("field")])
        wa = max([len(a.get(k, "-")) for k in keys] + [len("run")])
        lines.append(f"environment of {', '.join(names)}:")
        lines.append(f"    {'field':<{width}} | {'run':<{wa}} | reference")
        for k in keys:
            va, vb = a.get(k, "-"), b.get(k, "-")
            mark = "*" if va != vb else " "
            lines.append(f"  {mark} {k:<{width}} | {va:<{wa}} | {vb}")
    return lines


def environment_cause(run_files: dict[str, bytes], ref_files: dict[str, bytes]) -> str:
    """One line for a FAIL: whether the two runs differ in CPU (model/ISA) or package
    versions (naming which), or in neither."""
    run, ref = read_environments(run_files), read_environments(ref_files)
    if not run or not ref:
        side = "the run" if not run else "the reference"
        return f"environment: {side} records no environment block (made before it was recorded): cannot tell"
    cpu, pkgs, other = set(), set(), set()
    for name in sorted(set(run) & set(ref)):
        a, b = run[name], ref[name]
        for k in set(a) | set(b):
            if a.get(k) == b.get(k):
                continue
            group, _, leaf = k.partition("/")
            if group == "cpu":
                cpu.add(f"{leaf} {a.get(k, '-')!s} vs {b.get(k, '-')!s}")
            elif group == "packages":
                pkgs.add(f"{leaf} {a.get(k, '-')} vs {b.get(k, '-')}")
            else:
                other.add(f"{k} {a.get(k, '-')} vs {b.get(k, '-')}")
    parts = []
    if cpu:
        parts.append("CPU (" + "; ".join(sorted(cpu)) + ")")
    if pkgs:
        parts.append("package versions (" + "; ".join(sorted(pkgs)) + ")")
    if not parts:
        tail = f" (they differ only in {'; '.join(sorted(other))})" if other else ""
        return f"environment: same CPU and package versions as the reference{tail}: the difference is not the machine's"
    tail = f"; also {'; '.join(sorted(other))}" if other else ""
    return "environment: the runs differ in " + " and ".join(parts) + tail
