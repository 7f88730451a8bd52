"""The case study's first step: title and body embeddings of every case-study item with one base
encoder, and its evaluated base representation ``concat(normalize(title), normalize(body))``
(:mod:`.case_study` holds the steps after it). A step of its own, importing no retrieval kernel,
so that a change in the metrics reruns no embedding (its code version is its own)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._util import io
from .._util.device import limit_threads
from ..study.case_study import _concat_repr, case_items


def embed_step(
    dataset: Path,
    cs: dict,
    encoder: str,
    spec: dict,
    cache_dir: Path | None,
    field_outs: dict[str, dict[str, Path]],
    repr_outs: dict[str, Path],
    threads: int | None = None,
) -> None:
    """Title and body embeddings of every case-study item (``case_items``) with ``encoder``
    (``spec``: its params.yaml entry) → ``field_outs[lang][field]``, and the evaluated base
    representation → ``repr_outs[lang]``. ``cs``: the resolved ``case_study`` section, whose
    ``train_corpus`` is the prepared training corpus (or None)."""
    from ..encoders import build_text_encoder
    from ..encoders.embed import embed_texts

    if threads is not None:
        limit_threads(threads)
    items = case_items(dataset, cs)
    enc = build_text_encoder(encoder, dict(spec))
    for lang in cs["languages"]:
        sub = items[items["lang"] == lang]
        ids = sub["item_id"].to_numpy(dtype=str)
        fields = {}
        for fld in ("title", "body"):
            texts = [t if t.strip() else "-" for t in sub[fld].tolist()]
            emb = embed_texts(enc, texts, cache_dir, lang=lang)
            fields[fld] = emb
            io.save_npz(field_outs[lang][fld], emb=emb.astype(np.float32), ids=ids)
        io.save_npz(repr_outs[lang], emb=_concat_repr(fields["title"], fields["body"]), ids=ids)
