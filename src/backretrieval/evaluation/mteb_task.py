"""Backretrieval as an MTEB task (mteb 2.x, ``pip install -e ".[mteb]"``).

    import mteb
    from backretrieval.evaluation.mteb_task import backretrieval_task

    task = backretrieval_task("synthetic", "en-de,de-en", sample_size=100, seeds=3)
    result = mteb.evaluate(model, tasks=[task], cache=None)   # model: a SentenceTransformer, ...

The task is built from a prepared dataset (a folder, or a named dataset: ``synthetic``,
``multi30k-test2016``; :mod:`.datasets`), offline: nothing is loaded from the Hugging Face Hub.
One subset (``hf_subset``) per direction (``en-de``), split ``test``. The task's data
(``task.dataset[direction]["test"]``, loaded by ``load_data``) is one row per item the seeded
samples use: ``id``, ``lang``, ``text``, ``image_id`` and ``image_features`` (the image side's
vector; empty for an item whose image no sample needs), so the image features are part of the
task's data; the seeded samples (N queries + N disjoint targets per seed, as in
``backretrieval evaluate``) are fixed when the task is built.

The model only encodes texts (``model.encode`` through mteb's encoder protocol); the metrics are
:func:`backretrieval.evaluation.core.evaluate_direction`, the core of ``backretrieval evaluate``
and of the pipeline's metrics step, and each subset's scores are the result JSON's entry of that
direction (:func:`.results.direction_entry`): ``main_score`` = BkR Recall@k (key
``bkr_recall_at_<k>``), BkR MRR, XLR Recall@k and MRR (parallel data), CORR, each as a mean over
the seeds, plus per-seed values, CIs and per-query hits. The same model, data, N, seeds and k
give the numbers of ``backretrieval evaluate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset, DatasetDict, Features, Value
from datasets import Sequence as HFSequence
from mteb import TaskMetadata
from mteb._create_dataloaders import create_dataloader
from mteb.abstasks.abstask import AbsTask
from mteb.models import EncoderProtocol

from .core import evaluate_direction, lookup_from
from .datasets import dataset_content_sha256
from .defaults import DEFAULT_BOOTSTRAP, DEFAULT_CACHE_DIR, DEFAULT_PREPARED_DIR, DEFAULT_SHARED_DIR
from .protocol import Protocol
from .results import MAIN_METRIC, SPLIT, TASK_NAME, direction_entry, language_script, metric_key, task_name
from .run import Evaluation, EvaluationPlan, open_plan, parse_directions

PAPER = "https://doi.org/10.1145/3404835.3463027"
BIBTEX = """@inproceedings{fain2021backretrieval,
  title = {Backretrieval: An Image-Pivoted Evaluation Metric for Cross-Lingual Text Representations Without Parallel Corpora},
  author = {Fain, Mikhail and Twomey, Niall and Bollegala, Danushka},
  booktitle = {Proceedings of the 44th International ACM SIGIR Conference on Research and Development in Information Retrieval},
  year = {2021},
  doi = {10.1145/3404835.3463027},
}"""

_FEATURES = Features(
    {
        "id": Value("string"),
        "lang": Value("string"),
        "text": Value("string"),
        "image_id": Value("string"),
        "image_features": HFSequence(Value("float32")),
    }
)


class BackretrievalTask(AbsTask):
    """The task; :func:`backretrieval_task` builds a subclass per dataset and protocol (mteb
    keeps a task's metadata on its class)."""

    metadata: TaskMetadata
    plan: EvaluationPlan
    options: dict[str, Any]

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        """Image features of the sampled items (through the embedding cache) and the sampled
        texts, one table per direction."""
        if self.data_loaded:
            return
        plan, opt = self.plan, self.options
        cache = Path(opt["cache_dir"]) if opt["cache_dir"] is not None else None
        (index, emb), desc = plan.image_features(cache, progress=opt["progress"])
        self.image_backbone = desc
        image_of = plan.image_of()
        self.dataset = {}
        for d in plan.directions:
            rows: dict[str, list[Any]] = {c: [] for c in _FEATURES}
            for lang, ids in _direction_items(plan, d).items():
                for item_id, text in zip(ids, plan.texts(lang, ids)):
                    img = image_of[lang][item_id]
                    rows["id"].append(item_id)
                    rows["lang"].append(lang)
                    rows["text"].append(text)
                    rows["image_id"].append(img)
                    rows["image_features"].append(emb[index[img]] if img in index else np.zeros(0, np.float32))
            self.dataset[d] = DatasetDict({SPLIT: Dataset.from_dict(rows, features=_FEATURES)})
        self.data_loaded = True

    def _evaluate_subset(
        self,
        model: Any,
        data_split: Dataset,
        *,
        hf_split: str,
        hf_subset: str,
        encode_kwargs: dict[str, Any],
        prediction_folder: Path | None = None,
        num_proc: int | None = None,
        timer: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if not isinstance(model, EncoderProtocol):
            raise TypeError(f"{TASK_NAME}: expected an mteb encoder (EncoderProtocol), got {type(model).__name__}")
        plan, opt, d = self.plan, self.options, hf_subset
        table = data_split.with_format("numpy", columns=["image_features"], output_all_columns=True)
        texts, image_of, images = {}, {}, {}
        for lang in d.split("-"):
            rows = [i for i, x in enumerate(data_split["lang"]) if x == lang]
            sub = data_split.select(rows)
            ids = list(sub["id"])
            dl = create_dataloader(
                sub.select_columns(["text"]), task_metadata=self.metadata, input_column="text", **encode_kwargs
            )
            vec = model.encode(dl, task_metadata=self.metadata, hf_split=hf_split, hf_subset=hf_subset, **encode_kwargs)
            texts[lang] = lookup_from(ids, _as_float32(vec, len(ids)))
            image_of[lang] = dict(zip(ids, sub["image_id"]))
        for img, feats in zip(data_split["image_id"], table["image_features"]):
            if len(feats) and img not in images:
                images[img] = np.asarray(feats, dtype=np.float32)
        src, tgt = d.split("-")
        scores, ranks = evaluate_direction(
            plan.samples[d],
            image_of,
            lookup_from(list(images), np.stack(list(images.values()))),
            {"model": (texts[src], texts[tgt])},
            labels=dict(dataset=plan.meta.name, backbone=plan.image.backbone_id, direction=d),
            protocol=plan.protocol,
            full_bkr_ranks=True,
            images_what=f"image features ({plan.image.backbone_id})",
        )
        per_seed: dict[int, dict[str, np.ndarray]] = {}
        for key, arr in ranks.items():
            _enc, seed, kind = key.rsplit("/", 2)
            per_seed.setdefault(int(seed), {})[kind] = arr
        ev = Evaluation(
            scores=scores.reset_index(drop=True),
            ranks={d: per_seed},
            model={},
            dataset={},
            image_backbone={},
            protocol=plan.record([d]),
            samples_sha256={d: plan.samples_sha256()[d]},
            # the query images: the unit of the intervals (an item drawn by several seeds is one)
            query_units={d: {smp.seed: [image_of[src][i] for i in smp.queries] for smp in plan.samples[d]}},
            duplicate_targets={d: plan.duplicate_targets()[d]},
        )
        entry = direction_entry(ev, d, ev.summary(B=opt["B"]))
        entry.pop("hf_subset"), entry.pop("languages")  # mteb adds them
        return entry

    def _calculate_descriptive_statistics_from_split(
        self, split: str, hf_subset: str | None = None, compute_overall: bool = False, **kwargs: Any
    ) -> dict[str, Any]:
        n_dirs = 1 if hf_subset else len(self.plan.directions)
        return {"num_samples": n_dirs * self.plan.sample_size * len(self.plan.seeds)}


def _direction_items(plan: EvaluationPlan, d: str) -> dict[str, list[str]]:
    """Per language of ``d``, the item ids its samples use (items-file order)."""
    src, tgt = d.split("-")
    want: dict[str, set[str]] = {src: set(), tgt: set()}
    for s in plan.samples[d]:
        want[src].update(s.queries)
        want[tgt].update(s.bkr_targets)
        if s.xlr_targets is not None:
            want[tgt].update(s.xlr_targets)
    out = {}
    for lang in (src, tgt):
        ids = plan.items.loc[plan.items["lang"] == lang, "item_id"]
        out[lang] = [str(i) for i in ids if i in want[lang]]
    return out


def _descriptive_metadata(plan: EvaluationPlan) -> dict[str, Any]:
    """The metadata mteb asks of a task (``TaskMetadata.is_filled()``), from the dataset's
    ``dataset.json``: ``date`` its ``date: [start, end]`` when it has one, else the day the
    prepared folder was written; ``license`` its ``license`` when mteb knows the name, else "not
    specified"; ``sample_creation`` "created" for SYNTHETIC data, else "found";
    ``annotations_creators`` "derived" (the labels are the data's own image-text pairs);
    ``domains``, ``task_subtypes`` and ``dialect`` empty (nothing is claimed)."""
    from datetime import datetime, timezone

    from pydantic import ValidationError

    date = plan.meta.extra.get("date")
    if not (isinstance(date, (list, tuple)) and len(date) == 2 and all(isinstance(x, str) for x in date)):
        written = datetime.fromtimestamp((plan.root / "dataset.json").stat().st_mtime, timezone.utc).date().isoformat()
        date = (written, written)
    license_ = "not specified"
    text = str(plan.meta.license or "").strip().lower()
    for candidate in dict.fromkeys([text, *text.split()[:1]]):  # "cc0-1.0 (generated ...)" → "cc0-1.0"
        try:
            TaskMetadata.model_validate({"license": candidate})
        except ValidationError as exc:
            if any(err["loc"][:1] == ("license",) for err in exc.errors()):
                continue
        license_ = candidate
        break
    return {
        "date": tuple(date),
        "domains": [],
        "task_subtypes": [],
        "license": license_,
        "annotations_creators": "derived",
        "dialect": [],
        "sample_creation": "created" if plan.meta.synthetic else "found",
    }


def _as_float32(vec: Any, n: int) -> np.ndarray:
    if hasattr(vec, "detach"):  # a torch tensor
        vec = vec.detach().cpu().numpy()
    out = np.asarray(vec, dtype=np.float32)
    if out.ndim != 2 or out.shape[0] != n:
        raise ValueError(f"{TASK_NAME}: the model returned shape {out.shape} for {n} texts; expected ({n}, dim)")
    return out


def backretrieval_task(
    data: str | Path,
    directions: str | Sequence[str],
    protocol: Protocol | None = None,
    *,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    prepared_dir: str | Path = DEFAULT_PREPARED_DIR,
    shared_dir: str | Path = DEFAULT_SHARED_DIR,
    B: int = DEFAULT_BOOTSTRAP,
    name: str | None = None,
    progress: bool = False,
    **protocol_fields: Any,
) -> BackretrievalTask:
    """The Backretrieval MTEB task on ``data`` (a prepared folder or a named dataset, prepared
    here if needed) for ``directions``, with the protocol of ``backretrieval evaluate`` (same
    checks and errors, same seeded samples): a :class:`~.protocol.Protocol`, or its fields as
    keywords (``sample_size=100, seeds=3``). ``B``: bootstrap resamples of the CIs."""
    plan = open_plan(
        data,
        parse_directions(directions),
        Protocol.of(protocol, **protocol_fields),
        prepared_dir=prepared_dir,
        shared_dir=shared_dir,
    )
    synthetic = " SYNTHETIC data." if plan.meta.synthetic else ""
    metadata = TaskMetadata(
        name=name or task_name(plan.meta.name),
        description=(
            f"Backretrieval (Fain et al., SIGIR 2021) on {plan.meta.name}:{synthetic} cross-lingual retrieval "
            f"of texts judged through their images (BkR Recall@{plan.recall_k}), N={plan.sample_size} queries, "
            f"{len(plan.seeds)} seeded samples, image side {plan.image.backbone_id}."
        ),
        reference=PAPER,
        dataset={"path": str(plan.root), "revision": dataset_content_sha256(plan.root)},
        type="BitextMining",
        category="t2t",
        modalities=["text"],
        eval_splits=[SPLIT],
        eval_langs={d: [language_script(lang) for lang in d.split("-")] for d in plan.directions},
        main_score=metric_key(MAIN_METRIC, plan.recall_k),
        bibtex_citation=BIBTEX,
        **_descriptive_metadata(plan),
    )
    options = dict(cache_dir=cache_dir, B=B, progress=progress)
    cls = type(f"{name}Task", (BackretrievalTask,), {"metadata": metadata, "plan": plan, "options": options})
    return cls()
