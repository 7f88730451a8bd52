#!/usr/bin/env python
"""`make status`: what Snakemake and DVC would rerun for one run configuration, a line each.

python scripts/status.py [CONFIG]     (default params.yaml)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from dvc_stages import DEFAULT, stage_targets  # noqa: E402


def snakemake_line(config: str) -> str:
    cmd = ["snakemake", "-n", *([] if config == DEFAULT else ["--configfile", config])]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if res.returncode:
        return f"snakemake: the plan fails: {(res.stderr.strip().splitlines() or ['?'])[-1]}"
    table = re.search(r"^job\s+count\n[-\s]+\n(.*?)^total\s+(\d+)", res.stdout, re.S | re.M)
    if table is None:
        return "snakemake: nothing to do"
    jobs = [line.split() for line in table.group(1).splitlines() if line.strip()]
    runs = ", ".join(f"{rule} {n}" for rule, n in jobs if rule != "all")
    reasons = sorted(set(re.findall(r"^\s*reason: ([^;:\n]+)", res.stdout, re.M)))
    return f"snakemake: {int(table.group(2)) - 1} jobs to run ({runs}); reasons: {'; '.join(reasons)}"


def dvc_lines(config: str) -> list[str]:
    targets = stage_targets(config)
    res = subprocess.run(["dvc", "status", "--json", *targets], cwd=ROOT, capture_output=True, text=True)
    if res.returncode:
        return [f"dvc: status fails: {(res.stderr.strip().splitlines() or ['?'])[-1]}"]
    status = json.loads(res.stdout or "{}")
    if not status:
        return [f"dvc: every stage of {config} is up to date"]
    out = []
    for stage, entries in status.items():
        kinds: Counter = Counter()
        for entry in entries:
            if isinstance(entry, str):
                kinds[entry] += 1
                continue
            for what, files in entry.items():
                for path, state in files.items() if isinstance(files, dict) else [("", files)]:
                    kind = "params" if str(path).endswith(".yaml") else what.removeprefix("changed ")
                    for one in state.values() if isinstance(state, dict) else [state]:
                        kinds[f"{kind} {one}"] += 1
        absent = any(k.startswith(("outs deleted", "outs not in cache", "deps deleted")) for k in kinds)
        todo = "make pull (from the remote) or make run" if absent else "make run (or dvc repro)"
        said = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in sorted(kinds.items()))
        out.append(f"dvc: {stage.split(':')[-1]}: {said} -> {todo}")
    return out


def main(argv: list[str]) -> int:
    config = argv[0] if argv else DEFAULT
    print(snakemake_line(config))
    print("\n".join(dvc_lines(config)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
