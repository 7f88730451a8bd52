"""The cached artifacts of one run of the main pipeline (:class:`RunArtifacts`, read from explicit
files by :func:`load_run`) with the readers of the layers below (embeddings: ``_util.io``, metrics
tables: :mod:`.metric_tables`, samples: ``data.sampling``), and the configuration they describe
(:class:`RunInfo`). The one loader of the findings analyses, and of the report step's Table 1
test."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util import io
from .._util.io import load_embedding, skipped_reason
from ..data.prepared import DatasetMeta, load_items, read_meta
from ..data.sampling import Sample, read_samples
from ..errors import InputError
from .core import Lookup, rows_of
from .metric_tables import read_metrics, require_full_ranks

log = logging.getLogger("backretrieval")

_TEXT_EMB = re.compile(r"^(?P<lang>[A-Za-z0-9_-]+)\.(?P<field>title|body|title_body)\.npz$")


@dataclass(frozen=True)
class RunInfo:
    """The configuration an analysis ran on (from its artifacts, not from params.yaml)."""

    run_name: str
    dataset: str
    synthetic: bool
    reports_dir: str
    sample_size: int
    seeds: tuple[int, ...]
    directions: tuple[str, ...]
    encoders: tuple[str, ...]
    image_backbone: str
    k: int

    @property
    def figure_label(self) -> str:
        """The dataset as figure titles name it, marked when the data are SYNTHETIC."""
        return f"{'SYNTHETIC — ' if self.synthetic else ''}{self.dataset}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_name": self.run_name,
            "dataset": self.dataset,
            "synthetic": self.synthetic,
            "reports_dir": self.reports_dir,
            "sample_size": self.sample_size,
            "seeds": list(self.seeds),
            "directions": list(self.directions),
            "encoders": list(self.encoders),
            "image_backbone": self.image_backbone,
            "k": self.k,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> RunInfo:
        require_fields(
            d,
            (
                "run_name",
                "dataset",
                "synthetic",
                "reports_dir",
                "sample_size",
                "seeds",
                "directions",
                "encoders",
                "image_backbone",
                "k",
            ),
            f"{where}: field 'run'",
        )
        return cls(
            run_name=str(d["run_name"]),
            dataset=str(d["dataset"]),
            synthetic=bool(d["synthetic"]),
            reports_dir=str(d["reports_dir"]),
            sample_size=int(d["sample_size"]),
            seeds=tuple(int(s) for s in d["seeds"]),
            directions=tuple(str(x) for x in d["directions"]),
            encoders=tuple(str(x) for x in d["encoders"]),
            image_backbone=str(d["image_backbone"]),
            k=int(d["k"]),
        )

    def label(self) -> str:
        """``run_name (dataset[, SYNTHETIC])``: how a configuration is named in the text."""
        return f"{self.run_name} ({self.dataset}{', SYNTHETIC' if self.synthetic else ''})"

    def scale(self) -> str:
        return (
            f"N={self.sample_size}, {len(self.seeds)} seed{'s' if len(self.seeds) != 1 else ''}, "
            f"{len(self.encoders)} encoders, {len(self.directions)} directions, "
            f"image backbone {self.image_backbone}"
        )


def require_fields(d: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    """``d`` is a JSON object with every key of ``keys`` (else an :class:`InputError` naming ``where``)."""
    if not isinstance(d, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    missing = [k for k in keys if k not in d]
    if missing:
        raise InputError(f"{where}: missing field(s) {missing}")


@dataclass
class RunArtifacts:
    """The main pipeline's artifacts of one configuration, read from explicit files. ``dataset``
    is the folder the analysis evaluates; ``meta`` describes the run's own dataset (they differ
    only for the sample-size analysis, which evaluates a scaled copy)."""

    dataset: Path
    meta: DatasetMeta
    metrics: pd.DataFrame
    samples: dict[str, list[Sample]]
    ranks_files: dict[str, Path]
    image_files: dict[str, Path]
    text_files: dict[tuple[str, str], Path]
    #: the k of Recall@k the metrics files record (their ``k`` column)
    k: int
    run_name: str = ""
    reports_dir: str = ""
    #: each metrics file with its table as read (``metrics`` is their concatenation)
    metrics_tables: tuple[tuple[Path, pd.DataFrame], ...] = ()
    #: files of the run's other analyses (an analysis's ``reads``), by name
    findings_files: dict[str, Path] = field(default_factory=dict)
    _items: pd.DataFrame | None = None
    _image: tuple[dict[str, int], np.ndarray] | None = None
    _text: dict[tuple[str, str], tuple[dict[str, int], np.ndarray] | None] = field(default_factory=dict)

    @property
    def directions(self) -> list[str]:
        return [d for d in self.samples if d in set(self.metrics["direction"])]

    @property
    def encoders(self) -> list[str]:
        return sorted(self.metrics["encoder"].unique())

    @property
    def image_file(self) -> Path | None:
        return next(iter(self.image_files.values()), None)

    def info(self, sorted_directions: bool = False) -> RunInfo:
        """The run the record belongs to; its directions in the samples' order, or sorted
        (``sorted_directions``: the records of the analyses that re-evaluate embeddings)."""
        m = self.metrics
        directions = sorted(m["direction"].unique()) if sorted_directions else self.directions
        return RunInfo(
            run_name=self.run_name,
            dataset=self.meta.name,
            synthetic=self.meta.synthetic,
            reports_dir=self.reports_dir,
            sample_size=int(m["n"].max()),
            seeds=tuple(sorted(int(s) for s in m["seed"].unique())),
            directions=tuple(directions),
            encoders=tuple(self.encoders),
            image_backbone=str(m["backbone"].iloc[0]),
            k=self.k,
        )

    def require_full_ranks(self) -> None:
        """Check every metrics file for full per-query BkR ranks (the analyses that read BkR
        ranks or BkR MRR call it first; :func:`~backretrieval.evaluation.metric_tables.require_full_ranks`)."""
        for p, table in self.metrics_tables:
            require_full_ranks(table, p)

    def dataset_meta(self) -> DatasetMeta:
        """The metadata of the evaluated dataset (``dataset``)."""
        return read_meta(self.dataset)

    def items(self) -> pd.DataFrame:
        if self._items is None:
            self._items = load_items(self.dataset)
        return self._items

    def image_of(self, lang: str) -> dict[str, str]:
        sub = self.items()[self.items()["lang"] == lang]
        return dict(zip(sub["item_id"], sub["image_id"]))

    def image_lookup(self, name: str | None = None) -> Lookup:
        """The image features of backbone ``name`` (default: the first image file)."""
        path = self.image_file if name is None else self.image_files[name]
        if path is None:
            raise InputError("no image embedding file given (--image)")
        img = load_embedding(path)
        if img is None:
            raise InputError(f"{path}: image backbone was skipped; the analysis needs image features")
        return img

    def image(self) -> tuple[dict[str, int], np.ndarray]:
        if self._image is None:
            self._image = self.image_lookup()
        return self._image

    def text(self, encoder: str, lang: str) -> tuple[dict[str, int], np.ndarray] | None:
        key = (encoder, lang)
        if key not in self._text:
            if key not in self.text_files:
                raise InputError(f"no text embedding of encoder {encoder!r} in {lang!r} among --text")
            self._text[key] = load_embedding(self.text_files[key])
        return self._text[key]

    def texts(self) -> dict[str, dict[str, Lookup]]:
        """``{encoder: {lang: lookup}}`` of every text file; a skipped model is left out (with a
        warning), as in the metrics step."""
        out: dict[str, dict[str, Lookup]] = {}
        skipped = set()
        for (enc, lang), path in sorted(self.text_files.items()):
            lk = load_embedding(Path(path))
            if lk is None:
                log.warning("encoder %s skipped: %s", enc, skipped_reason(Path(path)))
                skipped.add(enc)
                continue
            out.setdefault(enc, {})[lang] = lk
        for enc in skipped:
            out.pop(enc, None)
        if len(out) < 3:
            raise InputError(
                f"findings: agreement across encoders needs >= 3 encoders with embeddings, got {sorted(out)}"
            )
        return out

    def sample_list(self, max_seeds: int | None) -> list[Sample]:
        """The samples of every file, the first ``max_seeds`` seeds of each (file order)."""
        out = []
        for s in self.samples.values():
            out.extend(s if max_seeds is None else s[:max_seeds])
        if not out:
            raise InputError("findings: no samples given")
        return out

    def findings_file(self, name: str) -> Path:
        """The file ``name`` of another analysis of this run (given with ``--findings-files``)."""
        if name not in self.findings_files:
            raise InputError(f"findings: no {name} among --findings-files (run the analysis that writes it first)")
        return self.findings_files[name]

    def ranks(self, direction: str) -> dict[str, np.ndarray]:
        if direction not in self.ranks_files:
            raise InputError(f"no per-query ranks file for direction {direction} (beside its --metrics CSV)")
        return io.load_npz(self.ranks_files[direction])

    def sample_embeddings(self, direction: str, sample: Sample, encoders: Sequence[str]) -> dict[str, Any]:
        """Rows of one sample: ``q_img``, ``t_img`` and per encoder ``(bkr_src, bkr_tgt, xlr_tgt)``."""
        src, tgt = direction.split("-")
        index, emb = self.image()
        img_src, img_tgt = self.image_of(src), self.image_of(tgt)
        out: dict[str, Any] = {
            "q_img": rows_of((index, emb), [img_src[i] for i in sample.queries], str(self.image_file)),
            "t_img": rows_of((index, emb), [img_tgt[i] for i in sample.bkr_targets], str(self.image_file)),
            "text": {},
        }
        for enc in encoders:
            s, t = self.text(enc, src), self.text(enc, tgt)
            if s is None or t is None:
                raise InputError(f"encoder {enc!r} was skipped in {direction}; its metrics cannot be recomputed")
            xlr_t = rows_of(t, sample.xlr_targets, f"{enc}/{tgt}") if sample.xlr_targets is not None else None
            out["text"][enc] = (
                rows_of(s, sample.queries, f"{enc}/{src}"),
                rows_of(t, sample.bkr_targets, f"{enc}/{tgt}"),
                xlr_t,
            )
        return out


def text_keys(paths: Sequence[Path]) -> dict[tuple[str, str], Path]:
    """``<encoder>/<lang>.<field>.npz`` paths → ``{(encoder, lang): path}``."""
    texts: dict[tuple[str, str], Path] = {}
    for p in paths:
        m = _TEXT_EMB.match(Path(p).name)
        if not m:
            raise InputError(f"{p}: expected a text embedding '<encoder>/<lang>.<field>.npz'")
        texts[(Path(p).parent.name, m["lang"])] = Path(p)
    return texts


def load_run(
    *,
    dataset: Path,
    metrics_files: Sequence[Path],
    run_dataset: Path | None = None,
    samples_files: Sequence[Path] = (),
    ranks_files: Sequence[Path] = (),
    image_files: Mapping[str, Path] | None = None,
    text_files: Mapping[tuple[str, str], Path] | None = None,
    findings_files: Sequence[Path] = (),
    run_name: str = "",
    reports_dir: str = "",
) -> RunArtifacts:
    """Read the artifacts (checks before any work: every file exists; the metrics files record
    one N and one k of Recall@k, :func:`~backretrieval.evaluation.metric_tables.metrics_protocol`,
    which is the run's ``k``; with per-query ranks, every direction of the metrics has its
    samples). ``run_dataset``: the run's own dataset when ``dataset`` is another one."""
    image_files = dict(image_files or {})
    text_files = dict(text_files or {})
    inputs = [
        *metrics_files,
        *samples_files,
        *ranks_files,
        *text_files.values(),
        *image_files.values(),
        *findings_files,
    ]
    for p in inputs:
        if not Path(p).is_file():
            raise InputError(f"{p}: input file not found (run the main pipeline first)")
    if not metrics_files:
        raise InputError("no metrics CSV given (--metrics)")
    tables, metrics, _n, k = read_metrics(metrics_files)
    samples: dict[str, list[Sample]] = {}
    for p in samples_files:
        ss = read_samples(Path(p))
        if ss:
            samples[f"{ss[0].src_lang}-{ss[0].tgt_lang}"] = ss
    if not samples_files:  # directions of the metrics, without samples
        samples = {d: [] for d in sorted(metrics["direction"].unique())}
    ranks = {}
    for p in ranks_files:
        name = Path(p).name
        if not name.endswith(".ranks.npz"):
            raise InputError(f"{p}: expected a '<direction>.ranks.npz' file")
        ranks[name[: -len(".ranks.npz")]] = Path(p)
    missing = sorted(set(metrics["direction"]) - set(samples))
    if samples_files and ranks_files and missing:  # the per-query analyses need every direction
        raise InputError(f"no samples file for direction(s) {missing} of the metrics (--samples)")
    return RunArtifacts(
        dataset=Path(dataset),
        meta=read_meta(Path(run_dataset or dataset)),
        metrics=metrics,
        samples=samples,
        ranks_files=ranks,
        image_files={n: Path(p) for n, p in image_files.items()},
        text_files={key: Path(p) for key, p in text_files.items()},
        k=int(k),
        run_name=run_name,
        reports_dir=reports_dir,
        metrics_tables=tables,
        findings_files={Path(p).name: Path(p) for p in findings_files},
    )
