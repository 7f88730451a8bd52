"""The SLURM profile against a REAL Slurm (Debian's slurm-wlm, started by scripts/slurm_local.sh).

The reduced pipeline (`tests/data/cluster.yaml`: synthetic data, offline encoders) runs locally
(`--profile profiles/local`: the session's shared run, `cluster_reference_run` in conftest.py)
and through `--profile profiles/slurm --profile profiles/grouped` and
snakemake-executor-plugin-slurm: every job is an sbatch submission to slurmctld, run by slurmd
(jobstep plugin, srun), the sample and every direction's metrics packed into one group job
(tests/test_cluster.py runs the grouped layer with seed groups on the simulated scheduler).
The metric CSVs and reports/metrics.json must be byte-identical, every job Snakemake ran must
have a SLURM job id, and every one of those ids must appear COMPLETED in the cluster's
job-completion log (written by slurmctld, not by Snakemake).

The cluster has no slurmdbd, so the plugin polls with squeue (`--slurm-status-command squeue`;
the cluster keeps finished jobs visible for an hour). The test starts the cluster (one node)
when it is not running and stops it afterwards; it is skipped, with the script's message, only
where the services cannot be installed or started (no root, another Slurm on the machine).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import snake
from snake import PROFILES, ROOT

SCRIPT = ROOT / "scripts" / "slurm_local.sh"
CONFIG = ROOT / "tests" / "data" / "cluster.yaml"
RUN = "cluster"  # run_name in CONFIG
# the plugin's options for a cluster without accounting: poll squeue, no account, no waiting
SLURM_OPTS = (
    "--slurm-status-command",
    "squeue",
    "--slurm-no-account",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--seconds-between-status-checks",
    "2",
    "--latency-wait",
    "5",
)

pytestmark = pytest.mark.slow


def _script(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT
    )


@pytest.fixture(scope="module")
def slurm_env(tmp_path_factory):
    env = snake.env()
    running = _script("status", env=env, timeout=60).returncode == 0
    if not running:
        res = _script("start", "1", env=env)
        if res.returncode == 3:
            pytest.skip(f"a local SLURM cluster cannot start here: {res.stderr.strip()}")
        assert res.returncode == 0, res.stdout + res.stderr
    conf = _script("env", env=env).stdout.strip().removeprefix("export SLURM_CONF=")
    env["SLURM_CONF"] = conf
    yield env
    if not running:  # stop only what this test started
        _script("stop", env=env, timeout=120)


@pytest.fixture(scope="module")
def runs(slurm_env, tmp_path_factory, cluster_reference_run):
    """The SLURM run; the local run is the session's shared one (``cluster_reference_run``:
    --profile profiles/local, read-only), waited for meanwhile."""
    slurm = tmp_path_factory.mktemp("slurm")
    jobcomp = Path(slurm_env["SLURM_CONF"]).parent / "log" / "jobcomp.txt"
    seen = jobcomp.stat().st_size if jobcomp.exists() else 0  # earlier runs' records
    proc = snake.start(
        slurm,
        *("--profile", str(PROFILES / "slurm"), "--profile", str(PROFILES / "grouped")),
        *SLURM_OPTS,
        configfile=CONFIG,
        environ=slurm_env,
        cwd=slurm,
    )
    local = cluster_reference_run.path(proc)
    log = snake.finish({"slurm": proc})["slurm"]
    records = jobcomp.read_bytes()[seen:].decode()
    return {"local": local, "slurm": slurm, "log": log, "jobcomp": records}


def test_slurm_results_are_byte_identical_to_local(runs):
    local, slurm = snake.metric_results(runs["local"], RUN), snake.metric_results(runs["slurm"], RUN)
    assert len(local) == 3 + 1  # 3 directions + metrics.json
    assert local == slurm


def _submissions(log: str) -> list[tuple[str, str]]:
    """(SLURM job id, rule_RULE or group_GROUP_RULES) of every submission, from the plugin's
    log lines (the log folder it names per job)."""
    pat = r"has been submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/((?:rule|group)_\w+)/"
    return re.findall(pat, log)


def _jobcomp(text: str) -> dict[str, tuple[str, str, str]]:
    """slurmctld's job-completion log: job id -> (state, node, TRES)."""
    pat = r"^JobId=(\d+) .*?JobState=(\w+) .*?NodeList=(\S+) .*?Tres=(\S+)"
    return {m.group(1): m.group(2, 3, 4) for m in re.finditer(pat, text, re.M)}


def test_every_job_went_through_sbatch(runs):
    subs = _submissions(runs["log"])
    names = sorted(name for _, name in subs)
    # every rule instance except the target rule `all` (a localrule) is in a submission; the tiny
    # jobs are packed by profiles/grouped: evaluate = the sample and every direction's metrics
    assert names == sorted(
        ["rule_prepare_dataset", "rule_check_dataset", "rule_embed_images", "rule_report"]
        + ["rule_embed_text"] * 3
        + ["group_evaluate_metrics_sample"]
    ), names
    assert not re.search(r"^localrule (?!all:)", runs["log"], re.M)
    # slurmctld's own record: each of those jobs ran on a slurmd node and COMPLETED
    done = _jobcomp(runs["jobcomp"])
    assert {i: done.get(i, ("missing",))[:1] for i, _ in subs} == {i: ("COMPLETED",) for i, _ in subs}
    assert all(re.fullmatch(r"node\d+", done[i][1]) for i, _ in subs)


def test_profile_requests_no_gpu_with_a_cpu_torch(runs):
    import torch

    if torch.version.cuda is not None:
        pytest.skip("a CUDA build of torch is installed: the profile asks for GPUs (this cluster has none)")
    done = _jobcomp(runs["jobcomp"])
    tres = {done[i][2] for i, _ in _submissions(runs["log"])}
    assert tres and not any("gpu" in t for t in tres), tres
