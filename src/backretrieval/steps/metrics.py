"""The metrics step: XLR, BkR and CORR of every encoder for one direction and every seed →
a tidy CSV plus per-query ranks (paths follow docs/ARCHITECTURE.md)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from .._util import io
from ..data.prepared import load_items
from ..data.sampling import read_samples
from ..errors import InputError
from ..evaluation.core import METRIC_COLUMNS, evaluate_direction, image_of_items
from ..evaluation.metric_tables import (
    concat_metrics,
    exact_float,
    read_metric_tables,
    read_metrics,
    require_full_ranks,
)
from ..evaluation.protocol import Protocol
from .layout import load_embedding, ranks_path, skipped_reason
from .settings import seed_groups

log = logging.getLogger("backretrieval")

__all__ = [
    "METRIC_COLUMNS",
    "concat_metrics",
    "gather_metrics",
    "metrics_step",
    "read_metric_tables",
    "read_metrics",
    "require_full_ranks",
    "seed_groups",
]


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
    recall_k: int,
    corr_max_pairs: int | None,
    out: Path,
    with_corr: bool = True,
    seeds: list[int] | None = None,
) -> None:
    """All metrics of all encoders for one direction and every seed → tidy CSV.

    ``text_files[encoder] = (src_lang_npz, tgt_lang_npz)``. Image work of each seed is done
    once and shared by all encoders (see metrics.BkrImageIndex). Per-query ranks (XLR and
    BkR ranks) go to ``<out stem>.ranks.npz`` under
    keys ``<encoder>/<seed>/<xlr|bkr>`` for the paired significance tests.

    ``seeds``: only the samples of these seeds (one seed group of a direction, in the order of
    the samples file; :func:`gather_metrics` joins the groups); None: every sample.

    The job's :class:`~backretrieval.evaluation.protocol.Protocol` (N of the samples, their
    seeds, ``recall_k``, ``text_field``, ``backbone``, CORR's settings) is made, and so checked, once,
    before any embedding is read; the CSV records its ``n`` and ``k`` in every row.
    """
    samples = read_samples(samples_file)
    if seeds is not None:
        by_seed = {s.seed: s for s in samples}
        missing = [x for x in seeds if x not in by_seed]
        if missing:
            raise InputError(f"{samples_file}: no sample for seed(s) {missing} (has {sorted(by_seed)})")
        wanted = set(seeds)
        samples = [s for s in samples if s.seed in wanted]
    if not samples:
        raise InputError(f"{samples_file}: no samples")
    protocol = Protocol(
        sample_size=len(samples[0].queries),
        seeds=tuple(s.seed for s in samples),
        recall_k=recall_k,
        text_field=text_field,
        image_backbone=backbone,
        with_corr=with_corr,
        corr_max_pairs=corr_max_pairs,
    )
    items = load_items(dataset)
    img = load_embedding(image_file, mapped=True)
    if img is None:
        raise InputError(f"{image_file}: image backbone was skipped; BkR needs image features")
    texts: dict[str, tuple] = {}
    for enc, (sp, tp) in sorted(text_files.items()):
        s, t = load_embedding(sp, mapped=True), load_embedding(tp, mapped=True)
        if s is None or t is None:
            log.warning("encoder %s skipped: %s", enc, skipped_reason(sp) or skipped_reason(tp))
            continue
        texts[enc] = (s, t)
    df, per_query = evaluate_direction(
        samples,
        image_of_items(items),
        img,
        texts,
        labels=dict(dataset=dataset_name, backbone=backbone, direction=direction),
        protocol=protocol,
        images_what=str(image_file),
    )
    io.save_npz(ranks_path(out), **per_query)
    io.write_csv(out, df, float_format=exact_float)  # every bit: the report's means are rank's


def gather_metrics(parts: list[Path], out: Path) -> None:
    """Join the metric files of a direction's seed groups (:func:`seed_groups`, in that order)
    into the files one job over every seed writes, byte for byte: the CSV rows sorted by seed
    (stable: each group's rows are already sorted by seed, encoder, metric) and the per-query
    ranks in group order (= the samples' order). Cells are joined as text, never re-parsed as
    numbers, so no value is re-formatted."""
    if not parts:
        raise InputError("metrics-gather: no part files given")
    frames: list[pd.DataFrame] = []
    ranks: dict[str, np.ndarray] = {}
    for p in parts:
        frame = pd.read_csv(p, dtype=str, keep_default_na=False)
        if list(frame.columns) != METRIC_COLUMNS:
            raise InputError(f"{p}: expected the metric columns {METRIC_COLUMNS}, got {list(frame.columns)}")
        frames.append(frame)
        part_ranks = io.load_npz(ranks_path(p))
        dup = sorted(set(part_ranks) & set(ranks))
        if dup:
            raise InputError(
                f"{ranks_path(p)}: per-query ranks {dup[:3]} also in an earlier part (overlapping seed groups)"
            )
        ranks.update(part_ranks)
    df = pd.concat(frames, ignore_index=True)
    df = df.iloc[df["seed"].astype(int).argsort(kind="stable")]
    io.save_npz(ranks_path(out), **ranks)
    io.write_csv(out, df)
