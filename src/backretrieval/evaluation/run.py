"""Evaluate encoders on a dataset: checks before any work, seeded samples, cached embeddings of
just the sampled texts and images, then :func:`backretrieval.evaluation.core.evaluate_direction`
(the pipeline's metrics core) per direction.

:func:`evaluate` (the library one-liner), ``backretrieval evaluate`` / ``compare`` and
:class:`~backretrieval.evaluation.st_evaluator.BackretrievalEvaluator` and the MTEB task all open
their plan with :func:`open_plan` and compute with :meth:`EvaluationPlan.run`.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util.hashing import json_sha256
from ..data.prepared import (
    DatasetMeta,
    load_image_table,
    load_items,
    load_precomputed_features,
    read_meta,
    resolve_inside,
    texts_for,
)
from ..data.sampling import Sample, draw_samples
from ..errors import InputError
from .core import Lookup, duplicate_targets, evaluate_direction, image_of_items, lookup_from
from .datasets import (
    ImageSource,
    available_image_ids,
    dataset_content_sha256,
    locate_dataset,
    precheck_named,
    prepare_named,
    resolve_image_source,
)
from .defaults import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_BOOTSTRAP,
    DEFAULT_CACHE_DIR,
    DEFAULT_PREPARED_DIR,
    DEFAULT_SHARED_DIR,
)
from .models import model_fingerprint, resolve_model
from .protocol import Protocol
from .results import language_script

_DIRECTION_RE = re.compile(r"^[a-z]{2,3}-[a-z]{2,3}$")


def parse_directions(directions: str | Sequence[str]) -> list[str]:
    """``"en-de,de-en"`` or ``["en-de", "de-en"]`` → checked list (InputError naming the bad one)."""
    parts = (
        [d.strip() for d in directions.split(",")]
        if isinstance(directions, str)
        else [str(d).strip() for d in directions]
    )
    parts = [d for d in parts if d]
    if not parts:
        raise InputError("--directions: none given; pass e.g. --directions en-de de-en")
    for d in parts:
        if not _DIRECTION_RE.match(d):
            raise InputError(f"--directions: {d!r} is not <src>-<tgt> with ISO codes, e.g. en-de")
        src, tgt = d.split("-")
        if src == tgt:
            raise InputError(f"--directions: {d!r} has the same source and target language")
        for lang in (src, tgt):
            try:
                language_script(lang)  # the result JSON names it as an MTEB language-script code
            except InputError as exc:
                raise InputError(f"--directions {d}: {exc}") from None
    dup = sorted({d for d in parts if parts.count(d) > 1})
    if dup:
        raise InputError(f"--directions: {dup} listed twice")
    return parts


@dataclass
class EvaluationPlan:
    """Everything fixed before any model runs: dataset, directions, the :class:`Protocol`, the
    seeded samples and the image source (all checked by :func:`plan_evaluation`)."""

    root: Path
    meta: DatasetMeta
    items: pd.DataFrame
    directions: list[str]
    protocol: Protocol
    image: ImageSource
    samples: dict[str, list[Sample]]
    named: str | None = None

    @property
    def sample_size(self) -> int:
        return self.protocol.sample_size

    @property
    def seeds(self) -> list[int]:
        return list(self.protocol.seeds)

    @property
    def recall_k(self) -> int:
        return self.protocol.recall_k

    @property
    def text_field(self) -> str:
        return self.protocol.text_field

    def record(self, directions: Sequence[str] | None = None) -> dict[str, Any]:
        """The protocol record of an evaluation of ``directions`` (default: the plan's): the
        directions, then :meth:`Protocol.record`. Every door records this (the result JSON, the
        MTEB task's subsets, the sentence-transformers evaluator's config)."""
        return {"directions": list(self.directions if directions is None else directions), **self.protocol.record()}

    def needed_items(self) -> dict[str, list[str]]:
        """Per language, the item ids whose texts the samples use (items-file order)."""
        want: dict[str, set[str]] = {}
        for d, samples in self.samples.items():
            src, tgt = d.split("-")
            for s in samples:
                want.setdefault(src, set()).update(s.queries)
                want.setdefault(tgt, set()).update(s.bkr_targets)
                if s.xlr_targets is not None:
                    want[tgt].update(s.xlr_targets)
        out = {}
        for lang in sorted(want):
            ids = self.items.loc[self.items["lang"] == lang, "item_id"]
            out[lang] = [str(i) for i in ids if i in want[lang]]
        return out

    def texts(self, lang: str, ids: Sequence[str]) -> list[str]:
        all_ids, texts = texts_for(self.items, lang, self.text_field)
        by_id = dict(zip(all_ids.tolist(), texts))
        return [by_id[i] for i in ids]

    def image_of(self) -> dict[str, dict[str, str]]:
        return image_of_items(self.items)

    def duplicate_targets(self) -> dict[str, dict[str, list[int]]]:
        """Per direction, :func:`~.core.duplicate_targets` of its samples (the text field's
        texts of the target language)."""
        out = {}
        for d in self.directions:
            ids, texts = texts_for(self.items, d.split("-")[1], self.text_field)
            out[d] = duplicate_targets(self.samples[d], dict(zip(ids.tolist(), texts)))
        return out

    def needed_images(self) -> list[str]:
        """Image ids of every query and BkR target of every sample (sorted)."""
        image_of = self.image_of()
        out: set[str] = set()
        for d, samples in self.samples.items():
            src, tgt = d.split("-")
            for s in samples:
                out.update(image_of[src][i] for i in s.queries)
                out.update(image_of[tgt][i] for i in s.bkr_targets)
        return sorted(out)

    def image_features(
        self, cache_dir: Path | None, *, batch_size: int = 32, progress: bool = True
    ) -> tuple[Lookup, dict[str, Any]]:
        """Image features of :meth:`needed_images` (only those are embedded; files through the
        embedding cache) and a description (backbone id, spec, fingerprint, sha256 of the rows)."""
        from ..images import build_image_backbone
        from ..images.embed import embed_images

        src = self.image
        backbone = build_image_backbone(src.backbone_id, src.spec)
        need = self.needed_images()
        if src.precomputed:
            ids, emb = load_precomputed_features(self.root, src.spec["name"])
            full = lookup_from(ids.tolist(), emb)
            emb = np.ascontiguousarray(full[1][[full[0][i] for i in need]], dtype=np.float32)
        else:
            table = load_image_table(self.root)
            path_of = dict(zip(table["image_id"], table["path"]))
            paths = [resolve_inside(self.root, path_of[i]) for i in need]
            emb = embed_images(backbone, paths, cache_dir, batch_size=batch_size, progress=progress)
        h = hashlib.sha256("\n".join(need).encode("utf-8"))
        h.update(np.ascontiguousarray(emb, dtype="<f4").tobytes())
        desc = {
            "id": src.backbone_id,
            "spec": dict(src.spec),
            "fingerprint": backbone.fingerprint(),
            "features_sha256": h.hexdigest(),
        }
        return lookup_from(need, emb), desc

    def samples_sha256(self) -> dict[str, str]:
        return {d: json_sha256([s.to_dict() for s in ss]) for d, ss in self.samples.items()}

    def run(
        self,
        texts: dict[str, dict[str, Lookup]],
        images: Lookup,
        *,
        backbone: str,
        progress: bool = False,
    ) -> tuple[pd.DataFrame, dict[str, dict[str, np.ndarray]]]:
        """Metrics of every encoder (``texts[encoder][lang]``: lookups by item id) on every
        direction, by the plan's protocol: the tidy table and the per-query ranks
        ``{direction: {<enc>/<seed>/<kind>: ranks}}``."""
        image_of = self.image_of()
        frames, ranks = [], {}
        for d in self.directions:
            src, tgt = d.split("-")
            df, pq = evaluate_direction(
                self.samples[d],
                image_of,
                images,
                {e: (t[src], t[tgt]) for e, t in texts.items()},
                labels=dict(dataset=self.meta.name, backbone=backbone, direction=d),
                protocol=self.protocol,
                full_bkr_ranks=True,
                images_what=f"image features ({self.image.backbone_id})",
                progress=progress,
            )
            frames.append(df)
            ranks[d] = pq
        return pd.concat(frames, ignore_index=True), ranks


def plan_evaluation(
    root: Path,
    directions: str | Sequence[str],
    protocol: Protocol | None = None,
    *,
    named: str | None = None,
    **protocol_fields: Any,
) -> EvaluationPlan:
    """Check that the prepared dataset at ``root`` can serve the evaluation and draw the samples.

    ``protocol``: a :class:`Protocol`, or its fields as keywords (``sample_size=500, recall_k=10``).
    InputError (naming the problem and the fix) for: a dataset with texts in fewer than two
    languages or without a direction's language, fewer items than N queries + N disjoint
    targets need, no images / features (or none for a sampled item), k >= N, a bad text field.
    """
    return _plan(Path(root), parse_directions(directions), Protocol.of(protocol, **protocol_fields), named)


def _plan(root: Path, dirs: list[str], protocol: Protocol, named: str | None) -> EvaluationPlan:
    """:func:`plan_evaluation` of checked directions and a protocol (checked when it was made)."""
    sample_size = protocol.sample_size
    meta = read_meta(root)
    items = load_items(root)
    present = sorted(set(items["lang"]))
    if len(present) < 2:
        raise InputError(
            f"{root}: texts in only one language ({', '.join(present) or 'none'}); Backretrieval "
            "compares a source and a target language: add the texts of a second language to "
            "items.csv"
        )
    by_lang = {lang: set(g["item_id"]) for lang, g in items.groupby("lang")}
    for d in dirs:
        for lang in d.split("-"):
            if lang not in by_lang:
                raise InputError(f"--directions {d}: {root} has no {lang!r} texts (languages: {', '.join(present)})")
        _check_n(by_lang, d, sample_size, meta.parallel, root)
    image = resolve_image_source(root, protocol.image_backbone)
    seed_list = list(protocol.seeds)
    samples = {d: draw_samples(items, *d.split("-"), sample_size, seed_list, parallel=meta.parallel) for d in dirs}
    plan = EvaluationPlan(root, meta, items, dirs, protocol, image, samples, named)
    have, listed_in = available_image_ids(root, image)
    lacking = [i for i in plan.needed_images() if i not in have]
    if lacking:
        raise InputError(
            f"{listed_in}: {len(lacking)} image(s) of sampled items are not listed (first: "
            f"{lacking[:3]}); every item's image_id needs an entry"
        )
    return plan


def open_plan(
    data: str | Path,
    dirs: list[str],
    protocol: Protocol,
    *,
    prepared_dir: str | Path,
    shared_dir: str | Path,
    before_preparing: Callable[[], object] | None = None,
) -> EvaluationPlan:
    """The plan of an evaluation of ``data`` (a prepared folder or a named dataset), as every
    door opens one, with the directions it checked (:func:`parse_directions`) and its
    ``protocol`` (checked when it was made): the dataset located, a named dataset's checks of
    directions and N, then the plan's checks and samples (:func:`plan_evaluation`). A ready
    folder is planned (and checked) at once; a named dataset not prepared yet is prepared only
    after ``before_preparing`` (the models' availability, in :func:`evaluate_models`), which
    runs in either case."""
    ref = locate_dataset(data, Path(prepared_dir))
    precheck_named(ref, dirs, protocol.sample_size, Path(shared_dir))
    named = ref.named.name if ref.named else None
    plan = _plan(ref.root, dirs, protocol, named) if ref.ready else None
    if before_preparing is not None:
        before_preparing()
    return plan if plan is not None else _plan(prepare_named(ref, Path(shared_dir)), dirs, protocol, named)


def _max_n(by_lang: dict[str, set], src: str, tgt: str, parallel: bool) -> int:
    s, t = by_lang.get(src, set()), by_lang.get(tgt, set())
    if parallel:
        return len(s & t) // 2
    both = len(s & t)
    return max((m for m in range(min(len(s), len(t)), 0, -1) if len(t) - min(m, both) >= m), default=0)


def _check_n(by_lang: dict[str, set], direction: str, n: int, parallel: bool, root: Path) -> None:
    src, tgt = direction.split("-")
    best = _max_n(by_lang, src, tgt, parallel)
    if n <= best:
        return
    s, t = by_lang[src], by_lang[tgt]
    has = (
        f"{len(s & t)} items with texts in both {src} and {tgt}"
        if parallel
        else f"{len(s)} {src} items and {len(t)} {tgt} items ({len(s & t)} ids in both)"
    )
    # at N = every source item (data without parallel texts) all seeds draw the same queries:
    # suggest one less, so that the seeds differ (draw_samples refuses identical samples)
    varied = best - 1 if not parallel and best == len(s) else best
    fix = f"pass --sample-size {varied} or less" if varied >= 2 else "add items"
    raise InputError(
        f"--sample-size {n} is too large for {direction}: N queries + N disjoint targets need "
        f"{2 * n} items and {root} has {has}; {fix}"
    )


# -------------------------------------------------------------------------------------------
# results of one run


@dataclass
class Evaluation:
    """One model's evaluation: the tidy per-seed table (``scores``: the metrics step's columns),
    per-query ranks per direction (``ranks[direction][seed] = {"xlr"?: ranks, "bkr": ranks}``)
    and what was evaluated (model, dataset, image side, protocol)."""

    scores: pd.DataFrame
    ranks: dict[str, dict[int, dict[str, np.ndarray]]]
    model: dict[str, Any]
    dataset: dict[str, Any]
    image_backbone: dict[str, Any]
    protocol: dict[str, Any]
    samples_sha256: dict[str, str]
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    #: per direction and seed, the image id of every query (the distinct item: the unit of the
    #: paired tests and intervals; an item drawn by several seeds has one key)
    query_units: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    #: per direction, target set (``bkr``, ``xlr``) and seed, the targets whose text repeats
    #: another target's in the same sample (:func:`~.core.duplicate_targets`; they tie exactly)
    duplicate_targets: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def summary(self, *, B: int = DEFAULT_BOOTSTRAP, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
        """Mean, sd and 95% CI per direction and metric (see :func:`.results.summarize`)."""
        from .results import summarize

        return summarize(self, B=B, seed=seed, level=level)

    def hits(self, kind: str = "bkr") -> dict[str, np.ndarray]:
        """Per direction, the per-query hits (rank <= k) of ``kind`` (``bkr`` or ``xlr``), the
        seeds' samples concatenated in seed order (the queries McNemar pairs across encoders)."""
        k = int(self.protocol["recall_k"])
        return {
            d: np.concatenate([np.asarray(by_seed[s][kind]) <= k for s in sorted(by_seed)])
            for d, by_seed in self.ranks.items()
        }

    def units(self) -> dict[str, np.ndarray]:
        """Per direction, the item (query image) of every query, in the order of :meth:`hits`."""
        return {
            d: np.asarray([u for s in sorted(by_seed) for u in self.query_units[d][s]], dtype=object)
            for d, by_seed in self.ranks.items()
        }


def evaluate_models(
    models: Sequence[Any],
    data: str | Path,
    directions: str | Sequence[str],
    protocol: Protocol | None = None,
    *,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    prepared_dir: str | Path = DEFAULT_PREPARED_DIR,
    shared_dir: str | Path = DEFAULT_SHARED_DIR,
    names: Sequence[str | None] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = True,
    allow_code: bool = False,
    **protocol_fields: Any,
) -> list[Evaluation]:
    """Evaluate several models on the same samples (image work shared); one :class:`Evaluation`
    each. ``protocol``: a :class:`Protocol`, or its fields as keywords (``sample_size``, ``seeds``, ``recall_k``,
    ``text_field``, ``image_backbone``, ``with_corr``, ``corr_max_pairs``; the others at the
    defaults of :mod:`.defaults`). Order of work: cheap checks (the protocol, the directions),
    model availability, dataset preparation (named datasets), the plan's checks, text
    embeddings, image features, metrics. ``allow_code``: accept models given as
    ``module:callable`` or ``{type: callable}`` (they import and run that code)."""
    t0 = time.perf_counter()
    protocol = Protocol.of(protocol, **protocol_fields)
    dirs = parse_directions(directions)
    names = list(names) if names is not None else [None] * len(models)
    resolved = [resolve_model(m, nm, allow_code=allow_code) for m, nm in zip(models, names)]
    labels = [d["name"] for _, d in resolved]
    if len(set(labels)) != len(labels):
        labels = [f"{lab}#{i + 1}" for i, lab in enumerate(labels)]
    # a ready dataset is checked before any model loads; a named one is prepared only once the
    # models are known to be available
    fingerprints: list[str] = []
    plan = open_plan(
        data,
        dirs,
        protocol,
        prepared_dir=prepared_dir,
        shared_dir=shared_dir,
        before_preparing=lambda: fingerprints.extend(
            model_fingerprint(enc, label) for (enc, _), label in zip(resolved, labels)
        ),
    )
    root = plan.root
    from ..encoders.embed import embed_items

    needed = plan.needed_items()
    texts: dict[str, dict[str, Lookup]] = {}
    for (enc, _), label in zip(resolved, labels):
        cache = Path(cache_dir) if cache_dir is not None and getattr(enc, "cacheable", True) else None
        texts[label] = {}
        for lang, ids in needed.items():
            emb = embed_items(
                enc, ids, plan.texts(lang, ids), cache, batch_size=batch_size, progress=progress, lang=lang
            )
            texts[label][lang] = lookup_from(ids, emb)
    images, image_desc = plan.image_features(Path(cache_dir) if cache_dir is not None else None, progress=progress)
    scores, ranks = plan.run(texts, images, backbone=plan.image.backbone_id, progress=progress)
    seconds = time.perf_counter() - t0
    dataset = {
        "name": plan.meta.name,
        "named": plan.named,
        "content_sha256": dataset_content_sha256(root),
        "synthetic": plan.meta.synthetic,
        "parallel": plan.meta.parallel,
        "languages": sorted(set(plan.items["lang"])),
        "path": str(root),
    }
    record = plan.record()
    image_of = plan.image_of()
    query_units = {
        d: {s.seed: [image_of[d.split("-")[0]][i] for i in s.queries] for s in plan.samples[d]} for d in plan.directions
    }
    duplicates = plan.duplicate_targets()
    out = []
    for (_enc, desc), label, fp in zip(resolved, labels, fingerprints):
        per_dir: dict[str, dict[int, dict[str, np.ndarray]]] = {}
        for d, pq in ranks.items():
            for key, arr in pq.items():
                enc_name, seed, kind = key.rsplit("/", 2)
                if enc_name == label:
                    per_dir.setdefault(d, {}).setdefault(int(seed), {})[kind] = arr
        out.append(
            Evaluation(
                scores=scores[scores["encoder"] == label].reset_index(drop=True),
                ranks=per_dir,
                model={"name": label, "spec": desc["spec"], "fingerprint": fp},
                dataset=dataset,
                image_backbone=image_desc,
                protocol=record,
                samples_sha256=plan.samples_sha256(),
                seconds=seconds,
                query_units=query_units,
                duplicate_targets=duplicates,
            )
        )
    return out


def evaluate_model(
    model: Any, data: str | Path, directions: str | Sequence[str], protocol: Protocol | None = None, **kw: Any
) -> Evaluation:
    """:func:`evaluate_models` for one model (``name=`` sets its label)."""
    name = kw.pop("name", None)
    return evaluate_models([model], data, directions, protocol, names=[name], **kw)[0]


def evaluate(
    model: Any,
    dataset: str | Path,
    directions: str | Sequence[str],
    protocol: Protocol | None = None,
    **kw: Any,
) -> pd.DataFrame:
    """XLR (parallel data), BkR, CORR and MRR of ``model`` on ``dataset``: the tidy per-seed table.

    ``model``: a sentence-transformers name or folder, ``"module:callable"``,
    ``"precomputed:<npy>,<ids.txt>"``, a registry spec dict, or an object (a registry encoder, a
    SentenceTransformer, a callable ``list[str] -> (n, d)``). ``dataset``: a prepared folder or
    a named dataset (``synthetic``, ``multi30k-test2016``). ``protocol``: a :class:`Protocol`,
    or its fields as keywords (``sample_size=500, seeds=5, recall_k=10``; ``seeds``: a count or a list).
    Columns: dataset, backbone, text_field, direction, seed, n, k, encoder, metric, value
    (the pipeline's metric CSV). Other keywords: see :func:`evaluate_models`; for CIs and the
    result JSON use :func:`evaluate_model` (``.summary()``, :func:`.results.result_dict`).
    """
    return evaluate_model(model, dataset, directions, protocol, **kw).scores
