"""Content-addressed embedding cache and the cached encoding loop.

Cache layout (``cache_dir`` is e.g. ``.cache/embeddings``)::

    <cache_dir>/<kind>/<sha256(fingerprint)[:24]>/fingerprint.json   what the fingerprint means
    <cache_dir>/<kind>/<sha256(fingerprint)[:24]>/shard-<time>-<pid>-<random>.npz
                                      keys: <U64 sha256 hex of the content, vectors: float32 (n, d)

``kind`` is ``text`` or ``image``. A text key is sha256 of the UTF-8 text (prefixed by
``"<lang>\\0"`` for language-dependent encoders, see :func:`backretrieval.encoders.uses_lang`);
an image key is sha256 of the file bytes. Shards are written atomically under unique names, so
parallel jobs (Snakemake) can add shards to the same folder concurrently; readers take the
union of all shards. When a folder holds more than :data:`COMPACT_AT` shards, the writer merges
them into one (the merged shard is written before the old ones are removed; readers skip
shards that vanish between listing and reading).

The encoding loop is shared by :func:`backretrieval.encoders.embed.embed_texts` and
:func:`backretrieval.images.embed.embed_images`. Only cache misses are encoded: texts are
deduplicated, sorted by length and batched. A cached vector depends only on (encoder
fingerprint, text) - not on what the cache held before, which other texts were missing with it,
their order, or the core count - because every encoder's ``encode`` gives each row the same bits
whatever else is in the call (canonical batching, see :mod:`backretrieval.encoders`); an encoder
that cannot promise that (``batch_invariant = False``) gets one text per call.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
import time
import uuid
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .hashing import sha256_file

COMPACT_AT = 64

log = logging.getLogger("backretrieval")

# What reading a damaged shard raises: np.load on a truncated or bit-flipped .npz fails in
# zipfile (bad header or CRC), zlib, the .npy header parser, or with a missing array.
_SHARD_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError)


# --------------------------------------------------------------------------------------------
# cache


def text_key(text: str, lang: str | None = None) -> str:
    """Cache key of a text (``lang`` only for language-dependent encoders)."""
    prefix = f"{lang}\0" if lang is not None else ""
    return hashlib.sha256((prefix + text).encode("utf-8")).hexdigest()


def file_key(path: Path) -> str:
    """sha256 of a file's bytes; InputError naming the file if it cannot be read."""
    try:
        return sha256_file(path)
    except OSError as exc:
        raise InputError(f"{path}: image file cannot be read ({exc.strerror or exc})") from exc


class EmbeddingCache:
    """One cache folder for one (kind, fingerprint)."""

    def __init__(self, cache_dir: Path, kind: str, fingerprint: str, info: dict | None = None) -> None:
        self.fingerprint = fingerprint
        digest = hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()[:24]
        self.dir = Path(cache_dir) / kind / digest
        self.info = info or {}

    def shards(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(self.dir.glob("shard-*.npz"))

    def lookup(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors of the ``keys`` present in the cache (others are absent from the result).

        A damaged shard is removed with a warning naming it; its keys then count as misses,
        so their vectors are computed again and stored in a new shard.
        """
        wanted = set(keys)
        found: dict[str, np.ndarray] = {}
        for shard in self.shards():
            if not wanted:
                break
            try:
                with np.load(shard, allow_pickle=False) as z:
                    skeys = z["keys"]
                    mask = np.fromiter((k in wanted for k in skeys.tolist()), bool, len(skeys))
                    if not mask.any():
                        continue
                    vecs = z["vectors"]
                _check_shard(skeys, vecs)
            except FileNotFoundError:
                continue  # removed by a concurrent compaction; its rows live in the merged shard
            except PermissionError as exc:  # intact but not ours to read: not "damaged"
                raise InputError(
                    f"{shard}: embedding-cache shard cannot be read ({exc.strerror}); fix its "
                    "permissions or point cache_dir elsewhere"
                ) from exc
            except _SHARD_ERRORS as exc:
                self._discard(shard, exc)
                continue
            for k, v in zip(skeys[mask].tolist(), vecs[mask]):
                if k in wanted:
                    found[k] = np.asarray(v, dtype=np.float32)
                    wanted.discard(k)
        return found

    def _discard(self, shard: Path, exc: BaseException) -> None:
        """Remove a damaged shard (its vectors are recomputed by the caller) and say so."""
        log.warning(
            "embedding cache: %s is damaged (%s: %s); removed, its vectors will be recomputed",
            shard,
            type(exc).__name__,
            exc,
        )
        with contextlib.suppress(OSError):
            shard.unlink()

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> Path | None:
        """Write a new shard (atomic, unique name). Returns its path (None if nothing to add)."""
        if not len(keys):
            return None
        from .io import atomic_path, write_json

        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / "fingerprint.json"
        if not meta.exists():
            with contextlib.suppress(OSError):
                write_json(meta, {"fingerprint": self.fingerprint, **self.info})
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:12]}.npz"
        path = self.dir / name
        with atomic_path(path, suffix=".npz") as tmp:
            with open(tmp, "wb") as fh:
                np.savez(
                    fh,
                    keys=np.asarray(list(keys), dtype="<U64"),
                    vectors=np.ascontiguousarray(vectors, dtype=np.float32),
                )
        # a shard's name is new each time, so atomic_path's clean-up (the temporaries of the same
        # name) never meets a killed writer's shard: remove those here (a live writer's is left)
        from .tempfiles import remove_abandoned, temporaries_of

        remove_abandoned(self.dir, temporaries_of("shard-*.npz"))
        if len(self.shards()) > COMPACT_AT:
            self.compact()
        return path

    def compact(self) -> None:
        """Merge all shards into one (safe with concurrent readers and writers), and remove the
        temporary shards of writers that were killed (a live writer's is left)."""
        from .io import atomic_path
        from .tempfiles import remove_abandoned, temporaries_of

        remove_abandoned(self.dir, temporaries_of("shard-*.npz"))
        shards = self.shards()
        if len(shards) < 2:
            return
        keys: dict[str, np.ndarray] = {}
        used: list[Path] = []
        for shard in shards:
            try:
                with np.load(shard, allow_pickle=False) as z:
                    skeys, vecs = z["keys"], z["vectors"]
                _check_shard(skeys, vecs)
            except (FileNotFoundError, PermissionError):
                continue  # vanished (a concurrent compaction) or unreadable: left as it is
            except _SHARD_ERRORS as exc:
                self._discard(shard, exc)
                continue
            for k, v in zip(skeys.tolist(), vecs):
                keys.setdefault(k, v)
            used.append(shard)
        if not keys:
            return
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:12]}.npz"
        with atomic_path(self.dir / name, suffix=".npz") as tmp:
            with open(tmp, "wb") as fh:
                np.savez(
                    fh,
                    keys=np.asarray(list(keys), dtype="<U64"),
                    vectors=np.stack(list(keys.values())).astype(np.float32),
                )
        for shard in used:
            with contextlib.suppress(FileNotFoundError):
                shard.unlink()


def _check_shard(keys: np.ndarray, vectors: np.ndarray) -> None:
    if keys.ndim != 1 or vectors.ndim != 2 or vectors.shape[0] != keys.shape[0]:
        raise ValueError(f"keys {keys.shape} and vectors {vectors.shape} do not match")


# --------------------------------------------------------------------------------------------
# encoding the misses


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="item", file=sys.stderr, disable=not enabled or total == 0, leave=False)


def _info(obj: Any) -> dict:
    fn = getattr(obj, "fingerprint_info", None)
    with contextlib.suppress(Exception):
        return dict(fn()) if fn else {}
    return {}


def _encode_misses(
    miss_keys: list[str],
    encode_chunk: Any,
    batch_size: int,
    desc: str,
    who: str,
    what: str,
    progress: bool,
    cache: Any,
    found: dict[str, np.ndarray],
) -> None:
    """Encode cache misses in batches (shape-checked), store them in the cache and ``found``."""
    new_vecs: list[np.ndarray] = []
    with _progress(len(miss_keys), desc, progress) as bar:
        for s in range(0, len(miss_keys), batch_size):
            chunk = miss_keys[s : s + batch_size]
            out = np.asarray(encode_chunk(chunk), dtype=np.float32)
            if out.ndim != 2 or out.shape[0] != len(chunk):
                raise InputError(
                    f"{who}: returned shape {out.shape} for {len(chunk)} {what}; expected ({len(chunk)}, d)"
                )
            new_vecs.append(out)
            bar.update(len(chunk))
    if new_vecs:
        new = np.concatenate(new_vecs)
        if cache is not None:
            cache.add(miss_keys, new)
        found.update(zip(miss_keys, new))


def _first_index(keys: list[str]) -> dict[str, int]:
    """Position of each distinct key's first occurrence (duplicates are encoded once)."""
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    return first


def _assemble(keys: list[str], found: dict[str, np.ndarray]) -> np.ndarray:
    if not keys:
        return np.zeros((0, 0), np.float32)
    dims = {v.shape[-1] for v in found.values()}
    if len(dims) != 1:
        raise InputError(
            f"embedding dimensions differ between cached and new vectors: {sorted(dims)}; "
            "clear the embedding cache for this encoder"
        )
    out = np.empty((len(keys), dims.pop()), np.float32)
    for i, k in enumerate(keys):
        out[i] = found[k]
    return out
