"""LASER (Artetxe & Schwenk 2019) via ``laserembeddings``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._util.device import resolve_device
from .._util.hashing import file_signature
from ..errors import ModelUnavailableError
from .base import _as_matrix, _Base, _pkg_version, _require_lang


class LaserEncoder(_Base):
    """LASER (Artetxe & Schwenk 2019) via ``laserembeddings`` (1024-d, max-pooled BiLSTM).
    Needs ``lang`` at encode time (Moses tokenizer + romanisation are language-specific).
    Keys: ``bpe_codes``, ``bpe_vocab``, ``encoder`` (paths; default: the files fetched by
    ``python -m laserembeddings download-models``), ``device``."""

    type_name = "laser"
    uses_lang = True
    batch_invariant = False  # padded BiLSTM batches: per-row results depend on the batch

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.paths = {k: spec.get(k) for k in ("bpe_codes", "bpe_vocab", "encoder")}
        self.device = spec.get("device", "auto")
        self._model: Any = None

    def _files(self) -> dict[str, Path]:
        try:
            from laserembeddings import Laser
        except ImportError as exc:
            raise ModelUnavailableError(
                f"model '{self.id}' needs laserembeddings: "
                "pip install --no-deps laserembeddings subword-nmt sacremoses transliterate"
            ) from exc
        defaults = {
            "bpe_codes": Laser.DEFAULT_BPE_CODES_FILE,
            "bpe_vocab": Laser.DEFAULT_BPE_VOCAB_FILE,
            "encoder": Laser.DEFAULT_ENCODER_FILE,
        }
        files = {k: Path(self.paths[k] or defaults[k]) for k in defaults}
        missing = [str(p) for p in files.values() if not p.is_file()]
        if missing:
            raise ModelUnavailableError(
                f"model '{self.id}' (LASER) weights missing: {missing[0]}; run "
                "`python -m laserembeddings download-models` once with network access, or set "
                "bpe_codes/bpe_vocab/encoder to local files"
            )
        return files

    def _fp_parts(self) -> dict[str, Any]:
        files = self._files()
        return {
            "type": self.type_name,
            "version": _pkg_version("laserembeddings"),
            "files": {k: file_signature(p) for k, p in files.items()},
            "batching": "one-per-call",
        }

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        lang = _require_lang(self.id, lang)
        if self._model is None:
            from laserembeddings import Laser

            f = self._files()
            cpu = resolve_device(self.device, f"encoder '{self.id}'") == "cpu"
            self._model = Laser(
                bpe_codes=str(f["bpe_codes"]),
                bpe_vocab=str(f["bpe_vocab"]),
                encoder=str(f["encoder"]),
                embedding_options={"cpu": cpu},
            )
        if not texts:
            return np.zeros((0, 1024), np.float32)
        return _as_matrix(self._model.embed_sentences(list(texts), lang=lang), len(texts), self.id)
