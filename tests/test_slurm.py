"""The SLURM profile against a REAL Slurm (Debian's slurm-wlm, started by scripts/slurm_local.sh).

The reduced pipeline (`tests/data/cluster.yaml`: synthetic data, offline encoders) runs locally
(`--profile profiles/local`: the session's shared run, `cluster_reference_run` in conftest.py)
and through `--profile profiles/slurm --profile profiles/grouped` and
snakemake-executor-plugin-slurm (the session's shared `slurm_run`): every job is an sbatch
submission to slurmctld, run by slurmd (jobstep plugin, srun), the sample and every
direction's metrics packed into one group job (tests/test_cluster.py runs the grouped layer
with seed groups on the simulated scheduler). The metric CSVs and reports/cluster/metrics.json must be
byte-identical, every job Snakemake ran must have a SLURM job id, and every one of those ids
must appear COMPLETED in the cluster's job-completion log (written by slurmctld, not by
Snakemake) with the run's working directory.

The cluster has no slurmdbd, so the plugin polls with squeue (`--slurm-status-command squeue`;
the cluster keeps finished jobs visible for an hour). When the cluster already runs at the
session's start (`.ci/run` starts it before the tests), the SLURM run starts then, in the
background, so its waits on the scheduler overlap other tests. Otherwise this file starts a
one-node cluster, runs the pipeline on it and stops the cluster afterwards; it is skipped,
with the script's message, only where the services cannot be installed or started (no root,
another Slurm on the machine).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import snake

RUN = "cluster"  # run_name in tests/data/cluster.yaml

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slurm_env():
    """The environment of a command on the local test cluster, started here (and stopped
    afterwards) when it does not run."""
    running = snake.slurm_environ()
    if running is not None:
        yield running
        return
    res = snake.slurm_local("start", "1")
    if res.returncode == 3:
        pytest.skip(f"a local SLURM cluster cannot start here: {res.stderr.strip()}")
    assert res.returncode == 0, res.stdout + res.stderr
    try:
        environ = snake.slurm_environ()
        assert environ is not None, "scripts/slurm_local.sh started a cluster that `status` does not report"
        yield environ
    finally:
        snake.slurm_local("stop", timeout=120)


@pytest.fixture(scope="module")
def runs(slurm_env, slurm_run, cluster_reference_run):
    """The SLURM run and the local one (both the session's, read-only), with the SLURM run's log
    and the job-completion records of its working directory."""
    slurm = slurm_run.path()
    local = cluster_reference_run.path()
    jobcomp = Path(slurm_env["SLURM_CONF"]).parent / "log" / "jobcomp.txt"
    records = "".join(
        line
        for line in jobcomp.read_text(encoding="utf-8").splitlines(keepends=True)
        if (m := re.search(r" WorkDir=(\S+)", line)) and Path(m.group(1)) == slurm
    )
    return {"local": local, "slurm": slurm, "log": slurm_run.log.read_text(encoding="utf-8"), "jobcomp": records}


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
