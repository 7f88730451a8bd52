"""Shared plumbing of the text encoders: the :class:`TextEncoder` protocol, :class:`_Base`
(id, spec, fingerprint parts), output checks, and the offline / Hugging Face Hub helpers."""

from __future__ import annotations

import os
import socket
import threading
import urllib.parse
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._util.hashing import fingerprint_from
from ..errors import InputError, ModelUnavailableError


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


class _Base:
    """Shared plumbing: ``id``, ``spec``, fingerprint parts."""

    type_name = "base"
    uses_lang = False

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
