"""Shared test settings and fixtures.

Hypothesis runs derandomized under CI (CI=true) so a CI run is reproducible; locally it
explores new examples every run.

``synthetic_dataset`` generates a SYNTHETIC prepared dataset once per test session and
setting (a factory; the folders are shared, so a test must not write into them: copy one with
``shutil.copytree`` first). ``tiny_dataset`` is the dataset of ``tests/data/tiny.yaml``, the
smallest pipeline configuration, generated from that file's ``dataset.synthetic`` settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

TINY_CONFIG = Path(__file__).parent / "data" / "tiny.yaml"

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
