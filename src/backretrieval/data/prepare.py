"""The configured dataset → a prepared folder: the SYNTHETIC generator, a user-prepared folder
(validated, then copied), or a real dataset (download or mirror + prepare).

Real datasets (:func:`prepare_from_config`): ``dataset.source`` + ``dataset.options``.
Options per source (all paths relative to the repository root):

* ``multi30k_task1``: ``splits`` (default [test_2016_flickr]), ``mirror`` (local folder or
  URL replacing the upstream base; null = GitHub), ``download_dir`` (default
  data/downloads/multi30k), ``image_source`` (see multi30k.prepare_task1: precomputed
  features, a folder of Flickr30k images, or none).
* ``multi30k_task2``: ``split`` (default test_2016), ``mirror``, ``download_dir``, ``image_source``,
  ``text_only_training`` (the split's texts only, for training word vectors).
* ``flickr8k_multi30k``: ``images_dir`` and ``mapping_csv`` (the Flickr8k JPEGs that are
  Multi30K images), ``mirror``, ``download_dir``.
* ``stair``: ``mirror`` (or ``stair_mirror`` and ``coco_mirror`` apart), ``download_dir``,
  ``images_dir`` (COCO val2014 folder), ``max_images``.
* ``ikea``: ``mirror``, ``download_dir``, ``download`` (``files``, the default: only the files
  needed, one by one; ``archive``: the whole repository archive), ``pairs`` (list of en-de /
  en-fr; or ``pair``: one of them; default en-de), ``splits`` (default [test]), ``features``
  (default true: the repository's image features of those splits as
  ``features/<features_name>.npy``), ``features_name`` (default ikea-upstream),
  ``image_zips`` (default false; true: the product images from the repository's zips, for an
  image backbone), ``images_dir`` (a folder of the product JPEGs instead).
* ``prepared``: ``path`` (the folder the user prepared). ``synthetic`` takes no options (its
  settings are ``dataset.synthetic``).

:data:`SOURCE_OPTIONS` lists them; a config with any other option is refused
(``backretrieval.config``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._util.io import naming_written_path
from ..errors import ConfigError

MULTI30K_SPLITS_FOR_FLICKR8K = ("train", "val", "test_2016_flickr")

#: ``options.download_dir`` when not set, per source: where downloads are kept between runs.
DOWNLOAD_DIRS = {
    "multi30k_task1": "data/downloads/multi30k",
    "multi30k_task2": "data/downloads/multi30k",
    "flickr8k_multi30k": "data/downloads/multi30k",
    "stair": "data/downloads/stair",
    "ikea": "data/downloads/ikea",
}


#: the ``options`` each source reads (a dataset's or a corpus's): the config refuses any other
#: key, so a misspelt option is an error instead of a default silently used
SOURCE_OPTIONS: dict[str, tuple[str, ...]] = {
    "synthetic": (),
    "prepared": ("path",),
    "multi30k_task1": ("mirror", "download_dir", "splits", "image_source"),
    "multi30k_task2": ("mirror", "download_dir", "split", "image_source", "text_only_training"),
    "flickr8k_multi30k": ("mirror", "download_dir", "images_dir", "mapping_csv"),
    "stair": ("mirror", "download_dir", "stair_mirror", "coco_mirror", "images_dir", "max_images"),
    "ikea": (
        "mirror",
        "download_dir",
        "download",
        "pairs",
        "pair",
        "splits",
        "features",
        "features_name",
        "image_zips",
        "images_dir",
    ),
}


def prepare_dataset(cfg: dict, out_dir: Path, *, check: Callable[[dict, Path], None] | None = None) -> None:
    """Prepare ``cfg['dataset']`` into ``out_dir``. ``check(cfg, folder)``: run on a ``prepared``
    folder before it is copied (a refused config then leaves nothing)."""
    ds = cfg["dataset"]
    source = ds["source"]
    opts = dict(ds.get("options") or {})
    if source == "synthetic":
        from .synthetic import generate

        syn = ds.get("synthetic") or {}
        with naming_written_path(out_dir):
            generate(
                out_dir,
                n_items=int(syn.get("n_items", 2400)),
                languages=cfg["languages"],
                seed=int(syn.get("seed", 0)),
                image_size=int(syn.get("image_size", 160)),
            )
        return
    if source == "prepared":
        # a folder the user prepared in the documented format: validated, then copied (not
        # linked), so the prepared dataset is a real output whose content the workflow tracks,
        # and a later edit of the user's folder cannot change it under finished artifacts
        from .byo import refuse_invalid
        from .prepared import check_features_folder, load_items, read_meta

        src = Path(opts.get("path", ""))
        read_meta(src)
        load_items(src)
        check_features_folder(src)
        refuse_invalid(src)  # every error `validate-dataset` reports stops the pipeline too
        if check is not None:  # before the copy exists: a refused config leaves nothing
            check(cfg, src)
        copy_prepared(src, out_dir)
        return
    prepare_from_config(source, opts, cfg, out_dir)


def copy_prepared(src: Path, out_dir: Path) -> None:
    """Copy the files the dataset at ``src`` references (:func:`~.prepared.dataset_files`:
    dataset.json, the items table, images.csv and its images, the feature files) to
    ``out_dir``, as bytes (a link inside the root is copied as the file it names). Nothing
    else in the folder is copied, and a referenced path that resolves outside the root, or a
    symlink loop, is refused before anything is written. Written through a temporary sibling
    renamed at the end, so a failure leaves no output."""
    import shutil
    import tempfile

    from .prepared import dataset_files

    out_dir = Path(out_dir)
    if out_dir.is_symlink() or out_dir.exists():
        raise ConfigError(f"{out_dir} exists; remove it first (prepare writes a fresh copy of {src})")
    files = dataset_files(src)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        with naming_written_path(out_dir):
            for rel, path in files:
                dest = tmp / "copy" / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest)
        (tmp / "copy").rename(out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prepare_from_config(source: str, opts: dict[str, Any], cfg: dict, out_dir: Path) -> Path:
    langs = list(cfg["languages"])
    mirror = opts.get("mirror")
    if source in ("multi30k_task1", "multi30k_task2", "flickr8k_multi30k"):
        from .sources import multi30k as m

        dl = Path(opts.get("download_dir", DOWNLOAD_DIRS[source]))
        if source == "multi30k_task1":
            splits = list(opts.get("splits", ["test_2016_flickr"]))
            m.download_multi30k(dl, mirror, splits=splits, langs=langs, task2=False)
            return m.prepare_task1(
                dl,
                out_dir,
                splits=splits,
                langs=langs,
                image_source=opts.get("image_source"),
                name=cfg["dataset"]["name"],
            )
        if source == "multi30k_task2":
            split = str(opts.get("split", "test_2016"))
            if split not in m.TASK2_SPLITS:
                raise ConfigError(f"dataset.options.split must be one of {sorted(m.TASK2_SPLITS)} for multi30k_task2")
            m.download_multi30k(dl, mirror, splits=[m.TASK2_SPLITS[split]], langs=langs, task2=True)
            if opts.get("text_only_training"):
                return m.prepare_task2_training(dl, out_dir, split=split, langs=langs, name=cfg["dataset"]["name"])
            return m.prepare_task2(
                dl,
                out_dir,
                split=split,
                image_source=opts.get("image_source"),
                langs=langs,
                name=cfg["dataset"]["name"],
            )
        for key in ("images_dir", "mapping_csv"):
            if key not in opts:
                raise ConfigError(f"dataset.options.{key} is required for source flickr8k_multi30k")
        m.download_multi30k(dl, mirror, splits=MULTI30K_SPLITS_FOR_FLICKR8K, langs=langs, task2=False)
        return m.prepare_flickr8k_subset(
            dl, opts["images_dir"], opts["mapping_csv"], out_dir, langs=langs, name=cfg["dataset"]["name"]
        )
    if source == "stair":
        from .sources import stair as s

        dl = Path(opts.get("download_dir", DOWNLOAD_DIRS[source]))
        stair = s.download_stair(dl, opts.get("stair_mirror", mirror))
        images_dir = opts.get("images_dir")
        coco = s.download_coco(dl, opts.get("coco_mirror", mirror), image_splits=() if images_dir else ("val2014",))
        return s.prepare_stair(
            stair["val"],
            coco["captions_val2014"],
            out_dir,
            images_dir=images_dir or coco["val2014"],
            max_images=opts.get("max_images"),
            name=cfg["dataset"]["name"],
        )
    if source == "ikea":
        from .sources import ikea as k

        dl = Path(opts.get("download_dir", DOWNLOAD_DIRS[source]))
        pairs = opts.get("pairs", [opts.get("pair", "en-de")])
        if isinstance(pairs, str) or not isinstance(pairs, list):
            raise ConfigError(f"dataset.options.pairs must be a list like [en-de, en-fr]; got {pairs!r}")
        splits = [str(s) for s in opts.get("splits", ["test"])]
        features, image_zips = bool(opts.get("features", True)), bool(opts.get("image_zips", False))
        how = opts.get("download", "files")
        if how == "files":
            repo = k.download_ikea_files(
                dl, [str(p) for p in pairs], splits, features=features, image_zips=image_zips, mirror=mirror
            )
        elif how == "archive":
            repo = k.download_ikea(dl, mirror)
        else:
            raise ConfigError(f"dataset.options.download must be 'files' or 'archive' for source ikea; got {how!r}")
        return k.prepare_ikea(
            repo,
            out_dir,
            pair=[str(p) for p in pairs],
            splits=splits,
            images_dir=opts.get("images_dir"),
            features=features,
            features_name=str(opts.get("features_name", "ikea-upstream")),
            image_zips=image_zips,
            name=cfg["dataset"]["name"],
        )
    raise ConfigError(f"dataset.source {source!r} has no preparer")
