"""Features shipped with a dataset (no image files are encoded)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._util.hashing import fingerprint_from
from ..errors import ConfigError


class PrecomputedBackbone:
    """Features shipped with the dataset (``features/<name>.npy`` + ``.ids.txt``). It cannot
    encode image files; use :func:`backretrieval.data.prepared.load_precomputed_features`."""

    type_name = "precomputed"
    #: the spec keys this class reads besides ``type`` (a config's other keys are refused)
    spec_keys: tuple[str, ...] = ("name", "dim")

    def __init__(self, bb_id: str, spec: dict) -> None:
        self.id = bb_id
        self.name = str(spec.get("name", bb_id))
        self.dim = int(spec.get("dim", 0))

    def fingerprint(self) -> str:
        return fingerprint_from({"type": self.type_name, "name": self.name}, "img", ensure_ascii=True)

    def encode_images(self, paths: Sequence[Path]) -> np.ndarray:
        raise ConfigError(
            f"backbone '{self.id}' is precomputed (features/{self.name}.npy): it cannot encode image files"
        )
