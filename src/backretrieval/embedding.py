"""Content-addressed embedding cache and "embed this dataset" functions.

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

Only cache misses are encoded: texts are deduplicated, sorted by length and batched. A cached
vector depends only on (encoder fingerprint, text) - not on what the cache held before, which
other texts were missing with it, their order, or the core count - because every encoder's
``encode`` gives each row the same bits whatever else is in the call (canonical batching, see
:mod:`backretrieval.encoders`); an encoder that cannot promise that (``batch_invariant =
False``) gets one text per call.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError

COMPACT_AT = 64


# --------------------------------------------------------------------------------------------
# cache


def text_key(text: str, lang: str | None = None) -> str:
    """Cache key of a text (``lang`` only for language-dependent encoders)."""
    prefix = f"{lang}\0" if lang is not None else ""
    return hashlib.sha256((prefix + text).encode("utf-8")).hexdigest()


def file_key(path: Path) -> str:
    """sha256 of a file's bytes; InputError naming the file if it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except OSError as exc:
        raise InputError(f"{path}: image file cannot be read ({exc.strerror or exc})") from exc
    return h.hexdigest()


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
        """Vectors of the ``keys`` present in the cache (others are absent from the result)."""
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
            except FileNotFoundError:
                continue  # removed by a concurrent compaction; its rows live in the merged shard
            except (OSError, ValueError, KeyError) as exc:
                raise InputError(f"{shard}: corrupt embedding-cache shard ({exc}); delete it") from exc
            for k, v in zip(skeys[mask].tolist(), vecs[mask]):
                if k in wanted:
                    found[k] = np.asarray(v, dtype=np.float32)
                    wanted.discard(k)
        return found

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
                np.savez(fh, keys=np.asarray(list(keys), dtype="<U64"),
                         vectors=np.ascontiguousarray(vectors, dtype=np.float32))
        if len(self.shards()) > COMPACT_AT:
            self.compact()
        return path

    def compact(self) -> None:
        """Merge all shards into one (safe with concurrent readers and writers)."""
        from .io import atomic_path

        shards = self.shards()
        if len(shards) < 2:
            return
        keys: dict[str, np.ndarray] = {}
        used: list[Path] = []
        for shard in shards:
            try:
                with np.load(shard, allow_pickle=False) as z:
                    for k, v in zip(z["keys"].tolist(), z["vectors"]):
                        keys.setdefault(k, v)
                used.append(shard)
            except (FileNotFoundError, OSError, ValueError, KeyError):
                continue
        if not keys:
            return
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:12]}.npz"
        with atomic_path(self.dir / name, suffix=".npz") as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, keys=np.asarray(list(keys), dtype="<U64"),
                         vectors=np.stack(list(keys.values())).astype(np.float32))
        for shard in used:
            with contextlib.suppress(FileNotFoundError):
                shard.unlink()


# --------------------------------------------------------------------------------------------
# embedding with the cache


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="item", file=sys.stderr,
                disable=not enabled or total == 0, leave=False)


def _info(obj: Any) -> dict:
    fn = getattr(obj, "fingerprint_info", None)
    with contextlib.suppress(Exception):
        return dict(fn()) if fn else {}
    return {}


def embed_texts(encoder: Any, texts: list[str], cache_dir: Path | None, batch_size: int = 64,
                progress: bool = True, lang: str | None = None) -> np.ndarray:
    """Embeddings of ``texts`` (float32, one row per text, input order) with ``encoder``.

    ``lang`` is passed to ``encoder.encode(texts, lang=...)`` when the encoder accepts it
    (required by language-dependent encoders). Only texts missing from the cache are encoded,
    ``batch_size`` per call (or the encoder's larger ``encode_chunk``; one per call for an
    encoder with ``batch_invariant = False``).
    """
    from .encoders import accepts_lang, encoder_fingerprint, uses_lang

    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    lang_dep = uses_lang(encoder)
    key_lang = lang if lang_dep else None
    keys = [text_key(t, key_lang) for t in texts]
    first = _first_index(keys)

    found: dict[str, np.ndarray] = {}
    cache = None
    if cache_dir is not None and first:
        fp = encoder_fingerprint(encoder, lang if lang_dep else None)
        cache = EmbeddingCache(Path(cache_dir), "text", fp, {"id": getattr(encoder, "id", ""), **_info(encoder)})
        found = cache.lookup(list(first))

    miss_keys = [k for k in first if k not in found]
    # longest first: similar lengths share a call (fewer padded-length buckets per call)
    miss_keys.sort(key=lambda k: (-len(texts[first[k]]), k))
    kw = {"lang": lang} if lang is not None and accepts_lang(encoder) else {}
    if getattr(encoder, "batch_invariant", True):
        per_call = max(batch_size, int(getattr(encoder, "encode_chunk", 0) or 0))
    else:
        per_call = 1
    _encode_misses(
        miss_keys, lambda chunk: encoder.encode([texts[first[k]] for k in chunk], **kw), per_call,
        f"embed {getattr(encoder, 'id', 'texts')}", f"encoder {getattr(encoder, 'id', '?')}", "texts",
        progress, cache, found,
    )
    return _assemble(keys, found)


def _encode_misses(miss_keys: list[str], encode_chunk: Any, batch_size: int, desc: str, who: str, what: str,
                   progress: bool, cache: Any, found: dict[str, np.ndarray]) -> None:
    """Encode cache misses in batches (shape-checked), store them in the cache and ``found``."""
    new_vecs: list[np.ndarray] = []
    with _progress(len(miss_keys), desc, progress) as bar:
        for s in range(0, len(miss_keys), batch_size):
            chunk = miss_keys[s:s + batch_size]
            out = np.asarray(encode_chunk(chunk), dtype=np.float32)
            if out.ndim != 2 or out.shape[0] != len(chunk):
                raise InputError(f"{who}: returned shape {out.shape} for {len(chunk)} {what}; "
                                 f"expected ({len(chunk)}, d)")
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
        raise InputError(f"embedding dimensions differ between cached and new vectors: {sorted(dims)}; "
                         "clear the embedding cache for this encoder")
    out = np.empty((len(keys), dims.pop()), np.float32)
    for i, k in enumerate(keys):
        out[i] = found[k]
    return out


def embed_images(backbone: Any, paths: list[Path], cache_dir: Path | None, batch_size: int = 32,
                 progress: bool = True) -> np.ndarray:
    """Features of the image files ``paths`` (float32, input order); identical files (same bytes)
    are encoded once, cached files not at all."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    paths = [Path(p) for p in paths]
    keys = [file_key(p) for p in paths]
    first = _first_index(keys)
    found: dict[str, np.ndarray] = {}
    cache = None
    if cache_dir is not None and first:
        cache = EmbeddingCache(Path(cache_dir), "image", backbone.fingerprint(),
                               {"id": getattr(backbone, "id", ""), **_info(backbone)})
        found = cache.lookup(list(first))
    miss_keys = sorted((k for k in first if k not in found), key=lambda k: first[k])
    _encode_misses(
        miss_keys, lambda chunk: backbone.encode_images([paths[first[k]] for k in chunk]), batch_size,
        f"images {getattr(backbone, 'id', '')}", f"backbone {getattr(backbone, 'id', '?')}", "images",
        progress, cache, found,
    )
    return _assemble(keys, found)


# --------------------------------------------------------------------------------------------
# datasets


def embed_dataset_text(dataset_root: Path, enc_id: str, spec: dict, lang: str, text_field: str,
                       out_path: Path, cache_dir: Path | None, progress: bool = True) -> None:
    """Embed the ``text_field`` texts of ``lang`` in a prepared dataset; write ``out_path``
    (npz: ``emb`` float32 (n, d), ``ids`` item ids in items-file order)."""
    from .dataset import load_items, texts_for
    from .encoders import build_text_encoder
    from .io import save_npz

    items = load_items(dataset_root)
    ids, texts = texts_for(items, lang, text_field)
    if not len(ids):
        raise InputError(f"{dataset_root}: no texts in language '{lang}' "
                         f"(languages present: {sorted(items['lang'].unique())})")
    encoder = build_text_encoder(enc_id, spec)
    batch = int(spec.get("batch_size", 64)) if isinstance(spec, dict) else 64
    emb = embed_texts(encoder, texts, cache_dir, batch_size=batch, progress=progress, lang=lang)
    save_npz(out_path, emb=emb, ids=np.asarray(ids, dtype=str))


def embed_dataset_images(dataset_root: Path, bb_id: str, spec: dict, out_path: Path,
                         cache_dir: Path | None, progress: bool = True) -> None:
    """Image features of a prepared dataset (``images.csv`` files, or for ``type: precomputed``
    ``features/<name>.npy``); write ``out_path`` (npz: ``emb`` float32 (m, d), ``ids`` image ids)."""
    from .dataset import load_image_table, load_precomputed_features, resolve_inside
    from .image_features import build_image_backbone
    from .io import save_npz

    backbone = build_image_backbone(bb_id, spec)
    if spec.get("type") == "precomputed":
        ids, emb = load_precomputed_features(dataset_root, getattr(backbone, "name", bb_id))
    else:
        table = load_image_table(dataset_root)
        if not len(table):
            raise InputError(f"{Path(dataset_root) / 'images.csv'}: no images listed")
        paths = [resolve_inside(dataset_root, rel) for rel in table["path"]]
        emb = embed_images(backbone, paths, cache_dir, batch_size=int(spec.get("batch_size", 32)),
                           progress=progress)
        ids = table["image_id"].to_numpy(dtype=str)
    save_npz(out_path, emb=np.ascontiguousarray(emb, dtype=np.float32), ids=np.asarray(ids, dtype=str))
