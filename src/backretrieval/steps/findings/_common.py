"""The findings steps' shared pieces: the cached artifacts of one run (:class:`RunArtifacts`, :func:`load_run`) and the writers of an analysis's tables, figures and record."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..._util import io
from ...data.prepared import DatasetMeta, load_items, read_meta
from ...data.sampling import Sample
from ...errors import InputError
from ...evaluation.core import rows_of
from ...findings.document import FindingsRecord, RunInfo, write_record
from ..layout import load_embedding
from ..metrics import read_metrics
from ..sample import read_samples

log = logging.getLogger("backretrieval")

# ============================================================================================
# shared: the cached artifacts of one run


_TEXT_EMB = re.compile(r"^(?P<lang>[A-Za-z0-9_-]+)\.(?P<field>title|body|title_body)\.npz$")


@dataclass
class RunArtifacts:
    """The main pipeline's artifacts of one configuration, read from explicit files."""

    dataset: Path
    meta: DatasetMeta
    metrics: pd.DataFrame
    samples: dict[str, list[Sample]]
    ranks_files: dict[str, Path]
    image_file: Path | None
    text_files: dict[tuple[str, str], Path]
    k: int
    _items: pd.DataFrame | None = None
    _image: tuple[dict[str, int], np.ndarray] | None = None
    _text: dict[tuple[str, str], tuple[dict[str, int], np.ndarray] | None] = field(default_factory=dict)

    @property
    def directions(self) -> list[str]:
        return [d for d in self.samples if d in set(self.metrics["direction"])]

    @property
    def encoders(self) -> list[str]:
        return sorted(self.metrics["encoder"].unique())

    def run_info(self, run_name: str, reports_dir: str) -> RunInfo:
        m = self.metrics
        return RunInfo(
            run_name=run_name,
            dataset=self.meta.name,
            synthetic=self.meta.synthetic,
            reports_dir=reports_dir,
            sample_size=int(m["n"].max()),
            seeds=tuple(sorted(int(s) for s in m["seed"].unique())),
            directions=tuple(self.directions),
            encoders=tuple(self.encoders),
            image_backbone=str(m["backbone"].iloc[0]),
            k=self.k,
        )

    def items(self) -> pd.DataFrame:
        if self._items is None:
            self._items = load_items(self.dataset)
        return self._items

    def image_of(self, lang: str) -> dict[str, str]:
        sub = self.items()[self.items()["lang"] == lang]
        return dict(zip(sub["item_id"], sub["image_id"]))

    def image(self) -> tuple[dict[str, int], np.ndarray]:
        if self._image is None:
            if self.image_file is None:
                raise InputError("no image embedding file given (--image-emb)")
            img = load_embedding(self.image_file)
            if img is None:
                raise InputError(f"{self.image_file}: image backbone was skipped; the analysis needs image features")
            self._image = img
        return self._image

    def text(self, encoder: str, lang: str) -> tuple[dict[str, int], np.ndarray] | None:
        key = (encoder, lang)
        if key not in self._text:
            if key not in self.text_files:
                raise InputError(f"no text embedding of encoder {encoder!r} in {lang!r} among --text-emb")
            self._text[key] = load_embedding(self.text_files[key])
        return self._text[key]

    def ranks(self, direction: str) -> dict[str, np.ndarray]:
        if direction not in self.ranks_files:
            raise InputError(f"no per-query ranks file for direction {direction} among --ranks")
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


def load_run(
    *,
    dataset: Path,
    metrics_files: Sequence[Path],
    samples_files: Sequence[Path] = (),
    ranks_files: Sequence[Path] = (),
    image_file: Path | None = None,
    text_files: Sequence[Path] = (),
    k: int,
) -> RunArtifacts:
    """Read the artifacts (checks before any work: every file exists, directions match)."""
    for p in [*metrics_files, *samples_files, *ranks_files, *text_files, *([image_file] if image_file else [])]:
        if not Path(p).is_file():
            raise InputError(f"{p}: input file not found (run the main pipeline first)")
    if not metrics_files:
        raise InputError("no metrics CSV given (--metrics)")
    metrics = read_metrics([Path(p) for p in metrics_files])
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
    texts: dict[tuple[str, str], Path] = {}
    for p in text_files:
        m = _TEXT_EMB.match(Path(p).name)
        if not m:
            raise InputError(f"{p}: expected a text embedding '<encoder>/<lang>.<field>.npz'")
        texts[(Path(p).parent.name, m["lang"])] = Path(p)
    missing = sorted(set(metrics["direction"]) - set(samples))
    if samples_files and missing:
        raise InputError(f"no samples file for direction(s) {missing} of the metrics (--samples)")
    return RunArtifacts(
        dataset=Path(dataset),
        meta=read_meta(dataset),
        metrics=metrics,
        samples=samples,
        ranks_files=ranks,
        image_file=Path(image_file) if image_file else None,
        text_files=texts,
        k=int(k),
    )


def _write_tables(out_dir: Path, name: str, frame: pd.DataFrame, markdown: str) -> list[str]:
    io.write_csv(out_dir / f"{name}.csv", frame)
    io.write_text(out_dir / f"{name}.md", markdown)
    return [f"{name}.md", f"{name}.csv"]


def _figure_outputs(name: str) -> list[str]:
    return [f"figures/{name}.{ext}" for ext in ("png", "svg", "pdf")]


def _record(out_dir: Path, rec: FindingsRecord) -> None:
    write_record(out_dir / f"{rec.analysis}.json", rec)


def _per_query(ranks: dict[str, np.ndarray], enc: str, seed: int, kind: str, k: int, as_ranks: bool) -> np.ndarray:
    key = f"{enc}/{seed}/{kind}"
    if key not in ranks:
        raise InputError(f"per-query ranks: no entry {key!r} (metrics and ranks files out of step?)")
    r = ranks[key].astype(np.int64)
    return (r <= k).astype(np.float64) if as_ranks else r.astype(np.float64)


def _synthetic_note(info: RunInfo) -> str:
    return (
        " These are SYNTHETIC data: a demonstration of the method, not evidence about real encoders."
        if info.synthetic
        else ""
    )
