"""Hashes and signatures: of files (sha256 of the bytes; name + size), of weight folders, of
JSON-able objects, and the ``<type>-<hash>`` fingerprints of models. One definition each."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike[str]) -> str:
    """sha256 (hex) of a file's bytes, read in 1 MiB chunks (OSError if unreadable)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def json_sha256(obj: Any, *, ensure_ascii: bool = False) -> str:
    """sha256 (hex) of ``obj`` as canonical JSON: sorted keys, ``str()`` for other types."""
    blob = json.dumps(obj, sort_keys=True, default=str, ensure_ascii=ensure_ascii)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def fingerprint_from(parts: dict[str, Any], default_type: str, *, ensure_ascii: bool = False) -> str:
    """``<parts['type']>-<24 hex of json_sha256(parts)>``: the cache fingerprint of a model.

    Text encoders hash their parts with ``ensure_ascii=False``, image backbones with
    ``ensure_ascii=True``; the two differ only for non-ASCII parts, and changing either would
    move every cached embedding of such a model to a new folder.
    """
    return f"{parts.get('type', default_type)}-{json_sha256(parts, ensure_ascii=ensure_ascii)[:24]}"


def folder_signature(path: str | os.PathLike[str]) -> str:
    """Cheap signature of a weights folder or file: sha256 over relative names and sizes."""
    p = Path(path)
    h = hashlib.sha256()
    files = [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
    for f in files:
        rel = f.name if p.is_file() else f.relative_to(p).as_posix()
        if rel.startswith(".git/"):
            continue
        h.update(f"{rel}\0{f.stat().st_size}\n".encode())
    return h.hexdigest()[:16]


def file_signature(path: Path) -> str:
    """``<name>:<size in bytes>`` of a weights file (``<name>:missing`` when absent)."""
    return f"{path.name}:{path.stat().st_size}" if path.is_file() else f"{path.name}:missing"
