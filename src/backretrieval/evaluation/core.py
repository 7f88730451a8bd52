"""The one per-direction evaluation: seeded samples + text embeddings of each encoder + image
embeddings → tidy metric rows and per-query ranks.

Called by the pipeline's metrics step (:mod:`backretrieval.steps.metrics`), by
:func:`backretrieval.evaluation.evaluate` / ``backretrieval evaluate`` and by
:class:`backretrieval.evaluation.BackretrievalEvaluator`; the image work of each seed is done
once and shared by all encoders (:func:`backretrieval.metrics.kernels.evaluate_sample`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data.sampling import Sample
from ..errors import InputError
from ..metrics import evaluate_sample
from .protocol import Protocol

#: columns of the tidy metric table (the metrics step's CSV, ``evaluate()``'s DataFrame); ``n``
#: and ``k`` are the protocol's N and the k of Recall@k, which the report and the findings read
#: from here
METRIC_COLUMNS = ["dataset", "backbone", "text_field", "direction", "seed", "n", "k", "encoder", "metric", "value"]

#: an embedding table: (id → row, float matrix)
Lookup = tuple[dict[str, int], np.ndarray]


def lookup_from(ids: Sequence[str], emb: np.ndarray) -> Lookup:
    """The :data:`Lookup` of a matrix whose row i belongs to ``ids[i]``."""
    return {str(x): i for i, x in enumerate(ids)}, emb


def rows_of(lookup: Lookup, ids: Sequence[str], what: str) -> np.ndarray:
    """Rows of ``ids`` (in order); InputError naming ``what`` and the first id without a row."""
    index, emb = lookup
    try:
        return emb[[index[i] for i in ids]]
    except KeyError as exc:
        raise InputError(f"{what}: no embedding for item/image id {exc.args[0]!r}") from exc


def image_of_items(items: pd.DataFrame) -> dict[str, dict[str, str]]:
    """``{lang: {item_id: image_id}}`` of a prepared items table."""
    return {lang: dict(zip(sub["item_id"], sub["image_id"])) for lang, sub in items.groupby("lang")}


def evaluate_direction(
    samples: Sequence[Sample],
    image_of: Mapping[str, Mapping[str, str]],
    images: Lookup,
    texts: Mapping[str, tuple[Lookup, Lookup]],
    *,
    labels: Mapping[str, Any],
    protocol: Protocol,
    full_bkr_ranks: bool = True,
    images_what: str = "image features",
    progress: bool = False,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """XLR, BkR (and CORR) of every encoder on every sample of one direction.

    ``texts[encoder] = (source-language lookup, target-language lookup)`` by item id;
    ``images`` by image id; ``image_of[lang][item_id]`` is an item's image. ``labels`` gives
    the ``dataset``, ``backbone`` and ``direction`` columns; ``protocol`` the k of Recall@k,
    the text field and CORR's settings (the samples are drawn by its N and seeds).

    Returns the tidy table (:data:`METRIC_COLUMNS`, sorted by seed, encoder, metric) and the
    per-query ranks under keys ``<encoder>/<seed>/<xlr|bkr>`` (int32; BkR ranks, or 0/1 hits
    when not ``full_bkr_ranks``). Samples without XLR targets (non-parallel data) give no XLR.
    """
    direction = str(labels["direction"])
    src_lang, tgt_lang = direction.split("-")
    rows: list[dict[str, Any]] = []
    per_query: dict[str, np.ndarray] = {}
    for sample in _progress(samples, f"metrics {direction}", progress):
        q_img = rows_of(images, [image_of[src_lang][i] for i in sample.queries], images_what)
        t_img = rows_of(images, [image_of[tgt_lang][i] for i in sample.bkr_targets], images_what)
        enc_inputs = {}
        for enc, (s, t) in texts.items():
            e = {
                "bkr_src": rows_of(s, sample.queries, f"{enc}/{src_lang}"),
                "bkr_tgt": rows_of(t, sample.bkr_targets, f"{enc}/{tgt_lang}"),
            }
            if sample.xlr_targets is not None:
                e["xlr_src"] = e["bkr_src"]
                e["xlr_tgt"] = rows_of(t, sample.xlr_targets, f"{enc}/{tgt_lang}")
            enc_inputs[enc] = e
        kept: dict[str, dict[str, np.ndarray]] = {}
        res = evaluate_sample(
            enc_inputs,
            None,
            q_img,
            t_img,
            k=protocol.recall_k,
            corr_max_pairs=protocol.corr_max_pairs,
            corr_seed=sample.seed,
            full_bkr_ranks=full_bkr_ranks,
            ranks_out=kept,
            with_corr=protocol.with_corr,
        )
        for enc, d in kept.items():
            for kind, arr in d.items():
                per_query[f"{enc}/{sample.seed}/{kind}"] = arr.astype(np.int32)
        for enc, vals in res.items():
            for metric, value in vals.items():
                rows.append(
                    dict(
                        dataset=labels["dataset"],
                        backbone=labels["backbone"],
                        text_field=protocol.text_field,
                        direction=direction,
                        seed=sample.seed,
                        n=len(sample.queries),
                        k=protocol.recall_k,
                        encoder=enc,
                        metric=metric,
                        value=value,
                    )
                )
    df = pd.DataFrame(rows, columns=METRIC_COLUMNS).sort_values(["seed", "encoder", "metric"], kind="stable")
    return df, per_query


def duplicate_targets(samples: Sequence[Sample], text_of: Mapping[str, str]) -> dict[str, list[int]]:
    """Per target set (``bkr``; ``xlr`` where the samples have XLR targets) and sample (in the
    order of ``samples``), how many of its targets repeat the text of another target of the
    same sample (targets − distinct texts). ``text_of``: the target language's embedded text
    (the protocol's text field) by item id. Identical texts get identical vectors and so tie
    exactly (:mod:`backretrieval.metrics.kernels`: the nearest target of BkR's text step is the
    first of them in the sample; an XLR rank counts only strictly better candidates)."""

    def repeats(ids: Sequence[str]) -> int:
        texts = [text_of[i] for i in ids]
        return len(texts) - len(set(texts))

    out = {"bkr": [repeats(s.bkr_targets) for s in samples]}
    if samples and all(s.xlr_targets is not None for s in samples):
        out["xlr"] = [repeats(s.xlr_targets or []) for s in samples]
    return out


def duplicates_sentence(duplicates: Mapping[str, Mapping[str, Sequence[int]]], n: int) -> str:
    """One sentence on the repeated target texts of :func:`duplicate_targets` per direction
    (``{direction: {kind: per-sample counts}}``) for a report; "" when none was counted."""
    label = {"bkr": "BkR", "xlr": "XLR"}
    parts = []
    for d, kinds in duplicates.items():
        cells = []
        for kind, counts in kinds.items():
            counts = list(counts)
            if counts:
                spread = f" ({min(counts)}–{max(counts)} by seed)" if min(counts) != max(counts) else ""
                cells.append(f"{sum(counts) / len(counts):.3g} {label.get(kind, kind)}{spread}")
        if cells:
            parts.append(f"{d.replace('-', '→')} " + ", ".join(cells))
    if not parts:
        return ""
    if not any(c for kinds in duplicates.values() for counts in kinds.values() for c in counts):
        return "Repeated target texts: none (no sample's targets repeat a text)."
    return (
        f"Repeated target texts: targets of a sample (N = {n}) whose text repeats another target's, mean over "
        f"the seeds: {'; '.join(parts)}. Identical texts get identical vectors and tie exactly: BkR's text step "
        "takes the first of them in the sample; an XLR rank counts only strictly better targets."
    )


def _progress(samples: Sequence[Sample], desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(samples, desc=desc, unit="seed", file=sys.stderr, disable=not enabled or not samples, leave=False)
