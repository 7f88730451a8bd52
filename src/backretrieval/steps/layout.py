"""The artifact layout: config → path of every artifact, shared by the CLI, the Snakemake
rules and the DVC stages (see docs/ARCHITECTURE.md), and readers of the shared artifacts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._util import io
from ..study.case_study import HEADS, human_cfg


# -------------------------------------------------------------------------------------------
# main pipeline


def dataset_root(cfg: dict) -> Path:
    return Path("data/prepared") / cfg["dataset"]["name"]


def artifacts_root(cfg: dict) -> Path:
    return Path("artifacts") / cfg["run_name"]


def text_emb_path(cfg: dict, encoder: str, lang: str) -> Path:
    return artifacts_root(cfg) / "text" / encoder / f"{lang}.{cfg['text_field']}.npz"


def image_emb_path(cfg: dict, backbone: str | None = None) -> Path:
    return artifacts_root(cfg) / "image" / f"{backbone or cfg['image_backbone']}.npz"


def samples_path(cfg: dict, direction: str) -> Path:
    return artifacts_root(cfg) / "samples" / f"{direction}.json"


def metrics_path(cfg: dict, direction: str) -> Path:
    return artifacts_root(cfg) / "metrics" / f"{direction}.csv"


def ranks_path(metrics_csv: Path) -> Path:
    """Per-query ranks beside a metrics CSV (``<direction>.ranks.npz``)."""
    return Path(metrics_csv).with_suffix(".ranks.npz")


# -------------------------------------------------------------------------------------------
# case study and human study


def case_root(cfg: dict) -> Path:
    return Path("artifacts") / cfg["run_name"] / "case"


def case_reports(cfg: dict) -> Path:
    return Path(cfg["reports_dir"]) / "case_study"


def field_path(cfg: dict, encoder: str, lang: str, field: str) -> Path:
    return case_root(cfg) / "text" / encoder / f"{lang}.{field}.npz"


def repr_path(cfg: dict, model: str, lang: str) -> Path:
    """Evaluated representation of a model: base encoders under repr/, trained heads under
    repr_heads/ (kept apart so the base-selection step never depends on the heads)."""
    folder = "repr_heads" if model in HEADS else "repr"
    return case_root(cfg) / folder / model / f"{lang}.npz"


def human_dir(cfg: dict) -> Path:
    return case_root(cfg) / "human"


def ratings_path(cfg: dict) -> Path:
    hs = human_cfg(cfg)
    return Path(hs["ratings"]) if hs.get("ratings") else human_dir(cfg) / "ratings.simulated.csv"


# -------------------------------------------------------------------------------------------
# readers


def load_embedding(path: Path) -> tuple[dict[str, int], np.ndarray] | None:
    """(id → row, matrix) of an embedding artifact; None if the model was skipped."""
    z = io.load_npz(path)
    if "skipped" in z:
        return None
    ids = [str(x) for x in z["ids"]]
    return {x: i for i, x in enumerate(ids)}, z["emb"]


def skipped_reason(path: Path) -> str | None:
    z = io.load_npz(path)
    return str(z["skipped"]) if "skipped" in z else None


def _load(path: Path) -> tuple[dict[str, int], np.ndarray]:
    z = io.load_npz(path)
    ids = [str(x) for x in z["ids"]]
    return {x: i for i, x in enumerate(ids)}, z["emb"]
