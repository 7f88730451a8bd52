"""Features of image files through the content-addressed cache (:mod:`backretrieval._util.cache`):
identical files (same bytes) are encoded once, cached files not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._util.cache import EmbeddingCache, _assemble, _encode_misses, _first_index, _info, file_key


def embed_images(
    backbone: Any, paths: list[Path], cache_dir: Path | None, batch_size: int = 64, progress: bool = True
) -> np.ndarray:
    """Features of the image files ``paths`` (float32, input order); identical files (same bytes)
    are encoded once, cached files not at all. ``batch_size``: files per ``encode_images`` call
    (progress and cache granularity; the backbone batches its forward passes itself, in
    canonical batches, so this changes no bit)."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    paths = [Path(p) for p in paths]
    keys = [file_key(p) for p in paths]
    first = _first_index(keys)
    found: dict[str, np.ndarray] = {}
    cache = None
    if cache_dir is not None and first:
        cache = EmbeddingCache(
            Path(cache_dir), "image", backbone.fingerprint(), {"id": getattr(backbone, "id", ""), **_info(backbone)}
        )
        found = cache.lookup(list(first))
    miss_keys = sorted((k for k in first if k not in found), key=lambda k: first[k])
    _encode_misses(
        miss_keys,
        lambda chunk: backbone.encode_images([paths[first[k]] for k in chunk]),
        batch_size,
        f"images {getattr(backbone, 'id', '')}",
        f"backbone {getattr(backbone, 'id', '?')}",
        "images",
        progress,
        cache,
        found,
    )
    return _assemble(keys, found)
