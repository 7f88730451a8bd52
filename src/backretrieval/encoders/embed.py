"""Embeddings of texts through the content-addressed cache (:mod:`backretrieval._util.cache`):
only cache misses are encoded, each row depends only on its own text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._util.cache import EmbeddingCache, _assemble, _encode_misses, _first_index, _info, text_key


def embed_texts(
    encoder: Any,
    texts: list[str],
    cache_dir: Path | None,
    batch_size: int = 64,
    progress: bool = True,
    lang: str | None = None,
) -> np.ndarray:
    """Embeddings of ``texts`` (float32, one row per text, input order) with ``encoder``.

    ``lang`` is passed to ``encoder.encode(texts, lang=...)`` when the encoder accepts it
    (required by language-dependent encoders). Only texts missing from the cache are encoded,
    ``batch_size`` per call (or the encoder's larger ``encode_chunk``; one per call for an
    encoder with ``batch_invariant = False``).
    """
    from . import accepts_lang, encoder_fingerprint, uses_lang

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
        miss_keys,
        lambda chunk: encoder.encode([texts[first[k]] for k in chunk], **kw),
        per_call,
        f"embed {getattr(encoder, 'id', 'texts')}",
        f"encoder {getattr(encoder, 'id', '?')}",
        "texts",
        progress,
        cache,
        found,
    )
    return _assemble(keys, found)


def embed_items(
    encoder: Any,
    item_ids: list[str],
    texts: list[str],
    cache_dir: Path | None,
    batch_size: int = 64,
    progress: bool = True,
    lang: str | None = None,
) -> np.ndarray:
    """Embeddings of the texts of ``item_ids`` (in ``lang``): looked up for a ``precomputed``
    encoder (by item id), otherwise :func:`embed_texts` of ``texts`` (same order)."""
    from .precomputed import PrecomputedTextEncoder

    if isinstance(encoder, PrecomputedTextEncoder):
        if lang is None:
            raise ValueError("embed_items: a precomputed encoder needs lang")
        return encoder.lookup(lang, [str(i) for i in item_ids])
    return embed_texts(encoder, texts, cache_dir, batch_size=batch_size, progress=progress, lang=lang)
