"""Human study, reading the results: the sealed key (:func:`read_key`) and a ratings file (human or
SIMULATED: its encoding, separator and values checked, :func:`parse_ratings`), for the tally
(:mod:`.human_tally`). The rating material itself is made by :mod:`backretrieval.study.human_study`,
whose docstring describes the whole study."""

from __future__ import annotations

import hashlib
import io as _io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputError
from .human_study import KEY_FORMAT, RATER_RE, SIMULATED_RATER


def read_key(key_path: str | Path) -> tuple[dict[str, Any], str]:
    """The sealed key (validated) and the sha256 of its bytes."""
    p = Path(key_path)
    if not p.is_file():
        raise InputError(f"{p}: key file not found")
    raw = p.read_bytes()
    try:
        key = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{p}: not valid JSON ({exc})") from exc
    if not isinstance(key, dict) or key.get("format") != KEY_FORMAT:
        raise InputError(f"{p}: not a human-study key (field 'format' must be {KEY_FORMAT!r})")
    for field in ("model_names", "suggestions"):
        if field not in key:
            raise InputError(f"{p}: field {field!r} is required")
    for sid, ent in key["suggestions"].items():
        for field in ("query_id", "candidate_id", "models"):
            if field not in ent:
                raise InputError(f"{p}: suggestion {sid!r} lacks field {field!r}")
    return key, hashlib.sha256(raw).hexdigest()


#: Separators a spreadsheet may save a "CSV" with (comma; semicolon where the decimal mark is a
#: comma; tab for "Unicode text"). The ratings file's own is detected from its header line.
RATING_SEPARATORS = ",;\t"


def _decode_ratings(path: Path, raw: bytes) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with a byte-order mark ("Unicode text")
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: ratings file is damaged UTF-16 ({exc}); save it as 'CSV UTF-8'") from exc
    if b"\x00" in raw[:4096]:
        raise InputError(
            f"{path}: ratings file looks like UTF-16 without a byte-order mark (NUL bytes); "
            "save it as 'CSV UTF-8 (comma delimited)'"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: ratings file is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save it as 'CSV UTF-8 (comma delimited)'"
        ) from exc


def read_ratings_csv(path: Path) -> pd.DataFrame:
    """The ratings table: UTF-8 (or UTF-16 with a byte-order mark), separated by commas,
    semicolons or tabs (detected from the header line by :class:`csv.Sniffer`)."""
    import csv

    if not path.is_file():
        raise InputError(f"{path}: ratings file not found")
    text = _decode_ratings(path, path.read_bytes())
    header = text.split("\n", 1)[0]
    try:
        sep = csv.Sniffer().sniff(header, delimiters=RATING_SEPARATORS).delimiter
    except csv.Error:
        sep = ","
    try:
        df = pd.read_csv(_io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: cannot be read as CSV ({exc})") from exc
    for col in ("suggestion_id", "rating"):
        if col not in df.columns:
            seen = ", ".join(map(str, df.columns[:6]))
            raise InputError(
                f"{path}: missing column {col!r}; expected at least suggestion_id, rating separated by "
                f"commas (header read as: {seen})"
            )
    df["suggestion_id"] = df["suggestion_id"].str.strip()
    df["rating"] = df["rating"].str.strip()
    return df


_INT_RE = re.compile(r"^[+-]?\d+(\.0*)?$")


@dataclass(frozen=True)
class _Ratings:
    by_rater: dict[str, dict[str, int]]  # rater -> suggestion id -> rating
    key_verified: bool  # every row carried the key's sha256


def parse_ratings(
    df: pd.DataFrame, path: Path, key: dict[str, Any], key_sha: str, key_path: Path, allow_unverified_key: bool
) -> _Ratings:
    """Validate every row; raise one InputError listing the problems, else the ratings."""
    if "rater" not in df.columns:
        raise InputError(
            f"{path}: missing column 'rater' (the rater id of each row); expected columns "
            "suggestion_id, rating, rater, key_sha256"
        )
    problems: list[str] = []
    keyed = key["suggestions"]
    first_row: dict[tuple[str, str], int] = {}
    by_rater: dict[str, dict[str, int]] = {}
    raters = df["rater"].str.strip()
    # row i is the file's line i (the header is row 1), as validate-dataset numbers rows
    for i, (sid, raw, rater) in enumerate(zip(df["suggestion_id"], df["rating"], raters), start=2):
        where = f"row {i} (suggestion_id {sid!r}, rater {rater!r})"
        if not RATER_RE.match(rater):
            problems.append(f"{where}: rater id must be 1-64 letters, digits, '_', '.' or '-'")
            continue
        by_rater.setdefault(rater, {})
        if (rater, sid) in first_row:
            problems.append(f"{where}: duplicate suggestion_id for this rater (first at row {first_row[(rater, sid)]})")
            continue
        first_row[(rater, sid)] = i
        if sid not in keyed:
            problems.append(f"{where}: suggestion_id is not in the key")
            continue
        if raw == "":
            problems.append(f"{where}: no rating")
            continue
        if not _INT_RE.match(raw):
            hint = " (a decimal comma: write whole numbers, e.g. 3)" if re.match(r"^\d+,\d*$", raw) else ""
            problems.append(f"{where}: rating {raw!r} is not an integer 1-4{hint}")
            continue
        v = int(float(raw))
        if not 1 <= v <= 4:
            problems.append(f"{where}: rating {v} outside 1-4")
            continue
        by_rater[rater][sid] = v
    for rater in by_rater:
        missing = [sid for sid in keyed if (rater, sid) not in first_row]
        if missing:
            problems.append(
                f"rater {rater!r}: {len(missing)} suggestion(s) of the key have no row (missing rows), "
                f"e.g. {missing[:3]}"
            )
    if not by_rater and not problems:
        problems.append("no rating rows")
    if SIMULATED_RATER in by_rater and len(by_rater) > 1:
        problems.append(
            f"rater {SIMULATED_RATER!r} (the SIMULATED rater) mixed with human raters "
            f"{sorted(set(by_rater) - {SIMULATED_RATER})[:5]}; tally them separately"
        )
    hashes = df["key_sha256"].str.strip() if "key_sha256" in df.columns else pd.Series([""] * len(df))
    bad = sorted({h for h in hashes if h and h != key_sha})
    if bad:
        problems.append(
            f"column key_sha256 = {bad[0][:16]}... does not match the key's sha256 "
            f"{key_sha[:16]}... (ratings made for a different sheet)"
        )
    n_unchecked = int((hashes == "").sum())
    if n_unchecked and not allow_unverified_key:
        what = (
            "has no column key_sha256"
            if "key_sha256" not in df.columns
            else f"has {n_unchecked} row(s) without key_sha256"
        )
        problems.append(
            f"the ratings file {what}, so it cannot be checked against the key {key_path} "
            f"(sha256 {key_sha[:16]}...); if you are sure they belong together, pass "
            "--allow-unverified-key (backretrieval step human-tally) or set human_study.allow_unverified_key: true"
        )
    if problems:
        shown = "; ".join(problems[:10]) + (f"; ... and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise InputError(f"{path}: {len(problems)} problem(s), nothing tallied: {shown}")
    return _Ratings(by_rater=by_rater, key_verified=n_unchecked == 0)
