"""Dispatch "prepare the configured dataset" to the generator or the dataset's preparer."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError


def prepare_dataset(cfg: dict, out_dir: Path) -> None:
    ds = cfg["dataset"]
    source = ds["source"]
    opts = dict(ds.get("options") or {})
    if source == "synthetic":
        from .synthetic import generate

        syn = ds.get("synthetic") or {}
        generate(
            out_dir,
            n_items=int(syn.get("n_items", 2400)),
            languages=cfg["languages"],
            seed=int(syn.get("seed", 0)),
            image_size=int(syn.get("image_size", 160)),
        )
        return
    if source == "prepared":
        # a folder the user prepared in the documented format; validated, then linked
        from .prepared import load_items, read_meta

        src = Path(opts.get("path", ""))
        read_meta(src)
        load_items(src)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        if out_dir.is_symlink() or out_dir.exists():
            if out_dir.resolve() == src.resolve():
                return
            raise ConfigError(f"{out_dir} exists and is not {src}; remove it first")
        out_dir.symlink_to(src.resolve(), target_is_directory=True)
        return
    from .from_config import prepare_from_config  # real datasets (download + prepare)

    prepare_from_config(source, opts, cfg, out_dir)
