"""Validation of bring-your-own corpora (e.g. recipes per language, no parallel texts).

:func:`validate_dataset` checks a folder in the prepared format (see
``backretrieval/data/prepared.py``) and returns *all* problems found instead of stopping at the
first one, each naming file, row (1-based line of the CSV, header = line 1) and field.
``error`` problems make the dataset unusable (the CLI exits 1); ``warning`` problems are
worth a look (unknown language code, duplicate texts, unused images).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from .prepared import (
    KNOWN_LANGS,
    REQUIRED_ITEM_COLUMNS,
    TEXT_FIELDS,
    meta_errors,
    nfc,
    nonfinite_rows,
    read_feature_ids,
    read_table,
    read_text_utf8,
    resolve_inside,
)

_LANG_RE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]+)?$")


@dataclass(frozen=True)
class Problem:
    level: str  # "error" | "warning"
    file: str  # path relative to the dataset root
    row: int | None  # 1-based line in the file (header = 1); None = whole file
    field: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self._where(self.file)}"

    def located(self, root: Path) -> str:
        """The problem with its file named by its path under ``root`` (the user's own path)."""
        return self._where(str(root / self.file) if self.file != "." else str(root))

    def _where(self, file: str) -> str:
        where = file + (f":{self.row}" if self.row is not None else "")
        fld = f" [{self.field}]" if self.field else ""
        return f"{where}{fld}: {self.message}"


def _field_text(title: str, body: str, text_field: str) -> str:
    """The text of ``text_field`` as :func:`~.prepared.texts_for` forms it from the NFC title
    and body (``title_body``: title, newline, body, stripped)."""
    title, body = nfc(title), nfc(body)
    if text_field == "title_body":
        return (title + "\n" + body).strip()
    return title if text_field == "title" else body


def has_errors(problems: list[Problem]) -> bool:
    return any(p.level == "error" for p in problems)


def _read_table(path: Path) -> pd.DataFrame:
    df = read_table(path)
    return df.astype(str) if path.suffix == ".parquet" else df


def _record_lines(path: Path, n: int) -> list[int]:
    """The file line (1-based, header = line 1) on which each of the ``n`` records of a CSV
    starts, as read_table reads them (a quoted field may hold newlines, so a record can span
    lines; blank lines are skipped); a parquet file has no lines: row i is "line" i + 2."""
    import csv
    import io as _io

    if path.suffix == ".parquet":
        return [i + 2 for i in range(n)]
    reader = csv.reader(_io.StringIO(path.read_text(encoding="utf-8-sig")))
    starts, line = [], 0
    for rec in reader:
        if rec:
            starts.append(line + 1)
        line = reader.line_num
    starts = starts[1:]  # the header
    return starts if len(starts) == n else [i + 2 for i in range(n)]


def _inside(root: Path, rel: str) -> tuple[Path | None, str | None]:
    """``(resolved path, None)``, or ``(None, why)`` for a path the pipeline refuses (the same
    rule: :func:`~.prepared.resolve_inside`)."""
    try:
        return resolve_inside(root, rel), None
    except InputError as exc:
        return None, str(exc)


def refuse_invalid(root: str | Path) -> None:
    """InputError (one line, naming each problem by its path under ``root``) if
    :func:`validate_dataset` finds any error: the pipeline refuses what ``validate-dataset``
    reports, so the two agree."""
    root = Path(root)
    errors = [p for p in validate_dataset(root) if p.level == "error"]
    if not errors:
        return
    shown = errors[:_MAX_SHOWN]
    more = f"; and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
    raise InputError(
        f"{root}: {len(errors)} error(s) in the dataset: "
        + "; ".join(p.located(root) for p in shown)
        + more
        + f" (backretrieval validate-dataset {root})"
    )


_MAX_SHOWN = 50


def validate_dataset(root: str | Path, *, check_images: bool = True, text_field: str = "title") -> list[Problem]:
    """All problems of the prepared dataset at ``root`` (empty list = fine).

    ``check_images=False`` skips opening image files (existence is still checked).
    ``text_field``: the text the evaluation embeds (``title``, ``body`` or ``title_body``,
    formed as the pipeline forms it, in NFC); items of one language that share that text are
    warned about one by one, and once per language with their count: identical texts get
    identical vectors, so BkR's step 1 ties between them and takes the first (lowest index),
    whose image decides the hit.
    """
    if text_field not in TEXT_FIELDS:
        raise InputError(f"text field must be one of {TEXT_FIELDS}, got {text_field!r}")
    root = Path(root)
    probs: list[Problem] = []

    def add(level, file, row, field, msg):
        probs.append(Problem(level, file, row, field, msg))

    if not root.is_dir():
        return [Problem("error", str(root), None, None, "dataset folder not found")]

    # dataset.json
    meta_langs: list[str] | None = None
    mp = root / "dataset.json"
    if not mp.is_file():
        add("error", "dataset.json", None, None, "missing (needs at least 'name' and 'languages')")
    else:
        try:
            meta = json.loads(read_text_utf8(mp, "dataset metadata"))
            for where, msg in meta_errors(meta):  # the schema the pipeline's read_meta applies
                add("error", "dataset.json", None, where, msg)
            if isinstance(meta, dict) and isinstance(meta.get("languages"), list):
                meta_langs = [str(x) for x in meta["languages"]]
        except json.JSONDecodeError as exc:
            add("error", "dataset.json", None, None, f"not valid JSON ({exc})")
        except InputError as exc:
            add("error", "dataset.json", None, None, _without_path(exc, mp))

    # items
    ip = next((root / n for n in ("items.parquet", "items.csv") if (root / n).is_file()), None)
    if ip is None:
        add("error", "items.csv", None, None, "missing (no items.csv or items.parquet)")
        return probs
    iname = ip.name
    try:
        items = _read_table(ip)
    except InputError as exc:  # the message prepare would stop with (same reader)
        add("error", iname, None, None, _without_path(exc, ip))
        return probs
    missing = [c for c in REQUIRED_ITEM_COLUMNS if c not in items.columns]
    if missing:
        add("error", iname, 1, ",".join(missing), f"missing column(s); expected {list(REQUIRED_ITEM_COLUMNS)}")
        return probs

    seen: dict[tuple[str, str], int] = {}
    texts: dict[tuple[str, str], tuple[int, str]] = {}
    n_dup: dict[str, int] = {}  # per language: items whose text an earlier item has
    n_lang: dict[str, int] = {}
    lines = _record_lines(ip, len(items))
    for idx, rec in enumerate(items.itertuples(index=False)):
        row = lines[idx]
        item_id, lang, image_id = str(rec.item_id).strip(), str(rec.lang).strip(), str(rec.image_id).strip()
        title = str(rec.title).strip()
        if not item_id:
            add("error", iname, row, "item_id", "empty")
        if not image_id:
            add("error", iname, row, "image_id", "empty")
        if not title:
            add("error", iname, row, "title", "empty text (title must not be empty)")
        if not _LANG_RE.match(lang):
            add("error", iname, row, "lang", f"{lang!r} is not a language code like 'en' or 'pt-BR'")
        elif lang.split("-")[0] not in KNOWN_LANGS:
            add("warning", iname, row, "lang", f"unknown language code {lang!r} (not in ISO 639-1 list)")
        if meta_langs is not None and lang and lang not in meta_langs:
            add("warning", iname, row, "lang", f"{lang!r} is not listed in dataset.json 'languages' {meta_langs}")
        key = (item_id, lang)
        if item_id and key in seen:
            add(
                "error",
                iname,
                row,
                "item_id",
                f"duplicate (item_id, lang) = ({item_id!r}, {lang!r}); first at row {seen[key]}",
            )
        else:
            seen[key] = row
        n_lang[lang] = n_lang.get(lang, 0) + 1
        text = _field_text(str(rec.title), str(rec.body), text_field)
        if text.strip():
            tkey = (lang, text)
            if tkey in texts and texts[tkey][1] != item_id:
                n_dup[lang] = n_dup.get(lang, 0) + 1
                add(
                    "warning",
                    iname,
                    row,
                    text_field,
                    f"duplicate text: same {lang} {text_field} as item {texts[tkey][1]!r} (row {texts[tkey][0]})",
                )
            else:
                texts.setdefault(tkey, (row, item_id))
    for lang, k in sorted(n_dup.items()):
        add(
            "warning",
            iname,
            None,
            text_field,
            f"{k} of {n_lang[lang]} {lang} items repeat the {text_field} of an earlier item "
            f"({n_lang[lang] - k} distinct texts): identical texts get identical vectors, so a query "
            "whose nearest text is one of them gets the first such item (lowest index in the sample) "
            "and its image",
        )

    # images
    item_images = {str(x).strip() for x in items["image_id"]} - {""}
    images_csv = root / "images.csv"
    feat_dir = root / "features"
    feature_ids: set[str] | None = None
    unreadable_ids = False  # a features/*.ids.txt that cannot be read: its ids are unknown
    if feat_dir.is_dir():
        feature_ids = set()
        for ids_txt in sorted(feat_dir.glob("*.ids.txt")):
            rel = f"features/{ids_txt.name}"
            try:
                ids = read_feature_ids(ids_txt)
            except InputError as exc:
                add("error", rel, None, None, _without_path(exc, ids_txt))
                unreadable_ids = True
                continue
            npy = ids_txt.with_name(ids_txt.name[: -len(".ids.txt")] + ".npy")
            if not npy.is_file():
                add("error", f"features/{npy.name}", None, None, f"missing (needed for {rel})")
            else:
                try:
                    arr = np.load(npy, mmap_mode="r", allow_pickle=False)
                    if arr.ndim != 2 or arr.shape[0] != len(ids):
                        add(
                            "error",
                            f"features/{npy.name}",
                            None,
                            None,
                            f"shape {arr.shape}, expected ({len(ids)}, d) to match {rel}",
                        )
                    else:
                        bad = nonfinite_rows(arr)
                        if len(bad):
                            first = [int(i) for i in bad[:5]]
                            add(
                                "error",
                                f"features/{npy.name}",
                                None,
                                None,
                                f"{len(bad)} of {arr.shape[0]} rows contain NaN or inf: rows {first}"
                                f"{' ...' if len(bad) > 5 else ''} (0-based; image ids {[ids[i] for i in first]})",
                            )
                except Exception as exc:  # noqa: BLE001
                    add("error", f"features/{npy.name}", None, None, f"cannot be read ({exc})")
            feature_ids |= set(ids)
    table_ids: set[str] | None = None
    # the paths the dataset refers to (a link among them is judged at the row naming it)
    referenced: list[str] = ["dataset.json", iname, "images.csv", "features"]
    if images_csv.is_file():
        table_ids = set()
        try:
            imgs = read_table(images_csv, "image table")
        except InputError as exc:
            add("error", "images.csv", None, None, _without_path(exc, images_csv))
            imgs = None
        if imgs is not None:
            missing = [c for c in ("image_id", "path") if c not in imgs.columns]
            if missing:
                add("error", "images.csv", 1, ",".join(missing), "missing column(s); expected image_id, path")
            else:
                first: dict[str, int] = {}
                img_lines = _record_lines(images_csv, len(imgs))
                for idx, rec in enumerate(imgs.itertuples(index=False)):
                    row = img_lines[idx]
                    iid, rel = str(rec.image_id).strip(), str(rec.path).strip()
                    if not iid:
                        add("error", "images.csv", row, "image_id", "empty")
                        continue
                    if iid in first:
                        add(
                            "error",
                            "images.csv",
                            row,
                            "image_id",
                            f"duplicate image_id {iid!r}; first at row {first[iid]}",
                        )
                        continue
                    first[iid] = row
                    table_ids.add(iid)
                    if not rel:
                        add("error", "images.csv", row, "path", "empty")
                        continue
                    referenced.append(rel)
                    p, why = _inside(root, rel)
                    if p is None:
                        add("error", "images.csv", row, "path", str(why))
                        continue
                    if not p.is_file():
                        add("error", "images.csv", row, "path", f"image file {rel!r} not found")
                        continue
                    if check_images:
                        err = image_error(p)
                        if err:
                            add("error", "images.csv", row, "path", f"unreadable image {rel!r} ({err})")
                unused = sorted(table_ids - item_images)
                if unused:
                    add(
                        "warning",
                        "images.csv",
                        None,
                        "image_id",
                        f"{len(unused)} image(s) used by no item (first: {unused[:3]})",
                    )
    # the files a copy of the dataset holds: nothing outside the root, no symlink loop
    for name in ("dataset.json", iname, "images.csv", "features"):
        if (root / name).exists() or (root / name).is_symlink():
            _p, why = _inside(root, name)
            if why:
                add("error", name, None, None, why)
    if feat_dir.is_dir():
        for ids_txt in sorted(feat_dir.glob("*.ids.txt")):
            for rel in (f"features/{ids_txt.name}", f"features/{ids_txt.name[: -len('.ids.txt')]}.npy"):
                referenced.append(rel)
                _p, why = _inside(root, rel)
                if why:
                    add("error", rel, None, None, why)
    for rel in _outside_links(root):
        if any(_under(ref, rel) for ref in referenced):
            continue  # referenced: refused where it is named (the row or file above)
        add("warning", rel, None, None, "a link to outside the dataset root; not referenced, so never copied or read")
    if table_ids is None and feature_ids is None:
        add("warning", ".", None, None, "no images.csv and no features/: image-pivoted metrics need images")
    elif not unreadable_ids:  # an unreadable ids file is the error: every image would look missing
        available = (table_ids or set()) | (feature_ids or set())
        first_row: dict[str, int] = {}
        for idx, iid in enumerate(items["image_id"]):
            iid = str(iid).strip()
            if iid and iid not in available and iid not in first_row:
                first_row[iid] = lines[idx]
        for iid, row in first_row.items():
            add("error", iname, row, "image_id", f"image {iid!r} has no entry in images.csv or features/")
    return probs


def _under(ref: str, link: str) -> bool:
    """Whether the dataset-relative path ``ref`` is ``link`` or lies below it."""
    parts = [p for p in Path(ref.replace("\\", "/")).parts if p not in ("", ".")]
    link_parts = list(Path(link).parts)
    return parts[: len(link_parts)] == link_parts


def _outside_links(root: Path) -> list[str]:
    """Links under ``root`` (not followed) that point outside it or into a loop."""
    import os

    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            if p.is_symlink():
                rel = str(p.relative_to(root))
                if _inside(root, rel)[0] is None:
                    out.append(rel)
    return sorted(out)


def _without_path(exc: InputError, path: Path) -> str:
    """The message of a reader's InputError without its leading ``<path>: `` (Problem names the file)."""
    msg = str(exc)
    prefix = f"{path}: "
    return msg[len(prefix) :] if msg.startswith(prefix) else msg


def image_error(path: Path) -> str | None:
    """Why ``path`` is not a readable image (PIL's verify: a 0-byte file, text named .jpg), or None."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None
