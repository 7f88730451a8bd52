"""Seeded samples for XLR, BkR and CORR (the paper's protocol).

Per seed and direction (src → tgt):

* **queries**: N items with a source-language text (and an image);
* **XLR targets**: the *same* N items in the target language (aligned, row i ↔ row i) —
  only for parallel datasets;
* **BkR/CORR targets**: N *other* items in the target language, disjoint from the queries
  both by item id and by image id (the paper's "non-matching" set, simulating the absence
  of parallel data).

Sampling uses ``numpy.random.default_rng(seed)`` (PCG64, identical on every platform) on
the sorted eligible ids, so the same seed and data give the same indices on any machine.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError


@dataclass(frozen=True)
class Sample:
    seed: int
    src_lang: str
    tgt_lang: str
    queries: list[str]  # item ids (source language texts + their images)
    xlr_targets: list[str] | None  # same item ids in the target language (parallel data only)
    bkr_targets: list[str]  # disjoint item ids in the target language

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Sample:
        return cls(**d)


def draw_sample(
    items: pd.DataFrame, src_lang: str, tgt_lang: str, sample_size: int, seed: int, parallel: bool
) -> Sample:
    """Draw one seed's sample from a prepared ``items`` table (see backretrieval.data.prepared)."""
    if sample_size < 1:
        raise InputError(f"sample size N must be >= 1, got {sample_size}")
    src = items[items["lang"] == src_lang]
    tgt = items[items["lang"] == tgt_lang]
    image_of = dict(zip(src["item_id"], src["image_id"]))
    image_of.update(zip(tgt["item_id"], tgt["image_id"]))
    rng = np.random.default_rng(seed)
    if parallel:
        common = np.array(sorted(set(src["item_id"]) & set(tgt["item_id"])), dtype=object)
        if len(common) < 2 * sample_size:
            raise InputError(
                f"direction {src_lang}->{tgt_lang}: {len(common)} items have texts in both languages, "
                f"but N={sample_size} needs {2 * sample_size} (N queries + N disjoint targets); lower sample_size"
            )
        perm = rng.permutation(len(common))
        queries = [str(x) for x in common[perm[:sample_size]]]
        rest = common[perm[sample_size:]]
        xlr_targets: list[str] | None = list(queries)
    else:
        src_ids = np.array(sorted(set(src["item_id"])), dtype=object)
        if len(src_ids) < sample_size:
            raise InputError(
                f"language {src_lang!r} has {len(src_ids)} items, N={sample_size} needs at least {sample_size}"
            )
        queries = [str(x) for x in src_ids[rng.permutation(len(src_ids))[:sample_size]]]
        rest = np.array(sorted(set(tgt["item_id"]) - set(queries)), dtype=object)
        rest = rest[rng.permutation(len(rest))]
        xlr_targets = None
    used_images = {image_of[q] for q in queries}
    eligible = [str(x) for x in rest if image_of[x] not in used_images]
    if len(eligible) < sample_size:
        raise InputError(
            f"direction {src_lang}->{tgt_lang}: only {len(eligible)} target items remain whose "
            f"images are not among the {sample_size} queries' images; N={sample_size} is too large"
        )
    return Sample(
        seed=int(seed),
        src_lang=src_lang,
        tgt_lang=tgt_lang,
        queries=queries,
        xlr_targets=xlr_targets,
        bkr_targets=eligible[:sample_size],
    )


def forced_sample(items: pd.DataFrame, src_lang: str, tgt_lang: str, sample_size: int, parallel: bool) -> str | None:
    """Why every seed must draw the same sample of N = ``sample_size`` (the same query set and the same
    target set), or None when seeds can differ.

    Parallel data: the queries are N of at least 2N common items, so they always vary. Data
    without parallel texts: the queries are *all* source items when there are exactly N of
    them, and the targets then all N eligible target items when exactly N remain (targets
    disjoint from the queries by item and image)."""
    if parallel:
        return None
    src = items[items["lang"] == src_lang]
    tgt = items[items["lang"] == tgt_lang]
    src_ids = sorted(set(src["item_id"]))
    if len(src_ids) != sample_size:
        return None
    image_of = dict(zip(src["item_id"], src["image_id"]))
    image_of.update(zip(tgt["item_id"], tgt["image_id"]))
    used = {image_of[q] for q in src_ids}
    eligible = [x for x in set(tgt["item_id"]) - set(src_ids) if image_of[x] not in used]
    if len(eligible) != sample_size:
        return None
    return (
        f"language {src_lang!r} has exactly {len(src_ids)} items and exactly {len(eligible)} {tgt_lang!r} items "
        "remain as targets, so every seed draws all of them: the same sample"
    )


def draw_samples(
    items: pd.DataFrame, src_lang: str, tgt_lang: str, sample_size: int, seeds: list[int], parallel: bool
) -> list[Sample]:
    """The samples of every seed. Refuses more than one seed when the seeds can only draw one
    sample (:func:`forced_sample`): their spread, and any interval over them, would be zero
    without the data saying so."""
    if len(set(seeds)) > 1:
        why = forced_sample(items, src_lang, tgt_lang, sample_size, parallel)
        if why:
            raise InputError(
                f"sample_size (--sample-size) N={sample_size} for {src_lang}->{tgt_lang}: {why}. The {len(set(seeds))} seeds "
                f"would be {len(set(seeds))} identical samples and every interval over them would have zero width; "
                f"expected N < {sample_size} (at most {sample_size - 1}, so that the seeds draw different items) or a single seed"
            )
    return [draw_sample(items, src_lang, tgt_lang, sample_size, s, parallel) for s in seeds]


def read_samples(path: str | Path) -> list[Sample]:
    """The samples of one direction's samples file (``{"samples": [...]}``, the sample step's output)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return [Sample.from_dict(s) for s in raw["samples"]]
