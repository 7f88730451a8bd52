"""The findings steps: thin wrappers that read cached artifacts from EXPLICIT paths, call one
analysis of :mod:`backretrieval.findings` and write ``<out_dir>/<analysis>.{csv,md,json}``,
the per-sample rows ``<out_dir>/<analysis>.samples.csv`` and figures
``<out_dir>/figures/<name>.{png,svg,pdf}``. No step derives a path from the config."""

from __future__ import annotations

# =============================================================================================
# findings-b: image quality (question 2), sample size (question 3), hubness (question 4)
# =============================================================================================

import logging
import math
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from .._util import io
from ..data.prepared import load_items, read_meta
from ..errors import ConfigError, InputError
from ..findings import hubness as hub_mod
from ..findings import image_quality as iq
from ..findings import sample_size as ss
from ..findings.views import Lookup, iter_views
from ..metrics.kernels import CSLS_K, MARGIN_K
from .layout import load_embedding, skipped_reason
from .sample import read_samples

log = logging.getLogger("backretrieval")


def load_texts(text_files: Mapping[tuple[str, str], Path]) -> dict[str, dict[str, Lookup]]:
    """``{(encoder, lang): npz}`` → ``{encoder: {lang: lookup}}``; a skipped model is left out
    (with a warning), as in the metrics step."""
    out: dict[str, dict[str, Lookup]] = {}
    skipped = set()
    for (enc, lang), path in sorted(text_files.items()):
        lk = load_embedding(Path(path))
        if lk is None:
            log.warning("encoder %s skipped: %s", enc, skipped_reason(Path(path)))
            skipped.add(enc)
            continue
        out.setdefault(enc, {})[lang] = lk
    for enc in skipped:
        out.pop(enc, None)
    if len(out) < 3:
        raise InputError(f"findings: agreement across encoders needs >= 3 encoders with embeddings, got {sorted(out)}")
    return out


def load_image(path: Path) -> Lookup:
    lk = load_embedding(Path(path))
    if lk is None:
        raise InputError(f"{path}: image backbone was skipped; the analysis needs image features")
    return lk


def _samples(samples_files: list[Path], max_seeds: int | None) -> list:
    """The samples of every file, the first ``max_seeds`` seeds of each (file order)."""
    out = []
    for p in samples_files:
        s = read_samples(Path(p))
        out.extend(s if max_seeds is None else s[:max_seeds])
    if not out:
        raise InputError("findings: no samples given")
    return out


def markdown_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub Markdown table; floats with ``digits`` decimals, NaN as an empty cell."""
    def cell(v) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if math.isnan(v) else f"{v:.{digits}f}"
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _write_outputs(out_dir: Path, analysis: str, question: str, answer: str, config: str, synthetic: bool,
                   summary: pd.DataFrame, samples: pd.DataFrame, numbers: dict, settings: dict,
                   extra_md: str = "") -> None:
    out_dir = Path(out_dir)
    io.write_csv(out_dir / f"{analysis}.samples.csv", samples)
    io.write_csv(out_dir / f"{analysis}.csv", summary)
    label = "SYNTHETIC data. " if synthetic else ""
    md = [f"## {question}", "", f"{label}Config `{config}`. Settings: " +
          ", ".join(f"{k}={v}" for k, v in settings.items()), "", answer, "", markdown_table(summary)]
    if extra_md:
        md += ["", extra_md]
    io.write_text(out_dir / f"{analysis}.md", "\n".join(md))
    io.write_json(out_dir / f"{analysis}.json", {
        "question": question, "answer": answer, "config": config, "synthetic": bool(synthetic),
        "numbers": _clean(numbers), "settings": _clean(settings),
    })


def _clean(obj):
    """JSON-safe: numpy scalars → Python, NaN → None."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return None if math.isnan(float(obj)) else float(obj)
    return obj


# ---- question 2: image quality ---------------------------------------------------------------

IMAGE_QUALITY_QUESTION = "How good must the image side be?"


def parse_degradations(noise: list[float], project: list[int], shuffle: bool) -> list[tuple[str, float | int | None]]:
    return [("noise", float(x)) for x in noise] + [("project", int(x)) for x in project] + ([("shuffle", None)] if shuffle else [])


def image_quality_step(
    *,
    dataset: Path,
    samples_files: list[Path],
    text_files: Mapping[tuple[str, str], Path],
    image_files: Mapping[str, Path],
    base: str,
    degradations: list[tuple[str, float | int | None]],
    k: int,
    max_seeds: int | None,
    seed: int,
    out_dir: Path,
    config_name: str,
) -> dict:
    """Question 2 on one config: every backbone of ``image_files`` plus the ``degradations``
    of the ``base`` backbone, on the same samples (the first ``max_seeds`` of each direction)."""
    if base not in image_files:
        raise InputError(f"findings image quality: base backbone {base!r} is not among the image files {sorted(image_files)}")
    meta = read_meta(dataset)
    items = load_items(dataset)
    texts = load_texts(text_files)
    variants: dict[str, Lookup] = {name: load_image(p) for name, p in image_files.items()}
    base_index, base_emb = variants[base]
    for i, (kind, level) in enumerate(degradations):
        name = f"{base}:{iq.variant_name(kind, level)}"
        variants[name] = (base_index, iq.degrade(base_emb, kind, level, seed + i))
    scenes = None
    concept = None
    if meta.synthetic and (Path(dataset) / "scenes.jsonl").is_file():
        from ..data.synthetic import load_scenes

        scenes = load_scenes(dataset)
        concept = _concept_precisions(items, scenes, variants, k)
    samples = _samples(samples_files, max_seeds)
    per_enc, per_sample = iq.image_quality_metrics(iter_views(samples, items, texts), variants, k=k, scenes=scenes)
    order = [n for n in image_files] + [n for n in variants if n not in image_files]
    summary = iq.summarize_image_quality(per_enc, per_sample, k, concept, order=order)
    n = int(per_sample["n"].iloc[0])
    text = iq.answer(summary, base=base, dataset=meta.name, synthetic=meta.synthetic, k=k, n=n, n_encoders=len(texts))
    settings = dict(k=k, N=n, samples=len(samples), max_seeds_per_direction=max_seeds, seed=seed,
                    encoders=sorted(texts), backbones=sorted(image_files), base=base,
                    degradations=[iq.variant_name(kd, lv) for kd, lv in degradations])
    numbers = {"per_variant": summary.set_index("variant").to_dict(orient="index")}
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: image quality vs BkR's agreement with XLR"
    iq.plot_image_quality(summary, Path(out_dir) / "figures" / "image_quality", fig_title)
    samples_df = per_enc.merge(per_sample, on=["variant", "direction", "seed"], how="left")
    _write_outputs(Path(out_dir), "image_quality", IMAGE_QUALITY_QUESTION, text, config_name, meta.synthetic,
                   summary, samples_df, numbers, settings)
    return numbers


def _concept_precisions(items: pd.DataFrame, scenes: Mapping[str, Mapping], variants: Mapping[str, Lookup],
                        k: int) -> dict[str, float]:
    """Same-concept precision@k of every variant over all images of the dataset (SYNTHETIC:
    concept = kind of the scene's main object)."""
    first = items.drop_duplicates("image_id")
    label_of = {img: iq.scene_main_kind(scenes[item]) for img, item in zip(first["image_id"], first["item_id"])}
    out = {}
    for name, (index, emb) in variants.items():
        ids = [i for i in sorted(index, key=index.get) if i in label_of]
        feats = emb[[index[i] for i in ids]]
        out[name] = iq.concept_precision(feats, np.array([label_of[i] for i in ids]), k)
    return out


# ---- question 3: sample size -------------------------------------------------------------

SAMPLE_SIZE_QUESTION = "How large must N be?"


def sample_size_step(
    *,
    dataset: Path,
    text_files: Mapping[tuple[str, str], Path],
    image_file: Path,
    directions: list[str],
    n_grid: list[int],
    seeds: list[int],
    k: int,
    baseline: str | None,
    out_dir: Path,
    config_name: str,
    criterion: ss.Criterion = ss.Criterion(),
) -> dict:
    """Question 3 on one prepared dataset (the scaled SYNTHETIC one, or a real config's):
    N values above what the dataset allows (2N items with texts in both languages) are dropped
    with a warning."""
    meta = read_meta(dataset)
    items = load_items(dataset)
    texts = load_texts(text_files)
    image = load_image(image_file)
    if baseline is not None and baseline not in texts:
        raise InputError(f"findings sample size: baseline encoder {baseline!r} has no embeddings ({sorted(texts)})")
    max_n = min(_parallel_items(items, d) for d in directions) // 2
    grid = sorted(n for n in set(n_grid) if n <= max_n)
    dropped = sorted(n for n in set(n_grid) if n > max_n)
    if dropped:
        log.warning("sample size: N %s dropped: %s has at most %d items per side", dropped, meta.name, max_n)
    if len(grid) < 2:
        raise InputError(f"findings sample size: {meta.name} allows N <= {max_n}; fewer than 2 values of {sorted(n_grid)} remain")
    per_enc = ss.sample_size_metrics(items, texts, image, directions, grid, seeds, k=k, parallel=meta.parallel)
    stab = ss.ranking_stability(per_enc, k, baseline=baseline, criterion=criterion)
    text = ss.answer(stab, dataset=meta.name, synthetic=meta.synthetic, k=k, n_encoders=len(texts),
                     n_seeds=len(seeds), directions=list(directions), baseline=baseline, criterion=criterion)
    numbers = {
        "smallest_stable_n": ss.smallest_reliable_n(stab, "stab_reliable_share", criterion),
        "smallest_valid_n": ss.smallest_reliable_n(stab, "valid_reliable_share", criterion),
        "criterion": criterion.text(),
        "per_n": stab.set_index("n").to_dict(orient="index"),
        "mean_bkr": per_enc.groupby(["n", "encoder"])["bkr_recall"].mean().unstack().to_dict(orient="index"),
    }
    settings = dict(k=k, n_grid=grid, n_dropped=dropped, seeds=list(seeds), directions=list(directions),
                    encoders=sorted(texts), baseline=baseline, dataset=meta.name, items_per_side_max=max_n)
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: BkR's encoder ranking vs N"
    ss.plot_sample_size(stab, per_enc, k, Path(out_dir) / "figures" / "sample_size", fig_title, criterion)
    means = per_enc.groupby(["n", "encoder"])[["xlr_r1", "xlr_recall", "bkr_recall"]].mean().reset_index()
    _write_outputs(Path(out_dir), "sample_size", SAMPLE_SIZE_QUESTION, text, config_name, meta.synthetic,
                   stab, per_enc, numbers, settings,
                   extra_md="Mean metrics per N and encoder:\n\n" + markdown_table(means, 4))
    return numbers


def _parallel_items(items: pd.DataFrame, direction: str) -> int:
    src, tgt = direction.split("-")
    return len(set(items.loc[items.lang == src, "item_id"]) & set(items.loc[items.lang == tgt, "item_id"]))


def synthetic_dataset_step(out: Path, n_items: int, languages: list[str], seed: int, image_size: int) -> None:
    """The scaled SYNTHETIC dataset of question 3 (prepared format, written atomically)."""
    from ..data.synthetic import generate

    generate(out, n_items=n_items, languages=tuple(languages), seed=seed, image_size=image_size)


# ---- question 4: hubness -----------------------------------------------------------------

HUBNESS_QUESTION = "Is BkR robust to hubness, and do CSLS / margin retrieval help?"


def hubness_step(
    *,
    dataset: Path,
    samples_files: list[Path],
    text_files: Mapping[tuple[str, str], Path],
    image_file: Path,
    retrievals: list[str],
    hub_fraction: float,
    hub_noise: float,
    k: int,
    max_seeds: int | None,
    seed: int,
    out_dir: Path,
    config_name: str,
) -> dict:
    """Question 4 on one config's cached samples and embeddings."""
    meta = read_meta(dataset)
    items = load_items(dataset)
    texts = load_texts(text_files)
    image = load_image(image_file)
    samples = _samples(samples_files, max_seeds)
    df = hub_mod.hubness_metrics(iter_views(samples, items, texts), image, retrievals=retrievals,
                                 hub_fraction=hub_fraction, hub_noise=hub_noise, k=k, seed=seed)
    per_enc, summary = hub_mod.summarize_hubness(df)
    n = int(df["n"].iloc[0])
    n_hubs = int(df.loc[df.condition == "hubs", "n_hubs"].max())
    text = hub_mod.answer(per_enc, summary, dataset=meta.name, synthetic=meta.synthetic, k=k, n=n,
                          n_hubs=n_hubs, n_encoders=len(texts))
    numbers = {
        "per_setting": {f"{r.condition}/{r.retrieval}": r._asdict() for r in summary.itertuples(index=False)},
        "per_encoder": {f"{r.condition}/{r.retrieval}/{r.encoder}": r._asdict() for r in per_enc.itertuples(index=False)},
    }
    settings = dict(k=k, N=n, samples=len(samples), max_seeds_per_direction=max_seeds, retrievals=list(retrievals),
                    csls_k=CSLS_K, margin_k=MARGIN_K, hub_fraction=hub_fraction, n_hubs=n_hubs, hub_noise=hub_noise,
                    occurrence_k=10, seed=seed, encoders=sorted(texts))
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: hubness of BkR step 1"
    hub_mod.plot_hubness(per_enc, summary, Path(out_dir) / "figures" / "hubness", fig_title)
    _write_outputs(Path(out_dir), "hubness", HUBNESS_QUESTION, text, config_name, meta.synthetic, summary, df,
                   numbers, settings, extra_md="Per encoder (means over samples):\n\n" + markdown_table(per_enc))
    return numbers

# =============================================================================================
# end of findings-b
# =============================================================================================


# ---- settings of the findings-b rules (defaults, overridable in the config's `findings:`) ----

LITE_VARIANTS = ("lite0", "lite2")


def settings_b(cfg: dict) -> dict:
    """The settings of questions 2-4 for one config: the defaults below, updated by the
    config's ``findings: {image_quality: {...}, sample_size: {...}, hubness: {...}}``.

    Defaults are sized for the 2-core budget of ``snakemake findings`` (a few minutes each):
    image quality on the first 5 seeds of every direction, hubness on the first 3; question 3
    on a SYNTHETIC dataset scaled to 10,000 items (en, de; random, MiniLM, USE-M and 1024-bucket
    char n-grams) for the synthetic config, and on the config's own items and encoders (N up to
    what the items allow) for real data. ``sample_size.encoders`` is a list of configured ids
    or, on the synthetic config, a mapping id → spec.
    """
    user = cfg.get("findings") or {}
    synthetic = cfg["dataset"]["source"] == "synthetic"
    base = cfg["image_backbone"]
    base_spec = dict(cfg["backbones"][base])
    extra: dict[str, dict] = {}
    if base_spec.get("type") == "efficientnet-lite":  # the other offline EfficientNet-Lite variant
        for v in LITE_VARIANTS:
            if v != str(base_spec.get("variant", "lite0")):
                extra[f"effnet-{v}"] = {**base_spec, "variant": v}
    iq = {"max_seeds": 5, "noise": [0.5, 1.0, 2.0, 4.0], "project": [128, 16, 4], "shuffle": True, "seed": 0,
          "backbones": extra, **(user.get("image_quality") or {})}
    ss_default = {
        "seeds": list(range(10)), "min_agreement": 0.9, "min_share": 0.9,
        "n_grid": [100, 200, 500, 1000, 2000, 5000] if synthetic else [100, 200, 300, 400, 500],
        "directions": ["en-de", "de-en"] if synthetic else list(cfg["directions"]),
        # synthetic: cheap encoders of graded quality; the 1024-bucket char n-grams cost a quarter
        # of the config's 4096-bucket ones in every N x N product
        "encoders": ({**{e: cfg["encoders"][e] for e in ("random", "minilm-en", "use-m") if e in cfg["encoders"]},
                      "char-ngram-1k": {"type": "char_ngram", "dim": 1024, "n": [2, 3, 4]}}
                     if synthetic else list(cfg["encoders"])),
        "synthetic": {"n_items": 10000, "languages": ["en", "de"], "seed": cfg["dataset"].get("synthetic", {}).get("seed", 0),
                      "image_size": cfg["dataset"].get("synthetic", {}).get("image_size", 160)} if synthetic else None,
    }
    ss_cfg = {**ss_default, **(user.get("sample_size") or {})}
    if not isinstance(ss_cfg["encoders"], dict):  # a list of the config's encoder ids
        missing = [e for e in ss_cfg["encoders"] if e not in cfg["encoders"]]
        if missing:
            raise ConfigError(f"findings.sample_size.encoders: {missing} are not configured encoders")
        ss_cfg["encoders"] = {e: cfg["encoders"][e] for e in ss_cfg["encoders"]}
    if not synthetic and any(spec != cfg["encoders"].get(e) for e, spec in ss_cfg["encoders"].items()):
        raise ConfigError("findings.sample_size.encoders: on a real dataset only configured encoders "
                          "(their cached embeddings) can be used")
    random_encoders = [e for e, spec in ss_cfg["encoders"].items() if spec.get("type") == "random"]
    ss_cfg.setdefault("baseline", random_encoders[0] if random_encoders else None)
    hub = {"max_seeds": 3, "retrievals": ["cosine", "csls", "margin"], "hub_fraction": 0.02, "hub_noise": 0.1,
           "seed": 0, **(user.get("hubness") or {})}
    return {"image_quality": iq, "sample_size": ss_cfg, "hubness": hub}
