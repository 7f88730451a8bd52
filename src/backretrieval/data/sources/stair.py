"""STAIR Captions (Japanese) + MS-COCO 2014 (English captions, images): download and prepare.

Upstream files (sha256 **not pinned** - no copy was available when this module was
written; downloads print the computed hash with an "unpinned" warning, and the hashes
should be added to :data:`PINS` once verified):

* STAIR Captions v1.2: https://github.com/STAIR-Lab-CIT/STAIR-captions/raw/master/stair_captions_v1.2.tar.gz
  (``stair_captions_v1.2_{train,val}.json``, COCO-captions layout, Japanese captions; CC BY 4.0)
* COCO 2014 captions: http://images.cocodataset.org/annotations/annotations_trainval2014.zip
  (``annotations/captions_{train,val}2014.json``; annotations CC BY 4.0)
* COCO val2014 images: http://images.cocodataset.org/zips/val2014.zip (~6 GB; images under
  their Flickr licences, see the COCO terms of use)

Both caption files have the COCO layout
``{"images": [{"id", "file_name", ...}], "annotations": [{"id", "image_id", "caption"}]}``.
STAIR annotates the same COCO 2014 images, so an image's English (COCO) and Japanese
(STAIR) captions are *independent* descriptions of one image (like Multi30K task 2).

What was tested here: the JSON parser and the prepare step on tiny hand-made files in
exactly that layout (tests/test_multi30k.py). The real downloads and the real archive
layouts were **not** tested (no network); the archive members are located by file name,
so a different folder nesting inside the archives is tolerated.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ...errors import InputError
from ..archive import safe_extract
from ..download import fetch, resolve_url
from ._common import place_images, staged_dir, write_prepared

STAIR_BASE = "https://github.com/STAIR-Lab-CIT/STAIR-captions/raw/master/"
STAIR_ARCHIVE = "stair_captions_v1.2.tar.gz"
COCO_BASE = "http://images.cocodataset.org/"
COCO_ANNOTATIONS = "annotations/annotations_trainval2014.zip"
COCO_IMAGES = {"val2014": "zips/val2014.zip", "train2014": "zips/train2014.zip"}

#: sha256 pins (None = unpinned: computed and reported at download time; add them here)
PINS: dict[str, str | None] = {
    STAIR_ARCHIVE: None,
    COCO_ANNOTATIONS: None,
    "zips/val2014.zip": None,
    "zips/train2014.zip": None,
}
LICENSE = (
    "STAIR Captions: CC BY 4.0; COCO annotations: CC BY 4.0; COCO images: Flickr terms of use "
    "(see cocodataset.org/#termsofuse)"
)


def _find(root: Path, name: str) -> Path:
    hits = sorted(root.rglob(name))
    if not hits:
        raise InputError(f"{root}: no file named {name!r} found after extraction")
    return hits[0]


def download_stair(dest: str | os.PathLike[str], mirror: str | None = None, **fetch_kw) -> dict[str, Path]:
    """Download + safely extract STAIR Captions v1.2. Returns ``{"train": json, "val": json}``."""
    dest = Path(dest)
    arc = fetch(resolve_url(STAIR_BASE, STAIR_ARCHIVE, mirror), dest / STAIR_ARCHIVE, PINS[STAIR_ARCHIVE], **fetch_kw)
    root = dest / "stair_captions_v1.2"
    if not root.is_dir():
        safe_extract(arc, root)
    return {s: _find(root, f"stair_captions_v1.2_{s}.json") for s in ("train", "val")}


def download_coco(
    dest: str | os.PathLike[str],
    mirror: str | None = None,
    image_splits: Sequence[str] = ("val2014",),
    **fetch_kw,
) -> dict[str, Path]:
    """Download + extract COCO 2014 caption annotations and (optionally) image zips.

    Returns ``{"captions_val2014": json, "captions_train2014": json, "<split>": image folder}``.
    ``image_splits=()`` downloads the annotations only (≈240 MB instead of +6/13 GB).
    """
    dest = Path(dest)
    out: dict[str, Path] = {}
    ann = fetch(
        resolve_url(COCO_BASE, COCO_ANNOTATIONS, mirror), dest / COCO_ANNOTATIONS, PINS[COCO_ANNOTATIONS], **fetch_kw
    )
    ann_root = dest / "annotations_trainval2014"
    if not ann_root.is_dir():
        safe_extract(ann, ann_root)
    for s in ("train2014", "val2014"):
        out[f"captions_{s}"] = _find(ann_root, f"captions_{s}.json")
    for split in image_splits:
        if split not in COCO_IMAGES:
            raise InputError(f"COCO image split must be one of {sorted(COCO_IMAGES)}; got {split!r}")
        rel = COCO_IMAGES[split]
        z = fetch(resolve_url(COCO_BASE, rel, mirror), dest / rel, PINS[rel], **fetch_kw)
        root = dest / f"images_{split}"
        if not root.is_dir():
            safe_extract(z, root)
        folder = root / split
        out[split] = folder if folder.is_dir() else root
    return out


def load_coco_captions(path: str | os.PathLike[str]) -> dict[int, tuple[str, list[str]]]:
    """``{image id: (file_name, captions ordered by annotation id)}`` from a COCO captions JSON.

    Images without any non-empty caption are left out.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: captions JSON not found")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid UTF-8 JSON ({exc})") from exc
    for key in ("images", "annotations"):
        if not isinstance(raw.get(key), list):
            raise InputError(f"{path}: field '{key}' (a list) is required (COCO captions layout)")
    files: dict[int, str] = {}
    for n, im in enumerate(raw["images"]):
        if "id" not in im or "file_name" not in im:
            raise InputError(f"{path}: images[{n}] needs fields 'id' and 'file_name'")
        files[int(im["id"])] = str(im["file_name"])
    caps: dict[int, list[tuple[int, str]]] = {}
    for n, an in enumerate(raw["annotations"]):
        for key in ("image_id", "caption"):
            if key not in an:
                raise InputError(f"{path}: annotations[{n}] lacks field '{key}'")
        iid = int(an["image_id"])
        if iid not in files:
            raise InputError(f"{path}: annotations[{n}].image_id {iid} is not in 'images'")
        text = " ".join(str(an["caption"]).split())
        if text:
            caps.setdefault(iid, []).append((int(an.get("id", n)), text))
    return {iid: (files[iid], [t for _, t in sorted(c)]) for iid, c in caps.items()}


def prepare_stair(
    stair_json: str | os.PathLike[str],
    coco_captions_json: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    images_dir: str | os.PathLike[str] | None = None,
    *,
    max_images: int | None = None,
    split: str = "eval",
    mode: str = "auto",
    name: str = "stair-coco",
) -> Path:
    """English (COCO) + Japanese (STAIR) captions of the same COCO images, prepared format.

    One item per image present in both files: item_id ``coco:<image id:012d>``, image_id =
    COCO file name, title = first caption (lowest annotation id), body = the other captions
    joined by newlines. ``max_images`` keeps the lowest image ids (deterministic).
    ``images_dir`` (e.g. the extracted ``val2014/``) → images linked/copied into ``images/``.
    """
    ja = load_coco_captions(stair_json)
    en = load_coco_captions(coco_captions_json)
    ids = sorted(set(ja) & set(en))
    if not ids:
        raise InputError(f"{stair_json} and {coco_captions_json}: no image has captions in both files")
    if max_images is not None:
        ids = ids[:max_images]
    rows = []
    for iid in ids:
        for lang, src in (("en", en), ("ja", ja)):
            fname, caps = src[iid]
            rows.append((f"coco:{iid:012d}", lang, fname, caps[0], "\n".join(caps[1:]), split))
    items = pd.DataFrame(rows, columns=["item_id", "lang", "image_id", "title", "body", "split"])
    with staged_dir(out_dir) as root:
        table = None
        if images_dir is not None:
            table = place_images(
                [en[i][0] for i in ids],
                Path(images_dir),
                root,
                mode=mode,
                what="COCO image folder",
                hint="Download and extract http://images.cocodataset.org/zips/val2014.zip (download_coco).",
            )
        meta = {
            "name": name,
            "synthetic": False,
            "parallel": True,
            "texts_independent": True,
            "languages": ["en", "ja"],
            "description": (
                "MS-COCO 2014 English captions and STAIR Japanese captions of the same images "
                "(independent descriptions, not translations); title = caption 1, body = the rest"
            ),
            "license": LICENSE,
            "source": {"stair": STAIR_BASE + STAIR_ARCHIVE, "coco": COCO_BASE + COCO_ANNOTATIONS, "n_images": len(ids)},
            "images": "image files (linked or copied into images/)" if table is not None else "none (text only)",
        }
        write_prepared(root, meta, items, table)
    return Path(out_dir)
