"""Helpers shared by the dataset modules: reading text files, staging a prepared folder."""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from ..._util.io import naming_written_path, raise_if_no_space, write_csv, write_json
from ...errors import InputError

ITEM_COLUMNS = ["item_id", "lang", "image_id", "title", "body", "split"]


def read_lines(path: str | os.PathLike[str]) -> list[str]:
    """UTF-8 lines of a plain or ``.gz`` text file, without line terminators."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: missing file")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
                text = fh.read()
        else:
            text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise InputError(f"{path}: cannot read as UTF-8 text ({exc})") from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln.rstrip("\r") for ln in lines]


def link_or_copy(src: Path, dst: Path, mode: str = "auto") -> None:
    """Place ``src`` at ``dst``: ``hardlink``, ``copy``, or ``auto`` (hard link, else copy).

    Hard links keep the prepared root self-contained (``dataset.resolve_inside`` resolves
    symlinks, so symlinked images would point outside the root and be refused).
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    if mode not in ("auto", "hardlink", "copy"):
        raise InputError(f"image copy mode must be auto, hardlink or copy; got {mode!r}")
    if mode in ("auto", "hardlink"):
        try:
            os.link(src, dst)
            return
        except OSError:
            if mode == "hardlink":
                raise
    shutil.copyfile(src, dst)


@contextlib.contextmanager
def staged_dir(out_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty temporary sibling of ``out_dir``; on success it replaces ``out_dir``.

    An existing ``out_dir`` is replaced only if it is empty or a prepared dataset (has a
    ``dataset.json``) - never an arbitrary folder.
    """
    out = Path(out_dir)
    if out.exists():
        if not out.is_dir():
            raise InputError(f"{out}: exists and is not a folder")
        if any(out.iterdir()) and not (out / "dataset.json").is_file():
            raise InputError(f"{out}: exists, is not empty and is not a prepared dataset; refusing to replace it")
    with naming_written_path(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".staging", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp creates 0700; a prepared folder is ordinary data
    try:
        yield tmp
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise_if_no_space(exc, out)
        raise


def write_prepared(
    root: Path,
    meta: dict,
    items: pd.DataFrame,
    images: pd.DataFrame | None = None,
) -> None:
    """Write ``dataset.json``, ``items.csv`` and (optionally) ``images.csv`` into ``root``."""
    missing = [c for c in ITEM_COLUMNS if c not in items.columns]
    if missing:  # pragma: no cover - programming error
        raise ValueError(f"items lack columns {missing}")
    write_json(root / "dataset.json", meta)
    write_csv(root / "items.csv", items[ITEM_COLUMNS + [c for c in items.columns if c not in ITEM_COLUMNS]])
    if images is not None:
        write_csv(root / "images.csv", images[["image_id", "path"]])


def place_images(
    image_ids: list[str],
    src_dir: Path,
    root: Path,
    *,
    mode: str = "auto",
    src_names: dict[str, str] | None = None,
    what: str = "image folder",
    hint: str = "",
) -> pd.DataFrame:
    """Link/copy ``src_dir/<name>`` to ``root/images/<name>`` for every image id.

    ``src_names`` maps an image id to its file name in ``src_dir`` (default: the id).
    Returns the ``images.csv`` table. Missing files → InputError listing the first few.
    """
    if not src_dir.is_dir():
        raise InputError(f"{src_dir}: {what} not found. {hint}".strip())
    rows, missing = [], []
    seen: set[str] = set()
    for iid in image_ids:
        if iid in seen:
            continue
        seen.add(iid)
        name = (src_names or {}).get(iid, iid)
        src = src_dir / name
        if not src.is_file():
            missing.append(name)
            continue
        rel = f"images/{name}"
        link_or_copy(src, root / rel, mode)
        rows.append((iid, rel))
    if missing:
        raise InputError(
            f"{src_dir}: {len(missing)} of {len(seen)} images missing from the {what} "
            f"(first: {missing[:5]}). {hint}".strip()
        )
    return pd.DataFrame(rows, columns=["image_id", "path"])
