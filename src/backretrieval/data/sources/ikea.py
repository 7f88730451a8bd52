"""IKEA product descriptions (github.com/sampalomad/IKEA-Dataset): en-de and en-fr.

Upstream: the GitHub repository archive
``https://github.com/sampalomad/IKEA-Dataset/archive/<ref>.zip`` (default ``ref`` =
``master``; **unpinned** - no copy was available here, so the download prints the
computed sha256 with an "unpinned" warning; pin a commit hash as ``ref`` and add the
sha256 to :data:`PINS` for reproducible downloads). Licence: MIT (repository LICENSE).

Layout used (from the repository listing)::

    IKEA/data.en.<l>/data.raw/<split>_WMT_2017.<lang>[.gz]     one product description a line
    IKEA/data.en.<l>/image.index/<split>_WMT_2017_images.txt  image file name a line (aligned)

with ``<l>`` in de/fr and splits train/val/test. The en-de and en-fr collections are
separate; each pair is prepared as its own dataset. The descriptions are translations
of one product page (``parallel``), often not literal (see the upstream README).

Images: the product JPEGs are **not** in the repository (upstream: "raw image data can
be released upon request"); pass ``images_dir`` if you have them, otherwise the dataset
is text only. (The repository's ``*_ims.npy`` feature matrices are not used: their row
order relative to these index files is not documented.)

What was tested here: the parser / prepare step on a tiny hand-made folder in this
layout. The real archive and its content were **not** tested (no network).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import pandas as pd

from ...errors import InputError
from ._common import place_images, read_lines, staged_dir, write_prepared
from ..archive import safe_extract
from ..download import fetch, resolve_url

ARCHIVE_BASE = "https://github.com/sampalomad/IKEA-Dataset/archive/"
PINS: dict[str, str | None] = {"master.zip": None}
PAIRS = ("en-de", "en-fr")
SPLITS = ("train", "val", "test")
LICENSE = "MIT (github.com/sampalomad/IKEA-Dataset); product texts/images crawled from IKEA and UNDERAMOUR"


def download_ikea(
    dest: str | os.PathLike[str],
    mirror: str | None = None,
    ref: str = "master",
    sha256: str | None = None,
    **fetch_kw,
) -> Path:
    """Download + safely extract the repository archive; returns the extracted folder."""
    dest = Path(dest)
    rel = f"{ref}.zip"
    pin = sha256 if sha256 is not None else PINS.get(rel)
    arc = fetch(resolve_url(ARCHIVE_BASE, rel, mirror), dest / f"IKEA-Dataset-{rel}", pin, **fetch_kw)
    root = dest / f"IKEA-Dataset-{ref}"
    if not root.is_dir():
        safe_extract(arc, root)
    return root


def _pair_dir(repo_dir: Path, pair: str) -> Path:
    if pair not in PAIRS:
        raise InputError(f"IKEA language pair must be one of {PAIRS}; got {pair!r}")
    sub = f"data.{pair.replace('-', '.')}"
    hits = sorted(p for p in repo_dir.rglob(sub) if p.is_dir() and p.parent.name == "IKEA")
    if not hits:
        raise InputError(f"{repo_dir}: no IKEA/{sub}/ folder (expected the IKEA-Dataset repository)")
    return hits[0]


def _text_file(d: Path, stem: str) -> Path:
    for p in (d / stem, d / f"{stem}.gz"):
        if p.is_file():
            return p
    raise InputError(f"{d}: neither {stem} nor {stem}.gz found")


def prepare_ikea(
    repo_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    pair: str = "en-de",
    splits: Sequence[str] = ("test",),
    images_dir: str | os.PathLike[str] | None = None,
    *,
    mode: str = "auto",
    name: str | None = None,
) -> Path:
    """One language pair of the IKEA data in the prepared format.

    item_id ``<split>:<line:05d>``, image_id = file name from the image index, title = the
    description, body = "", split = train/val/test. Lines empty in either language are
    dropped (counted in ``dataset.json``).
    """
    repo_dir = Path(repo_dir)
    base = _pair_dir(repo_dir, pair)
    langs = pair.split("-")
    rows, image_ids, dropped = [], [], 0
    for split in splits:
        if split not in SPLITS:
            raise InputError(f"IKEA split must be one of {SPLITS}; got {split!r}")
        index = base / "image.index" / f"{split}_WMT_2017_images.txt"
        names = [ln.strip() for ln in read_lines(index)]
        texts = {}
        for lang in langs:
            path = _text_file(base / "data.raw", f"{split}_WMT_2017.{lang}")
            lines = [" ".join(ln.split()) for ln in read_lines(path)]
            if len(lines) != len(names):
                raise InputError(f"{path}: {len(lines)} lines, expected {len(names)} (one per line of {index.name})")
            texts[lang] = lines
        for i, img in enumerate(names):
            if not img or any(not texts[lang][i] for lang in langs):
                dropped += 1
                continue
            image_ids.append(img)
            rows += [(f"{split}:{i:05d}", lang, img, texts[lang][i], "", split) for lang in langs]
    items = pd.DataFrame(rows, columns=["item_id", "lang", "image_id", "title", "body", "split"])
    with staged_dir(out_dir) as root:
        table = None
        if images_dir is not None:
            table = place_images(image_ids, Path(images_dir), root, mode=mode, what="IKEA image folder",
                                 hint="The IKEA product JPEGs are not public; upstream releases them on request.")
        meta = {
            "name": name or f"ikea-{pair}",
            "synthetic": False,
            "parallel": True,
            "languages": langs,
            "description": f"IKEA/UNDERAMOUR product descriptions, {pair}, splits {list(splits)}",
            "license": LICENSE,
            "source": {"upstream": "https://github.com/sampalomad/IKEA-Dataset", "pair": pair,
                       "dropped_empty": dropped},
            "images": "image files (linked or copied into images/)" if table is not None else "none (text only)",
        }
        write_prepared(root, meta, items, table)
    return Path(out_dir)
