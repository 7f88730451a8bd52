"""Text embeddings computed elsewhere (``type: precomputed``): looked up by item id, never encoded.

Two forms of the spec::

    mine:  {type: precomputed, npy: emb.npy, ids: emb.ids.txt}          # one matrix, all languages
    mine:  {type: precomputed, npy: {en: en.npy, de: de.npy},           # one matrix per language
                               ids: {en: en.ids.txt, de: de.ids.txt}}

Row ``i`` of a ``.npy`` matrix (2-D, finite, any float dtype) is the embedding of the text named
by line ``i`` of its ids file (UTF-8, blank lines skipped). A line is ``<item_id><TAB><lang>``
(the item ids and languages of the dataset's ``items.csv``); in a per-language file a line may
also be a bare ``<item_id>``. Which text field was embedded is the user's business: the rows
are used for whatever ``text_field`` is evaluated.

Every problem is an :class:`~backretrieval.errors.InputError` naming the file (and the row or
line): unreadable or non-2-D matrix, row count differing from the id count, NaN/inf rows,
duplicate or malformed ids, and item ids of the evaluated data missing from the files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._util.hashing import sha256_file
from ..errors import ConfigError, InputError
from .base import _Base

#: one embedding table: (lang, item_id) -> row, the matrix, and the files it came from
_Table = tuple[dict[tuple[str, str], int], np.ndarray, Path, Path]


def precomputed_files(enc_id: str, spec: dict) -> dict[str | None, tuple[Path, Path]]:
    """``{lang or None: (npy, ids)}`` of a spec (None: one matrix for every language).

    ConfigError naming the encoder if ``npy``/``ids`` are missing, of different forms, or name
    different languages. Files are not opened here.
    """
    npy, ids = spec.get("npy"), spec.get("ids")
    if npy is None or ids is None:
        raise ConfigError(
            f"encoder '{enc_id}': type precomputed needs `npy:` and `ids:` (paths, or "
            "mappings language -> path for one file per language)"
        )
    if isinstance(npy, str) and isinstance(ids, str):
        return {None: (Path(npy), Path(ids))}
    if isinstance(npy, dict) and isinstance(ids, dict):
        if set(npy) != set(ids) or not npy:
            raise ConfigError(
                f"encoder '{enc_id}': `npy:` and `ids:` must name the same languages "
                f"(npy: {sorted(npy)}, ids: {sorted(ids)})"
            )
        return {str(lang): (Path(npy[lang]), Path(ids[lang])) for lang in sorted(npy)}
    raise ConfigError(f"encoder '{enc_id}': `npy:` and `ids:` must both be paths or both be mappings language -> path")


class PrecomputedTextEncoder(_Base):
    """Embeddings read from ``.npy`` + ids files (see the module docstring); :meth:`lookup`
    returns the rows of given item ids in one language. :meth:`encode` is refused: the rows are
    keyed by item id, not by text. The fingerprint is a hash of the files' bytes."""

    type_name = "precomputed"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.files = precomputed_files(enc_id, spec)
        self._tables: dict[str | None, _Table] = {}
        self._fp: dict[str, Any] | None = None

    @property
    def languages(self) -> list[str] | None:
        """Languages with their own file (None: one file for all languages)."""
        return None if None in self.files else sorted(str(k) for k in self.files)

    def check_files(self) -> None:
        """Every named file exists (InputError naming the first that does not)."""
        for npy, ids in self.files.values():
            for p in (npy, ids):
                if not p.is_file():
                    raise InputError(f"{p}: file not found (precomputed embeddings of encoder '{self.id}')")

    def _fp_parts(self) -> dict[str, Any]:
        if self._fp is None:
            self.check_files()
            self._fp = {
                "type": self.type_name,
                "files": {
                    (lang or "*"): {"npy": sha256_file(npy), "ids": sha256_file(ids)}
                    for lang, (npy, ids) in sorted(self.files.items(), key=lambda kv: kv[0] or "")
                },
            }
        return self._fp

    def _table(self, lang: str) -> _Table:
        key: str | None = None if None in self.files else lang
        if key not in self.files:
            npy_map = {k: str(v[0]) for k, v in self.files.items()}
            raise InputError(
                f"encoder '{self.id}': no precomputed embeddings for language {lang!r} "
                f"(npy files given for {sorted(npy_map)})"
            )
        if key not in self._tables:
            self._tables[key] = _load_table(*self.files[key], lang=key)
        return self._tables[key]

    def lookup(self, lang: str, item_ids: list[str]) -> np.ndarray:
        """float32 rows of ``item_ids`` (texts in ``lang``), in the given order."""
        index, emb, npy, ids_path = self._table(lang)
        rows, missing = [], []
        for item in item_ids:
            r = index.get((lang, str(item)))
            if r is None:
                missing.append(str(item))
            else:
                rows.append(r)
        if missing:
            raise InputError(
                f"{ids_path}: {len(missing)} of the {len(item_ids)} {lang} item ids to embed are not listed "
                f"(first: {missing[:3]}); every evaluated text needs a row in {npy.name} and a line "
                f"'<item_id><TAB>{lang}' in {ids_path.name}"
            )
        return np.ascontiguousarray(np.asarray(emb[rows], dtype=np.float32))

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        raise ConfigError(
            f"encoder '{self.id}' is precomputed: its rows are looked up by item id "
            "(backretrieval.encoders.embed.embed_items), it cannot encode texts"
        )


def _load_table(npy: Path, ids_path: Path, lang: str | None) -> _Table:
    for p in (npy, ids_path):
        if not p.is_file():
            raise InputError(f"{p}: file not found (precomputed text embeddings)")
    try:
        emb = np.load(npy, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{npy}: cannot be read as a .npy matrix ({exc})") from exc
    if emb.ndim != 2 or not np.issubdtype(emb.dtype, np.number):
        raise InputError(
            f"{npy}: expected a 2-D numeric matrix (one row per text), got shape {emb.shape}, dtype {emb.dtype}"
        )
    index: dict[tuple[str, str], int] = {}
    from ..data.prepared import nonfinite_rows, read_text_utf8  # here: the encoder registry imports no pandas

    text = read_text_utf8(ids_path, "id list")
    row = 0
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) == 2 and parts[0].strip() and parts[1].strip():
            item, item_lang = parts[0].strip(), parts[1].strip()
            if lang is not None and item_lang != lang:
                raise InputError(
                    f"{ids_path}: line {line_no} is for language {item_lang!r}, but this file "
                    f"holds the {lang!r} embeddings"
                )
        elif len(parts) == 1 and lang is not None:
            item, item_lang = line, lang
        else:
            want = "'<item_id><TAB><lang>'" + (" or '<item_id>'" if lang is not None else "")
            why = "" if lang is not None else " (one matrix for all languages: each line names its language)"
            raise InputError(f"{ids_path}: line {line_no} is {raw!r}; expected {want}{why}")
        key = (item_lang, item)
        if key in index:
            raise InputError(f"{ids_path}: line {line_no}: item {item!r} ({item_lang}) is listed twice")
        index[key] = row
        row += 1
    if emb.shape[0] != row:
        raise InputError(
            f"{npy}: {emb.shape[0]} rows, but {ids_path.name} lists {row} ids; row i must be the embedding of id line i"
        )
    bad = nonfinite_rows(emb)
    if len(bad):
        first = [int(i) for i in bad[:5]]
        by_row = {r: k for k, r in index.items()}
        named = [f"{by_row[i][1]} ({by_row[i][0]})" for i in first]
        raise InputError(
            f"{npy}: {len(bad)} of {emb.shape[0]} rows contain NaN or inf: rows {first}"
            f"{' ...' if len(bad) > 5 else ''} (0-based; items {named}); embeddings must be finite"
        )
    return index, emb, npy, ids_path
