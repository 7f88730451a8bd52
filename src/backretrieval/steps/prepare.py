"""The prepare step: the configured dataset (or one configured text-only corpus) → a prepared
folder under ``data/prepared/``."""

from __future__ import annotations

from pathlib import Path

from ..data.prepare import prepare_dataset
from ..errors import BackretrievalError, ConfigError
from . import layout


def prepare_step(cfg: dict, corpus: str | None = None) -> None:
    """Generate (synthetic) or download + prepare ``cfg['dataset']``; with ``corpus``, the
    text-only corpus of that name from ``cfg['corpora']`` instead."""
    if corpus:
        corpora = cfg.get("corpora") or {}
        if corpus not in corpora:
            raise BackretrievalError(f"corpus {corpus!r} is not configured (known: {sorted(corpora)})")
        sub = dict(cfg, dataset={"name": corpus, **corpora[corpus]})
        prepare_dataset(sub, Path("data/prepared") / corpus)
    else:
        prepare_checked(cfg, layout.dataset_root(cfg))


def prepare_checked(cfg: dict, out_dir: Path) -> None:
    """:func:`prepare_dataset`, then :func:`check_dataset_fits`; a dataset the config does not
    fit is removed again (the step failed: it leaves no output, as under Snakemake)."""
    import shutil

    prepare_dataset(cfg, out_dir, check=check_dataset_fits)
    try:
        check_dataset_fits(cfg, out_dir)
    except ConfigError as exc:
        if out_dir.is_symlink():
            out_dir.unlink()
        else:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise ConfigError(f"{exc} (the prepared {out_dir} was removed; fix the config and run prepare again)") from exc



def check_dataset_fits(cfg: dict, root: Path) -> None:
    """Refuse (ConfigError naming the field) a config the prepared dataset at ``root`` cannot serve.

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

    Run at the end of ``prepare`` and before the embedding steps, so a config that does not fit
    its data fails before any model runs.
    """
    from ..data.prepared import items_path, load_items, read_meta

    root = Path(root)
    meta = read_meta(root)
    items = load_items(root)
    where = items_path(root)
    present = set(items["lang"])
    for lang in cfg["languages"]:
        if lang not in present:
            raise ConfigError(f"field 'languages': {lang!r} has no texts in {where} (present: {sorted(present)})")
    by_lang = {lang: set(g["item_id"]) for lang, g in items.groupby("lang")}
    for d in cfg["directions"]:
        _fits(by_lang, d, int(cfg["sample_size"]), meta.parallel, "sample_size", where)
    _check_images(cfg, root, items)
    if not cfg.get("case_study"):
        return
    from ..study.case_study import case_cfg, directions, human_cfg

    cs = case_cfg(cfg)
    ev = items[items["split"].isin(cs["eval_splits"])]
    ev_lang = {lang: set(g["item_id"]) for lang, g in ev.groupby("lang")}
    for d in directions(cs):
        _fits(ev_lang, d, int(cs["sample_size"]), meta.parallel, "case_study.sample_size", where,
              f" in case_study.eval_splits {list(cs['eval_splits'])}")
    if not cs.get("train_corpus") and not items["split"].isin(cs["train_splits"]).any():
        raise ConfigError(f"field 'case_study.train_splits': {where} has no items in splits "
                          f"{list(cs['train_splits'])} (splits present: {sorted(set(items['split']))})")
    if not cfg.get("human_study"):
        return
    hs = human_cfg(cfg)
    n_src = len(ev_lang.get(hs["source_lang"], ()))
    if n_src < int(hs["n_queries"]):
        raise ConfigError(f"field 'human_study.n_queries': {hs['n_queries']} queries, but {where} has only "
                          f"{n_src} {hs['source_lang']} items in case_study.eval_splits")
    n_tgt = len(ev_lang.get(hs["target_lang"], ()))
    if n_tgt - int(hs["n_queries"]) < int(hs["top_k"]):
        raise ConfigError(f"field 'human_study.top_k': {hs['top_k']} suggestions per query need "
                          f"n_queries + top_k = {int(hs['n_queries']) + int(hs['top_k'])} "
                          f"{hs['target_lang']} evaluation items; {where} has {n_tgt}")



def _fits(by_lang: dict[str, set], direction: str, n: int, parallel: bool, field: str, where: Path,
          scope: str = "") -> None:
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
        raise ConfigError(f"field '{field}': N={n} is too large for direction {direction}: it needs N "
                          f"queries + N disjoint targets, and {where} has {has}{scope}")



def _check_images(cfg: dict, root: Path, items) -> None:
    from ..data.prepared import read_feature_ids

    bb = cfg["image_backbone"]
    spec = cfg["backbones"][bb]
    used = set(items.loc[items["lang"].isin(cfg["languages"]), "image_id"])
    if spec.get("type") == "precomputed":
        name = str(spec.get("name", bb))
        ids_txt = root / "features" / f"{name}.ids.txt"
        if not ids_txt.is_file():
            raise ConfigError(f"field 'image_backbone': {bb!r} is precomputed but {ids_txt} is missing "
                              "(this dataset has no such features)")
        have = set(read_feature_ids(ids_txt))
        what = str(ids_txt)
    else:
        table = root / "images.csv"
        if not table.is_file():
            raise ConfigError(f"field 'image_backbone': {bb!r} ({spec.get('type')}) embeds image files, but "
                              f"{root} has no images.csv (text only or precomputed features only)")
        from ..data.prepared import load_image_table

        have = set(load_image_table(root)["image_id"])
        what = str(table)
    lacking = sorted(used - have)
    if lacking:
        raise ConfigError(f"field 'image_backbone': {len(lacking)} image id(s) of the items have no entry in "
                          f"{what} (first: {lacking[:3]})")
