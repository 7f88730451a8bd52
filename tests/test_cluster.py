"""Cluster execution through Snakemake's own executors (no home-made runner).

* `scripts/fake_scheduler/` is a SIMULATED local batch scheduler (asynchronous submit with job
  ids, CPU-slot queue, status polling, cancel); its protocol is tested directly first.
* The reduced pipeline (`tests/data/cluster.yaml`: synthetic data, offline encoders) is run
  with `--profile profiles/cluster-generic --profile profiles/grouped` and seed groups
  (`seed_group_size=1`): every job is submitted to the fake scheduler, the rules that are not
  grouped one submission each (with their threads and memory), the samples, the seed-group
  parts and the gathers packed into group jobs. It runs in its own working directory with its
  own embedding cache and is compared with the session's local run of the same config
  (`cluster_reference_run` in conftest.py, `--profile profiles/local`, one metrics job per
  direction): the metric CSVs and reports/cluster/metrics.json must be byte-identical.
  (tests/test_slurm.py runs the `grouped` layer without seed groups on a real SLURM: sample and
  every direction's metrics in one group job.)
* All profiles (local, slurm, cluster-generic, +grouped) must parse; a dry run shows the
  resources they set.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import time
from pathlib import Path

import pytest

import snake
from snake import PROFILES, ROOT, run_snakemake

FAKE = ROOT / "scripts" / "fake_scheduler"
CONFIG = ROOT / "tests" / "data" / "cluster.yaml"
RUN = "cluster"  # run_name in CONFIG
# what the cluster run submits: one job per rule that is not grouped (prepare, check, 3
# encoders, images, report), and the group jobs of profiles/grouped with seed_group_size=1:
# every direction's sample in one, 3 directions x 2 seeds = 6 parts 4 per job (2), every
# direction's gather in one
SINGLE = {"prepare_dataset": 1, "check_dataset": 1, "embed_text": 3, "embed_images": 1, "report": 1}
GROUPS = {"evaluate": 1, "metric_parts": 2, "gather": 1}
N_JOBS = sum(SINGLE.values()) + sum(GROUPS.values())


def _spool(wd: Path) -> list[dict[str, str]]:
    """The fake scheduler's submission log: one row per submitted job."""
    log = wd / ".fake_scheduler" / "submitted.tsv"
    if not log.exists():
        return []
    rows = [line.split("\t") for line in log.read_text().splitlines() if line]
    return [dict(id=r[0], name=r[1], cpus=r[2], mem_mb=r[3]) for r in rows]


# ---------------------------------------------------------------------------------------
# the fake scheduler's protocol (fast, no Snakemake)
# ---------------------------------------------------------------------------------------
def _sched(cmd: str, *args: str, cwd: Path, check: bool = True, **env: str) -> subprocess.CompletedProcess:
    res = subprocess.run(
        [str(FAKE / cmd), *args], cwd=cwd, capture_output=True, text=True, env=snake.env(**env), timeout=60
    )
    if check:
        assert res.returncode == 0, (cmd, args, res.stdout, res.stderr)
    return res


def _live_group(pgid: int) -> list[int]:
    """Non-zombie processes of a process group (Linux /proc)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            live.append(int(stat.parent.name))
    return live


def _wait_status(jid: str, cwd: Path, want: str, timeout: float = 20.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if _sched("status", jid, cwd=cwd).stdout.strip() == want:
            return time.monotonic() - t0
        time.sleep(0.1)
    raise AssertionError(f"job {jid} not {want} after {timeout}s")


def test_fake_scheduler_submit_is_asynchronous_and_status_follows_exit_code(tmp_path):
    # the job cannot finish before the gate file exists, and the test makes it only after submit
    # returned: a submit that waited for its job would never return (_sched's timeout fails it)
    gate = tmp_path / "gate"
    (tmp_path / "ok.sh").write_text(f"while [ ! -e '{gate}' ]; do sleep 0.05; done\necho out-$FAKE_SCHED_JOB_ID\n")
    (tmp_path / "bad.sh").write_text("echo oops >&2\nexit 3\n")
    ok = _sched("submit", "--name", "ok", "ok.sh", cwd=tmp_path).stdout
    assert re.fullmatch(r"\d+\n", ok)
    ok = ok.strip()
    (tmp_path / "ok.sh").unlink()  # the scheduler keeps its own copy, like sbatch
    assert _sched("status", ok, cwd=tmp_path).stdout == "running\n"
    bad = _sched("submit", "bad.sh", cwd=tmp_path).stdout.strip()
    assert bad != ok
    _wait_status(bad, tmp_path, "failed")
    assert _sched("status", ok, cwd=tmp_path).stdout == "running\n"  # still held by its gate
    gate.touch()
    _wait_status(ok, tmp_path, "success")
    jobs = tmp_path / ".fake_scheduler" / "jobs"
    assert (jobs / ok / "stdout").read_text() == f"out-{ok}\n"
    assert (jobs / bad / "stderr").read_text() == "oops\n"
    assert (jobs / bad / "exitcode").read_text().strip() == "3"
    assert [r["name"] for r in _spool(tmp_path)] == ["ok", "job"]


def test_fake_scheduler_queues_by_cpu_slots_and_cancels(tmp_path):
    (tmp_path / "a.sh").write_text("sleep 1\n")
    (tmp_path / "long.sh").write_text("sleep 60\n")
    spool = tmp_path / "spool"
    env = dict(FAKE_SCHED_CPUS="1", FAKE_SCHED_SPOOL=str(spool))
    a = _sched("submit", "--cpus", "1", "a.sh", cwd=tmp_path, **env).stdout.strip()
    b = _sched("submit", "--cpus", "1", "long.sh", cwd=tmp_path, **env).stdout.strip()
    # with one CPU slot, b may only start after a has ended
    deadline = time.monotonic() + 20
    while not (spool / "jobs" / b / "started").exists():
        assert time.monotonic() < deadline, "queued job never started"
        time.sleep(0.1)
    a_end = float((spool / "jobs" / a / "ended").read_text())
    b_start = float((spool / "jobs" / b / "started").read_text())
    assert b_start >= a_end
    pid = int((spool / "jobs" / b / "pid").read_text())
    assert _sched("status", b, cwd=tmp_path, **env).stdout == "running\n"
    _sched("cancel", b, cwd=tmp_path, **env)
    assert _sched("status", b, cwd=tmp_path, **env).stdout == "failed\n"
    if Path("/proc/self/stat").exists():  # the job's whole process group (run-job, sh, sleep) is gone
        time.sleep(0.3)
        assert not _live_group(pid), "cancelled job still running"
    # unknown ids and bad input are errors, not a silent "failed"
    res = _sched("status", "999", cwd=tmp_path, check=False, **env)
    assert res.returncode == 1 and "unknown job id" in res.stderr
    res = _sched("submit", "missing.sh", cwd=tmp_path, check=False, **env)
    assert res.returncode != 0 and "missing.sh" in res.stderr
    res = _sched("submit", "--cpus", "x", "a.sh", cwd=tmp_path, check=False, **env)
    assert res.returncode == 2 and "--cpus" in res.stderr


# ---------------------------------------------------------------------------------------
# profiles parse (dry runs, a few seconds each)
# ---------------------------------------------------------------------------------------
def _dry(tmp_path: Path, *profiles: str, extra: tuple[str, ...] = ()) -> str:
    args = [a for p in profiles for a in ("--profile", str(PROFILES / p))] + list(extra)
    res = run_snakemake(tmp_path / "wd", *args, "--dry-run", configfile=CONFIG, timeout=300)
    return res.stdout + res.stderr


@pytest.mark.slow
def test_cluster_generic_and_grouped_profiles_dry_run(tmp_path):
    out = _dry(tmp_path, "cluster-generic")
    assert "Group job" not in out and re.search(r"total\s+12", out)
    out = _dry(tmp_path, "cluster-generic", "grouped")
    groups = re.findall(r"Group job evaluate", out)
    assert len(groups) == 1, out[-3000:]  # sample + 3 directions' metrics in one submission


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
    reason="snakemake-executor-plugin-slurm not installed",
)
def test_slurm_profile_dry_run_sets_gpu_and_memory(tmp_path):
    """Memory and runtime per rule; a GPU only where the installed torch is a CUDA build (the
    profile's `gpu` is an expression evaluated when the jobs are built); threads are the rules'
    own (no set-threads: the model jobs claim the threads they compute with)."""
    import torch

    gpu = int(torch.version.cuda is not None)
    # a dry run executes nothing; --cores 8 only lifts the dry-run executor's cap on threads
    out = _dry(tmp_path, "slurm", extra=("--cores", "8"))
    blocks = {m.group(1): m.group(2) for m in re.finditer(r"^rule (\w+):\n((?:    .*\n)+)", out, re.M)}
    assert {"embed_text", "embed_images", "metrics"} <= set(blocks), out[-3000:]
    assert re.search(rf"\bgpu={gpu}\b", blocks["embed_text"]) and "mem_mb=16000" in blocks["embed_text"]
    assert re.search(rf"\bgpu={gpu}\b", blocks["embed_images"])
    assert "threads:" not in blocks["embed_text"]  # char n-grams claim 1 thread (not printed)
    assert "mem_mb=8000" in blocks["metrics"] and "runtime=60" in blocks["metrics"]
    assert "gpu=" not in blocks["metrics"]


# ---------------------------------------------------------------------------------------
# the real pipeline: local vs fake cluster vs grouped
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def runs(tmp_path_factory, cluster_reference_run):
    """The reduced pipeline on the fake cluster, grouped, with seed groups; the local run is the
    session's shared one (``cluster_reference_run``: --profile profiles/local, read-only),
    waited for meanwhile."""
    cluster = tmp_path_factory.mktemp("cluster")
    proc = snake.start(
        cluster,
        *("--profile", str(PROFILES / "cluster-generic"), "--profile", str(PROFILES / "grouped")),
        *("--config", "seed_group_size=1"),
        configfile=CONFIG,
    )
    local = cluster_reference_run.path(proc)
    log = snake.finish({"cluster": proc})["cluster"]
    return {"local": local, "cluster": cluster, "cluster_log": log, "cluster_spool": _spool(cluster)}


@pytest.mark.slow
def test_cluster_results_are_byte_identical_to_local(runs):
    """One metrics_part job per (direction, seed) on the cluster, one metrics job per direction
    locally: the same bytes."""
    local, cluster = snake.metric_results(runs["local"], RUN), snake.metric_results(runs["cluster"], RUN)
    assert len(local) == 3 + 1  # 3 directions + metrics.json
    assert local == cluster
    assert len(sorted((runs["cluster"] / "artifacts" / RUN / "metric_parts").rglob("*.csv"))) == 3 * 2
    assert not (runs["local"] / "artifacts" / RUN / "metric_parts").exists()


@pytest.mark.slow
def test_every_job_went_through_the_scheduler(runs):
    spool = runs["cluster_spool"]
    names = [r["name"] for r in spool]
    want = {f"smk-{rule}": n for rule, n in SINGLE.items()} | {f"smk-group-{g}": n for g, n in GROUPS.items()}
    assert {n: names.count(n) for n in set(names)} == want
    assert len(spool) == N_JOBS
    # threads/resources reached the scheduler (mem_mb 4000 in the embedding rules). embed_text
    # claims the encoder's fixed inference threads (encoders.inference_threads: 1 for char
    # n-grams and random); embed_images the backbone's (images.backbone_threads: default 1)
    emb = [r for r in spool if r["name"] == "smk-embed_text"]
    assert {(r["cpus"], r["mem_mb"]) for r in emb} == {("1", "4000")}
    img = [r for r in spool if r["name"] == "smk-embed_images"]
    assert [(r["cpus"], r["mem_mb"]) for r in img] == [("1", "4000")]
    # a group job asks for what its components need together, within the grouped profile's
    # per-submission cap (cores: 4): the 6 one-thread parts packed 4 + 2
    parts = [r for r in spool if r["name"] == "smk-group-metric_parts"]
    assert sorted(int(r["cpus"]) for r in parts) == [2, 4]
    jobs = runs["cluster"] / ".fake_scheduler" / "jobs"
    for r in spool:
        assert (jobs / r["id"] / "exitcode").read_text().strip() == "0", r
    # Snakemake saw the scheduler's ids and ran nothing itself but the target rule; the local
    # run used no scheduler
    assert len(re.findall(r"Submitted (?:group )?job \S+ with external jobid '\d+'", runs["cluster_log"])) == N_JOBS
    assert not re.search(r"^localrule (?!all:)", runs["cluster_log"], re.M)
    assert not (runs["local"] / ".fake_scheduler").exists()
