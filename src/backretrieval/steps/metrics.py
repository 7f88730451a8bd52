"""The metrics step: XLR, BkR and CORR of every encoder for one direction and every seed →
a tidy CSV plus per-query ranks (paths follow docs/ARCHITECTURE.md)."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from .._util import io
from ..data.prepared import load_items
from ..errors import InputError
from ..evaluation.core import METRIC_COLUMNS, evaluate_direction, image_of_items
from .layout import load_embedding, ranks_path, skipped_reason
from .sample import read_samples

log = logging.getLogger("backretrieval")

__all__ = ["METRIC_COLUMNS", "metrics_step", "read_metrics"]


def metrics_step(
    *,
    dataset: Path,
    dataset_name: str,
    direction: str,
    samples_file: Path,
    image_file: Path,
    backbone: str,
    text_files: dict[str, tuple[Path, Path]],
    text_field: str,
    k: int,
    corr_max_pairs: int | None,
    full_bkr_ranks: bool,
    out: Path,
    with_corr: bool = True,
) -> None:
    """All metrics of all encoders for one direction and every seed → tidy CSV.

    ``text_files[encoder] = (src_lang_npz, tgt_lang_npz)``. Image work of each seed is done
    once and shared by all encoders (see metrics.BkrImageIndex). Per-query ranks (XLR ranks;
    BkR ranks, or 0/1 hits when not ``full_bkr_ranks``) go to ``<out stem>.ranks.npz`` under
    keys ``<encoder>/<seed>/<xlr|bkr>`` for the paired significance tests.
    """
    items = load_items(dataset)
    img = load_embedding(image_file)
    if img is None:
        raise InputError(f"{image_file}: image backbone was skipped; BkR needs image features")
    texts: dict[str, tuple] = {}
    for enc, (sp, tp) in sorted(text_files.items()):
        s, t = load_embedding(sp), load_embedding(tp)
        if s is None or t is None:
            log.warning("encoder %s skipped: %s", enc, skipped_reason(sp) or skipped_reason(tp))
            continue
        texts[enc] = (s, t)
    df, per_query = evaluate_direction(
        read_samples(samples_file), image_of_items(items), img, texts,
        labels=dict(dataset=dataset_name, backbone=backbone, text_field=text_field, direction=direction),
        k=k, corr_max_pairs=corr_max_pairs, full_bkr_ranks=full_bkr_ranks, with_corr=with_corr,
        images_what=str(image_file),
    )
    io.save_npz(ranks_path(out), **per_query)
    io.write_csv(out, df)


def read_metrics(paths: list[Path]) -> pd.DataFrame:
    frames = [pd.read_csv(p) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=METRIC_COLUMNS)
