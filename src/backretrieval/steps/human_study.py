"""The human-study steps of the case study (Section 3.2).

``sheets`` (blinded top-k suggestions of model A and B), ``simulate`` (a SIMULATED rater from
the synthetic scenes' ground truth, only where no human ratings exist), ``tally``. The sheets,
key, HTML page and tally themselves are :mod:`backretrieval.study.human_study`.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from .._util import io
from ..data.prepared import load_image_table, read_meta
from ..errors import ConfigError, InputError
from ..study.case_study import case_items, parse_run
from .layout import _load

log = logging.getLogger("backretrieval")


def _resolve_model(name: str, chosen: str) -> str:
    return chosen if name == "base" else name


def sheets_step(
    dataset: Path, cs: dict, hs: dict, chosen_json: Path, reprs: dict[str, dict[str, Path]], out: dict[str, Path]
) -> None:
    """Blinded top-k suggestions of ``hs['model_a']`` and ``model_b`` (``base`` = the chosen
    base encoder of ``chosen_json``) for ``n_queries`` source-language evaluation items →
    ``out``: ``template`` (ratings CSV), ``html`` (rating page), ``key`` (sealed key) and
    ``page`` (the rating page again, beside the reports). ``reprs[run][lang]``: the
    evaluated representations (every model that can be compared; the choice is made here),
    a trained head once per training seed as ``<head>@<training seed>``: every seed's head is
    on the one sheet (:class:`~backretrieval.study.human_study.SeedRuns`), so the tally reports
    the study over the training seeds, not over one draw."""
    import shutil
    import tempfile

    from ..study.human_study import HTML_NAME, KEY_NAME, TEMPLATE_NAME, SeedRuns, make_sheets, top_k_suggestions

    by_model: dict[str, dict[int | None, dict[str, Path]]] = {}
    for run, paths in reprs.items():
        model, training_seed = parse_run(run)
        runs = by_model.setdefault(model, {})
        if training_seed in runs or (runs and (training_seed is None) != (None in runs)):
            raise InputError(f"human-sheets: run {run!r} given twice, or {model!r} given both trained and untrained")
        runs[training_seed] = paths
    chosen = json.loads(Path(chosen_json).read_text(encoding="utf-8"))["chosen"]
    ma, mb = _resolve_model(hs["model_a"], chosen), _resolve_model(hs["model_b"], chosen)
    if ma == mb:
        raise ConfigError(
            f"human_study.model_a ({hs['model_a']!r}) and model_b ({hs['model_b']!r}) are the same model "
            f"{ma!r} (the chosen base encoder); compare two different models"
        )
    src, tgt = hs["source_lang"], hs["target_lang"]
    lacking = [
        (run, lang)
        for m in (ma, mb)
        for seed, paths in (by_model.get(m) or {None: {}}).items()
        for run in [m if seed is None else f"{m}@{seed}"]
        for lang in (src, tgt)
        if lang not in paths
    ]
    if lacking:
        raise InputError(f"human-sheets: no representation file for (model, language) {lacking}")
    items = case_items(dataset, cs)
    ev = items[items["split"].isin(cs["eval_splits"])]
    n_q, top_k = int(hs["n_queries"]), int(hs["top_k"])
    src_items = ev[ev["lang"] == src].reset_index(drop=True)
    if n_q > len(src_items):
        raise ConfigError(
            f"human_study.n_queries: {n_q} is more than the {len(src_items)} evaluation items of "
            f"source_lang {src!r} in {dataset} (splits {list(cs['eval_splits'])}); lower n_queries"
        )
    rng = np.random.default_rng(int(hs["seed"]))
    q = src_items.iloc[np.sort(rng.choice(len(src_items), size=n_q, replace=False))]
    qids = set(q["item_id"])
    cands = ev[(ev["lang"] == tgt) & ~ev["item_id"].isin(qids)].reset_index(drop=True)
    if top_k > len(cands):
        raise ConfigError(
            f"human_study.top_k: {top_k} is more than the {len(cands)} candidate items of target_lang "
            f"{tgt!r} in {dataset} (evaluation items, the queries' own items excluded); lower top_k"
        )
    img_path: dict[str, str] = {}
    if hs["show_images"]:
        if (Path(dataset) / "images.csv").is_file():
            images = load_image_table(dataset)
            img_path = {r.image_id: str(Path(dataset) / r.path) for r in images.itertuples()}
        else:  # precomputed features only (e.g. Multi30K + ResNet-50): the sheet shows texts only
            log.warning("%s has no image files (precomputed features only): rating sheet shows texts only", dataset)

    def suggestions(paths: dict[str, Path]) -> dict:
        qi, qe = _load(paths[src])
        ci, ce = _load(paths[tgt])
        top = top_k_suggestions(qe[[qi[i] for i in q["item_id"]]], ce[[ci[i] for i in cands["item_id"]]], k=top_k)
        return {
            qid: [
                (
                    cands.loc[j, "item_id"],
                    f"{cands.loc[j, 'title']}\n{cands.loc[j, 'body']}".strip(),
                    img_path.get(cands.loc[j, "image_id"]),
                )
                for j in row
            ]
            for qid, row in zip(q["item_id"], top)
        }

    sugg = {
        m: suggestions(by_model[m][None])
        if None in by_model[m]
        else SeedRuns({int(seed): suggestions(paths) for seed, paths in by_model[m].items() if seed is not None})
        for m in (ma, mb)
    }
    queries = pd.DataFrame(
        {
            "query_id": q["item_id"].tolist(),
            "text": (q["title"] + "\n" + q["body"]).str.strip().tolist(),
            "image_path": [img_path.get(i) for i in q["image_id"]],
        }
    )
    # make_sheets writes its three files under fixed names into one folder: a temporary
    # sibling of the template, then each file is moved to the path it was given
    Path(out["template"]).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".sheets.", dir=Path(out["template"]).parent))
    try:
        make_sheets(
            queries,
            sugg[ma],
            sugg[mb],
            tmp,
            seed=int(hs["seed"]),
            model_names=(ma, mb),
            title=f"Relevance rating: {src} queries, {tgt} suggestions",
            query_lang=src,
            suggestion_lang=tgt,
            show_images=bool(hs["show_images"]),
        )
        for name, made in (("key", KEY_NAME), ("template", TEMPLATE_NAME), ("html", HTML_NAME)):
            Path(out[name]).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / made, out[name])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    io.write_text(out["page"], Path(out["html"]).read_text(encoding="utf-8"))


def simulate_step(dataset: Path, template: Path, key: Path, seed: int, out: Path) -> Path:
    """SIMULATED ratings of the rating template from the synthetic ground truth (scene similarity)."""
    from ..data.synthetic import load_scenes, scene_similarity
    from ..study.simulated_rater import simulate_ratings

    meta = read_meta(dataset)
    if not meta.synthetic:
        raise InputError(
            f"{dataset}: the simulated rater needs the synthetic dataset's ground-truth scenes; for real data "
            "collect human ratings with rating_sheet.html and set human_study.ratings"
        )
    scenes = load_scenes(dataset)
    simulate_ratings(
        template, lambda qid, cid: scene_similarity(scenes[qid], scenes[cid]), out, seed=int(seed), key_path=key
    )
    return Path(out)


def tally_step(
    ratings: Path, key: Path, allow_unverified_key: bool, simulated: bool, out_md: Path, out_json: Path
) -> None:
    """Unblind ``ratings`` with the sealed ``key`` and tally them → Markdown + JSON.
    ``simulated``: label the tally SIMULATED (the ratings come from the simulated rater)."""
    from ..study.human_tally import tally, tally_markdown

    res = tally(ratings, key, allow_unverified_key=bool(allow_unverified_key))
    md = tally_markdown(res, simulated=res.simulated or simulated)
    io.write_text(out_md, md)
    d = res.to_dict()
    for k, v in list(d.items()):
        if isinstance(v, float) and not math.isfinite(v):
            d[k] = str(v)
    io.write_json(out_json, d)
