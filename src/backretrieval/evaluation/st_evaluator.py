"""BkR (and XLR on parallel data) as a sentence-transformers evaluator, to watch during
``SentenceTransformer.fit`` or the ``SentenceTransformerTrainer``.

The samples and the image features are fixed when the evaluator is built
(:func:`~.run.open_plan`, :meth:`~.run.EvaluationPlan.image_features`); each call
embeds the sampled texts with the model being trained (no cache: the weights change) and
computes the metrics with the pipeline's core (:meth:`~.run.EvaluationPlan.run`).
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:  # sentence-transformers >= 6 (the older path still works there, with a deprecation warning)
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
except ImportError:  # pragma: no cover - sentence-transformers 3 to 5
    from sentence_transformers.evaluation import SentenceEvaluator

from .core import lookup_from
from .defaults import DEFAULT_CACHE_DIR, DEFAULT_PREPARED_DIR, DEFAULT_SHARED_DIR, EVALUATOR_N, EVALUATOR_SEEDS
from .protocol import Protocol
from .run import open_plan, parse_directions

logger = logging.getLogger(__name__)


class BackretrievalEvaluator(SentenceEvaluator):
    """Backretrieval (BkR Recall@k, MRR; XLR on parallel data; CORR optionally) of the model on a
    held-out image–text set, averaged over seeds.

    Args:
        dataset: a prepared dataset folder or a named dataset (``synthetic``, ``multi30k-test2016``).
        directions: ``"en-de,de-en"`` or a list of ``src-tgt``.
        protocol: a :class:`~.protocol.Protocol`, or its fields as keywords: ``sample_size`` (queries per
            seed, N), ``seeds`` (a count or a list), ``recall_k`` (Recall@k), ``text_field``,
            ``image_backbone`` (default: effnet-lite0 for image files, or the dataset's one
            precomputed feature set), ``with_corr`` (CORR: N*N pairs per seed),
            ``corr_max_pairs``. Lighter than the library's defaults, for speed during training:
            N = ``EVALUATOR_N``, ``EVALUATOR_SEEDS`` seeds, no CORR (:mod:`.defaults`).
        name: prefix of the metric keys and part of the CSV name (like the library's evaluators).
        write_csv: append one row per call to ``backretrieval_evaluation[_<name>]_results.csv``
            under ``output_path``.

    Returns from a call a dict: per direction ``<d>_bkr_recall@k``, ``<d>_bkr_mrr`` (and
    ``<d>_xlr_recall@k``, ``<d>_xlr_mrr``, ``<d>_corr``), and the means over directions
    ``bkr_recall@k`` (the primary metric) and ``xlr_recall@k``; higher is better.
    """

    def __init__(
        self,
        dataset: str | Path,
        directions: str | Sequence[str],
        protocol: Protocol | None = None,
        *,
        batch_size: int = 32,
        name: str = "",
        write_csv: bool = True,
        show_progress_bar: bool = False,
        cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
        prepared_dir: str | Path = DEFAULT_PREPARED_DIR,
        shared_dir: str | Path = DEFAULT_SHARED_DIR,
        **protocol_fields: Any,
    ) -> None:
        super().__init__()
        if protocol is None:
            protocol_fields = {
                "sample_size": EVALUATOR_N,
                "seeds": EVALUATOR_SEEDS,
                "with_corr": False,
                **protocol_fields,
            }
        self.protocol = Protocol.of(protocol, **protocol_fields)
        self.plan = open_plan(
            dataset,
            parse_directions(directions),
            self.protocol,
            prepared_dir=prepared_dir,
            shared_dir=shared_dir,
        )
        self.images, self.image_info = self.plan.image_features(
            Path(cache_dir) if cache_dir is not None else None, progress=show_progress_bar
        )
        self.needed = self.plan.needed_items()
        self.texts = {lang: self.plan.texts(lang, ids) for lang, ids in self.needed.items()}
        self.recall_k = self.protocol.recall_k
        self.with_corr = self.protocol.with_corr
        self.batch_size = batch_size
        self.name = name
        self.write_csv = write_csv
        self.show_progress_bar = show_progress_bar
        self.primary_metric = f"bkr_recall@{self.recall_k}"
        self.greater_is_better = True
        self.csv_file = f"backretrieval_evaluation{'_' + name if name else ''}_results.csv"
        self.metric_names = self._metric_names()
        self.csv_headers = ["epoch", "steps", *self.metric_names]

    def _metric_names(self) -> list[str]:
        names = []
        parallel = self.plan.meta.parallel
        for d in self.plan.directions:
            if parallel:
                names += [f"{d}_xlr_recall@{self.recall_k}", f"{d}_xlr_mrr"]
            names += [f"{d}_bkr_recall@{self.recall_k}", f"{d}_bkr_mrr"]
            if self.with_corr:
                names.append(f"{d}_corr")
        if parallel:
            names.append(f"xlr_recall@{self.recall_k}")
        names.append(f"bkr_recall@{self.recall_k}")
        return names

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        where = (
            f" after epoch {epoch}"
            if epoch != -1 and steps == -1
            else (f" in epoch {epoch} after {steps} steps" if epoch != -1 else "")
        )
        logger.info("Backretrieval evaluation of the model on %s%s", self.plan.meta.name, where)
        lookups = {}
        for lang, ids in self.needed.items():
            emb = model.encode(
                self.texts[lang],
                batch_size=self.batch_size,
                convert_to_numpy=True,
                show_progress_bar=self.show_progress_bar,
            )
            lookups[lang] = lookup_from(ids, emb)
        scores, _ = self.plan.run({"model": lookups}, self.images, backbone=self.image_info["id"])
        means = scores.groupby(["direction", "metric"])["value"].mean()
        metrics: dict[str, float] = {}
        for d in self.plan.directions:
            for metric, key in (
                ("xlr_recall", f"xlr_recall@{self.recall_k}"),
                ("xlr_mrr", "xlr_mrr"),
                ("bkr_recall", f"bkr_recall@{self.recall_k}"),
                ("bkr_mrr", "bkr_mrr"),
                ("corr", "corr"),
            ):
                if (d, metric) in means.index:
                    metrics[f"{d}_{key}"] = float(means[(d, metric)])
        for key in (f"xlr_recall@{self.recall_k}", f"bkr_recall@{self.recall_k}"):
            vals = [metrics[f"{d}_{key}"] for d in self.plan.directions if f"{d}_{key}" in metrics]
            if vals:
                metrics[key] = float(sum(vals) / len(vals))
        metrics = {m: metrics[m] for m in self.metric_names}
        for m in self.metric_names:
            logger.info("%s: %.4f", m, metrics[m])
        if output_path is not None and self.write_csv:
            os.makedirs(output_path, exist_ok=True)
            csv_path = os.path.join(output_path, self.csv_file)
            new = not os.path.isfile(csv_path)
            with open(csv_path, newline="", mode="w" if new else "a", encoding="utf-8") as f:
                writer = csv.writer(f)
                if new:
                    writer.writerow(self.csv_headers)
                writer.writerow([epoch, steps, *(metrics[m] for m in self.metric_names)])
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    def get_config_dict(self) -> dict[str, Any]:
        return {"dataset": self.plan.meta.name, **self.plan.record(), "image_backbone": self.image_info["id"]}
