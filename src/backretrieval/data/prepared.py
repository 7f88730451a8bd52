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
validates and raises :class:`~backretrieval.errors.InputError` naming file and field, and
which returns titles and bodies in Unicode NFC (one form for the same text: a title written
decomposed (NFD) is embedded and compared as the composed one).
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
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


#: The JSON Schema of ``dataset.json`` (shipped in the package): the one definition of its
#: fields and types, used by the pipeline (:func:`read_meta`) and ``validate-dataset`` alike.
META_SCHEMA_PATH = Path(__file__).resolve().parent / "dataset.schema.json"


def meta_schema() -> dict:
    return json.loads(META_SCHEMA_PATH.read_text(encoding="utf-8"))


def meta_errors(raw: object) -> list[tuple[str, str]]:
    """``(field, message)`` for every way ``raw`` (the parsed dataset.json) breaks the schema;
    empty when it is valid. A wrong type is an error naming the field: ``"parallel": "false"``
    is refused, never read as true."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(meta_schema())
    out = []
    for e in sorted(validator.iter_errors(raw), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in e.absolute_path)
        if e.validator == "required" and not where:  # name the missing field itself
            missing = [k for k in e.validator_value if isinstance(raw, dict) and k not in raw]
            where = ",".join(missing)
        out.append((where or "(top level)", _schema_message(e)))
    return out


def _schema_message(e) -> str:
    if e.validator == "type":
        want = e.validator_value if isinstance(e.validator_value, str) else " or ".join(e.validator_value)
        got = type(e.instance).__name__.replace("str", "string").replace("bool", "boolean")
        got = {"list": "array", "dict": "object", "NoneType": "null", "float": "number", "int": "integer"}.get(got, got)
        return f"must be {'an' if want[0] in 'aeiou' else 'a'} {want} (JSON {want}), got {got} {e.instance!r}"
    if e.validator == "required":
        return "required field missing"
    return e.message


def read_meta(root: str | Path) -> DatasetMeta:
    """dataset.json, validated against :func:`meta_schema` (InputError naming the field)."""
    path = Path(root) / "dataset.json"
    if not path.is_file():
        raise InputError(f"{path}: missing dataset.json (expected a prepared dataset folder)")
    try:
        raw = json.loads(read_text_utf8(path, "dataset metadata"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from exc
    errors = meta_errors(raw)
    if errors:
        where, msg = errors[0]
        more = (
            f" (and {len(errors) - 1} more problem(s); run `backretrieval validate-dataset`)" if len(errors) > 1 else ""
        )
        raise InputError(f"{path}: field '{where}': {msg}{more}")
    known = {"name", "synthetic", "parallel", "languages", "description", "license"}
    return DatasetMeta(
        name=raw["name"],
        synthetic=raw.get("synthetic", False),
        parallel=raw.get("parallel", True),
        languages=tuple(raw["languages"]),
        description=raw.get("description", ""),
        license=raw.get("license", ""),
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
    for col in ("title", "body"):
        df[col] = nfc_texts(df[col])
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


def nfc(text: str) -> str:
    """``text`` in Unicode NFC (the one form every text is read in; see the module docstring)."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def nfc_texts(col: pd.Series) -> pd.Series:
    """A str column in NFC (unchanged, same object, when every value already is)."""
    if all(unicodedata.is_normalized("NFC", t) for t in col):
        return col
    return col.map(nfc)


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
    """Resolve ``rel`` against ``root``, following links; refuse (InputError) a path that is
    absolute, climbs out with ``..``, resolves outside the dataset root, or meets a symlink loop."""
    root_r = Path(root).resolve()
    norm = os.path.normpath(str(rel))
    if os.path.isabs(norm) or norm == ".." or norm.startswith(".." + os.sep):
        raise InputError(
            f"{what} {rel!r} resolves outside the dataset root {root_r} (paths are relative to the root, without '..')"
        )
    try:
        p = (root_r / rel).resolve()
    except (RuntimeError, OSError) as exc:  # RuntimeError: Python < 3.13's symlink loop
        raise InputError(f"{what} {rel!r}: symlink loop under the dataset root {root_r} ({exc})") from exc
    if p != root_r and root_r not in p.parents:
        raise InputError(f"{what} {rel!r} resolves outside the dataset root {root_r}")
    return p


def dataset_files(root: str | Path) -> list[tuple[str, Path]]:
    """Every file the dataset's tables reference, as ``(path relative to root, resolved file)``:
    dataset.json, the items table, images.csv and each image it lists, and each
    ``features/<name>.ids.txt`` with its ``.npy``. Nothing else belongs to the dataset: a copy
    (:func:`backretrieval.data.prepare.copy_prepared`) holds exactly these files. A path that
    resolves outside the root, meets a symlink loop or names no file is an InputError."""
    root = Path(root)
    rels = ["dataset.json", items_path(root).name]
    if (root / "images.csv").is_file() or (root / "images.csv").is_symlink():
        rels.append("images.csv")
        resolve_inside(root, "images.csv", "file")
        rels += [str(r) for r in load_image_table(root)["path"]]
    feat = root / "features"
    if feat.is_dir():
        resolve_inside(root, "features", "folder")
        for ids_txt in sorted(feat.glob("*.ids.txt")):
            rels += [f"features/{ids_txt.name}", f"features/{ids_txt.name[: -len('.ids.txt')]}.npy"]
    out = []
    for rel in rels:
        what = "image path" if rel not in ("dataset.json", "images.csv") and not rel.startswith("features/") else "file"
        p = resolve_inside(root, rel, what)
        if not p.is_file():
            raise InputError(f"{root / rel}: {what} not found (referenced by the dataset's tables)")
        out.append((rel, p))
    return out


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
    """The image ids of a ``features/<name>.ids.txt`` (one per line, blank lines skipped).

    An id listed twice is refused (InputError naming both lines), as the precomputed text
    encoder refuses an item listed twice: which of the two rows is the image's would be a guess.
    """
    text = read_text_utf8(ids_txt, "feature id list")
    ids: list[str] = []
    first: dict[str, int] = {}
    for line_no, raw in enumerate(text.splitlines(), start=1):
        iid = raw.strip()
        if not iid:
            continue
        if iid in first:
            raise InputError(
                f"{ids_txt}: line {line_no}: image id {iid!r} is listed twice (first at line {first[iid]}); "
                "each image id names one feature row"
            )
        first[iid] = line_no
        ids.append(iid)
    return ids


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
