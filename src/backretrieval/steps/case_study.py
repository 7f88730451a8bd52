"""The paper's case study (Section 3.2) as pipeline steps.

1. ``embed`` (:mod:`.case_embed`, its own step: it runs no retrieval kernel): title and body
   embeddings of every case-study item with each base encoder (and the random baseline); the
   evaluated base representation is ``concat(normalize(title), normalize(body))``.
2. ``select``: BkR of each base encoder over all ordered language pairs → the base encoder
   the heads are trained on (``head_base: auto`` picks the best, as the paper chose LaBSE).
3. ``train``: a TRIPLET / TRIPLETXL head on the *training* items' frozen base embeddings
   (text only, no images), once per ``training_seeds`` entry (the seed of its init, split and
   batches), then the evaluated representation ``concat(x_rt, x_rb)``.
4. ``evaluate``: BkR for every ordered pair of case-study languages (20 for 5 languages),
   every run (base encoders; each head once per training seed), every sample seed, on the
   *evaluation* items (images needed) → tidy CSV (``training_seed`` empty for base encoders) + hits.
5. ``report``: Table 2 (BkR ×1000 per model: mean over training seeds of the mean over pairs,
   sd over training seeds, a bootstrap CI over training seeds × pairs; the paper's comparisons,
   TRIPLETXL vs TRIPLET and each head vs its base, as differences with a Student t interval over
   the training seeds and a plain "decided"; the best model vs each other one over the distinct
   query images, from case-evaluate's hits) and Figure 3 (per-pair values, per-seed means marked).

The library part (config defaults, item selection, Table 2 statistics) is
:mod:`backretrieval.study.case_study`; the human-study steps are :mod:`.human_study`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from .._util import io
from .._util.device import limit_threads
from ..data.prepared import read_meta
from ..errors import ConfigError, InputError
from ..metrics import BkrImageIndex, backretrieve
from ..study.case_study import (
    HEAD_LABEL,
    HEADS,
    case_items,
    case_protocol,
    directions,
    eval_samples,
    parse_run,
    query_images,
    runs,
    table2,
    training_spread,
)
from .layout import CASE_REPORT_FILES, _load

log = logging.getLogger("backretrieval")

#: run → language → path of its evaluated representation (npz: ``emb``, ``ids``); a run is a
#: base encoder's name or a head's ``<head>@<training seed>`` (:func:`~backretrieval.study.case_config.run_id`).
Reprs = dict[str, dict[str, Path]]


# -------------------------------------------------------------------------------------------
# evaluation core


def _eval_models(
    dataset: Path, cs: dict, image_file: Path, reprs: Reprs, out_csv: Path, hits_out: Path | None
) -> pd.DataFrame:
    missing = [(m, lang) for m in reprs for lang in cs["languages"] if lang not in reprs[m]]
    if missing:
        raise InputError(f"case study: no representation file for (model, language) {missing[:3]}")
    prot = case_protocol(cs)  # N, the seeds and k, checked as every evaluation's
    image_of, samples = eval_samples(dataset, cs, prot)  # Table 2's item test redraws them the same way
    img_index, img = _load(image_file)
    loaded = {m: {lang: _load(reprs[m][lang]) for lang in cs["languages"]} for m in reprs}
    rows, hits_store = [], {}
    for d in directions(cs):
        src, tgt = d.split("-")
        for seed in prot.seeds:
            s = samples[(d, seed)]
            qi = [img_index[image_of[src][i]] for i in s.queries]
            ti = [img_index[image_of[tgt][i]] for i in s.bkr_targets]
            index = BkrImageIndex.build(img[qi], img[ti], k=prot.recall_k)
            for m in reprs:
                (si, se), (tix, te) = loaded[m][src], loaded[m][tgt]
                q = se[[si[i] for i in s.queries]]
                t = te[[tix[i] for i in s.bkr_targets]]
                h = index.hits(backretrieve(q, t))
                model, training_seed = parse_run(m)
                rows.append(
                    dict(
                        model=model,
                        training_seed=training_seed,
                        direction=d,
                        seed=seed,
                        n=len(h),
                        bkr_recall=float(h.mean()),
                    )
                )
                hits_store[f"{m}/{d}/{seed}"] = h.astype(np.int8)
    df = pd.DataFrame(rows)
    df["training_seed"] = df["training_seed"].astype("Int64")  # empty for the (untrained) base encoders
    df = df.sort_values(["model", "training_seed", "direction", "seed"], kind="stable").reset_index(drop=True)
    if hits_out is not None:
        io.save_npz(hits_out, **hits_store)
    io.write_csv(out_csv, df)
    return df


# -------------------------------------------------------------------------------------------
# 2. select the base encoder by BkR


def select_step(dataset: Path, cs: dict, image_file: Path, reprs: Reprs, out_json: Path, out_csv: Path) -> str:
    """BkR of each base encoder (``reprs``) over all ordered pairs → ``out_csv``; the chosen
    base encoder (``head_base``, or the best by mean BkR for ``auto``) → ``out_json``."""
    bases = list(cs["base_encoders"])
    df = _eval_models(dataset, cs, image_file, {m: reprs[m] for m in bases}, out_csv, None)
    means = df.groupby("model")["bkr_recall"].mean().sort_values(ascending=False)
    chosen = cs["head_base"] if cs["head_base"] != "auto" else str(means.index[0])
    io.write_json(
        out_json,
        {
            "chosen": chosen,
            "rule": "configured" if cs["head_base"] != "auto" else "highest mean BkR",
            "mean_bkr": {m: round(float(v), 6) for m, v in means.items()},
        },
    )
    return chosen


# -------------------------------------------------------------------------------------------
# 3. train heads


def train_step(
    dataset: Path,
    cs: dict,
    head: str,
    training_seed: int,
    chosen_json: Path,
    fields: dict[str, dict[str, dict[str, Path]]],
    out: dict[str, Path],
    repr_outs: dict[str, Path],
    threads: int | None = None,
) -> None:
    """Train a TRIPLET / TRIPLETXL head with ``training_seed`` (one of ``training_seeds``: the
    seed of its init, validation split and batch order) on the chosen base encoder's frozen title/body
    embeddings of the training items (``fields[encoder][lang][field]``, every base encoder:
    the choice is made at run time) → ``out`` (``head`` .pt, ``meta`` .json, ``history`` .csv,
    ``curve`` .png) and the head's evaluated representation per language → ``repr_outs``."""
    from ..reporting.figures import plot_loss_curves
    from ..study.triplet import TripletConfig, encode, save_head, train_heads

    if head not in HEADS:
        raise ConfigError(f"head must be one of {HEADS}, got {head!r}")
    if int(training_seed) not in cs["training_seeds"]:
        raise ConfigError(
            f"case-train: training seed {training_seed} is not one of case_study.training_seeds {cs['training_seeds']}"
        )
    if Path(out["meta"]) != Path(out["head"]).with_suffix(".json"):
        raise InputError(
            f"case-train: the head's metadata is written beside its weights as "
            f"{Path(out['head']).with_suffix('.json')}, not {out['meta']}"
        )
    if threads is not None:
        limit_threads(threads)
    base = json.loads(Path(chosen_json).read_text(encoding="utf-8"))["chosen"]
    if base not in fields:
        raise InputError(
            f"{chosen_json}: chosen base encoder {base!r} has no field embeddings (given: {sorted(fields)})"
        )
    items = case_items(dataset, cs)
    titles, bodies, langs, keys = [], [], [], []
    for lang in cs["languages"]:
        t_idx, t = _load(fields[base][lang]["title"])
        b_idx, b = _load(fields[base][lang]["body"])
        tr = items[(items["lang"] == lang) & items["split"].isin(cs["train_splits"])]
        ids = tr["item_id"].tolist()
        titles.append(t[[t_idx[i] for i in ids]])
        bodies.append(b[[b_idx[i] for i in ids]])
        langs += [lang] * len(ids)
        keys.append((lang, t_idx, t, b))
    conf = TripletConfig.from_dict({**cs["triplet"], "seed": int(training_seed)})
    conf.validate()
    result = train_heads(np.vstack(titles), np.vstack(bodies), np.array(langs), conf, xl=(head == "tripletxl"))
    save_head(result, out["head"])
    meta = read_meta(dataset)
    syn = "SYNTHETIC dataset — " if meta.synthetic else ""  # as every figure of SYNTHETIC data says
    plot_loss_curves(
        result.history,
        out["curve"],
        title=f"{syn}{meta.name}: {HEAD_LABEL[head]} on {base}, training seed {training_seed} "
        f"(best epoch {result.best_epoch})",
    )
    io.write_csv(out["history"], pd.DataFrame(result.history))
    for lang, t_idx, t, b in keys:
        ids = sorted(t_idx, key=t_idx.__getitem__)
        io.save_npz(repr_outs[lang], emb=encode(result, t, b), ids=np.array(ids, dtype=str))


def training_settings(cs: dict) -> dict:
    """The heads' resolved training settings (``case_study.triplet`` over TripletConfig's
    defaults), without the seed (the training seeds are recorded beside them) and the device."""
    from dataclasses import asdict

    from ..study.triplet import TripletConfig

    conf = asdict(TripletConfig.from_dict({**cs["triplet"], "seed": 0}))
    return {k: conf[k] for k in sorted(conf) if k not in ("seed", "device")}


# -------------------------------------------------------------------------------------------
# 4. evaluate


def evaluate_step(dataset: Path, cs: dict, image_file: Path, reprs: Reprs, out_csv: Path, out_hits: Path) -> None:
    """BkR of every case-study run (baseline, base encoders, each head per training seed) for
    every ordered pair."""
    order = runs(cs)
    lacking = [m for m in order if m not in reprs]
    if lacking:
        raise InputError(f"case-evaluate: no representations of {lacking}")
    _eval_models(dataset, cs, image_file, {m: reprs[m] for m in order}, out_csv, out_hits)


# -------------------------------------------------------------------------------------------
# 5. report: Table 2 + Figure 3


def _best_vs_other_text(sig: pd.DataFrame, cs: dict, with_hits: bool) -> str:
    """Table 2's sentence on the best-vs-other comparisons: their unit and how many items."""
    if not with_hits:
        return (
            "Best model vs each other one: not tested (no per-query hits given, `case-report --hits`); a test over "
            "the pooled queries would count an image drawn by several pairs and sample seeds as new evidence."
        )
    rows = sig[sig["comparison"] == "best vs other"]
    if rows.empty:
        return ""
    n_items, n_q = int(rows["n_items"].iloc[0]), int(rows["n_queries"].iloc[0])
    return (
        f"Best model vs each other one: the distinct query image is the unit ({n_items} distinct images behind "
        f"{n_q} queries over {len(directions(cs))} pairs × {len(cs['seeds'])} sample seeds); per query a head's hit is "
        "averaged over its training seeds; paired permutation test over images (sign flips of each image's summed "
        "difference) and the item bootstrap's 95% interval, none printed where it cannot be estimated honestly."
    )


def report_step(
    dataset: Path,
    cs: dict,
    chosen_json: Path,
    bkr_csv: Path,
    out: dict[str, Path],
    threads: int | None = None,
    hits: Path | None = None,
) -> None:
    """Table 2 and Figure 3 → ``out`` (names: :data:`backretrieval.steps.layout.CASE_REPORT_FILES`);
    ``threads``: the model jobs' torch/BLAS threads (``model_threads``), recorded in the
    environment block of metrics.json (:mod:`backretrieval.reporting.environment`).
    ``metrics`` also records each head's BkR per training seed and their sd (``training_spread``).
    ``hits``: ``case-evaluate``'s per-query hits (``bkr_hits.npz``): with them Table 2 compares
    the best model with each other one over the distinct query images (the samples redrawn
    from ``dataset``, :func:`~backretrieval.study.case_study.query_images`); without them those
    rows are left out (the text says so)."""
    # matplotlib and SciPy: imported by this step only, not by every case-study job
    from ..reporting.environment import ENVIRONMENT, environment_block
    from ..reporting.figures import fig3_boxplot
    from ..reporting.tables import table2_latex, table2_markdown
    from .report import figure_base

    missing = sorted(set(CASE_REPORT_FILES) - set(out))
    if missing:
        raise InputError(f"case-report: no output path for {missing}")
    meta = read_meta(dataset)
    chosen_info = json.loads(Path(chosen_json).read_text(encoding="utf-8"))
    chosen = chosen_info["chosen"]
    df = pd.read_csv(bkr_csv)
    loaded_hits = io.load_npz(hits) if hits is not None else None
    prot = case_protocol(cs)  # N, the seeds and k, checked as every evaluation's
    t, sig = table2(df, cs, chosen, loaded_hits, query_images(dataset, cs, prot) if hits is not None else None)
    R = len(cs["training_seeds"])
    syn = "SYNTHETIC dataset — " if meta.synthetic else ""
    caption = (
        f"{syn}{meta.name}; {len(directions(cs))} ordered pairs of {', '.join(cs['languages'])}; N={prot.sample_size} "
        f"(non-matching target sets), {len(prot.seeds)} sample seeds; Recall@{prot.recall_k}. Heads trained on frozen "
        f"'{chosen}' title/body embeddings (base chosen by {chosen_info['rule']}: "
        + ", ".join(f"{m} {v * 1000:.1f}" for m, v in chosen_info["mean_bkr"].items())
        + f"), once per training seed: each head's BkR is the mean over R={R} training seeds "
        f"({', '.join(map(str, cs['training_seeds']))}) of the mean over pairs, ± the sd over training seeds "
        "(base encoders are not trained: one run, no sd). CI: percentile bootstrap over training seeds × language "
        "pairs (over pairs for a model with one run). " + _best_vs_other_text(sig, cs, hits is not None)
    )
    io.write_text(out["table2"], table2_markdown(t, sig, caption))
    io.write_text(out["table2_tex"], table2_latex(t, f"{syn}{meta.name}"))
    io.write_csv(out["table2_csv"], t)
    io.write_csv(out["sig"], sig)
    fig3_boxplot(
        df,
        t,
        figure_base(out, "fig3"),
        f"{syn}{meta.name}: BkR per model across language pairs\n"
        f"heads: pairs averaged over R={R} training seeds; diamonds: each training seed's mean over pairs",
    )
    summary = {m: round(float(v), 3) for m, v in zip(t["model"], t["bkr_x1000"])}
    io.write_json(
        out["metrics"],
        {
            "bkr_x1000_mean_over_pairs": summary,
            "best": t.loc[0, "model"],
            "head_base": chosen,
            "synthetic": meta.synthetic,
            # the evaluation's N and recall k (verify scales its float-level tolerances with N)
            "sample_size": prot.sample_size,
            "recall_k": prot.recall_k,
            ENVIRONMENT: environment_block(threads),
            # the heads' training settings and base encoders: `backretrieval verify` compares them
            # exactly, so a changed training is named even where its outcome stays within the spread
            "base_encoders": list(cs["base_encoders"]),
            "training": training_settings(cs),
            # per trained head: BkR×1000 per training seed and its sd (read by `backretrieval verify`)
            "training_seeds": [int(x) for x in cs["training_seeds"]],
            "training_spread": training_spread(df, cs),
        },
    )
