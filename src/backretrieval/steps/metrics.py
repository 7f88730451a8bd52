"""The metrics step: XLR, BkR and CORR of every encoder for one direction and every seed →
a tidy CSV plus per-query ranks (paths follow docs/ARCHITECTURE.md)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util import io
from ..data.prepared import load_items
from ..errors import InputError
from ..metrics.kernels import evaluate_sample
from .layout import load_embedding, ranks_path, skipped_reason
from .sample import read_samples

log = logging.getLogger("backretrieval")


METRIC_COLUMNS = ["dataset", "backbone", "text_field", "direction", "seed", "n", "encoder", "metric", "value"]


def _rows(lookup: tuple[dict[str, int], np.ndarray], ids: list[str], what: str) -> np.ndarray:
    index, emb = lookup
    try:
        return emb[[index[i] for i in ids]]
    except KeyError as exc:
        raise InputError(f"{what}: no embedding for item/image id {exc.args[0]!r}") from exc


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
    src_lang, tgt_lang = direction.split("-")
    image_of = {
        lang: dict(zip(sub["item_id"], sub["image_id"])) for lang, sub in items.groupby("lang")
    }
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
    rows: list[dict[str, Any]] = []
    per_query: dict[str, np.ndarray] = {}
    for sample in read_samples(samples_file):
        q_img = _rows(img, [image_of[src_lang][i] for i in sample.queries], str(image_file))
        t_img = _rows(img, [image_of[tgt_lang][i] for i in sample.bkr_targets], str(image_file))
        enc_inputs = {}
        for enc, (s, t) in texts.items():
            e = {
                "bkr_src": _rows(s, sample.queries, f"{enc}/{src_lang}"),
                "bkr_tgt": _rows(t, sample.bkr_targets, f"{enc}/{tgt_lang}"),
            }
            if sample.xlr_targets is not None:
                e["xlr_src"] = e["bkr_src"]
                e["xlr_tgt"] = _rows(t, sample.xlr_targets, f"{enc}/{tgt_lang}")
            enc_inputs[enc] = e
        kept: dict[str, dict[str, np.ndarray]] = {}
        res = evaluate_sample(
            enc_inputs, None, q_img, t_img, k=k, corr_max_pairs=corr_max_pairs,
            corr_seed=sample.seed, full_bkr_ranks=full_bkr_ranks, ranks_out=kept, with_corr=with_corr,
        )
        for enc, d in kept.items():
            for kind, arr in d.items():
                per_query[f"{enc}/{sample.seed}/{kind}"] = arr.astype(np.int32)
        for enc, vals in res.items():
            for metric, value in vals.items():
                rows.append(dict(
                    dataset=dataset_name, backbone=backbone, text_field=text_field, direction=direction,
                    seed=sample.seed, n=len(sample.queries), encoder=enc, metric=metric, value=value,
                ))
    df = pd.DataFrame(rows, columns=METRIC_COLUMNS).sort_values(["seed", "encoder", "metric"], kind="stable")
    io.save_npz(ranks_path(out), **per_query)
    io.write_csv(out, df)


def read_metrics(paths: list[Path]) -> pd.DataFrame:
    frames = [pd.read_csv(p) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=METRIC_COLUMNS)
