"""The one way the tests run Snakemake: ``run_snakemake`` (a finished run, forked from a Snakemake
imported once per test process: tests/preimported.py), ``start`` (the ``snakemake`` program in
the background, for concurrent runs, an interruption or a shared run), both built from
``command`` and ``env``; ``rendered_step``: a step's command line as the workflow itself renders
it (a dry run), for tests that run one step in-process; ``metric_results``: the digests of what a
run wrote that runs of one config on different executors must agree on; and ``slurm_local`` /
``slurm_environ``: the single-host SLURM cluster of scripts/slurm_local.sh.

``env()`` is the environment of every test run: this interpreter's bin folder first on PATH,
this checkout's ``src`` first on PYTHONPATH (``src=`` for a copy of the checkout), the Hub
offline, and no inherited profile or scheduler settings (SNAKEMAKE_PROFILE, a SLURM or fake
scheduler's variables) that would change what a run does.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import yaml

import preimported

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SNAKEFILE = ROOT / "Snakefile"
PROFILES = ROOT / "profiles"
_DROPPED = ("SNAKEMAKE_PROFILE", "SLURM_", "SBATCH_", "FAKE_SCHED_", "CLUSTER_SCHEDULER")


def env(src: Path = ROOT / "src", **extra: str) -> dict[str, str]:
    """The environment of a Snakemake (or CLI) subprocess, with ``extra`` variables on top."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    out["PATH"] = f"{BIN}{os.pathsep}{out.get('PATH', '')}"
    out["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])])
    out.setdefault("HF_HUB_OFFLINE", "1")
    out.update(extra)
    return out


def command(
    workdir: Path | None,
    *args: str,
    configfile: Path | str | None = None,
    snakefile: Path | None = SNAKEFILE,
    cores: int | str | None = None,
) -> list[str]:
    """``snakemake [-s SNAKEFILE] [-d WORKDIR] [--cores N] [--configfile CFG] ARGS``: no ``-s``
    with ``snakefile=None`` (the one in the current directory), no ``-d`` with ``workdir=None``.

    ``cores=1`` adds ``--force-use-threads``: Snakemake's local executor otherwise starts a new
    ``python -m snakemake`` (3-5 s of imports and parsing) for every job with a shadow directory,
    because a shadow job changes the process's working directory; on one core one job runs at a
    time, so running it in Snakemake's thread pool is safe, and the job still runs inside its
    shadow directory (tests/test_dag.py checks an undeclared read fails either way)."""
    cmd = [str(BIN / "snakemake")]
    if snakefile is not None:
        cmd += ["-s", str(snakefile)]
    if workdir is not None:
        cmd += ["-d", str(workdir)]
    if cores is not None:
        cmd += ["--cores", str(cores)]
        if str(cores) == "1":
            cmd += ["--force-use-threads"]
    if configfile is not None:
        cmd += ["--configfile", str(configfile)]
    return [*cmd, *args]


def _failure(cmd: list[str], rc: int | None, stdout: str, stderr: str = "") -> str:
    return (
        f"{' '.join(cmd)} exited {rc}\n--- stdout (last 3000 characters) ---\n{stdout[-3000:]}"
        f"\n--- stderr (last 5000 characters) ---\n{stderr[-5000:]}"
    )


def run_snakemake(
    workdir: Path | None,
    *args: str,
    configfile: Path | str | None = None,
    snakefile: Path | None = SNAKEFILE,
    cores: int | str | None = None,
    env_extra: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 900,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Run Snakemake to the end; with ``check`` (the default) a non-zero exit fails the test
    with the command and the tails of its output. ``environ`` replaces ``env()`` (a test's own
    environment, e.g. one with SLURM_CONF); ``env_extra`` is added on top.

    The run is a process of its own, forked from a Snakemake imported once per test process
    (tests/preimported.py); ``start`` runs the ``snakemake`` program itself."""
    cmd = command(workdir, *args, configfile=configfile, snakefile=snakefile, cores=cores)
    e = dict(environ if environ is not None else env())
    e.update(env_extra or {})
    res = _PREIMPORTED.run(cmd, env=e, cwd=cwd, timeout=timeout)
    if check:
        assert res.returncode == 0, _failure(cmd, res.returncode, res.stdout, res.stderr)
    return res


_PREIMPORTED = preimported.Server()


def start(
    workdir: Path | None,
    *args: str,
    configfile: Path | str | None = None,
    snakefile: Path | None = SNAKEFILE,
    cores: int | str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    quiet: bool = False,
    new_session: bool = False,
    log: Path | None = None,
) -> subprocess.Popen:
    """Start Snakemake in the background (stdout and stderr together: piped, into the file
    ``log``, or nowhere with ``quiet``); ``finish`` waits for it."""
    cmd = command(workdir, *args, configfile=configfile, snakefile=snakefile, cores=cores)
    with contextlib.ExitStack() as files:  # a log file is closed here; the child keeps its own descriptor
        if log is not None:
            out, err = files.enter_context(open(log, "w", encoding="utf-8")), subprocess.STDOUT
        else:
            out = subprocess.DEVNULL if quiet else subprocess.PIPE
            err = subprocess.DEVNULL if quiet else subprocess.STDOUT
        return subprocess.Popen(
            cmd,
            stdout=out,
            stderr=err,
            text=True,
            env=dict(environ if environ is not None else env()),
            cwd=cwd,
            start_new_session=new_session,
        )


def finish(procs: Mapping[str, subprocess.Popen], timeout: float = 900) -> dict[str, str]:
    """Wait for every started run; each must succeed. Returns each run's output by name."""
    logs = {name: p.communicate(timeout=timeout)[0] or "" for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, f"{name}: " + _failure(list(map(str, p.args)), p.returncode, logs[name])
    return logs


def slurm_local(
    *args: str, environ: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """``bash scripts/slurm_local.sh ARGS`` (the single-host test cluster) from the repository root."""
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "slurm_local.sh"), *args],
        capture_output=True,
        text=True,
        env=dict(environ if environ is not None else env()),
        timeout=timeout,
        cwd=ROOT,
    )


def slurm_environ() -> dict[str, str] | None:
    """``env()`` with SLURM_CONF naming the local test cluster's config when that cluster runs,
    else None."""
    e = env()
    if slurm_local("status", environ=e, timeout=60).returncode != 0:
        return None
    e["SLURM_CONF"] = slurm_local("env", environ=e, timeout=60).stdout.strip().removeprefix("export SLURM_CONF=")
    return e


def metric_results(wd: Path, run: str) -> dict[str, str]:
    """sha256 of a finished run's metric CSVs and ``reports/<run>/metrics.json`` (a config whose
    reports_dir is ``reports/<run_name>``), keyed by path relative to ``wd``: what runs of one
    config on different executors must agree on."""
    files = sorted((wd / "artifacts" / run / "metrics").rglob("*.csv")) + [wd / "reports" / run / "metrics.json"]
    return {str(p.relative_to(wd)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


# ------------------------------------------------------------------ the workflow's own commands
_RENDERED: dict[tuple[str, tuple[str, ...]], list[tuple[str, dict[str, str], list[str]]]] = {}
_WD = "@WORKDIR@"  # the working directory in a cached rendering


def _parse_dry_run(text: str) -> list[tuple[str, dict[str, str], list[str]]]:
    """(rule, wildcards, argv) of every job with a command in the output
    of ``snakemake --dry-run --printshellcmds``: leading ``VAR=value`` assignments (thread caps)
    and the log redirection are dropped."""
    jobs = []
    for block in re.split(r"^(?=(?:local)?rule \w+:$)", text, flags=re.M):
        head = re.match(r"(?:local)?rule (\w+):$", block, re.M)
        cmd = re.search(r"^Shell command: (.*(?:\n(?!\n).+)*)", block, re.M)
        if not head or not cmd or cmd.group(1).strip() == "None":  # a target rule: no command
            continue
        wc = re.search(r"^\s+wildcards: (.*)$", block, re.M)
        wildcards = dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}
        argv = shlex.split(cmd.group(1))
        while argv and re.fullmatch(r"[A-Z_]+=\S*", argv[0]):
            argv.pop(0)
        if ">" in argv:
            argv = argv[: argv.index(">")]
        jobs.append((head.group(1), wildcards, argv))
    return jobs


def rendered_step(
    cfg: dict, rule: str, workdir: Path | None = None, targets: tuple[str, ...] = (), **wildcards: str
) -> list[str]:
    """The argv (after ``backretrieval``) of the one job of ``rule`` (with these wildcards) that
    the workflow itself renders for ``cfg`` in ``workdir`` (default: the current directory):
    ``snakemake --dry-run --printshellcmds --forceall`` on ``targets`` (default: the default
    target), for tests that run a step in-process as the rule would run it.

    The dry run works in a scratch folder whose entries link to ``workdir``'s (so it writes no
    ``.snakemake/`` there); its absolute location in the commands is replaced by ``workdir``'s.
    One dry run per config (its paths under ``workdir`` taken as relative) and targets."""
    wd = str((workdir or Path.cwd()).resolve())
    text = yaml.safe_dump(cfg, sort_keys=True)
    key = (text.replace(wd, _WD), tuple(targets))  # the same config in another test's folder: reused
    if key not in _RENDERED:
        with tempfile.TemporaryDirectory(prefix="rendered-") as tmp:
            scratch = Path(tmp) / "wd"
            scratch.mkdir()
            for entry in Path(wd).iterdir():
                (scratch / entry.name).symlink_to(entry)
            (Path(tmp) / "cfg.yaml").write_text(text, encoding="utf-8")
            res = run_snakemake(
                scratch, "--dry-run", "--printshellcmds", "--forceall", *targets, configfile=Path(tmp) / "cfg.yaml"
            )
            _RENDERED[key] = _parse_dry_run(res.stdout.replace(str(scratch), _WD).replace(wd, _WD))
    jobs = [(r, wc, [a.replace(_WD, wd) for a in argv]) for r, wc, argv in _RENDERED[key]]
    found = [argv for r, wc, argv in jobs if r == rule and wildcards.items() <= wc.items()]
    rules = sorted({(r, tuple(wc.items())) for r, wc, _ in jobs})
    assert len(found) == 1, f"{len(found)} jobs of rule {rule} with {wildcards} in the dry run: {rules}"
    assert found[0][0] == "backretrieval", f"rule {rule} runs {found[0]}, not the backretrieval CLI"
    return found[0][1:]
