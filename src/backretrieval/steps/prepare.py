"""The prepare step: the configured dataset (or one configured text-only corpus) → a prepared
folder under ``data/prepared/``."""

from __future__ import annotations

from pathlib import Path

from ..data.prepare import prepare_dataset
from ..errors import BackretrievalError
from . import layout


def prepare_step(cfg: dict, corpus: str | None = None) -> None:
    """Generate (synthetic) or download + prepare ``cfg['dataset']``; with ``corpus``, the
    text-only corpus of that name from ``cfg['corpora']`` instead."""
    if corpus:
        corpora = cfg.get("corpora") or {}
        if corpus not in corpora:
            raise BackretrievalError(f"corpus {corpus!r} is not configured (known: {sorted(corpora)})")
        sub = dict(cfg, dataset={"name": corpus, **corpora[corpus]})
        prepare_dataset(sub, Path("data/prepared") / corpus)
    else:
        prepare_dataset(cfg, layout.dataset_root(cfg))
