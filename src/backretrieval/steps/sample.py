"""The sample step: seeded XLR / BkR samples of one or more directions, all seeds, one JSON
file per direction (a direction's file depends only on the dataset, the direction, N and the
seeds: one job draws every direction, and each file is what a job of its own would write)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .._util import io
from ..data.prepared import load_items, read_meta
from ..data.sampling import draw_samples
from ..data.sampling import read_samples as read_samples  # re-exported: the reader of this step's files
from ..errors import InputError


def sample_step(
    dataset: Path, directions: str | Sequence[str], sample_size: int, seeds: list[int], outs: Path | Sequence[Path]
) -> None:
    """The samples of every direction of ``directions`` (one, or several) → the JSON file at the
    same position of ``outs``."""
    directions = [directions] if isinstance(directions, str) else list(directions)
    outs = [outs] if isinstance(outs, (str, Path)) else list(outs)
    if len(outs) != len(directions):
        raise InputError(f"sample: {len(directions)} --directions value(s) but {len(outs)} --out file(s); one each")
    items = load_items(dataset)
    meta = read_meta(dataset)
    for direction, out in zip(directions, outs, strict=True):
        src, tgt = direction.split("-")
        samples = draw_samples(items, src, tgt, sample_size, seeds, parallel=meta.parallel)
        io.write_json(out, {"direction": direction, "n": sample_size, "samples": [s.to_dict() for s in samples]})
