"""The SLURM profile's retry gets more memory and time: every mem_mb and runtime in
profiles/slurm/config.yaml is `<base> * attempt`, and Snakemake evaluates it per attempt (checked
by a local run whose job fails once, with the profile's expressions passed as Snakemake takes them)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from snake import ROOT

PROFILE = ROOT / "profiles/slurm/config.yaml"


def _resources() -> tuple[dict, dict]:
    prof = yaml.safe_load(PROFILE.read_text())
    return prof["default-resources"], prof["set-resources"]


def test_every_memory_and_runtime_scales_with_the_attempt():
    default, per_rule = _resources()
    assert yaml.safe_load(PROFILE.read_text())["retries"] >= 1
    for where, res in [("default-resources", default), *per_rule.items()]:
        for key in ("mem_mb", "runtime"):
            if key in res:
                base, times, attempt = str(res[key]).split()
                assert (times, attempt) == ("*", "attempt") and base.isdigit(), f"{where}.{key}: {res[key]!r}"


def test_the_retry_runs_with_twice_the_memory_and_runtime(tmp_path):
    snakemake = Path(sys.executable).parent / "snakemake"
    if not snakemake.exists() and not shutil.which("snakemake"):
        pytest.skip("snakemake not installed")
    default, per_rule = _resources()
    (tmp_path / "Snakefile").write_text(
        "rule all:\n"
        '    input: "metrics.txt", "other.txt"\n'
        "rule metrics:\n"
        '    output: "metrics.txt"\n'
        '    shell: "test -e tried || {{ touch tried; exit 1; }}; echo {resources.mem_mb} {resources.runtime} > {output}"\n'
        "rule other:\n"
        '    output: "other.txt"\n'
        '    shell: "echo {resources.mem_mb} {resources.runtime} > {output}"\n'
    )
    metrics = per_rule["metrics"]
    cmd = [
        str(snakemake if snakemake.exists() else "snakemake"),
        "--cores",
        "1",
        "--retries",
        "1",
        "--default-resources",
        *(f"{k}={default[k]}" for k in ("mem_mb", "runtime")),
        "--set-resources",
        *(f"metrics:{k}={metrics[k]}" for k in ("mem_mb", "runtime")),
    ]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    base = {k: int(str(metrics[k]).split()[0]) for k in ("mem_mb", "runtime")}
    assert (tmp_path / "metrics.txt").read_text().split() == [str(2 * base["mem_mb"]), str(2 * base["runtime"])]
    dflt = [str(default[k]).split()[0] for k in ("mem_mb", "runtime")]
    assert (tmp_path / "other.txt").read_text().split() == dflt  # first attempt: the base
