"""What ``--dataset`` and ``--image-backbone`` name: a prepared folder or a named dataset (prepared
on first use and reused), and where its image features come from.

Named datasets (folder ``<prepared_dir>/<name>``, reused when it holds a ``dataset.json``):

* ``synthetic``: the SYNTHETIC default dataset, generated offline with the default pipeline's
  settings (``params.yaml``), so it is the folder ``make run`` prepares and shares its
  embedding cache;
* ``multi30k-test2016``: Multi30K task 1 test_2016_flickr (1,000 images, en/de/fr/cs) with the
  precomputed ResNet-50 features, as ``config/multi30k.yaml`` prepares it: texts from the local
  mirror ``<shared_dir>/multi30k`` when present, else downloaded from GitHub; the features file
  must be present (it cannot be downloaded automatically).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._util.hashing import json_sha256, sha256_file
from ..data.prepared import items_path, load_image_table, read_feature_ids, read_meta
from ..errors import InputError
from .defaults import DEFAULT_PREPARED_DIR, DEFAULT_SHARED_DIR

log = logging.getLogger("backretrieval")

#: the SYNTHETIC dataset as the default pipeline generates it (params.yaml: dataset.synthetic,
#: languages); a test keeps the two in step
SYNTHETIC_SETTINGS = {
    "n_items": 2400,
    "languages": ("en", "de", "fr", "es", "ru", "ar", "id"),
    "seed": 0,
    "image_size": 160,
}

MULTI30K_FEATURES = "multi30k-resnet50/test_2016_flickr-resnet50-avgpool.npy"

#: image backbones ``--image-backbone`` can name for datasets with image files
KNOWN_BACKBONES: dict[str, dict] = {
    "effnet-lite0": {"type": "efficientnet-lite", "variant": "lite0"},
    "effnet-lite2": {"type": "efficientnet-lite", "variant": "lite2"},
    "resnet50": {"type": "torchvision", "arch": "resnet50"},
    "resnext101": {"type": "torchvision", "arch": "resnext101_32x8d"},
}
DEFAULT_BACKBONE = "effnet-lite0"


@dataclass(frozen=True)
class NamedDataset:
    name: str
    languages: tuple[str, ...]
    parallel_items: int  # items with a text in every language
    prepare: Callable[[Path, Path, Path], None]  # (out_dir, downloads_dir, shared_dir)
    precheck: Callable[[Path], None] = field(default=lambda shared: None)  # before any download


def _prepare_synthetic(out: Path, downloads: Path, shared: Path) -> None:
    from ..data.synthetic import generate

    generate(out, **SYNTHETIC_SETTINGS)


def _multi30k_features(shared: Path) -> Path:
    npy = shared / MULTI30K_FEATURES
    if not npy.is_file():
        raise InputError(
            f"--dataset multi30k-test2016 needs the ResNet-50 features of test_2016_flickr at {npy} "
            "(github.com/koninik/multimodal_machine_translation @ 8409006; they are not downloaded "
            "automatically): put the file there, or prepare Multi30K yourself (docs/DATASETS.md) and pass "
            "the prepared folder to --dataset"
        )
    return npy


def _precheck_multi30k(shared: Path) -> None:
    _multi30k_features(shared)


def _prepare_multi30k(out: Path, downloads: Path, shared: Path) -> None:
    from ..data.sources import multi30k as m

    npy = _multi30k_features(shared)
    mirror = shared / "multi30k"
    langs = ["en", "de", "fr", "cs"]
    m.download_multi30k(
        downloads / "multi30k", str(mirror) if mirror.is_dir() else None, splits=["test_2016_flickr"], langs=langs
    )
    m.prepare_task1(
        downloads / "multi30k",
        out,
        splits=["test_2016_flickr"],
        langs=langs,
        image_source={"type": "precomputed", "name": "resnet50", "npy": str(npy), "ids_from_split": "test_2016_flickr"},
        name="multi30k-test2016",
    )


NAMED_DATASETS: dict[str, NamedDataset] = {
    "synthetic": NamedDataset(
        "synthetic", SYNTHETIC_SETTINGS["languages"], SYNTHETIC_SETTINGS["n_items"], _prepare_synthetic
    ),
    "multi30k-test2016": NamedDataset(
        "multi30k-test2016", ("en", "de", "fr", "cs"), 1000, _prepare_multi30k, _precheck_multi30k
    ),
}


@dataclass(frozen=True)
class DatasetRef:
    """A dataset ``--dataset`` resolved to its folder (``named``: the named dataset, if one)."""

    root: Path
    named: NamedDataset | None = None

    @property
    def ready(self) -> bool:
        return (self.root / "dataset.json").is_file()


def locate_dataset(data: str | Path, prepared_dir: Path = DEFAULT_PREPARED_DIR) -> DatasetRef:
    """The folder of ``data`` (a prepared folder, or a named dataset's folder, prepared or not)."""
    p = Path(data).expanduser()
    if p.is_dir():
        read_meta(p)  # InputError naming dataset.json if it is not a prepared folder
        return DatasetRef(p)
    if str(data) in NAMED_DATASETS:
        return DatasetRef(Path(prepared_dir) / str(data), NAMED_DATASETS[str(data)])
    if p.exists():
        raise InputError(
            f"--dataset {str(data)!r}: not a folder (expected a prepared dataset folder or a named "
            f"dataset: {', '.join(sorted(NAMED_DATASETS))})"
        )
    raise InputError(
        f"--dataset {str(data)!r}: no such folder and not a named dataset (named: "
        f"{', '.join(sorted(NAMED_DATASETS))}); pass a prepared dataset folder (docs/DATASETS.md)"
    )


def precheck_named(ref: DatasetRef, directions: Sequence[str], n: int, shared_dir: Path = DEFAULT_SHARED_DIR) -> None:
    """For a named dataset not prepared yet: refuse directions and N it cannot serve, and
    missing local inputs, before anything is generated or downloaded."""
    nd = ref.named
    if nd is None or ref.ready:
        return
    for d in directions:
        for lang in d.split("-"):
            if lang not in nd.languages:
                raise InputError(
                    f"--directions {d}: the named dataset {nd.name} has no {lang!r} texts "
                    f"(languages: {', '.join(nd.languages)})"
                )
    if 2 * n > nd.parallel_items:
        raise InputError(
            f"--sample-size {n} is too large for {nd.name}: it has {nd.parallel_items} items per language "
            f"and N={n} needs {2 * n} (N queries + N disjoint targets); pass --sample-size "
            f"{nd.parallel_items // 2} or less"
        )
    nd.precheck(Path(shared_dir))


def prepare_named(ref: DatasetRef, shared_dir: Path = DEFAULT_SHARED_DIR) -> Path:
    """Prepare a named dataset unless its folder is ready; returns the folder."""
    if ref.named is not None and not ref.ready:
        # a first use prepares the dataset (the SYNTHETIC one is generated: about a minute): said
        # before and after, so a long silence is never a hang
        log.info("dataset %r: preparing %s (first use; reused afterwards) ...", ref.named.name, ref.root)
        t0 = time.perf_counter()
        # <prepared_dir>/../downloads: data/downloads beside data/prepared, as the pipeline uses
        ref.named.prepare(ref.root, ref.root.parent.parent / "downloads", Path(shared_dir))
        log.info("dataset %r: prepared in %.0f s", ref.named.name, time.perf_counter() - t0)
    return ref.root


def dataset_content_sha256(root: Path) -> str:
    """sha256 over the prepared folder's metadata and tables: ``dataset.json``, the items table,
    ``images.csv`` and every ``features/*`` file (image files are named by images.csv, their
    bytes are not hashed)."""
    root = Path(root)
    files = [root / "dataset.json", items_path(root)]
    if (root / "images.csv").is_file():
        files.append(root / "images.csv")
    if (root / "features").is_dir():
        files += sorted(p for p in (root / "features").iterdir() if p.is_file())
    return json_sha256({p.relative_to(root).as_posix(): sha256_file(p) for p in files})


# -------------------------------------------------------------------------------------------
# images


@dataclass(frozen=True)
class ImageSource:
    """The image side: a backbone over ``images.csv`` files, or ``features/<name>.npy``."""

    backbone_id: str
    spec: dict
    precomputed: bool


def feature_names(root: Path) -> list[str]:
    base = Path(root) / "features"
    return sorted(p.name[: -len(".ids.txt")] for p in base.glob("*.ids.txt")) if base.is_dir() else []


def resolve_image_source(root: Path, image_backbone: str | None = None) -> ImageSource:
    """``image_backbone`` (or the default) for the dataset at ``root``: a precomputed feature
    set of the dataset, or a known backbone when the dataset has image files."""
    root = Path(root)
    feats = feature_names(root)
    has_files = (root / "images.csv").is_file()
    if image_backbone is None:
        if has_files:
            image_backbone = DEFAULT_BACKBONE
        elif len(feats) == 1:
            image_backbone = feats[0]
        elif feats:
            raise InputError(
                f"{root}: several precomputed image features ({', '.join(feats)}); choose one with --image-backbone"
            )
        else:
            raise InputError(
                f"{root}: no images (no images.csv) and no precomputed image features "
                "(features/<name>.npy + .ids.txt): Backretrieval pivots through images; add "
                "one of them (docs/DATASETS.md)"
            )
    if image_backbone in feats:
        return ImageSource(image_backbone, {"type": "precomputed", "name": image_backbone}, True)
    if image_backbone in KNOWN_BACKBONES:
        if not has_files:
            have = f"; its precomputed features: {', '.join(feats)}" if feats else ""
            raise InputError(
                f"--image-backbone {image_backbone}: {root} has no image files (no images.csv) to embed{have}"
            )
        return ImageSource(image_backbone, dict(KNOWN_BACKBONES[image_backbone]), False)
    raise InputError(
        f"--image-backbone {image_backbone!r}: neither a precomputed feature set of {root} "
        f"({', '.join(feats) or 'none'}) nor a known backbone ({', '.join(KNOWN_BACKBONES)})"
    )


def available_image_ids(root: Path, source: ImageSource) -> tuple[set[str], Path]:
    """Image ids the source has features (or files) for, and the file that lists them."""
    if source.precomputed:
        ids_txt = Path(root) / "features" / f"{source.spec['name']}.ids.txt"
        return set(read_feature_ids(ids_txt)), ids_txt
    return set(load_image_table(root)["image_id"]), Path(root) / "images.csv"
