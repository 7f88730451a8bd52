"""Shared test settings and fixtures.

Hypothesis runs derandomized under CI (CI=true) so a CI run is reproducible; locally it
explores new examples every run.

``synthetic_dataset`` generates a SYNTHETIC prepared dataset once per test session and
setting (a factory; the folders are shared, so a test must not write into them: copy one with
``shutil.copytree`` first). ``tiny_dataset`` is the dataset of ``tests/data/tiny.yaml``, the
smallest pipeline configuration, generated from that file's ``dataset.synthetic`` settings.

``tiny_reference`` and ``cluster_reference`` are finished Snakemake runs (tests/snake.py) of
tests/data/tiny.yaml and tests/data/cluster.yaml, each made once per test session, also under
pytest-xdist (the first worker to ask runs it under a file lock, the others wait for it and
share it). Read-only: a test that writes into a run copies it first.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml
from filelock import FileLock
from hypothesis import settings

from snake import PROFILES, run_snakemake

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

TINY_CONFIG = Path(__file__).parent / "data" / "tiny.yaml"
CLUSTER_CONFIG = Path(__file__).parent / "data" / "cluster.yaml"

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


def _shared_run(tmp_path_factory: pytest.TempPathFactory, name: str, config: Path, *args: str, cores: int) -> Path:
    """The working directory of ``snakemake -d WD --cores CORES --configfile CONFIG ARGS`` in a fresh WD, run
    once per session: under pytest-xdist the workers' temporary folders share one parent (the
    session's), where the first worker runs it under a lock and the others find it done."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    wd, done = root / "shared-runs" / name, root / "shared-runs" / f"{name}.done"
    wd.parent.mkdir(exist_ok=True)
    with FileLock(str(wd) + ".lock"):
        if not done.exists():
            shutil.rmtree(wd, ignore_errors=True)  # a failed attempt's leftovers
            run_snakemake(wd, *args, cores=cores, configfile=config)
            done.touch()
    return wd


@pytest.fixture(scope="session")
def tiny_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/tiny.yaml run with ``--cores 1`` in a fresh working directory with its own
    (cold) embedding cache. Shared: copy it before writing."""
    return _shared_run(tmp_path_factory, "tiny-cores1", TINY_CONFIG, cores=1)


@pytest.fixture(scope="session")
def cluster_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/cluster.yaml run locally (``--profile profiles/local --cores 1``, one metrics
    job per direction) in a fresh working directory: the local reference of the cluster and
    SLURM runs. Shared: copy it before writing."""
    return _shared_run(tmp_path_factory, "cluster-local", CLUSTER_CONFIG, "--profile", str(PROFILES / "local"), cores=1)
