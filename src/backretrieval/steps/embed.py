"""The embed steps: the texts of one language / the images of a prepared dataset → an
embedding artifact (npz: ``emb`` float32 (n, d), ``ids``)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from .._util import io
from .._util.device import limit_threads
from ..encoders.embed import embed_items
from ..errors import InputError, ModelUnavailableError
from ..images.embed import embed_images

log = logging.getLogger("backretrieval")


def embed_text_step(
    dataset: Path,
    enc: str,
    spec: dict,
    text_field: str,
    outs: dict[str, Path],
    cache_dir: Path | None,
    skip_unavailable: bool = False,
    threads: int | None = None,
) -> None:
    """The ``text_field`` texts of every language in ``outs`` (language → npz path) embedded
    with encoder ``enc`` (``spec``: its params.yaml entry). Where the model is unavailable and
    ``skip_unavailable`` is set, every language gets a ``skipped`` marker artifact instead (the
    metrics step leaves it out). ``threads``: torch/BLAS threads (``model_threads``)."""
    if threads is not None:
        limit_threads(threads)
    for lang, out in outs.items():
        try:
            embed_dataset_text(dataset, enc, dict(spec), lang, text_field, out, cache_dir)
        except ModelUnavailableError as exc:
            if not skip_unavailable:
                raise
            log.warning("skipping encoder %s: %s", enc, exc)
            for path in outs.values():
                io.save_npz(path, skipped=np.array(str(exc)))
            return


def embed_dataset_text(
    dataset_root: Path,
    enc_id: str,
    spec: dict,
    lang: str,
    text_field: str,
    out_path: Path,
    cache_dir: Path | None,
    progress: bool = True,
) -> None:
    """Embed the ``text_field`` texts of ``lang`` in a prepared dataset; write ``out_path``
    (npz: ``emb`` float32 (n, d), ``ids`` item ids in items-file order)."""
    from .._util.io import save_npz
    from ..data.prepared import load_items, texts_for
    from ..encoders import build_text_encoder

    items = load_items(dataset_root)
    ids, texts = texts_for(items, lang, text_field)
    if not len(ids):
        raise InputError(
            f"{dataset_root}: no texts in language '{lang}' (languages present: {sorted(items['lang'].unique())})"
        )
    encoder = build_text_encoder(enc_id, spec)
    batch = int(spec.get("batch_size", 64)) if isinstance(spec, dict) else 64
    emb = embed_items(encoder, list(ids), texts, cache_dir, batch_size=batch, progress=progress, lang=lang)
    save_npz(out_path, emb=emb, ids=np.asarray(ids, dtype=str))


def embed_dataset_images(
    dataset_root: Path,
    bb_id: str,
    spec: dict,
    out_path: Path,
    cache_dir: Path | None,
    progress: bool = True,
    threads: int | None = None,
) -> None:
    """Image features of a prepared dataset (``images.csv`` files, or for ``type: precomputed``
    ``features/<name>.npy``); write ``out_path`` (npz: ``emb`` float32 (m, d), ``ids`` image ids).
    ``threads``: torch/BLAS threads (``model_threads``; None = leave as they are)."""
    if threads is not None:
        limit_threads(threads)
    from .._util.io import save_npz
    from ..data.prepared import load_image_table, load_precomputed_features, resolve_inside
    from ..images import build_image_backbone

    backbone = build_image_backbone(bb_id, spec)
    if spec.get("type") == "precomputed":
        ids, emb = load_precomputed_features(dataset_root, getattr(backbone, "name", bb_id))
    else:
        table = load_image_table(dataset_root)
        if not len(table):
            raise InputError(f"{Path(dataset_root) / 'images.csv'}: no images listed")
        paths = [resolve_inside(dataset_root, rel) for rel in table["path"]]
        emb = embed_images(backbone, paths, cache_dir, progress=progress)
        ids = table["image_id"].to_numpy(dtype=str)
    save_npz(out_path, emb=np.ascontiguousarray(emb, dtype=np.float32), ids=np.asarray(ids, dtype=str))
