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
        raw = json.loads(read_text_utf8(path, "dataset metadata"))
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


def read_text_utf8(path: str | Path, what: str = "text file") -> str:
    """A file's text, decoded as UTF-8 (a leading byte-order mark is dropped).

    Undecodable bytes → InputError naming the file, line and column of the first bad byte.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: {what} cannot be read ({exc.strerror or exc})") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bom = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
        pos = exc.start + bom
        line = raw.count(b"\n", 0, pos) + 1
        col = pos - (raw.rfind(b"\n", 0, pos) + 1) + 1
        raise InputError(
            f"{path}: {what} is not UTF-8 (byte 0x{raw[pos]:02x} at line {line}, column {col}); re-save it as UTF-8"
        ) from exc


def read_table(path: str | Path, what: str = "table") -> pd.DataFrame:
    """A CSV (UTF-8, every column str, nothing parsed as NaN) or parquet file.

    Undecodable text, malformed CSV or an unreadable parquet file → InputError naming the file;
    ``load_items``, ``load_image_table`` and ``datasets.byo.validate_dataset`` all read
    through here, so they report a bad file the same way.
    """
    import io as _io

    path = Path(path)
    if path.suffix == ".parquet":
        try:
            return pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a bad file
            raise InputError(f"{path}: {what} cannot be read as parquet ({type(exc).__name__}: {exc})") from exc
    text = read_text_utf8(path, what)
    try:
        return pd.read_csv(_io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: {what} is not valid CSV ({exc})") from exc


def load_items(root: str | Path) -> pd.DataFrame:
    """Read and validate ``items.csv``/``items.parquet``. Returns a DataFrame of str columns."""
    path = items_path(root)
    df = read_table(path, "items table")
    missing = [c for c in REQUIRED_ITEM_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}; expected columns {list(REQUIRED_ITEM_COLUMNS)}")
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
    df = read_table(path, "image table")
    for col in ("image_id", "path"):
        if col not in df.columns:
            raise InputError(f"{path}: missing column '{col}'; expected columns image_id, path")
    if df["image_id"].duplicated().any():
        dup = df.loc[df["image_id"].duplicated(), "image_id"].iloc[0]
        raise InputError(f"{path}: duplicate image_id {dup!r}")
    for rel in df["path"]:
        resolve_inside(root, rel)
    return df


def read_feature_ids(ids_txt: str | Path) -> list[str]:
    """The image ids of a ``features/<name>.ids.txt`` (one per line, blank lines skipped)."""
    text = read_text_utf8(ids_txt, "feature id list")
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def nonfinite_rows(feats: np.ndarray, block: int = 65536) -> np.ndarray:
    """0-based indices of the rows holding a NaN or inf (read in blocks: memmaps stay cheap)."""
    bad = [
        start + np.flatnonzero(~np.isfinite(feats[start : start + block]).all(axis=1))
        for start in range(0, feats.shape[0], block)
    ]
    return np.concatenate(bad) if bad else np.zeros(0, dtype=np.int64)


def check_features_finite(npy: str | Path, feats: np.ndarray, ids: list[str] | None = None) -> None:
    """InputError naming ``npy`` and its first rows (and their image ids) if any row is not finite."""
    bad = nonfinite_rows(feats)
    if len(bad):
        first = [int(i) for i in bad[:5]]
        named = f"; image ids {[ids[i] for i in first]}" if ids is not None and len(ids) == feats.shape[0] else ""
        raise InputError(
            f"{npy}: {len(bad)} of {feats.shape[0]} feature rows contain NaN or inf: rows {first}"
            f"{' ...' if len(bad) > 5 else ''} (0-based{named}); image features must be finite"
        )


def check_features_folder(root: str | Path) -> None:
    """Every ``features/<name>.npy`` of a prepared folder: readable, one row per id, finite."""
    base = Path(root) / "features"
    if not base.is_dir():
        return
    for ids_txt in sorted(base.glob("*.ids.txt")):
        load_precomputed_features(root, ids_txt.name[: -len(".ids.txt")], as_float32=False)


def load_precomputed_features(root: str | Path, name: str, *, as_float32: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(ids, float32 features) from ``features/<name>.npy`` and ``features/<name>.ids.txt``.

    Refuses (InputError naming the file and rows) a matrix whose row count differs from the id
    list or that holds NaN/inf rows. ``as_float32=False`` returns the stored dtype (memmap).
    """
    base = Path(root) / "features"
    npy, ids_txt = base / f"{name}.npy", base / f"{name}.ids.txt"
    for p in (npy, ids_txt):
        if not p.is_file():
            raise InputError(f"{p}: missing precomputed feature file for backbone '{name}'")
    try:
        feats = np.load(npy, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{npy}: cannot be read as a .npy matrix ({exc})") from exc
    ids_list = read_feature_ids(ids_txt)
    ids = np.array(ids_list)
    if feats.ndim != 2 or feats.shape[0] != len(ids):
        raise InputError(
            f"{npy}: expected a 2-D matrix with one row per id in {ids_txt.name} "
            f"({len(ids)} ids), got shape {feats.shape}"
        )
    check_features_finite(npy, feats, ids_list)
    return ids, (np.asarray(feats, dtype=np.float32) if as_float32 else feats)
