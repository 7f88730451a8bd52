"""Analysis ``image_quality``: image features vs BkR's agreement with XLR (every backbone of the
run plus degraded copies of the ``base`` backbone, on the same samples)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...findings import image_quality as iq
from ...findings.views import Lookup, iter_views
from .artifacts import RunArtifacts
from .step import Plugin, Result, question_result


def degradations(s: Mapping[str, Any]) -> list[tuple[str, float | int | None]]:
    """The degraded variants of the settings' ``noise``, ``project`` and ``shuffle``."""
    return (
        [("noise", float(x)) for x in s["noise"]]
        + [("project", int(x)) for x in s["project"]]
        + ([("shuffle", None)] if s["shuffle"] else [])
    )


def run(art: RunArtifacts, s: Mapping[str, Any]) -> Result:
    base, k, seed, max_seeds = s["base"], art.k, s["seed"], s["max_seeds"]
    image_files = art.image_files
    if base not in image_files:
        raise InputError(
            f"findings image quality: base backbone {base!r} is not among the image files {sorted(image_files)}"
        )
    meta = art.dataset_meta()
    items = art.items()
    texts = art.texts()
    variants: dict[str, Lookup] = {name: art.image_lookup(name) for name in image_files}
    base_index, base_emb = variants[base]
    degr = degradations(s)
    for i, (kind, level) in enumerate(degr):
        name = f"{base}:{iq.variant_name(kind, level)}"
        variants[name] = (base_index, iq.degrade(base_emb, kind, level, seed + i))
    scenes = None
    concept = None
    if meta.synthetic and (Path(art.dataset) / "scenes.jsonl").is_file():
        from ...data.synthetic import load_scenes

        scenes = load_scenes(art.dataset)
        concept = _concept_precisions(items, scenes, variants, k)
    samples = art.sample_list(max_seeds)
    per_enc, per_sample = iq.image_quality_metrics(iter_views(samples, items, texts), variants, k=k, scenes=scenes)
    order = [n for n in image_files] + [n for n in variants if n not in image_files]
    summary = iq.summarize_image_quality(per_enc, per_sample, k, concept, order=order)
    n = int(per_sample["n"].iloc[0])
    text = iq.answer(summary, base=base, dataset=meta.name, synthetic=meta.synthetic, k=k, n=n, n_encoders=len(texts))
    settings = dict(
        k=k,
        N=n,
        samples=len(samples),
        max_seeds_per_direction=max_seeds,
        seed=seed,
        encoders=sorted(texts),
        backbones=sorted(image_files),
        base=base,
        degradations=[iq.variant_name(kd, lv) for kd, lv in degr],
    )
    numbers = {"per_variant": summary.set_index("variant").to_dict(orient="index")}
    samples = per_enc.merge(per_sample, on=["variant", "direction", "seed"], how="left")
    figure = ("image quality vs BkR's agreement with XLR", lambda p, title: iq.plot_image_quality(summary, p, title))
    return question_result(art, "image_quality", text, settings, numbers, summary, samples, figure)


def _concept_precisions(
    items: pd.DataFrame, scenes: Mapping[str, Mapping], variants: Mapping[str, Lookup], k: int
) -> dict[str, float]:
    """Same-concept precision@k of every variant over all images of the dataset (SYNTHETIC:
    concept = kind of the scene's main object)."""
    first = items.drop_duplicates("image_id")
    label_of = {img: iq.scene_main_kind(scenes[item]) for img, item in zip(first["image_id"], first["item_id"])}
    out = {}
    for name, (index, emb) in variants.items():
        ids = [i for i in sorted(index, key=lambda i: index[i]) if i in label_of]
        feats = emb[[index[i] for i in ids]]
        out[name] = iq.concept_precision(feats, np.array([label_of[i] for i in ids]), k)
    return out


ANALYSIS = Plugin("image_quality", run)
