"""The prepare step: a dataset (or a text-only corpus) spec → a prepared folder; and the
check that a prepared dataset fits the config (``check-dataset``)."""

from __future__ import annotations

from pathlib import Path

from .._util import io
from ..data.prepare import prepare_dataset
from ..errors import ConfigError
from .settings import fit_requirements


def prepare_step(spec: dict, languages: list[str], out: Path, source_dir: Path | None = None) -> None:
    """Generate (synthetic), copy (``source: prepared``: the user's folder ``source_dir``,
    validated first) or download + prepare the dataset ``spec`` (a ``dataset`` or
    ``corpora.<name>`` section with its ``name``) into ``out``."""
    spec = dict(spec)
    if spec.get("source") == "prepared":
        if source_dir is None:
            raise ConfigError(
                f"dataset {spec.get('name')!r}: source 'prepared' needs the folder to copy (--source-dir)"
            )
        spec["options"] = {**(spec.get("options") or {}), "path": str(source_dir)}
    prepare_dataset({"dataset": spec, "languages": list(languages)}, Path(out))


def check_step(requirements: dict, dataset: Path, out: Path) -> None:
    """:func:`check_fits`, then a record of what was checked at ``out`` (nothing on failure)."""
    from ..data.prepared import load_items, read_meta

    check_fits(requirements, dataset)
    io.write_json(
        out, {"dataset": read_meta(dataset).name, "items": int(len(load_items(dataset))), "fits": requirements}
    )


def check_dataset_fits(cfg: dict, root: Path) -> None:
    """:func:`check_fits` of a validated config."""
    check_fits(fit_requirements(cfg), root)


def check_fits(req: dict, root: Path) -> None:
    """Refuse (ConfigError naming the field) a config the prepared dataset at ``root`` cannot
    serve; ``req`` is :func:`fit_requirements` of the config.

    The relations that need the data (the config-only ones are in
    :func:`backretrieval.config.check_relations`):

    * every configured language has texts;
    * per direction, enough items for N queries plus N disjoint targets (parallel data: 2N items
      with texts in both languages; otherwise N source items and N target items besides them);
    * the same for the case study's directions on its evaluation splits, and training items exist
      (unless ``case_study.train_corpus`` supplies them);
    * the human study has ``n_queries`` source items and ``top_k`` candidates besides them;
    * the image backbone has an image for every item: a ``precomputed`` backbone its
      ``features/<name>.ids.txt`` entries, any other backbone ``images.csv`` rows.

    The workflow runs it as the ``check_dataset`` rule, right after ``prepare`` and before the
    embedding and sampling steps, so a config that does not fit its data fails before any
    model runs.
    """
    from ..data.prepared import items_path, load_items, read_meta

    root = Path(root)
    meta = read_meta(root)
    items = load_items(root)
    where = items_path(root)
    present = set(items["lang"])
    for lang in req["languages"]:
        if lang not in present:
            raise ConfigError(f"field 'languages': {lang!r} has no texts in {where} (present: {sorted(present)})")
    by_lang = {lang: set(g["item_id"]) for lang, g in items.groupby("lang")}
    for d in req["directions"]:
        _fits(by_lang, d, int(req["sample_size"]), meta.parallel, "sample_size", where)
    _check_images(req, root, items)
    cs = req.get("case_study")
    if not cs:
        return
    from ..study.case_config import directions

    ev = items[items["split"].isin(cs["eval_splits"])]
    ev_lang = {lang: set(g["item_id"]) for lang, g in ev.groupby("lang")}
    for d in directions(cs):
        _fits(
            ev_lang,
            d,
            int(cs["sample_size"]),
            meta.parallel,
            "case_study.sample_size",
            where,
            f" in case_study.eval_splits {list(cs['eval_splits'])}",
        )
    if not cs.get("train_corpus") and not items["split"].isin(cs["train_splits"]).any():
        raise ConfigError(
            f"field 'case_study.train_splits': {where} has no items in splits "
            f"{list(cs['train_splits'])} (splits present: {sorted(set(items['split']))})"
        )
    hs = req.get("human_study")
    if not hs:
        return
    n_src = len(ev_lang.get(hs["source_lang"], ()))
    if n_src < int(hs["n_queries"]):
        raise ConfigError(
            f"field 'human_study.n_queries': {hs['n_queries']} queries, but {where} has only "
            f"{n_src} {hs['source_lang']} items in case_study.eval_splits"
        )
    n_tgt = len(ev_lang.get(hs["target_lang"], ()))
    if n_tgt - int(hs["n_queries"]) < int(hs["top_k"]):
        raise ConfigError(
            f"field 'human_study.top_k': {hs['top_k']} suggestions per query need "
            f"n_queries + top_k = {int(hs['n_queries']) + int(hs['top_k'])} "
            f"{hs['target_lang']} evaluation items; {where} has {n_tgt}"
        )


def _fits(
    by_lang: dict[str, set], direction: str, n: int, parallel: bool, field: str, where: Path, scope: str = ""
) -> None:
    src, tgt = direction.split("-")
    s, t = by_lang.get(src, set()), by_lang.get(tgt, set())
    if parallel:
        ok = len(s & t) >= 2 * n
        has = f"{len(s & t)} items with texts in both {src} and {tgt}"
    else:
        # N queries among the source items; N targets among the target items that are not queries
        ok = len(s) >= n and len(t) - min(n, len(s & t)) >= n
        has = f"{len(s)} {src} items and {len(t)} {tgt} items ({len(s & t)} ids in both)"
    if not ok:
        raise ConfigError(
            f"field '{field}': N={n} is too large for direction {direction}: it needs N "
            f"queries + N disjoint targets, and {where} has {has}{scope}"
        )


def _check_images(req: dict, root: Path, items) -> None:
    from ..data.prepared import read_feature_ids

    bb = req["image_backbone"]
    spec = req["backbone"]
    used = set(items.loc[items["lang"].isin(req["languages"]), "image_id"])
    if spec.get("type") == "precomputed":
        name = str(spec.get("name", bb))
        ids_txt = root / "features" / f"{name}.ids.txt"
        if not ids_txt.is_file():
            raise ConfigError(
                f"field 'image_backbone': {bb!r} is precomputed but {ids_txt} is missing "
                "(this dataset has no such features)"
            )
        have = set(read_feature_ids(ids_txt))
        what = str(ids_txt)
    else:
        table = root / "images.csv"
        if not table.is_file():
            raise ConfigError(
                f"field 'image_backbone': {bb!r} ({spec.get('type')}) embeds image files, but "
                f"{root} has no images.csv (text only or precomputed features only)"
            )
        from ..data.prepared import load_image_table

        images = load_image_table(root)
        have = set(images["image_id"])
        what = str(table)
        _check_images_decode(root, images[images["image_id"].isin(used)])
    lacking = sorted(used - have)
    if lacking:
        raise ConfigError(
            f"field 'image_backbone': {len(lacking)} image id(s) of the items have no entry in "
            f"{what} (first: {lacking[:3]})"
        )


def _check_images_decode(root: Path, images) -> None:
    """Every image file the items use opens as an image (PIL's verify); else one InputError
    naming every bad file by its path, before any model runs."""
    from ..data.byo import image_error
    from ..data.prepared import resolve_inside
    from ..errors import InputError

    bad = []
    for rel in images["path"]:
        p = resolve_inside(root, rel)
        err = "file not found" if not p.is_file() else image_error(p)
        if err:
            bad.append(f"{root / rel} ({err})")
    if bad:
        raise InputError(f"{len(bad)} image file(s) cannot be read as images: " + "; ".join(bad))
