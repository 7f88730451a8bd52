"""Multi30K (Elliott et al. 2016/2017/2018): download, verify and prepare.

Upstream: https://github.com/multi30k/dataset, pinned at commit ``a3d2e0d``. Only the
*short* hash of that commit is recorded here (the full 40-hex hash is not known);
GitHub resolves unambiguous short hashes in ``/raw/``
URLs, and every file is verified against the sha256 pins in
``checksums/multi30k.sha256``, so a different commit cannot slip through unnoticed.

What is downloaded (raw, gzip, UTF-8, one caption per line; line *i* belongs to image
*i* of ``data/task1/image_splits/<split>.txt``):

* task 1 (translations): ``data/task1/raw/<split>.<lang>.gz`` for the splits
  train (29,000), val (1,014), test_2016_flickr (1,000), test_2017_flickr (1,000, no cs),
  test_2018_flickr (1,071), test_2017_mscoco (461, no cs) and languages en/de/fr/cs;
  de/fr/cs are translations of en.
* task 2 (independent descriptions): ``data/task2/raw/<split>.<1..5>.<lang>.gz``,
  splits train / val / test_2016, languages en/de; five captions per image written
  independently in each language (*not* translations), aligned with task 1's split lists.

Images: **Flickr30k images cannot be downloaded automatically.** They are distributed
after filling in a request form (https://shannon.cs.illinois.edu/DenotationGraph/, or
the Flickr30k Entities page). Use ``image_source={"type": "folder", "path": ...}`` with
your copy, or precomputed features (``{"type": "precomputed", ...}``), or no images
(text-only preparation).

Tested here against the real files (a local copy laid out as upstream) for test_2016_flickr,
the task-2 test split and the 937-image Flickr8k subset; the other splits go through the
same code paths.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..._util.io import atomic_path, write_text
from ...errors import InputError
from ..download import fetch, resolve_url
from ..prepared import check_features_finite
from ._common import place_images, read_lines, staged_dir, write_prepared

UPSTREAM_COMMIT = "a3d2e0d"  # short hash only (see module docstring)
UPSTREAM_BASE = f"https://github.com/multi30k/dataset/raw/{UPSTREAM_COMMIT}/"
LICENSE = (
    "Multi30K texts: see github.com/multi30k/dataset (research use); images are Flickr30k "
    "images under the Flickr terms of use, for non-commercial research purposes only"
)

TASK1_SPLITS: dict[str, tuple[str, ...]] = {
    "train": ("en", "de", "fr", "cs"),
    "val": ("en", "de", "fr", "cs"),
    "test_2016_flickr": ("en", "de", "fr", "cs"),
    "test_2017_flickr": ("en", "de", "fr"),
    "test_2018_flickr": ("en", "de", "fr", "cs"),
    "test_2017_mscoco": ("en", "de", "fr"),
}
#: task-2 split -> task-1 image list that it is aligned with
TASK2_SPLITS: dict[str, str] = {"train": "train", "val": "val", "test_2016": "test_2016_flickr"}
TASK2_LANGS = ("en", "de")
TASK2_CAPTIONS = 5

FLICKR30K_HINT = (
    "Flickr30k images cannot be downloaded automatically: request them via the form at "
    "https://shannon.cs.illinois.edu/DenotationGraph/ (non-commercial research use) and pass "
    "the folder of JPEGs, or use precomputed features "
    "(image_source={'type': 'precomputed', 'npy': ..., 'ids_from_split': 'test_2016_flickr'}), "
    "or prepare text only (image_source=None)."
)


def split_role(split: str) -> str:
    """Multi30K split name -> train / val / test."""
    if split == "train":
        return "train"
    if split == "val":
        return "val"
    if split.startswith("test"):
        return "test"
    raise InputError(f"unknown Multi30K split {split!r}; expected one of {sorted(TASK1_SPLITS)}")


def load_checksums(name: str = "multi30k.sha256") -> dict[str, str]:
    """``{relative path: sha256}`` from the packaged checksum file ``checksums/<name>``."""
    text = resources.files(__package__).joinpath("checksums", name).read_text(encoding="utf-8")
    return parse_checksums(text)


def parse_checksums(text: str) -> dict[str, str]:
    """Parse ``sha256sum`` output (``<hash>  <path>``; '#' comments allowed)."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(maxsplit=1)
        if len(parts) != 2 or len(parts[0]) != 64:
            raise InputError(f"checksum line {n}: expected '<sha256>  <path>', got {line!r}")
        path = parts[1].lstrip("*")
        if path.startswith("./"):
            path = path[2:]
        out[path] = parts[0].lower()
    return out


def multi30k_files(
    splits: Iterable[str] = ("test_2016_flickr",),
    langs: Iterable[str] = ("en", "de", "fr", "cs"),
    task2: bool = False,
) -> list[str]:
    """Relative paths needed for ``splits`` x ``langs`` (pairs upstream lacks are skipped).

    With ``task2``, the task-2 files of the splits that have a task-2 counterpart
    (train, val, test_2016_flickr) are added for the requested languages among en/de.
    """
    splits, langs = list(splits), list(langs)
    bad = [s for s in splits if s not in TASK1_SPLITS]
    if bad:
        raise InputError(f"unknown Multi30K split(s) {bad}; expected some of {sorted(TASK1_SPLITS)}")
    known_langs = {lang for v in TASK1_SPLITS.values() for lang in v}
    bad = [lang for lang in langs if lang not in known_langs]
    if bad:
        raise InputError(f"unknown Multi30K language(s) {bad}; expected some of {sorted(known_langs)}")
    files: list[str] = []
    t2_of = {v: k for k, v in TASK2_SPLITS.items()}
    for split in splits:
        files.append(f"data/task1/image_splits/{split}.txt")
        files += [f"data/task1/raw/{split}.{lang}.gz" for lang in langs if lang in TASK1_SPLITS[split]]
        if task2 and split in t2_of:
            t2 = t2_of[split]
            files += [
                f"data/task2/raw/{t2}.{k}.{lang}.gz"
                for lang in langs
                if lang in TASK2_LANGS
                for k in range(1, TASK2_CAPTIONS + 1)
            ]
    return files


def download_multi30k(
    dest: str | os.PathLike[str],
    mirror: str | None = None,
    splits: Sequence[str] = ("test_2016_flickr",),
    langs: Sequence[str] = ("en", "de", "fr", "cs"),
    task2: bool = False,
    *,
    retries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60,
) -> list[Path]:
    """Download (or copy from ``mirror``) the Multi30K files, each verified by sha256.

    Files land under ``dest`` with the upstream layout (``dest/data/task1/raw/...``), so
    ``dest`` is the ``raw_dir`` of the prepare functions. Returns the local paths.
    """
    dest = Path(dest)
    pins = load_checksums()
    out = []
    for rel in multi30k_files(splits, langs, task2):
        if rel not in pins:  # pragma: no cover - the pin file lists every upstream file we use
            raise InputError(f"no sha256 pin for Multi30K file {rel!r} in checksums/multi30k.sha256")
        url = resolve_url(UPSTREAM_BASE, rel, mirror)
        out.append(fetch(url, dest / rel, pins[rel], retries=retries, backoff=backoff, timeout=timeout))
    return out


# --------------------------------------------------------------------------- reading


def read_image_split(raw_dir: str | os.PathLike[str], split: str) -> list[str]:
    """Image file names of a task-1 split (COCO lines ``name.jpg#<id>`` keep only the name)."""
    path = Path(raw_dir) / "data" / "task1" / "image_splits" / f"{split}.txt"
    names = [ln.strip().split("#", 1)[0] for ln in read_lines(path)]
    for i, name in enumerate(names):
        if not name:
            raise InputError(f"{path}: empty image name at line {i + 1}")
    return names


def read_captions(path: Path, n_expected: int, allow_empty: bool = False) -> list[str]:
    lines = [ln.strip() for ln in read_lines(path)]
    if len(lines) != n_expected:
        raise InputError(f"{path}: {len(lines)} lines, expected {n_expected} (one per image of the split list)")
    if not allow_empty:
        for i, ln in enumerate(lines):
            if not ln:
                raise InputError(f"{path}: empty caption at line {i + 1}")
    return lines


def _task1_path(raw_dir: Path, split: str, lang: str) -> Path:
    return raw_dir / "data" / "task1" / "raw" / f"{split}.{lang}.gz"


def _check_langs(split: str, langs: Sequence[str]) -> None:
    if split not in TASK1_SPLITS:
        raise InputError(f"unknown Multi30K split {split!r}; expected one of {sorted(TASK1_SPLITS)}")
    bad = [lang for lang in langs if lang not in TASK1_SPLITS[split]]
    if bad:
        raise InputError(f"Multi30K split {split!r} has no {bad} captions (available: {list(TASK1_SPLITS[split])})")


# --------------------------------------------------------------------------- images


def _apply_image_source(
    root: Path,
    raw_dir: Path,
    image_ids: list[str],
    image_source: dict[str, Any] | None,
) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """Write features/ or images/ into ``root``; returns (metadata, images table or None)."""
    if image_source is None or image_source.get("type", "none") == "none":
        return {"images": "none (text only)"}, None
    kind = image_source.get("type")
    if kind == "precomputed":
        for key in ("npy", "ids_from_split"):
            if key not in image_source:
                raise InputError(f"image_source (precomputed): field {key!r} is required")
        name = str(image_source.get("name", "resnet50"))
        npy = Path(image_source["npy"])
        if not npy.is_file():
            raise InputError(f"{npy}: precomputed feature file not found (image_source.npy)")
        ids = read_image_split(raw_dir, image_source["ids_from_split"])
        feats = np.load(npy, mmap_mode="r", allow_pickle=False)
        if feats.ndim != 2 or feats.shape[0] != len(ids):
            raise InputError(
                f"{npy}: shape {feats.shape}, expected ({len(ids)}, d): one row per line of "
                f"image_splits/{image_source['ids_from_split']}.txt"
            )
        check_features_finite(npy, feats, ids)
        have = set(ids)
        lacking = sorted({i for i in image_ids if i not in have})
        if lacking:
            raise InputError(
                f"{npy}: features cover only split {image_source['ids_from_split']!r}; "
                f"{len(lacking)} image(s) of the requested splits have none (first: {lacking[:3]})"
            )
        (root / "features").mkdir()
        with atomic_path(root / "features" / f"{name}.npy", suffix=".npy") as tmp:
            np.save(tmp, np.asarray(feats), allow_pickle=False)
        write_text(root / "features" / f"{name}.ids.txt", "\n".join(ids) + "\n")
        meta = {
            "images": "precomputed features",
            "features": {name: {"source_file": npy.name, "dtype": str(feats.dtype), "dim": int(feats.shape[1])}},
        }
        return meta, None
    if kind == "folder":
        if "path" not in image_source:
            raise InputError("image_source (folder): field 'path' is required")
        folder = Path(image_source["path"]).expanduser()
        table = place_images(
            image_ids,
            folder,
            root,
            mode=str(image_source.get("mode", "auto")),
            what="Flickr30k image folder",
            hint=FLICKR30K_HINT,
        )
        return {"images": "image files (linked or copied into images/)"}, table
    raise InputError(f"image_source.type must be 'precomputed', 'folder' or 'none'; got {kind!r}")


# --------------------------------------------------------------------------- prepare


def prepare_task1(
    raw_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    splits: Sequence[str] = ("test_2016_flickr",),
    langs: Sequence[str] = ("en", "de", "fr", "cs"),
    image_source: dict[str, Any] | None = None,
    *,
    name: str | None = None,
) -> Path:
    """Prepare Multi30K task 1 (translated captions) in the prepared-dataset format.

    item_id ``<split>:<line:05d>`` (0-based line), image_id = Flickr30k file name,
    title = caption, body = "", split = train/val/test. ``image_source``: ``None``
    (text only), ``{"type": "precomputed", "npy", "ids_from_split"[, "name"]}`` or
    ``{"type": "folder", "path"[, "mode": auto|hardlink|copy]}``.
    """
    raw_dir = Path(raw_dir)
    splits, langs = list(splits), list(langs)
    if not splits or not langs:
        raise InputError("prepare_task1: at least one split and one language are required")
    rows = []
    image_ids: list[str] = []
    for split in splits:
        _check_langs(split, langs)
        names = read_image_split(raw_dir, split)
        image_ids += names
        role = split_role(split)
        for lang in langs:
            caps = read_captions(_task1_path(raw_dir, split, lang), len(names))
            rows += [(f"{split}:{i:05d}", lang, names[i], cap, "", role) for i, cap in enumerate(caps)]
    items = pd.DataFrame(rows, columns=["item_id", "lang", "image_id", "title", "body", "split"])
    with staged_dir(out_dir) as root:
        img_meta, table = _apply_image_source(root, raw_dir, image_ids, image_source)
        meta = {
            "name": name or f"multi30k-task1-{'+'.join(splits)}",
            "synthetic": False,
            "parallel": True,
            "languages": langs,
            "description": (
                f"Multi30K task 1: English Flickr30k captions and their human translations; splits {splits}"
            ),
            "license": LICENSE,
            "source": {"upstream": UPSTREAM_BASE, "commit": UPSTREAM_COMMIT, "task": 1, "splits": splits},
            **img_meta,
        }
        write_prepared(root, meta, items, table)
    return Path(out_dir)


def prepare_flickr8k_subset(
    multi30k_raw_dir: str | os.PathLike[str],
    images_dir: str | os.PathLike[str],
    mapping_csv: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    langs: Sequence[str] = ("en", "de", "fr", "cs"),
    *,
    mode: str = "auto",
    name: str = "multi30k-flickr8k-subset",
) -> Path:
    """The real Flickr8k JPEGs that are Multi30K images, with their Multi30K captions.

    ``mapping_csv`` columns: ``flickr8k_file, multi30k_image, multi30k_split, line_index``
    (0-based line of the split list). Every row is checked against the split list. Images
    are hard-linked (same filesystem) or copied into ``out_dir/images/``. All rows get
    ``split = "eval"`` (the subset mixes Multi30K train/val/test images; the origin is in
    the item id ``<split>:<line:05d>``).
    """
    raw_dir, images_dir, mapping_csv = Path(multi30k_raw_dir), Path(images_dir), Path(mapping_csv)
    if not mapping_csv.is_file():
        raise InputError(f"{mapping_csv}: mapping CSV not found")
    mp = pd.read_csv(mapping_csv, dtype=str, keep_default_na=False)
    need = ["flickr8k_file", "multi30k_image", "multi30k_split", "line_index"]
    missing = [c for c in need if c not in mp.columns]
    if missing:
        raise InputError(f"{mapping_csv}: missing column(s) {missing}; expected {need}")
    langs = list(langs)
    split_names: dict[str, list[str]] = {}
    caps: dict[tuple[str, str], list[str]] = {}
    for split in sorted(set(mp["multi30k_split"])):
        _check_langs(split, langs)
        split_names[split] = read_image_split(raw_dir, split)
        for lang in langs:
            caps[(split, lang)] = read_captions(_task1_path(raw_dir, split, lang), len(split_names[split]))
    rows, img_rows = [], []
    for r, rec in enumerate(mp.itertuples(index=False), start=2):
        split, image = rec.multi30k_split, rec.multi30k_image
        try:
            line = int(rec.line_index)
        except ValueError:
            raise InputError(
                f"{mapping_csv}: row {r}, field 'line_index': not an integer ({rec.line_index!r})"
            ) from None
        names = split_names[split]
        if not 0 <= line < len(names) or names[line] != image:
            got = names[line] if 0 <= line < len(names) else "<out of range>"
            raise InputError(
                f"{mapping_csv}: row {r}: image_splits/{split}.txt line {line} is {got!r}, "
                f"not {image!r} (field 'line_index')"
            )
        for lang in langs:
            rows.append((f"{split}:{line:05d}", lang, image, caps[(split, lang)][line], "", "eval"))
        img_rows.append((image, rec.flickr8k_file))
    if len({i for i, _ in img_rows}) != len(img_rows):
        raise InputError(f"{mapping_csv}: a multi30k_image appears twice")
    items = pd.DataFrame(rows, columns=["item_id", "lang", "image_id", "title", "body", "split"])
    with staged_dir(out_dir) as root:
        table = place_images(
            [i for i, _ in img_rows],
            images_dir,
            root,
            mode=mode,
            src_names=dict(img_rows),
            what="Flickr8k image folder",
        )
        meta = {
            "name": name,
            "synthetic": False,
            "parallel": True,
            "languages": langs,
            "description": (
                f"{len(img_rows)} Flickr8k JPEGs that are also Multi30K (Flickr30k) images, with "
                "their Multi30K task-1 captions (train/val/test combined); real images and texts"
            ),
            "license": LICENSE + "; Flickr8k images likewise under the Flickr terms (research use)",
            "source": {
                "upstream": UPSTREAM_BASE,
                "commit": UPSTREAM_COMMIT,
                "task": 1,
                "mapping": mapping_csv.name,
                "splits": {s: int((mp["multi30k_split"] == s).sum()) for s in sorted(split_names)},
            },
            "images": "image files (linked or copied into images/)",
        }
        write_prepared(root, meta, items, table)
    return Path(out_dir)


def _task2_items(raw_dir: Path, split: str, langs: Sequence[str], role: str) -> tuple[pd.DataFrame, list[str]]:
    if split not in TASK2_SPLITS:
        raise InputError(f"unknown Multi30K task-2 split {split!r}; expected one of {sorted(TASK2_SPLITS)}")
    bad = [lang for lang in langs if lang not in TASK2_LANGS]
    if bad:
        raise InputError(f"Multi30K task 2 has only {list(TASK2_LANGS)} captions; got {bad}")
    names = read_image_split(raw_dir, TASK2_SPLITS[split])
    rows = []
    for lang in langs:
        cols = [
            read_captions(raw_dir / "data" / "task2" / "raw" / f"{split}.{k}.{lang}.gz", len(names), allow_empty=True)
            for k in range(1, TASK2_CAPTIONS + 1)
        ]
        for i, name in enumerate(names):
            texts = [c[i] for c in cols if c[i]]
            if not texts:
                raise InputError(
                    f"Multi30K task 2 {split}.*.{lang}.gz: all {TASK2_CAPTIONS} captions empty at line {i + 1}"
                )
            rows.append((f"{split}:{i:05d}", lang, name, texts[0], "\n".join(texts[1:]), role))
    return pd.DataFrame(rows, columns=["item_id", "lang", "image_id", "title", "body", "split"]), names


def _task2_meta(name: str, split: str, langs: Sequence[str], extra: dict) -> dict:
    return {
        "name": name,
        "synthetic": False,
        "parallel": True,
        "texts_independent": True,
        "languages": list(langs),
        "description": (
            f"Multi30K task 2 ({split}): five independent (not translated) descriptions per image "
            "in each language; title = description 1, body = descriptions 2-5 (newline-joined). "
            "The same item_id in two languages means 'same image', not 'translation' "
            "(texts_independent), so XLR measures retrieval of the same image's description."
        ),
        "license": LICENSE,
        "source": {"upstream": UPSTREAM_BASE, "commit": UPSTREAM_COMMIT, "task": 2, "split": split},
        **extra,
    }


def prepare_task2(
    raw_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    split: str = "test_2016",
    image_source: dict[str, Any] | None = None,
    langs: Sequence[str] = TASK2_LANGS,
    *,
    name: str | None = None,
) -> Path:
    """Multi30K task 2 (independent en/de descriptions of the same images), one item per image.

    title = caption 1, body = captions 2-5 joined with newlines (empty captions skipped).
    ``dataset.json`` has ``"parallel": true`` (same item_id = same image) and
    ``"texts_independent": true``. ``image_source`` as in :func:`prepare_task1`; for
    ``precomputed`` use ``ids_from_split="test_2016_flickr"`` with split ``test_2016``.
    """
    raw_dir = Path(raw_dir)
    items, names = _task2_items(raw_dir, split, langs, split_role(TASK2_SPLITS[split]))
    with staged_dir(out_dir) as root:
        img_meta, table = _apply_image_source(root, raw_dir, names, image_source)
        write_prepared(root, _task2_meta(name or f"multi30k-task2-{split}", split, langs, img_meta), items, table)
    return Path(out_dir)


def prepare_task2_training(
    raw_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    split: str = "train",
    langs: Sequence[str] = TASK2_LANGS,
    *,
    name: str | None = None,
) -> Path:
    """Text-only task-2 training set (the case study's training data), split column ``train``.

    Same format as :func:`prepare_task2`; no images or features are written (image_id is
    still the Flickr30k file name so image features can be joined later).
    """
    raw_dir = Path(raw_dir)
    items, _ = _task2_items(raw_dir, split, langs, "train")
    with staged_dir(out_dir) as root:
        meta = _task2_meta(
            name or f"multi30k-task2-{split}" + ("" if split == "train" else "-as-train"),
            split,
            langs,
            {"images": "none (text only)"},
        )
        write_prepared(root, meta, items, None)
    return Path(out_dir)
