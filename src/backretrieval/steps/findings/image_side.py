"""Findings steps: image quality, sample size and hubness."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ..._util import io
from ...data.prepared import load_items, read_meta
from ...errors import InputError
from ...findings import hubness as hub_mod
from ...findings import image_quality as iq
from ...findings import sample_size as ss
from ...findings.document import FindingsRecord, RunInfo, markdown_table
from ...findings.views import Lookup, iter_views
from ...metrics.retrieval import CSLS_K, MARGIN_K
from ..layout import load_embedding, skipped_reason
from ..sample import read_samples
from ._common import _figure_outputs, _record

log = logging.getLogger("backretrieval")

# ============================================================================================
# 2. image quality, 3. sample size, 4. hubness


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


def _verdict(answer: str) -> str:
    """The first sentence of a generated answer (its headline)."""
    head = re.split(r"(?<=[.!?])\s+(?=[A-Z])", answer.strip(), maxsplit=1)[0]
    return head if head.endswith((".", "!", "?")) else head + "."


def _write_outputs(
    out_dir: Path,
    analysis: str,
    answer: str,
    run: RunInfo,
    summary: pd.DataFrame,
    samples: pd.DataFrame,
    numbers: dict,
    settings: dict,
    extra_md: str = "",
) -> FindingsRecord:
    """``<analysis>.{csv,md}``, the per-sample rows ``<analysis>.samples.csv`` and the record
    ``<analysis>.json`` (:class:`~backretrieval.findings.document.FindingsRecord`); the figures
    ``figures/<analysis>.*`` are written by the step before."""
    from ...findings.document import QUESTION_BY_ANALYSIS

    out_dir = Path(out_dir)
    q = QUESTION_BY_ANALYSIS[analysis]
    io.write_csv(out_dir / f"{analysis}.samples.csv", samples)
    io.write_csv(out_dir / f"{analysis}.csv", summary)
    label = "SYNTHETIC data. " if run.synthetic else ""
    md = [
        f"## {q.title}",
        "",
        f"*{q.question}*",
        "",
        f"{label}Configuration `{run.run_name}` ({run.dataset}). Settings: "
        + ", ".join(f"{k}={v}" for k, v in settings.items()),
        "",
        answer,
        "",
        markdown_table(summary),
    ]
    if extra_md:
        md += ["", extra_md]
    io.write_text(out_dir / f"{analysis}.md", "\n".join(md))
    outputs = (f"{analysis}.md", f"{analysis}.csv", f"{analysis}.samples.csv", *_figure_outputs(analysis))
    rec = FindingsRecord(
        analysis=analysis,
        run=run,
        settings=settings,
        numbers=numbers,
        answer=answer,
        verdict=_verdict(answer),
        outputs=outputs,
    )
    _record(out_dir, rec)
    return rec


# ---- question 2: image quality ---------------------------------------------------------------


def parse_degradations(noise: list[float], project: list[int], shuffle: bool) -> list[tuple[str, float | int | None]]:
    return (
        [("noise", float(x)) for x in noise]
        + [("project", int(x)) for x in project]
        + ([("shuffle", None)] if shuffle else [])
    )


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
    run: RunInfo,
) -> FindingsRecord:
    """Question 2 on one config: every backbone of ``image_files`` plus the ``degradations``
    of the ``base`` backbone, on the same samples (the first ``max_seeds`` of each direction)."""
    if base not in image_files:
        raise InputError(
            f"findings image quality: base backbone {base!r} is not among the image files {sorted(image_files)}"
        )
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
        from ...data.synthetic import load_scenes

        scenes = load_scenes(dataset)
        concept = _concept_precisions(items, scenes, variants, k)
    samples = _samples(samples_files, max_seeds)
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
        degradations=[iq.variant_name(kd, lv) for kd, lv in degradations],
    )
    numbers = {"per_variant": summary.set_index("variant").to_dict(orient="index")}
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: image quality vs BkR's agreement with XLR"
    iq.plot_image_quality(summary, Path(out_dir) / "figures" / "image_quality", fig_title)
    samples_df = per_enc.merge(per_sample, on=["variant", "direction", "seed"], how="left")
    return _write_outputs(Path(out_dir), "image_quality", text, run, summary, samples_df, numbers, settings)


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


# ---- question 3: sample size -------------------------------------------------------------


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
    run: RunInfo,
    criterion: ss.Criterion | None = None,
) -> FindingsRecord:
    """Question 3 on one prepared dataset (the scaled SYNTHETIC one, or a real config's):
    N values above what the dataset allows (2N items with texts in both languages) are dropped
    with a warning."""
    criterion = criterion or ss.Criterion()
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
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: BkR's encoder ranking vs N"
    ss.plot_sample_size(stab, per_enc, k, Path(out_dir) / "figures" / "sample_size", fig_title, criterion)
    means = per_enc.groupby(["n", "encoder"])[["xlr_r1", "xlr_recall", "bkr_recall"]].mean().reset_index()
    return _write_outputs(
        Path(out_dir),
        "sample_size",
        text,
        run,
        stab,
        per_enc,
        numbers,
        settings,
        extra_md="Mean metrics per N and encoder:\n\n" + markdown_table(means, 4),
    )


def _parallel_items(items: pd.DataFrame, direction: str) -> int:
    src, tgt = direction.split("-")
    return len(set(items.loc[items.lang == src, "item_id"]) & set(items.loc[items.lang == tgt, "item_id"]))


# ---- question 4: hubness -----------------------------------------------------------------


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
    run: RunInfo,
) -> FindingsRecord:
    """Question 4 on one config's cached samples and embeddings."""
    meta = read_meta(dataset)
    items = load_items(dataset)
    texts = load_texts(text_files)
    image = load_image(image_file)
    samples = _samples(samples_files, max_seeds)
    df = hub_mod.hubness_metrics(
        iter_views(samples, items, texts),
        image,
        retrievals=retrievals,
        hub_fraction=hub_fraction,
        hub_noise=hub_noise,
        k=k,
        seed=seed,
    )
    per_enc, summary = hub_mod.summarize_hubness(df)
    n = int(df["n"].iloc[0])
    n_hubs = int(df.loc[df.condition == "hubs", "n_hubs"].max())
    text = hub_mod.answer(
        per_enc, summary, dataset=meta.name, synthetic=meta.synthetic, k=k, n=n, n_hubs=n_hubs, n_encoders=len(texts)
    )
    numbers = {
        "per_setting": {f"{r.condition}/{r.retrieval}": r._asdict() for r in summary.itertuples(index=False)},
        "per_encoder": {
            f"{r.condition}/{r.retrieval}/{r.encoder}": r._asdict() for r in per_enc.itertuples(index=False)
        },
    }
    settings = dict(
        k=k,
        N=n,
        samples=len(samples),
        max_seeds_per_direction=max_seeds,
        retrievals=list(retrievals),
        csls_k=CSLS_K,
        margin_k=MARGIN_K,
        hub_fraction=hub_fraction,
        n_hubs=n_hubs,
        hub_noise=hub_noise,
        occurrence_k=10,
        seed=seed,
        encoders=sorted(texts),
    )
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: hubness of BkR step 1"
    hub_mod.plot_hubness(per_enc, summary, Path(out_dir) / "figures" / "hubness", fig_title)
    return _write_outputs(
        Path(out_dir),
        "hubness",
        text,
        run,
        summary,
        df,
        numbers,
        settings,
        extra_md="Per encoder (means over samples):\n\n" + markdown_table(per_enc),
    )


# =============================================================================================
# end of the image-side, sample-size and hubness steps
# =============================================================================================
