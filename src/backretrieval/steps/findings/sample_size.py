"""Analysis ``sample_size``: BkR's ranking stability vs N, on one prepared dataset (the scaled
SYNTHETIC one, or a real config's). N values above what the dataset allows (2N items with
texts in both languages) are dropped with a warning."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...errors import InputError
from ...findings import sample_size as ss
from ...findings.document import markdown_table
from .artifacts import RunArtifacts
from .step import Plugin, Result, question_result

log = logging.getLogger("backretrieval")


def run(art: RunArtifacts, s: Mapping[str, Any]) -> Result:
    directions, n_grid, seeds, baseline, k = s["directions"], s["n_grid"], s["seeds"], s["baseline"], art.k
    criterion = ss.Criterion(agreement=s["min_agreement"], share=s["min_share"])
    meta = art.dataset_meta()
    items = art.items()
    texts = art.texts()
    image = art.image_lookup()
    if baseline is not None and baseline not in texts:
        raise InputError(f"findings sample size: baseline encoder {baseline!r} has no embeddings ({sorted(texts)})")
    max_n = min(_parallel_items(items, d) for d in directions) // 2
    grid = sorted(n for n in set(n_grid) if n <= max_n)
    dropped = sorted(n for n in set(n_grid) if n > max_n)
    if dropped:
        log.warning("sample size: N %s dropped: %s has at most %d items per side", dropped, meta.name, max_n)
    if len(grid) < 2:
        raise InputError(
            f"findings sample size: {meta.name} allows N <= {max_n}; fewer than 2 values of {sorted(n_grid)} remain"
        )
    per_enc = ss.sample_size_metrics(items, texts, image, directions, grid, seeds, k=k, parallel=meta.parallel)
    stab = ss.ranking_stability(per_enc, k, baseline=baseline, criterion=criterion)
    text = ss.answer(
        stab,
        dataset=meta.name,
        synthetic=meta.synthetic,
        k=k,
        n_encoders=len(texts),
        n_seeds=len(seeds),
        directions=list(directions),
        baseline=baseline,
        criterion=criterion,
    )
    numbers = {
        "smallest_stable_n": ss.smallest_reliable_n(stab, "stab_reliable_share", criterion),
        "smallest_valid_n": ss.smallest_reliable_n(stab, "valid_reliable_share", criterion),
        "criterion": criterion.text(),
        "per_n": stab.set_index("n").to_dict(orient="index"),
        "mean_bkr": per_enc.groupby(["n", "encoder"])["bkr_recall"].mean().unstack().to_dict(orient="index"),
    }
    settings = dict(
        k=k,
        n_grid=grid,
        n_dropped=dropped,
        seeds=list(seeds),
        directions=list(directions),
        encoders=sorted(texts),
        baseline=baseline,
        dataset=meta.name,
        items_per_side_max=max_n,
    )
    means = per_enc.groupby(["n", "encoder"])[["xlr_r1", "xlr_recall", "bkr_recall"]].mean().reset_index()
    extra = "Mean metrics per N and encoder:\n\n" + markdown_table(means, 4)
    figure = ("BkR's encoder ranking vs N", lambda p, title: ss.plot_sample_size(stab, per_enc, k, p, title, criterion))
    return question_result(art, "sample_size", text, settings, numbers, stab, per_enc, figure, extra)


def _parallel_items(items: pd.DataFrame, direction: str) -> int:
    src, tgt = direction.split("-")
    return len(set(items.loc[items.lang == src, "item_id"]) & set(items.loc[items.lang == tgt, "item_id"]))


ANALYSIS = Plugin("sample_size", run)
