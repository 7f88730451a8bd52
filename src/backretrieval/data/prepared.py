"""The one prepared format shared by every dataset (synthetic, Multi30K, STAIR, IKEA, your own).

A prepared dataset is a folder::

    <root>/dataset.json   metadata: {"name", "synthetic": bool, "parallel": bool,
                          "languages": [...], "description", "license"}
    <root>/items.csv      one row per (item, language) text:
                          item_id  str   stable id; in a *parallel* dataset the same item_id in
                                         two languages means "translations / same image"
                          lang     str   ISO 639-1 code (en, de, fr, cs, ja, es, ru, ar, ...)
                          image_id str   id of the item's image (several rows may share one)
                          title    str   short text (a caption, a recipe title) - never empty
                          body     str   longer text (may be empty)
                          split    str   train / val / test / eval (optional column, default eval)
    and images in one of two forms:
    <root>/images.csv     image_id, path   (path relative to <root>, must stay inside it)
    <root>/features/<name>.npy + <root>/features/<name>.ids.txt
                          precomputed image features (row i = image id on line i)

`items.csv` may also be `items.parquet`. Readers go through :func:`load_items`, which
validates and raises :class:`~backretrieval.errors.InputError` naming file and field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError

REQUIRED_ITEM_COLUMNS = ("item_id", "lang", "image_id", "title", "body")
TEXT_FIELDS = ("title", "body", "title_body")
_LANG_RE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]+)?$")

#: ISO 639-1 codes accepted without a warning by `validate` (others are reported as unknown).
KNOWN_LANGS = frozenset(
    "af am ar az be bg bn bs ca cs cy da de el en eo es et eu fa fi fr ga gl gu he hi hr hu hy id "
    "is it ja ka kk km kn ko ky la lo lt lv mk ml mn mr ms mt my ne nl no pa pl ps pt ro ru si sk "
    "sl so sq sr sv sw ta te th tl tr uk ur uz vi xh yi zh zu".split()
)


@dataclass(frozen=True)
class DatasetMeta:
    name: str
    synthetic: bool
    parallel: bool
    languages: tuple[str, ...]
    description: str = ""
    license: str = ""
    extra: dict = field(default_factory=dict)


def read_meta(root: str | Path) -> DatasetMeta:
    path = Path(root) / "dataset.json"
    if not path.is_file():
        raise InputError(f"{path}: missing dataset.json (expected a prepared dataset folder)")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from exc
    for key in ("name", "languages"):
        if key not in raw:
            raise InputError(f"{path}: field '{key}' is required")
    known = {"name", "synthetic", "parallel", "languages", "description", "license"}
    return DatasetMeta(
        name=str(raw["name"]),
        synthetic=bool(raw.get("synthetic", False)),
        parallel=bool(raw.get("parallel", True)),
        languages=tuple(raw["languages"]),
        description=str(raw.get("description", "")),
        license=str(raw.get("license", "")),
        extra={k: v for k, v in raw.items() if k not in known},
    )


def items_path(root: str | Path) -> Path:
    root = Path(root)
    for name in ("items.parquet", "items.csv"):
        if (root / name).is_file():
            return root / name
    raise InputError(f"{root}: no items.csv or items.parquet (expected a prepared dataset folder)")


def load_items(root: str | Path) -> pd.DataFrame:
    """Read and validate ``items.csv``/``items.parquet``. Returns a DataFrame of str columns."""
    path = items_path(root)
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
    else:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    missing = [c for c in REQUIRED_ITEM_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {missing}; expected columns {list(REQUIRED_ITEM_COLUMNS)}"
        )
    if "split" not in df.columns:
        df["split"] = "eval"
    for col in (*REQUIRED_ITEM_COLUMNS, "split"):
        df[col] = df[col].fillna("").astype(str)
    bad_lang = df.loc[~df["lang"].str.match(_LANG_RE), "lang"]
    if len(bad_lang):
        raise InputError(
            f"{path}: field 'lang' must be an ISO 639 code like 'en'; got {bad_lang.iloc[0]!r} "
            f"(row {int(bad_lang.index[0]) + 2})"
        )
    empty = df.index[df["title"].str.strip() == ""]
    if len(empty):
        raise InputError(f"{path}: field 'title' is empty at row {int(empty[0]) + 2}")
    for col in ("item_id", "image_id"):
        empty = df.index[df[col].str.strip() == ""]
        if len(empty):
            raise InputError(f"{path}: field '{col}' is empty at row {int(empty[0]) + 2}")
    dup = df.duplicated(["item_id", "lang"])
    if dup.any():
        row = df[dup].iloc[0]
        raise InputError(
            f"{path}: duplicate (item_id, lang) = ({row['item_id']!r}, {row['lang']!r}); "
            "each item has at most one text per language"
        )
    return df


def texts_for(items: pd.DataFrame, lang: str, text_field: str) -> tuple[np.ndarray, list[str]]:
    """Item ids (file order) and texts of one language for a text field.

    ``title_body`` joins title and body with a newline (the case study's title+body input).
    """
    if text_field not in TEXT_FIELDS:
        raise InputError(f"text field must be one of {TEXT_FIELDS}, got {text_field!r}")
    sub = items[items["lang"] == lang]
    if text_field == "title_body":
        texts = (sub["title"] + "\n" + sub["body"]).str.strip().tolist()
    else:
        texts = sub[text_field].tolist()
    return sub["item_id"].to_numpy(dtype=str), texts


def resolve_inside(root: str | Path, rel: str, what: str = "image path") -> Path:
    """Resolve ``rel`` against ``root``; refuse paths that escape the dataset root."""
    root_r = Path(root).resolve()
    p = (root_r / rel).resolve()
    if p != root_r and root_r not in p.parents:
        raise InputError(f"{what} {rel!r} resolves outside the dataset root {root_r}")
    return p


def load_image_table(root: str | Path) -> pd.DataFrame:
    """``images.csv`` (image_id, path) with every path checked to stay inside ``root``."""
    path = Path(root) / "images.csv"
    if not path.is_file():
        raise InputError(f"{path}: missing (needed for image files; or use precomputed features)")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    for col in ("image_id", "path"):
        if col not in df.columns:
            raise InputError(f"{path}: missing column '{col}'; expected columns image_id, path")
    if df["image_id"].duplicated().any():
        dup = df.loc[df["image_id"].duplicated(), "image_id"].iloc[0]
        raise InputError(f"{path}: duplicate image_id {dup!r}")
    for rel in df["path"]:
        resolve_inside(root, rel)
    return df


def load_precomputed_features(root: str | Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(ids, float32 features) from ``features/<name>.npy`` and ``features/<name>.ids.txt``."""
    base = Path(root) / "features"
    npy, ids_txt = base / f"{name}.npy", base / f"{name}.ids.txt"
    for p in (npy, ids_txt):
        if not p.is_file():
            raise InputError(f"{p}: missing precomputed feature file for backbone '{name}'")
    feats = np.load(npy, allow_pickle=False)
    ids = np.array([ln.strip() for ln in ids_txt.read_text(encoding="utf-8").splitlines() if ln.strip()])
    if feats.ndim != 2 or feats.shape[0] != len(ids):
        raise InputError(
            f"{npy}: expected a 2-D matrix with one row per id in {ids_txt.name} "
            f"({len(ids)} ids), got shape {feats.shape}"
        )
    return ids, feats.astype(np.float32)
