"""IKEA product descriptions (github.com/sampalomad/IKEA-Dataset): en-de and en-fr.

Upstream: the GitHub repository archive
``https://github.com/sampalomad/IKEA-Dataset/archive/<ref>.zip`` (default ``ref`` =
``master``; **unpinned** - no copy was available here, so the download prints the
computed sha256 with an "unpinned" warning; pin a commit hash as ``ref`` and add the
sha256 to :data:`PINS` for reproducible downloads). Licence: MIT (repository LICENSE).

Layout used (from the repository listing)::

    IKEA/data.en.<l>/data.raw/<split>_WMT_2017.<lang>[.gz]     one product description a line
    IKEA/data.en.<l>/image.index/<split>_WMT_2017_images.txt  image file name a line (aligned)
    IKEA/data.en.<l>/data.image.bpe/<split>.norm.tok.lc.10000bpe_ims.npy
                                        image features, row i = line i of the image index

with ``<l>`` in de/fr and splits train/val/test. The en-de and en-fr collections are
separate (one product image may appear in both); :func:`prepare_ikea` prepares one pair or
both into one dataset. The descriptions are translations of one product page
(``parallel``), often not literal (see the upstream README).

Images: the product JPEGs are **not** in the repository (upstream: "raw image data can
be released upon request"); pass ``images_dir`` if you have them. The repository ships one
2048-d feature vector per image for the val and test splits (the README calls them the
"image matrix"; the train split's ``.npy`` is not in the repository); they become the
precomputed features ``features/<features_name>.npy`` (a ``type: precomputed`` backbone),
refused if a matrix's row count differs from its image index. Counts in the repository:
:data:`UPSTREAM_INDEX_LINES` (all image names distinct within a pair).

What was tested here: the parser / prepare step on tiny hand-made folders in this layout
(texts, gz texts, index, ``.npy``). The real archive and its content were **not** tested
(no network).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..._util.io import atomic_path, write_text
from ...errors import InputError
from ..archive import safe_extract
from ..download import fetch, resolve_url
from ..prepared import check_features_finite
from ._common import place_images, read_lines, staged_dir, write_prepared

ARCHIVE_BASE = "https://github.com/sampalomad/IKEA-Dataset/archive/"
PINS: dict[str, str | None] = {"master.zip": None}
PAIRS = ("en-de", "en-fr")
SPLITS = ("train", "val", "test")
#: Lines of ``image.index/<split>_WMT_2017_images.txt`` in the repository (= items per split
#: before empty lines are dropped; = rows of the split's feature matrix). No train features.
UPSTREAM_INDEX_LINES = {"en-de": {"val": 363, "test": 367}, "en-fr": {"val": 335, "test": 338}}
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


#: Where the repository keeps the per-split image features (newest layout first).
FEATURE_DIRS = ("data.image.bpe", "data.norm.tok.lc.bpe")


def feature_file(base: Path, split: str) -> Path:
    """The upstream feature matrix of one split of one pair (``base`` = ``IKEA/data.en.<l>``)."""
    name = f"{split}.norm.tok.lc.10000bpe_ims.npy"
    for sub in FEATURE_DIRS:
        if (base / sub / name).is_file():
            return base / sub / name
    raise InputError(
        f"{base / FEATURE_DIRS[0] / name}: image features of split {split!r} not found (upstream ships "
        "them for val and test only); drop the split or set dataset.options.features: false"
    )


def read_split_features(base: Path, split: str) -> tuple[list[str], np.ndarray]:
    """(image names, features) of one split: row i of the ``.npy`` = line i of the image index.

    A row count different from the index's line count, a matrix that is not 2-D, or a NaN/inf
    row → InputError naming both files.
    """
    index = base / "image.index" / f"{split}_WMT_2017_images.txt"
    names = [ln.strip() for ln in read_lines(index)]
    npy = feature_file(base, split)
    try:
        feats = np.load(npy, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{npy}: cannot be read as a .npy matrix ({exc})") from exc
    if feats.ndim != 2 or feats.shape[0] != len(names):
        raise InputError(
            f"{npy}: shape {feats.shape}, but {index} has {len(names)} lines; expected one feature row "
            "per line of the image index"
        )
    check_features_finite(npy, feats, names)
    return names, feats


def prepare_ikea(
    repo_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    pair: str | Sequence[str] = "en-de",
    splits: Sequence[str] = ("test",),
    images_dir: str | os.PathLike[str] | None = None,
    *,
    features: bool = False,
    features_name: str = "ikea-upstream",
    mode: str = "auto",
    name: str | None = None,
) -> Path:
    """One or both language pairs of the IKEA data in the prepared format.

    ``pair``: ``"en-de"``, ``"en-fr"`` or a list of both. item_id ``<split>:<line:05d>``
    (one pair) or ``<pair>:<split>:<line:05d>`` (several pairs), image_id = file name from
    the image index (``<pair>/<file name>`` with several pairs: each pair has its own
    feature rows), title = the description, body = "", split = train/val/test. Lines empty
    in either language are dropped (counted in ``dataset.json``). ``features=True`` writes
    the upstream image features of the requested splits as ``features/<features_name>.npy``.
    """
    repo_dir = Path(repo_dir)
    pairs = [pair] if isinstance(pair, str) else list(pair)
    if not pairs or len(set(pairs)) != len(pairs):
        raise InputError(f"IKEA pairs must be distinct and at least one of {PAIRS}; got {pairs}")
    many = len(pairs) > 1
    rows, image_ids, dropped = [], [], {}
    feat_ids: list[str] = []
    feat_parts: list[np.ndarray] = []
    feat_src: dict[str, str] = {}
    for pr in pairs:
        base = _pair_dir(repo_dir, pr)
        langs = pr.split("-")
        dropped[pr] = 0
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
                    raise InputError(
                        f"{path}: {len(lines)} lines, expected {len(names)} (one per line of {index.name})"
                    )
                texts[lang] = lines
            if features:
                fnames, feats = read_split_features(base, split)
                feat_ids += [f"{pr}/{n}" if many else n for n in fnames]
                feat_parts.append(np.asarray(feats))
                feat_src[f"{pr}/{split}"] = str(feature_file(base, split).relative_to(repo_dir))
            prefix = f"{pr}:" if many else ""
            for i, img in enumerate(names):
                if not img or any(not texts[lang][i] for lang in langs):
                    dropped[pr] += 1
                    continue
                iid = f"{pr}/{img}" if many else img
                image_ids.append(iid)
                rows += [(f"{prefix}{split}:{i:05d}", lang, iid, texts[lang][i], "", split) for lang in langs]
    items = pd.DataFrame(rows, columns=["item_id", "lang", "image_id", "title", "body", "split"])
    all_langs = list(dict.fromkeys(lang for pr in pairs for lang in pr.split("-")))
    with staged_dir(out_dir) as root:
        table = None
        meta_images = "none (text only)"
        if images_dir is not None:
            src_names = {iid: iid.split("/", 1)[1] for iid in image_ids} if many else None
            table = place_images(
                image_ids,
                Path(images_dir),
                root,
                mode=mode,
                src_names=src_names,
                what="IKEA image folder",
                hint="The IKEA product JPEGs are not public; upstream releases them on request.",
            )
            meta_images = "image files (linked or copied into images/)"
        meta_features = None
        if features:
            mat = _dedupe_features(feat_ids, feat_parts, repo_dir)
            (root / "features").mkdir()
            with atomic_path(root / "features" / f"{features_name}.npy", suffix=".npy") as tmp:
                np.save(tmp, mat[1], allow_pickle=False)
            write_text(root / "features" / f"{features_name}.ids.txt", "\n".join(mat[0]) + "\n")
            meta_features = {
                features_name: {"source_files": feat_src, "dtype": str(mat[1].dtype), "dim": int(mat[1].shape[1])}
            }
            meta_images = "precomputed features" if table is None else f"{meta_images} and precomputed features"
        meta = {
            "name": name or f"ikea-{'+'.join(pairs)}",
            "synthetic": False,
            "parallel": True,
            "languages": all_langs,
            "description": f"IKEA/UNDERAMOUR product descriptions, {' and '.join(pairs)}, splits {list(splits)}",
            "license": LICENSE,
            "source": {
                "upstream": "https://github.com/sampalomad/IKEA-Dataset",
                "pair": pairs[0] if not many else pairs,
                "dropped_empty": dropped[pairs[0]] if not many else dropped,
            },
            "images": meta_images,
        }
        if meta_features:
            meta["features"] = meta_features
        write_prepared(root, meta, items, table)
    return Path(out_dir)


def _dedupe_features(ids: list[str], parts: list[np.ndarray], repo_dir: Path) -> tuple[list[str], np.ndarray]:
    """One row per image id; an id listed twice (e.g. in val and test) must have equal rows."""
    mat = np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)
    first: dict[str, int] = {}
    keep: list[int] = []
    for i, iid in enumerate(ids):
        if iid in first:
            if not np.array_equal(mat[first[iid]], mat[i]):
                raise InputError(f"{repo_dir}: image {iid!r} is listed twice with different feature rows")
            continue
        first[iid] = i
        keep.append(i)
    return [ids[i] for i in keep], np.ascontiguousarray(mat[keep])
