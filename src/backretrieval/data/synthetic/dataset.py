"""The SYNTHETIC dataset on disk: items, splits, images and ground-truth scenes written in the
prepared format (:func:`generate`), and the scenes read back (:func:`load_scenes`)."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..._util.tempfiles import claimed_temporary, remove_abandoned_of, temp_prefix
from ...errors import InputError
from .captions import _WRITERS, SUPPORTED_LANGUAGES, describe_scene
from .render import render_scene
from .scenes import _check_scene, _rng, sample_scene

DATASET_NAME = "synthetic-scenes"
GENERATOR_VERSION = 1

_RESTAGE_RATE = 0.04
_SPLIT_CUTS = (0.8, 0.9)  # train < 0.8 <= val < 0.9 <= test


DESCRIPTION = (
    "SYNTHETIC generated data for offline testing and demonstration only - NOT a benchmark of "
    "real-world quality. Cartoon scenes (objects of 10 kinds, 8 colours, 1-4 per group, on 6 "
    "backgrounds) drawn with Pillow by backretrieval.synthetic, with template-generated titles "
    "and descriptions written independently per language (paraphrases, synonyms and randomly "
    "omitted details, so translations are not word-for-word parallel). Ground-truth scene "
    "attributes are in scenes.jsonl (for simulated relevance judgements)."
)


def _split(seed: int, i: int) -> str:
    u = _rng("split", seed, i).random()
    return "train" if u < _SPLIT_CUTS[0] else ("val" if u < _SPLIT_CUTS[1] else "test")


def _scene_for(seed: int, i: int) -> tuple[dict, int | None]:
    """Scene of item ``i`` and, for re-staged items, the index of the item it copies."""
    rng = _rng("scene", seed, i)
    if i >= 10 and rng.random() < _RESTAGE_RATE:
        j = rng.randrange(i)
        src, _ = _scene_for(seed, j)
        return {"background": src["background"], "objects": [dict(o) for o in src["objects"]]}, j
    return sample_scene(rng), None


def _item_id(i: int) -> str:
    return f"syn-{i:06d}"


def _validate_args(n_items: int, languages: Sequence[str], image_size: int) -> list[str]:
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 1:
        raise InputError(f"n_items must be a positive integer, got {n_items!r}")
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 32:
        raise InputError(f"image_size must be an integer >= 32 (pixels), got {image_size!r}")
    if isinstance(languages, str):
        raise InputError(f"languages must be a sequence of codes like ('en', 'de'), got the string {languages!r}")
    langs = list(languages)
    if not langs:
        raise InputError("languages must not be empty")
    bad = [lang for lang in langs if lang not in _WRITERS]
    if bad:
        raise InputError(
            f"unsupported language(s) {bad} for the synthetic generator; supported: {', '.join(SUPPORTED_LANGUAGES)}"
        )
    if len(set(langs)) != len(langs):
        raise InputError(f"languages contains duplicates: {langs}")
    return langs


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def generate(
    out_dir: str | Path,
    n_items: int = 2400,
    languages: Sequence[str] = SUPPORTED_LANGUAGES,
    seed: int = 0,
    image_size: int = 160,
) -> None:
    """Generate the SYNTHETIC scenes dataset into ``out_dir`` in the prepared format.

    Writes ``dataset.json``, ``items.csv`` (one row per item and language; split train/val/test
    ~80/10/10 per item), ``images/syn-XXXXXX.png``, ``images.csv`` and ``scenes.jsonl`` (ground
    truth scene per item). Everything is built in a temporary sibling folder that replaces
    ``out_dir`` only when complete; an existing ``out_dir`` must be empty or a previous prepared
    dataset (it has a ``dataset.json``), otherwise :class:`InputError` is raised.
    """
    langs = _validate_args(n_items, languages, image_size)
    out = Path(out_dir)
    if out.exists():
        if not out.is_dir():
            raise InputError(f"{out}: exists and is not a folder; choose another output path")
        if any(out.iterdir()) and not (out / "dataset.json").is_file():
            raise InputError(
                f"{out}: exists, is not empty and is not a prepared dataset (no dataset.json); refusing to replace it"
            )
    out.parent.mkdir(parents=True, exist_ok=True)

    def make(suffix: str) -> Callable[[], str]:
        return lambda: tempfile.mkdtemp(prefix=temp_prefix(out), suffix=suffix, dir=out.parent)

    with claimed_temporary(make(".tmp")) as tmp:
        try:
            _generate_into(tmp, n_items, langs, seed, image_size)
            os.chmod(tmp, 0o755)  # mkdtemp creates 0700
            if out.exists():
                with claimed_temporary(make(".tmp.old")) as old:
                    try:
                        os.replace(out, old / "d")
                        try:
                            os.replace(tmp, out)
                        except BaseException:
                            os.replace(old / "d", out)  # put the previous dataset back
                            raise
                    finally:
                        if out.exists():  # kept only when the previous dataset could not be put back
                            shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, out)
        except BaseException:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)
            raise
    remove_abandoned_of(out)


def _generate_into(root: Path, n_items: int, langs: list[str], seed: int, image_size: int) -> None:
    (root / "images").mkdir()
    item_rows: list[tuple[str, ...]] = []
    image_rows: list[tuple[str, str]] = []
    scene_lines: list[str] = []
    for i in range(n_items):
        item_id = _item_id(i)
        image_id = f"{item_id}.png"
        scene, src = _scene_for(seed, i)
        split = _split(seed, i)
        for lang in langs:
            title, body = describe_scene(scene, lang, f"{seed}|{i}")
            item_rows.append((item_id, lang, image_id, title, body, split))
        img = render_scene(scene, image_size, _rng("image", seed, i))
        img.save(root / "images" / image_id, format="PNG", optimize=False, compress_level=6)
        image_rows.append((image_id, f"images/{image_id}"))
        record = {"item_id": item_id, **scene}
        if src is not None:
            record["same_scene_as"] = _item_id(src)
        scene_lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
    _write_csv(root / "items.csv", ("item_id", "lang", "image_id", "title", "body", "split"), item_rows)
    _write_csv(root / "images.csv", ("image_id", "path"), image_rows)
    (root / "scenes.jsonl").write_text("\n".join(scene_lines) + "\n", encoding="utf-8")
    meta = {
        "name": DATASET_NAME,
        "synthetic": True,
        "parallel": True,
        "languages": langs,
        "description": DESCRIPTION,
        "license": "CC0-1.0 (generated by backretrieval.synthetic; no third-party content)",
        "generator": {
            "module": "backretrieval.synthetic",
            "version": GENERATOR_VERSION,
            "n_items": n_items,
            "seed": seed,
            "image_size": image_size,
        },
    }
    (root / "dataset.json").write_text(
        json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def load_scenes(out_dir: str | Path) -> dict[str, dict]:
    """item_id -> ground-truth scene dict, read from ``<out_dir>/scenes.jsonl``."""
    path = Path(out_dir) / "scenes.jsonl"
    if not path.is_file():
        raise InputError(f"{path}: missing (only datasets made by backretrieval.data.synthetic have scenes)")
    scenes: dict[str, dict] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {n} is not valid JSON ({exc})") from exc
        if not isinstance(rec, dict) or "item_id" not in rec:
            raise InputError(f"{path}: line {n} lacks field 'item_id'")
        item_id = rec.pop("item_id")
        _check_scene(rec, f"{item_id} ({path}, line {n})")
        if item_id in scenes:
            raise InputError(f"{path}: duplicate item_id {item_id!r} at line {n}")
        scenes[item_id] = rec
    return scenes
