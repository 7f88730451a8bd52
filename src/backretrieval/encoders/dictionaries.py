"""Bilingual word dictionaries from Debian's FreeDict packages (dictd format).

FreeDict dictionaries are installed by ``apt-get install dict-freedict-<src>-<tgt>`` as
``/usr/share/dictd/freedict-<src>-<tgt>.index`` + ``.dict.dz``. The ``.index`` has one line per
headword: ``headword<TAB>offset<TAB>length`` (offset/length in dictd's base64 digits) into the
uncompressed ``.dict`` text; ``.dict.dz`` is dictzip, i.e. a valid gzip file.

An article looks like (eng-deu)::

    dog /dˈɒɡ/
    Hund <masc> [zool.]
          "train a dog"  - einen Hund abrichten
       Synonym: {dawg}
     see: {dogs}

or (eng-fra) ``man /mein/\\n1. être humain, homme\\n2. mâle``. We keep the first line's headword
and the translation lines (not examples, notes, synonyms or cross references), strip labels
(``[zool.]``, ``<masc>``, ``(...)``, ``/pron/``, sense numbers), split on ``,``/``;`` and keep
*single-token* words on both sides (token = :func:`backretrieval.encoders.tokenize.tokenize` of the side's
language, so Japanese/Chinese/Thai entries are segmented as the corpus is),
lowercased, since the seed dictionaries align word vectors.

:func:`select_seed_pairs` picks the graded seed dictionaries (1K ⊂ 3K ⊂ 5K, Glavaš et al. 2019)
from those pairs, preferring words frequent in the training corpus.
"""

from __future__ import annotations

import functools
import gzip
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .tokenize import SEGMENTED_LANGUAGES, normalize_lang, tokenize  # tokenize: also re-exported

DEFAULT_DICT_DIR = Path("/usr/share/dictd")

#: ISO 639-1 → the ISO 639-3 codes FreeDict uses in file and package names.
ISO3 = {
    "af": "afr",
    "ar": "ara",
    "bg": "bul",
    "cs": "ces",
    "cy": "cym",
    "da": "dan",
    "de": "deu",
    "el": "ell",
    "en": "eng",
    "eo": "epo",
    "es": "spa",
    "fi": "fin",
    "fr": "fra",
    "ga": "gle",
    "hi": "hin",
    "hr": "hrv",
    "hu": "hun",
    "id": "ind",
    "is": "isl",
    "it": "ita",
    "ja": "jpn",
    "la": "lat",
    "lt": "lit",
    "nl": "nld",
    "no": "nor",
    "pl": "pol",
    "pt": "por",
    "ru": "rus",
    "sk": "slk",
    "sl": "slv",
    "sr": "srp",
    "sv": "swe",
    "sw": "swh",
    "tr": "tur",
}

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_SKIP_PREFIXES = ('"', "note:", "synonym:", "synonyms:", "see:", "see also:", "antonym:", "antonyms:")
_BRACKETS = re.compile(r"\[[^\]]*\]|<[^>]*>|\([^)]*\)|\{[^}]*\}|/[^/\n]*/")
_SENSE_NO = re.compile(r"(?:^|(?<=\s))\d+\.\s+")
_HEAD_SPLIT = re.compile(r"\s+(?=[/<(\[])")


def iso3(lang: str) -> str:
    """FreeDict's 3-letter code for an ISO 639-1 (or already 639-3) language code."""
    lang = lang.strip().lower()
    if lang in ISO3:
        return ISO3[lang]
    if re.fullmatch(r"[a-z]{3}", lang):
        return lang
    raise InputError(
        f"language {lang!r}: no FreeDict code known; use an ISO 639-3 code (e.g. 'deu') or one of {sorted(ISO3)}"
    )


def package_name(src: str, tgt: str) -> str:
    return f"dict-freedict-{iso3(src)}-{iso3(tgt)}"


def _b64(s: str) -> int:
    v = 0
    for c in s:
        if c not in _B64:
            raise ValueError(f"bad dictd base64 digit {c!r}")
        v = v * 64 + _B64[c]
    return v


def _dict_data_path(dict_dir: Path, stem: str) -> Path | None:
    for suffix in (".dict.dz", ".dict"):
        p = dict_dir / f"{stem}{suffix}"
        if p.is_file():
            return p
    return None


def read_dictd(index_path: Path, data_path: Path, headwords: Collection[str] | None = None) -> list[tuple[str, str]]:
    """(index headword, article text) for every article of a dictd dictionary, file order.

    Metadata entries (``00databaseinfo`` …) are skipped; an article referenced by several
    index lines is returned once. ``headwords`` (lowercased words) keeps only articles whose
    index headword, lowercased, is one of them (a fast pre-filter).
    """
    opener = gzip.open if data_path.name.endswith(".dz") or data_path.name.endswith(".gz") else open
    try:
        with opener(data_path, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError) as exc:
        raise InputError(f"{data_path}: cannot read dictd data ({exc})") from exc
    out: list[tuple[str, str]] = []
    seen: set[tuple[int, int]] = set()
    with open(index_path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                if line.strip():
                    raise InputError(f"{index_path}: line {lineno}: expected 'headword<TAB>offset<TAB>length'")
                continue
            head = parts[0]
            if head.startswith("00database") or head.startswith("00-database"):
                continue
            try:
                off, length = _b64(parts[1]), _b64(parts[2])
            except ValueError as exc:
                raise InputError(f"{index_path}: line {lineno}: {exc}") from exc
            if headwords is not None and unicodedata.normalize("NFKC", head).lower() not in headwords:
                continue
            if (off, length) in seen:
                continue
            seen.add((off, length))
            if off + length > len(data):
                raise InputError(
                    f"{index_path}: line {lineno}: article at {off}+{length} lies past the end "
                    f"of {data_path.name} ({len(data)} bytes)"
                )
            out.append((head, data[off : off + length].decode("utf-8", errors="replace")))
    return out


def _single_word(item: str, lang: str | None = None) -> str | None:
    norm = unicodedata.normalize("NFKC", item).lower()
    # fast path: isalnum() chars are a subset of the L/M/N token chars (not for languages
    # whose words are found by a segmenter: there one alphanumeric run can be several words)
    if norm.isalnum() and normalize_lang(lang) not in SEGMENTED_LANGUAGES:
        return norm
    toks = tokenize(norm, lang)
    return toks[0] if len(toks) == 1 else None


def parse_article(article: str) -> tuple[str, list[str]]:
    """(headword, translations) of one article; both raw strings (not yet tokenised)."""
    lines = article.split("\n")
    head = _HEAD_SPLIT.split(lines[0].strip(), maxsplit=1)[0].strip()
    translations: list[str] = []
    for line in lines[1:]:
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        if indent >= 3 or stripped.lower().startswith(_SKIP_PREFIXES):
            continue
        # labels end an item too ("Straße <fem>Str." = "Straße" + abbreviation "Str.")
        text = _BRACKETS.sub(",", stripped)
        text = _SENSE_NO.sub(" ", text)
        for item in re.split(r"[,;]", text):
            item = item.strip()
            if item:
                translations.append(item)
    return head, translations


def parse_dictd_pairs(
    index_path: Path,
    data_path: Path,
    headwords: Collection[str] | None = None,
    head_lang: str | None = None,
    trans_lang: str | None = None,
) -> list[tuple[str, str]]:
    """Sorted unique single-word (headword, translation) pairs of one dictd dictionary.

    ``headwords``: only articles whose index headword is one of these (see :func:`read_dictd`).
    ``head_lang``/``trans_lang``: the languages of the two sides, for :func:`tokenize`.
    """
    pairs: set[tuple[str, str]] = set()
    for _, article in read_dictd(index_path, data_path, headwords):
        head, translations = parse_article(article)
        h = _single_word(head, head_lang)
        if h is None:
            continue
        for t in translations:
            w = _single_word(t, trans_lang)
            if w is not None:
                pairs.add((h, w))
    return sorted(pairs)


@functools.lru_cache(maxsize=16)
def _cached_pairs(
    index_path: str,
    data_path: str,
    _mtime: float,
    _size: int,
    headwords: frozenset[str] | None,
    head_lang: str | None = None,
    trans_lang: str | None = None,
) -> tuple[tuple[str, str], ...]:
    return tuple(parse_dictd_pairs(Path(index_path), Path(data_path), headwords, head_lang, trans_lang))


def load_freedict_pairs(
    src: str,
    tgt: str,
    dict_dir: Path = DEFAULT_DICT_DIR,
    vocab: tuple[Collection[str], Collection[str]] | None = None,
) -> list[tuple[str, str]]:
    """Sorted unique single-word ``(src_word, tgt_word)`` pairs, lowercased.

    Uses ``freedict-<src>-<tgt>`` and ``freedict-<tgt>-<src>`` (reversed) where installed, the
    union of both. ``src``/``tgt`` are ISO 639-1 (``en``) or 639-3 (``eng``) codes.
    ``vocab=(src_words, tgt_words)`` keeps only pairs with both words in them and skips the
    other articles unparsed (much faster for the 460K-headword eng-deu).
    Raises :class:`InputError` naming the Debian package to install when neither exists.
    """
    vs = frozenset(vocab[0]) if vocab is not None else None
    vt = frozenset(vocab[1]) if vocab is not None else None
    s3, t3 = iso3(src), iso3(tgt)
    if s3 == t3:
        raise InputError(f"load_freedict_pairs: source and target language are both {src!r}")
    dict_dir = Path(dict_dir)
    pairs: set[tuple[str, str]] = set()
    found = []
    for a, b, flip in ((s3, t3, False), (t3, s3, True)):
        stem = f"freedict-{a}-{b}"
        index = dict_dir / f"{stem}.index"
        data = _dict_data_path(dict_dir, stem)
        if not index.is_file() or data is None:
            continue
        found.append(stem)
        st = data.stat()
        heads = vt if flip else vs
        for h, w in _cached_pairs(str(index), str(data), st.st_mtime, st.st_size, heads, a, b):
            pair = (w, h) if flip else (h, w)
            if vocab is None or (pair[0] in vs and pair[1] in vt):  # type: ignore[operator]
                pairs.add(pair)
    if not found:
        raise InputError(
            f"no FreeDict dictionary for {src}-{tgt} in {dict_dir} (looked for "
            f"freedict-{s3}-{t3}.index/.dict.dz and freedict-{t3}-{s3}.index/.dict.dz); install "
            f"one with `apt-get install {package_name(src, tgt)}` or "
            f"`apt-get install {package_name(tgt, src)}` (Debian/Ubuntu; "
            f"`apt-cache search freedict` lists them)"
        )
    return sorted(pairs)


@dataclass(frozen=True)
class SeedDictionary:
    """A seed dictionary of (src_word, tgt_word) pairs; ``size`` may be < ``requested``."""

    pairs: tuple[tuple[str, str], ...]
    requested: int
    available: int  # pairs with both words in the vocabularies (before the size cut)

    @property
    def size(self) -> int:
        return len(self.pairs)

    @property
    def truncated(self) -> bool:
        return self.size < self.requested


def rank_seed_pairs(
    pairs: Iterable[tuple[str, str]],
    src_counts: Mapping[str, int],
    tgt_counts: Mapping[str, int],
    max_per_word: int = 2,
) -> list[tuple[str, str]]:
    """Dictionary pairs with both words in the vocabularies, most frequent first.

    A pair's frequency is the smaller of its two relative corpus frequencies (a pair is as
    frequent as its rarer word); ties break by source then target word, so the order is
    deterministic. Each word keeps at most ``max_per_word`` translations (the most frequent),
    which stops very polysemous function words from filling the dictionary. Every seed
    dictionary is a prefix of this list, so smaller ones are nested in bigger ones.
    """
    if max_per_word < 1:
        raise InputError(f"max_per_word must be >= 1, got {max_per_word}")
    n_src = max(1, sum(src_counts.values()))
    n_tgt = max(1, sum(tgt_counts.values()))
    cand = sorted(
        {(s, t) for s, t in pairs if src_counts.get(s, 0) > 0 and tgt_counts.get(t, 0) > 0},
        key=lambda p: (-min(src_counts[p[0]] / n_src, tgt_counts[p[1]] / n_tgt), p[0], p[1]),
    )
    used_s: dict[str, int] = {}
    used_t: dict[str, int] = {}
    out = []
    for s, t in cand:
        if used_s.get(s, 0) >= max_per_word or used_t.get(t, 0) >= max_per_word:
            continue
        used_s[s] = used_s.get(s, 0) + 1
        used_t[t] = used_t.get(t, 0) + 1
        out.append((s, t))
    return out


def select_seed_pairs(
    pairs: Iterable[tuple[str, str]],
    src_counts: Mapping[str, int],
    tgt_counts: Mapping[str, int],
    size: int,
    max_per_word: int = 2,
) -> SeedDictionary:
    """The first ``size`` pairs of :func:`rank_seed_pairs` (nested across sizes)."""
    if size < 1:
        raise InputError(f"seed dictionary size must be >= 1, got {size}")
    ranked = rank_seed_pairs(pairs, src_counts, tgt_counts, max_per_word=max_per_word)
    return SeedDictionary(pairs=tuple(ranked[:size]), requested=size, available=len(ranked))
