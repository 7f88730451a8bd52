"""Shared plumbing of the text encoders: the :class:`TextEncoder` protocol, :class:`_Base`
(id, spec, fingerprint parts), output checks, and the offline / Hugging Face Hub helpers."""

from __future__ import annotations

import os
import socket
import threading
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._util.hashing import fingerprint_from
from ..errors import ConfigError, InputError, ModelUnavailableError


@runtime_checkable
class TextEncoder(Protocol):
    id: str

    def fingerprint(self) -> str: ...

    def encode(self, texts: list[str]) -> np.ndarray: ...


def _pkg_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def _as_matrix(x: Any, n: int, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim == 1 and n == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] != n:
        raise InputError(f"encoder {what}: expected a ({n}, d) matrix, got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _l2(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


_OFFLINE_LOCK = threading.Lock()
_OFFLINE_CACHE: dict[str, bool] = {}


def hub_offline(timeout: float = 3.0) -> bool:
    """True when the Hugging Face Hub cannot be reached: ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE``
    set, or a TCP connection to the endpoint fails within ``timeout`` seconds (checked once)."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return True
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urllib.parse.urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    key = f"{host}:{port}"
    with _OFFLINE_LOCK:
        if key not in _OFFLINE_CACHE:
            try:
                socket.create_connection((host, port), timeout=timeout).close()
                _OFFLINE_CACHE[key] = False
            except OSError:
                _OFFLINE_CACHE[key] = True
        return _OFFLINE_CACHE[key]


def _unavailable(enc_id: str, model: str, extra: str = "") -> ModelUnavailableError:
    msg = (
        f"model '{enc_id}' ({model}) is not available offline: run once with network access, "
        f"or set `model:` to a local folder with the weights"
    )
    return ModelUnavailableError(msg + (f" ({extra})" if extra else ""))


def _local_snapshot(repo_id: str) -> Path | None:
    """Folder of a locally cached Hub snapshot of ``repo_id`` (no network), or None."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means "not cached"
        return None


def _require(module: str, model: str, pip_name: str) -> Any:
    """Import ``module`` or fail with one line naming the model and the package to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelUnavailableError(f"model '{model}' needs the package {pip_name} (pip install {pip_name})") from exc


def _require_lang(enc_id: str, lang: str | None) -> str:
    if not lang:
        raise InputError(f"encoder '{enc_id}' is language-dependent: pass lang=<ISO code>")
    return lang


def _positive_int(enc_id: str, spec: dict, key: str, default: int) -> int:
    val = spec.get(key, default)
    if isinstance(val, bool) or not isinstance(val, int) or val < 1:
        raise ConfigError(f"encoder '{enc_id}': {key} must be a positive integer, got {val!r}")
    return val


def canonical_batches(
    lengths: Sequence[int], batch_size: int, pad_multiple: int, max_length: int
) -> list[tuple[int, list[int]]]:
    """Canonical batching: ``(padded length, row indices)`` for each forward pass.

    A text's padded length is its own token count rounded up to a multiple of
    ``pad_multiple`` (at most ``max_length``); texts with the same padded length are batched
    ``batch_size`` at a time (input order). The caller completes a short batch with filler
    rows, so every forward pass that sees a text has the shape ``(batch_size, padded length)``,
    fixed by the text alone. (Per-row results of the CPU/GPU kernels depend on the shapes of the
    products, not on the values of the other rows, see tests/test_encoder_determinism.py.)
    """
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        padded = min(max_length, -(-max(int(n), 1) // pad_multiple) * pad_multiple)
        groups.setdefault(padded, []).append(i)
    return [
        (length, idx[s : s + batch_size])
        for length, idx in sorted(groups.items())
        for s in range(0, len(idx), batch_size)
    ]


def _fill(batch: list[str], batch_size: int) -> list[str]:
    """``batch`` completed to ``batch_size`` rows with copies of its first text (discarded)."""
    return batch + [batch[0]] * (batch_size - len(batch))


class _CanonicalTorch:
    """Spec keys of the canonical batching shared by the torch encoders (see the module doc)."""

    batch_invariant = True
    #: texts per ``encode`` call preferred from :func:`~backretrieval.encoders.embed.embed_texts`
    #: (many texts per call leave few short batches to fill)
    encode_chunk = 1024

    def _init_canonical(self, enc_id: str, spec: dict, batch_size: int) -> None:
        self.batch_size = _positive_int(enc_id, spec, "batch_size", batch_size)
        self.pad_multiple = _positive_int(enc_id, spec, "pad_multiple", 8)
        self.threads = _positive_int(enc_id, spec, "threads", 1)

    def _canonical_parts(self) -> dict[str, Any]:
        return {
            "batching": "canonical-v1",
            "batch_size": self.batch_size,
            "pad_multiple": self.pad_multiple,
            "threads": self.threads,
        }


class _Base:
    """Shared plumbing: ``id``, ``spec``, fingerprint parts."""

    type_name = "base"
    uses_lang = False
    #: each row of ``encode`` depends on its own text alone (else embed_texts passes one text per call)
    batch_invariant = True

    def __init__(self, enc_id: str, spec: dict) -> None:
        self.id = enc_id
        self.spec = dict(spec)

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name}

    def fingerprint(self) -> str:
        return fingerprint_from(self._fp_parts(), "enc")

    def fingerprint_info(self) -> dict[str, Any]:
        """The human-readable parts the fingerprint is a hash of."""
        return self._fp_parts()

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{type(self).__name__}(id={self.id!r})"
