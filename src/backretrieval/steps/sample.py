"""The sample step: seeded XLR / BkR samples of one direction, all seeds, as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from .._util import io
from ..data.prepared import load_items, read_meta
from ..data.sampling import Sample, draw_samples


def sample_step(dataset: Path, direction: str, n: int, seeds: list[int], out: Path) -> None:
    items = load_items(dataset)
    meta = read_meta(dataset)
    src, tgt = direction.split("-")
    samples = draw_samples(items, src, tgt, n, seeds, parallel=meta.parallel)
    io.write_json(out, {"direction": direction, "n": n, "samples": [s.to_dict() for s in samples]})


def read_samples(path: Path) -> list[Sample]:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return [Sample.from_dict(s) for s in raw["samples"]]
