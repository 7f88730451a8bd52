"""IKEA product descriptions (github.com/sampalomad/IKEA-Dataset): en-de and en-fr.

Upstream layout (repository ``sampalomad/IKEA-Dataset``, branch ``master``), per pair
``<l>`` in de/fr and split in train/val/test::

    IKEA/data.en.<l>/data.raw/<split>_WMT_2017.<lang>.gz      one product description a line
    IKEA/data.en.<l>/image.index/<split>_WMT_2017_images.txt  image file name a line (aligned)
    IKEA/data.en.<l>/data.image.bpe/<split>.norm.tok.lc.10000bpe_ims.npy
                                       image features, row i = line i of the image index
    IKEA/image/image.en.<l>/<split>.<part>.zip                the product images (parts 1, 2)

(an older layout kept the features in ``data.norm.tok.lc.bpe/``, and plain ``.<lang>``
texts beside the ``.gz``; both are read.) The en-de and en-fr collections are separate
(one product image may appear in both); :func:`prepare_ikea` prepares one pair or both into
one dataset. The descriptions are translations of one product page (``parallel``), often not
literal (see the upstream README).

Download (:func:`download_ikea_files`, the default): only the files the configuration needs,
one by one from ``raw.githubusercontent.com`` (a file GitHub keeps in Git LFS arrives as a
pointer; it is then fetched from ``media.githubusercontent.com``). A ``mirror`` replaces the
base URL and keeps these relative paths, so a clone of the repository is a mirror.
:func:`download_ikea` (``download: archive``) takes the whole repository archive instead.
**Unpinned**: no copy of the files was available where this was written, so no sha256 is
known; every download prints its computed sha256 (:class:`UnpinnedDownloadWarning`), and
:func:`prepare_ikea` records the sha256 of every file it read in ``dataset.json``
(``source.files``). Pin files by adding their hashes to :data:`PINS` (a commit hash as
``ref`` makes the pins meaningful).

Images: ``features=True`` turns the repository's one 2048-d vector per image (its "image
matrix", shipped for train, val and test) into the precomputed features
``features/<features_name>.npy`` (a ``type: precomputed`` backbone); a matrix whose row count
differs from its image index is refused. ``image_zips=True`` extracts the product images from
the split's zips (safely, :func:`~backretrieval.data.archive.safe_extract`) into ``images/``
with an ``images.csv``, so an image backbone (ResNet, EfficientNet) runs on the raw JPEGs.
An image is found in the zips by its file name, wherever the zip keeps it.

Counts: :data:`UPSTREAM_INDEX_LINES` (items per split before empty lines are dropped).

What was tested here: the download, parser and prepare steps on tiny hand-made files in
this layout (texts, gz texts, index, ``.npy`` of every split, image zips). The real files
were **not** tested (no network).
"""

from __future__ import annotations

import filecmp
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..._util.hashing import sha256_file
from ..._util.io import atomic_path, write_text
from ...errors import InputError
from ..archive import safe_extract
from ..download import fetch, resolve_url
from ..prepared import check_features_finite
from ._common import place_images, read_lines, staged_dir, write_prepared

UPSTREAM = "https://github.com/sampalomad/IKEA-Dataset"
ARCHIVE_BASE = f"{UPSTREAM}/archive/"
#: per-file downloads: ``{ref}`` = branch or commit
RAW_BASE = "https://raw.githubusercontent.com/sampalomad/IKEA-Dataset/{ref}/"
#: where GitHub serves a file kept in Git LFS (raw.githubusercontent.com gives its pointer)
LFS_BASE = "https://media.githubusercontent.com/media/sampalomad/IKEA-Dataset/{ref}/"
#: sha256 pins by path relative to the repository root (or ``<ref>.zip`` for the archive);
#: none known yet, so every download is unpinned (its computed hash is printed)
PINS: dict[str, str | None] = {"master.zip": None}
PAIRS = ("en-de", "en-fr")
SPLITS = ("train", "val", "test")
#: the image zips of one split of one pair: ``<split>.<part>.zip``
IMAGE_PARTS = (1, 2)
#: Lines of ``image.index/<split>_WMT_2017_images.txt`` (= items per split before empty lines
#: are dropped; = rows of the split's feature matrix). val/test: counted in the repository's
#: index files. train: the repository's ``data_stats.csv`` gives tokens and mean length per
#: language of all samples (en-de 256355 / 71.408 = 3,590; en-fr 239966 / 72.257 = 3,321),
#: minus val + test. ``prepare`` and ``check_dataset`` count again after download.
UPSTREAM_INDEX_LINES = {
    "en-de": {"train": 2860, "val": 363, "test": 367},
    "en-fr": {"train": 2648, "val": 335, "test": 338},
}
LICENSE = "MIT (github.com/sampalomad/IKEA-Dataset); product texts/images crawled from IKEA and UNDERAMOUR"
_LFS_MAGIC = b"version https://git-lfs.github.com/spec/"
#: Where the repository keeps the per-split image features (newest layout first).
FEATURE_DIRS = ("data.image.bpe", "data.norm.tok.lc.bpe")


def _check_pair(pair: str) -> str:
    if pair not in PAIRS:
        raise InputError(f"IKEA language pair must be one of {PAIRS}; got {pair!r}")
    return pair.replace("-", ".")


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise InputError(f"IKEA split must be one of {SPLITS}; got {split!r}")
    return split


def pair_rel(pair: str) -> str:
    """``IKEA/data.en.<l>``: the texts, index and features of one pair."""
    return f"IKEA/data.{_check_pair(pair)}"


def image_zip_rels(pair: str, split: str) -> list[str]:
    """``IKEA/image/image.en.<l>/<split>.<part>.zip`` for every part."""
    return [f"IKEA/image/image.{_check_pair(pair)}/{_check_split(split)}.{p}.zip" for p in IMAGE_PARTS]


def upstream_files(
    pairs: Sequence[str], splits: Sequence[str], *, features: bool = True, image_zips: bool = False
) -> list[str]:
    """The repository files (relative paths) that :func:`prepare_ikea` reads for these settings."""
    rels: list[str] = []
    for pair in pairs:
        base = pair_rel(pair)
        for split in splits:
            _check_split(split)
            rels.append(f"{base}/image.index/{split}_WMT_2017_images.txt")
            rels += [f"{base}/data.raw/{split}_WMT_2017.{lang}.gz" for lang in pair.split("-")]
            if features:
                rels.append(f"{base}/{FEATURE_DIRS[0]}/{split}.norm.tok.lc.10000bpe_ims.npy")
            if image_zips:
                rels += image_zip_rels(pair, split)
    return rels


def is_lfs_pointer(path: Path) -> bool:
    """Whether ``path`` is a Git LFS pointer file (what GitHub's raw URL serves for LFS files)."""
    if path.stat().st_size > 1024:
        return False
    with open(path, "rb") as fh:
        return fh.read(len(_LFS_MAGIC)) == _LFS_MAGIC


def download_ikea_files(
    dest: str | os.PathLike[str],
    pairs: Sequence[str],
    splits: Sequence[str],
    *,
    features: bool = True,
    image_zips: bool = False,
    mirror: str | None = None,
    ref: str = "master",
    **fetch_kw,
) -> Path:
    """Download the files :func:`upstream_files` lists into ``dest/IKEA-Dataset-<ref>/`` (the
    repository's layout); returns that folder. A file already there is kept (verified when
    pinned). A Git LFS pointer from GitHub is replaced by the LFS object; from a mirror it is
    an error (the mirror lacks ``git lfs pull``)."""
    root = Path(dest) / f"IKEA-Dataset-{ref}"
    for rel in upstream_files(pairs, splits, features=features, image_zips=image_zips):
        target = root / rel
        pin = PINS.get(rel)
        fetch(resolve_url(RAW_BASE.format(ref=ref), rel, mirror), target, pin, **fetch_kw)
        if not is_lfs_pointer(target):
            continue
        if mirror is not None:
            raise InputError(
                f"{target}: the mirror {mirror} holds a Git LFS pointer, not the file {rel}; "
                "run `git lfs pull` in the mirror (or set no mirror)"
            )
        target.unlink()
        fetch(LFS_BASE.format(ref=ref) + rel, target, pin, **fetch_kw)
        if is_lfs_pointer(target):
            target.unlink()
            raise InputError(f"{LFS_BASE.format(ref=ref) + rel}: still a Git LFS pointer; the file is not available")
    return root


def download_ikea(
    dest: str | os.PathLike[str],
    mirror: str | None = None,
    ref: str = "master",
    sha256: str | None = None,
    **fetch_kw,
) -> Path:
    """Download + safely extract the whole repository archive (``download: archive``); returns
    the extracted folder. :func:`download_ikea_files` fetches only the files needed."""
    dest = Path(dest)
    rel = f"{ref}.zip"
    pin = sha256 if sha256 is not None else PINS.get(rel)
    arc = fetch(resolve_url(ARCHIVE_BASE, rel, mirror), dest / f"IKEA-Dataset-{rel}", pin, **fetch_kw)
    root = dest / f"IKEA-Dataset-{ref}"
    if not root.is_dir():
        safe_extract(arc, root)
    return root


def _pair_dir(repo_dir: Path, pair: str) -> Path:
    sub = pair_rel(pair).split("/", 1)[1]
    if (repo_dir / "IKEA" / sub).is_dir():
        return repo_dir / "IKEA" / sub
    hits = sorted(p for p in repo_dir.rglob(sub) if p.is_dir() and p.parent.name == "IKEA")
    if not hits:
        raise InputError(f"{repo_dir}: no IKEA/{sub}/ folder (expected the IKEA-Dataset repository)")
    return hits[0]


def _text_file(d: Path, stem: str) -> Path:
    for p in (d / stem, d / f"{stem}.gz"):
        if p.is_file():
            return p
    raise InputError(f"{d}: neither {stem} nor {stem}.gz found")


def feature_file(base: Path, split: str) -> Path:
    """The upstream feature matrix of one split of one pair (``base`` = ``IKEA/data.en.<l>``)."""
    name = f"{split}.norm.tok.lc.10000bpe_ims.npy"
    for sub in FEATURE_DIRS:
        if (base / sub / name).is_file():
            return base / sub / name
    raise InputError(
        f"{base / FEATURE_DIRS[0] / name}: image features of split {split!r} not found; download it "
        "(upstream ships train, val and test), drop the split, or set dataset.options.features: false"
    )


def read_split_features(base: Path, split: str) -> tuple[list[str], np.ndarray]:
    """(image names, features) of one split: row i of the ``.npy`` = line i of the image index.

    A row count different from the index's line count, a matrix that is not 2-D, a Git LFS
    pointer, or a NaN/inf row → InputError naming both files.
    """
    index = base / "image.index" / f"{split}_WMT_2017_images.txt"
    names = [ln.strip() for ln in read_lines(index)]
    npy = feature_file(base, split)
    if is_lfs_pointer(npy):
        raise InputError(f"{npy}: a Git LFS pointer, not the feature matrix; fetch the LFS object (`git lfs pull`)")
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


def _image_zips(base: Path, pair: str, split: str) -> list[Path]:
    """The image zips of one split (every ``<split>.*.zip`` present; at least one); ``base`` =
    ``IKEA/data.en.<l>``, whose sibling ``IKEA/image/`` holds them."""
    d = base.parent / "image" / f"image.{_check_pair(pair)}"
    found = sorted(d.glob(f"{split}.*.zip"))
    if not found:
        raise InputError(
            f"{d}: no image zip {split}.<part>.zip for split {split!r} of {pair} (expected "
            f"{[r.rsplit('/', 1)[1] for r in image_zip_rels(pair, split)]}); download them or set "
            "dataset.options.image_zips: false"
        )
    return found


def _images_from_zips(zips: list[Path], scratch: Path) -> dict[str, Path]:
    """Extract every zip (safely) below ``scratch``; file name → extracted file. The same
    name in two places must be the same bytes; macOS metadata (``__MACOSX/``, ``._*``) is skipped."""
    found: dict[str, Path] = {}
    origin: dict[str, str] = {}
    for i, z in enumerate(zips):
        out = safe_extract(z, scratch / f"{i:02d}")
        for p in sorted(out.rglob("*")):
            if not p.is_file() or "__MACOSX" in p.parts or p.name.startswith("."):
                continue
            where = f"{z.name}:{p.relative_to(out).as_posix()}"
            if p.name in found:
                if not filecmp.cmp(found[p.name], p, shallow=False):
                    raise InputError(f"{z}: image {p.name!r} is in {origin[p.name]} and {where} with different bytes")
                continue
            found[p.name] = p
            origin[p.name] = where
    return found


def _source_files(repo_dir: Path, used: list[Path]) -> dict[str, str]:
    """sha256 of every upstream file read, by path relative to the repository folder."""
    out = {}
    for p in sorted(set(used)):
        try:
            rel = p.relative_to(repo_dir).as_posix()
        except ValueError:
            rel = str(p)
        out[rel] = sha256_file(p)
    return out


def prepare_ikea(
    repo_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    pair: str | Sequence[str] = "en-de",
    splits: Sequence[str] = ("test",),
    images_dir: str | os.PathLike[str] | None = None,
    *,
    features: bool = False,
    features_name: str = "ikea-upstream",
    image_zips: bool = False,
    mode: str = "auto",
    name: str | None = None,
) -> Path:
    """One or both language pairs of the IKEA data in the prepared format.

    ``pair``: ``"en-de"``, ``"en-fr"`` or a list of both. item_id ``<split>:<line:05d>``
    (one pair) or ``<pair>:<split>:<line:05d>`` (several pairs), image_id = file name from
    the image index (``<pair>/<file name>`` with several pairs: each pair has its own
    feature rows and image zips), title = the description, body = "", split =
    train/val/test. Lines empty in either language are dropped (counted in ``dataset.json``).
    ``features=True`` writes the upstream image features of the requested splits as
    ``features/<features_name>.npy``; ``image_zips=True`` places the product images from the
    splits' zips in ``images/`` (``images_dir``: a folder of the JPEGs instead; not both).
    """
    repo_dir = Path(repo_dir)
    pairs = [pair] if isinstance(pair, str) else list(pair)
    if not pairs or len(set(pairs)) != len(pairs):
        raise InputError(f"IKEA pairs must be distinct and at least one of {PAIRS}; got {pairs}")
    if image_zips and images_dir is not None:
        raise InputError("IKEA images: give image_zips or images_dir, not both")
    splits = [_check_split(s) for s in splits]
    if not splits or len(set(splits)) != len(splits):
        raise InputError(f"IKEA splits must be distinct and at least one of {SPLITS}; got {splits}")
    many = len(pairs) > 1
    rows, image_ids, dropped = [], [], {}
    feat_ids: list[str] = []
    feat_parts: list[np.ndarray] = []
    feat_src: dict[str, str] = {}
    used: list[Path] = []
    zips: dict[str, list[Path]] = {}
    for pr in pairs:
        base = _pair_dir(repo_dir, pr)
        langs = pr.split("-")
        dropped[pr] = 0
        if image_zips:  # refuse a missing zip before any work
            zips[pr] = [z for split in splits for z in _image_zips(base, pr, split)]
            used += zips[pr]
        for split in splits:
            index = base / "image.index" / f"{split}_WMT_2017_images.txt"
            names = [ln.strip() for ln in read_lines(index)]
            used.append(index)
            texts = {}
            for lang in langs:
                path = _text_file(base / "data.raw", f"{split}_WMT_2017.{lang}")
                lines = [" ".join(ln.split()) for ln in read_lines(path)]
                if len(lines) != len(names):
                    raise InputError(
                        f"{path}: {len(lines)} lines, expected {len(names)} (one per line of {index.name})"
                    )
                texts[lang] = lines
                used.append(path)
            if features:
                fnames, feats = read_split_features(base, split)
                feat_ids += [f"{pr}/{n}" if many else n for n in fnames]
                feat_parts.append(np.asarray(feats))
                feat_src[f"{pr}/{split}"] = str(feature_file(base, split).relative_to(repo_dir))
                used.append(feature_file(base, split))
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
                hint="The IKEA product images are in the repository's IKEA/image/ zips (dataset.options.image_zips).",
            )
            meta_images = "image files (linked or copied into images/)"
        if image_zips:
            table = _place_zip_images(image_ids, zips, root, many=many)
            meta_images = "image files (from the repository's image zips, in images/)"
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
                "upstream": UPSTREAM,
                "pair": pairs[0] if not many else pairs,
                "dropped_empty": dropped[pairs[0]] if not many else dropped,
                "files": _source_files(repo_dir, used),
            },
            "images": meta_images,
        }
        if meta_features:
            meta["features"] = meta_features
        write_prepared(root, meta, items, table)
    return Path(out_dir)


def _place_zip_images(image_ids: list[str], zips: dict[str, list[Path]], root: Path, *, many: bool) -> pd.DataFrame:
    """Extract each pair's zips into a scratch folder of the staged ``root``, move the images
    the items use to ``images/<image_id>``, drop the rest; the ``images.csv`` table."""
    scratch = root / ".image-zips"
    rows = []
    try:
        wanted: dict[str, list[str]] = {}
        for iid in dict.fromkeys(image_ids):
            pr = iid.split("/", 1)[0] if many else next(iter(zips))
            wanted.setdefault(pr, []).append(iid)
        for k, (pr, pair_zips) in enumerate(zips.items()):
            found = _images_from_zips(pair_zips, scratch / f"{k}")
            missing = []
            for iid in wanted.get(pr, []):
                fname = iid.split("/", 1)[1] if many else iid
                src = found.get(fname)
                if src is None:
                    missing.append(fname)
                    continue
                rel = f"images/{iid}"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, root / rel)
                rows.append((iid, rel))
            if missing:
                raise InputError(
                    f"{pair_zips[0].parent}: {len(missing)} of {len(wanted[pr])} images of {pr} are in none of "
                    f"{[z.name for z in pair_zips]} (first: {missing[:5]})"
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return pd.DataFrame(rows, columns=["image_id", "path"])


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
