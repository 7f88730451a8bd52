"""Hashes and signatures: of files (sha256 of the bytes; name + size), of weight folders, of
JSON-able objects, and the ``<type>-<hash>`` fingerprints of models. One definition each."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .io import write_text

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


def _inside(link: Path, real_root: Path) -> bool:
    """Whether ``link`` resolves to a path inside ``real_root`` (False for a loop)."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return target == real_root or real_root in target.parents


def tree_sha256(path: str | os.PathLike[str], cache_file: str | os.PathLike[str] | None = None) -> str:
    """sha256 (hex) of the content of a file or a folder: the relative name and sha256 of every
    file below it (names sorted), so any edit, rename, addition or removal changes it. Nothing
    outside the folder is read: a link to a file inside it counts with that file's content,
    links to folders are not followed (their files inside the folder count under their own
    names) and links that leave the folder or loop are skipped (a dataset cannot reference them:
    ``data.prepared.resolve_inside`` refuses them). With ``cache_file`` (JSON), a file whose (size, mtime_ns, ctime_ns, inode) is
    unchanged since the last call reuses its stored sha256: a large folder is read once, and
    an in-place rewrite still changes ctime (which no user tool can set back)."""
    root = Path(path)
    if root.is_file():
        files = [(root.name, root)]
    elif root.is_dir():
        files = []
        real_root = root.resolve()
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in filenames:
                f = Path(dirpath) / name
                if f.is_symlink() and not _inside(f, real_root):
                    continue
                if f.is_file():
                    files.append((f.relative_to(root).as_posix(), f))
        files.sort()
    else:
        raise FileNotFoundError(f"{root}: no such file or folder")
    cache: dict[str, Any] = {}
    if cache_file is not None and Path(cache_file).is_file():
        try:
            cache = json.loads(Path(cache_file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cache = {}  # a damaged cache only costs a re-read
    h = hashlib.sha256()
    changed = False
    for rel, f in files:
        st = f.stat()
        key = str(f.resolve())
        sig = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        entry = cache.get(key)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == sig:
            digest = entry[1]
        else:
            digest = sha256_file(f)
            cache[key] = [sig, digest]
            changed = True
        h.update(f"{rel}\0{digest}\n".encode())
    if cache_file is not None and changed:
        write_text(cache_file, json.dumps(cache, sort_keys=True))
    return h.hexdigest()
