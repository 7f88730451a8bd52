"""Shared test settings and fixtures.

Hypothesis runs derandomized under CI (CI=true) so a CI run is reproducible; locally it
explores new examples every run. Bytecode caching is on for the session and every process it
starts, whatever PYTHONDONTWRITEBYTECODE says (see below).

``synthetic_dataset`` generates a SYNTHETIC prepared dataset once per test session and
setting (a factory; the folders are shared, so a test must not write into them: copy one with
``shutil.copytree`` first). ``tiny_dataset`` is the dataset of ``tests/data/tiny.yaml``, the
smallest pipeline configuration, generated from that file's ``dataset.synthetic`` settings.

``tiny_reference_run`` and ``cluster_reference_run`` are Snakemake runs (tests/snake.py) of
tests/data/tiny.yaml and tests/data/cluster.yaml, and ``slurm_run`` the latter on the local
SLURM test cluster, each made once per test session, also under pytest-xdist, in the
background from the session's start when a selected test uses them (``SharedRun``: one worker
runs it, every worker can wait for it with ``.path()``); ``tiny_reference`` is the finished
tiny run. Read-only: a test that writes into a run copies it first.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

import snake
from snake import PROFILES

# Bytecode caching on for the session and every process it starts: the suite starts hundreds
# of Python processes (Snakemake, its jobs, DVC, the CLI) on the same sources, and where
# PYTHONDONTWRITEBYTECODE is set (some containers set it) each of them would compile this
# checkout's modules again. The .pyc files go to __pycache__ folders, which git and DVC ignore
# (.gitignore, .dvcignore).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

TINY_CONFIG = Path(__file__).parent / "data" / "tiny.yaml"
CLUSTER_CONFIG = Path(__file__).parent / "data" / "cluster.yaml"
# The SLURM plugin's options for the local test cluster, which has no accounting: poll squeue,
# no account, no waiting.
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

SyntheticFactory = Callable[..., Path]


@pytest.fixture(scope="session")
def synthetic_dataset(tmp_path_factory: pytest.TempPathFactory) -> SyntheticFactory:
    """``synthetic_dataset(n_items, languages=None, seed=0, image_size=32) -> Path``: a
    generated SYNTHETIC dataset (``backretrieval.data.synthetic.generate``), made once per
    session and setting. Read-only: copy it before writing into it."""
    from backretrieval.data.synthetic import generate

    made: dict[tuple, Path] = {}
    root = tmp_path_factory.mktemp("synthetic-datasets")

    def make(n_items: int, languages: Sequence[str] | None = None, seed: int = 0, image_size: int = 32) -> Path:
        key = (n_items, tuple(languages) if languages is not None else None, seed, image_size)
        if key not in made:
            out = root / f"syn-{len(made)}"
            kw = {} if languages is None else {"languages": list(languages)}
            generate(out, n_items=n_items, seed=seed, image_size=image_size, **kw)
            made[key] = out
        return made[key]

    return make


@pytest.fixture(scope="session")
def tiny_dataset(synthetic_dataset: SyntheticFactory) -> Path:
    """The SYNTHETIC dataset of tests/data/tiny.yaml (its languages and ``dataset.synthetic``)."""
    cfg = yaml.safe_load(TINY_CONFIG.read_text(encoding="utf-8"))
    syn = cfg["dataset"]["synthetic"]
    return synthetic_dataset(syn["n_items"], cfg["languages"], seed=syn["seed"], image_size=syn["image_size"])


class SharedRun:
    """``snakemake -d WD [--cores CORES] --configfile CONFIG ARGS`` in a fresh WD (also its
    current directory), made once per test session, in the background from the session's start,
    so the tests that compare against it do not wait for it while other tests could run.
    ``environ()`` gives the run's environment, or None while the run cannot start (the SLURM
    run before its cluster runs): then the run starts when a test first asks for it.

    Under pytest-xdist the workers' temporary folders share one parent (the session's): the
    first worker to claim the run (an exclusive create of ``NAME.claim`` there) starts it and a
    thread of that worker writes ``NAME.done`` or ``NAME.failed`` when it ends; ``path()`` in
    any worker waits for one of them. The owner waits for its run at the end of its session, so
    a marker is always written."""

    def __init__(
        self,
        root: Path,
        name: str,
        config: Path,
        *args: str,
        cores: int | None = 1,
        environ: Callable[[], dict[str, str] | None] = snake.env,
    ) -> None:
        self.wd, self.config, self.args, self.cores, self.environ = root / name, config, args, cores, environ
        self.done, self.failed = root / f"{name}.done", root / f"{name}.failed"
        self.log, self.claim = root / f"{name}.log", root / f"{name}.claim"
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the run unless a worker (this one included) already has or it cannot start yet."""
        if self.claim.exists() or (environ := self.environ()) is None:
            return
        try:
            os.close(os.open(self.claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        self.wd.mkdir(exist_ok=True)
        proc = snake.start(
            self.wd, *self.args, cores=self.cores, configfile=self.config, environ=environ, cwd=self.wd, log=self.log
        )

        def finish() -> None:
            rc = proc.wait()
            (self.done if rc == 0 else self.failed).write_text(f"exit code {rc}\n", encoding="utf-8")

        self.thread = threading.Thread(target=finish, name=f"shared run {self.wd.name}", daemon=True)
        self.thread.start()

    def path(self, *procs: subprocess.Popen, timeout: float = 1800) -> Path:
        """The finished run's working directory (read-only: copy it before writing), waited for
        while ``procs`` (a test's own runs, started first) go on; they are killed when the run
        failed or did not end in time, so none outlives the test."""
        self.start()
        if not self.claim.exists():
            for proc in procs:
                proc.kill()
            pytest.fail(f"the shared run {self.wd.name} cannot start: its environment is not ready")
        deadline = time.monotonic() + timeout
        while not self.done.exists():
            if self.failed.exists() or time.monotonic() > deadline:
                for proc in procs:
                    proc.kill()
                why = self.failed.read_text().strip() if self.failed.exists() else f"not done after {timeout} s"
                log = self.log.read_text(errors="replace")[-5000:] if self.log.exists() else ""
                pytest.fail(f"the shared run {self.wd.name} ({self.config.name} {' '.join(self.args)}): {why}\n{log}")
            time.sleep(0.5)
        return self.wd

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()


@pytest.fixture(scope="session", autouse=True)
def _shared_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Every shared run (one per handle fixture below), started at the session's start when a
    selected test uses its handle, so it runs beside the tests that do not need it."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-runs"
    root.mkdir(exist_ok=True)
    runs = {
        "tiny_reference_run": SharedRun(root, "tiny-cores1", TINY_CONFIG),
        "cluster_reference_run": SharedRun(root, "cluster-local", CLUSTER_CONFIG, "--profile", str(PROFILES / "local")),
        "slurm_run": SharedRun(
            root,
            "slurm",
            CLUSTER_CONFIG,
            *("--profile", str(PROFILES / "slurm"), "--profile", str(PROFILES / "grouped"), *SLURM_OPTS),
            cores=None,
            environ=snake.slurm_environ,
        ),
    }
    for handle, run in runs.items():
        if any(handle in item.fixturenames for item in request.session.items):
            run.start()
    yield runs
    for run in runs.values():
        run.join()


@pytest.fixture(scope="session")
def tiny_reference_run(_shared_runs: dict[str, SharedRun]) -> SharedRun:
    """tests/data/tiny.yaml run with ``--cores 1`` in a fresh working directory with its own
    (cold) embedding cache, in the background (``.path()`` waits for it)."""
    return _shared_runs["tiny_reference_run"]


@pytest.fixture(scope="session")
def tiny_reference(tiny_reference_run: SharedRun) -> Path:
    """The finished ``tiny_reference_run``. Shared: copy it before writing."""
    return tiny_reference_run.path()


@pytest.fixture(scope="session")
def slurm_run(_shared_runs: dict[str, SharedRun]) -> SharedRun:
    """tests/data/cluster.yaml through ``--profile profiles/slurm --profile profiles/grouped`` on
    the local test cluster (scripts/slurm_local.sh), in the background from the session's start
    when that cluster already runs (`.ci/run` starts it first), else from the first ``.path()``
    (after tests/test_slurm.py has started the cluster). Its log is ``.log``."""
    return _shared_runs["slurm_run"]


@pytest.fixture(scope="session")
def cluster_reference_run(_shared_runs: dict[str, SharedRun]) -> SharedRun:
    """tests/data/cluster.yaml run locally (``--profile profiles/local --cores 1``, one metrics
    job per direction) in a fresh working directory, in the background: the local reference of
    the cluster and SLURM runs (``.path()`` waits for it; shared: copy it before writing)."""
    return _shared_runs["cluster_reference_run"]
