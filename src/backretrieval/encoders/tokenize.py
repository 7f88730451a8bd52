"""The one word tokeniser of every word-level path (fastText family, FreeDict, MUSE/RCSLS, GloVe).

:func:`tokenize` lowercases (after NFKC) and keeps maximal runs of Unicode letters, marks and
digits, so combining marks (Arabic harakat, Devanagari vowel signs) stay inside their word and
punctuation, symbols, ``_`` and spaces separate words. That rule needs spaces between words.
Languages written without them are first cut into words by a real segmenter, chosen by
language and loaded on first use:

========  =======================================  ==================================
language  segmenter                                 install
========  =======================================  ==================================
ja        MeCab via ``fugashi`` + UniDic-lite       ``pip install fugashi unidic-lite``
zh        ``jieba`` (precise mode, HMM for unknown)  ``pip install jieba``
th        PyThaiNLP ``newmm`` (dictionary-based)    ``pip install pythainlp``
========  =======================================  ==================================

(all in the project's ``models`` extra). Every segment then goes through the rule above, so
punctuation segments (「」。) disappear. A missing package raises
:class:`~backretrieval.errors.ModelUnavailableError` naming it. Other languages written without
spaces (Khmer, Lao, Burmese, Tibetan) have no segmenter here and raise the same error rather
than returning a whole phrase as one token. Without a language (``lang=None``) the plain rule
is used. :func:`tokenizer_signature` names the segmenter and its version for cache keys.

NFKC has one compatibility decomposition that breaks Thai words: the vowel SARA AM (ำ, U+0E33)
becomes NIKHAHIT + SARA AA (ํา), and the segmenter then cuts ผู้ชายกำลัง into ผู้/ชา/ยก/ํา/ลัง.
For Thai the pair is put back together after NFKC (:data:`_RECOMPOSE`), so the segmenter sees
the text as written (ผู้ชาย/กำลัง) and the tokens keep the usual spelling of ำ.
"""

from __future__ import annotations

import functools
import logging
import os
import unicodedata
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

from ..errors import ModelUnavailableError

__all__ = ["SEGMENTED_LANGUAGES", "TOKENIZER_VERSION", "normalize_lang", "tokenize", "tokenizer_signature"]

#: Bump when the rule or the use of a segmenter changes what comes out (part of cache keys);
#: a change confined to one language bumps that language's entry in ``_LANG_VERSION`` instead.
TOKENIZER_VERSION = "1"

#: Per-language rule version, where a language's tokens changed after TOKENIZER_VERSION "1":
#: "th": SARA AM recomposed after NFKC (before, NFKC split it and broke words).
_LANG_VERSION: dict[str, str] = {"th": "2"}

#: After NFKC, (decomposed pair -> the character as written) per language: NFKC's compatibility
#: decomposition of Thai SARA AM (U+0E33 -> U+0E4D U+0E32) undone before segmenting.
_RECOMPOSE: dict[str, tuple[tuple[str, str], ...]] = {"th": (("\u0e4d\u0e32", "\u0e33"),)}

#: language -> (segmenter description, PyPI packages it needs)
SEGMENTED_LANGUAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ja": ("MeCab (fugashi) with UniDic-lite", ("fugashi", "unidic-lite")),
    "zh": ("jieba", ("jieba",)),
    "th": ("PyThaiNLP newmm", ("pythainlp",)),
}

#: written without spaces between words, but no segmenter is supported here
_NO_SEGMENTER = {"km": "Khmer", "lo": "Lao", "my": "Burmese", "bo": "Tibetan"}

#: ISO 639-3 / macrolanguage codes of the languages above -> the ISO 639-1 code used here
_ALIASES = {
    "jpn": "ja",
    "zho": "zh",
    "chi": "zh",
    "cmn": "zh",
    "tha": "th",
    "khm": "km",
    "lao": "lo",
    "mya": "my",
    "bur": "my",
    "bod": "bo",
    "tib": "bo",
}


def normalize_lang(lang: str | None) -> str | None:
    """``'ja'`` for ``'ja'``, ``'JA-jp'``, ``'jpn'``, ``'zh_Hans'``...; None stays None."""
    if lang is None:
        return None
    base = str(lang).strip().lower().replace("_", "-").split("-", 1)[0]
    return _ALIASES.get(base, base)


def _rule(text: str) -> list[str]:
    return "".join(c if unicodedata.category(c)[0] in "LMN" else " " for c in text).split()


def _missing(lang: str, exc: Exception) -> ModelUnavailableError:
    what, pkgs = SEGMENTED_LANGUAGES[lang]
    return ModelUnavailableError(
        f"tokenising language {lang!r} needs a word segmenter ({what}), which could not be "
        f"loaded ({exc}); install it with `pip install {' '.join(pkgs)}` (part of the "
        "project's 'models' extra)"
    )


def _japanese() -> Callable[[str], list[str]]:
    # UniDic-lite named explicitly, so an installed full `unidic` package cannot change the words
    import fugashi  # type: ignore[import-not-found]
    import unidic_lite  # type: ignore[import-not-found]

    d = unidic_lite.DICDIR
    tagger = fugashi.Tagger(f'-d "{d}" -r "{os.path.join(d, "mecabrc")}"')
    return lambda text: [w.surface for w in tagger(text)]


def _chinese() -> Callable[[str], list[str]]:
    import jieba  # type: ignore[import-not-found]

    jieba.setLogLevel(logging.WARNING)  # its dictionary loading logs at DEBUG to stderr
    tok = jieba.Tokenizer()
    return lambda text: tok.lcut(text, cut_all=False, HMM=True)


def _thai() -> Callable[[str], list[str]]:
    from pythainlp.tokenize import word_tokenize  # type: ignore[import-not-found]

    return lambda text: word_tokenize(text, engine="newmm", keep_whitespace=False)


_LOADERS: dict[str, Callable[[], Callable[[str], list[str]]]] = {
    "ja": _japanese,
    "zh": _chinese,
    "th": _thai,
}


@functools.cache
def _segmenter(lang: str) -> Callable[[str], list[str]]:
    try:
        return _LOADERS[lang]()
    except (ImportError, RuntimeError, OSError) as exc:  # fugashi raises RuntimeError without a dictionary
        raise _missing(lang, exc) from exc


def _check_supported(lang: str) -> None:
    if lang in _NO_SEGMENTER:
        raise ModelUnavailableError(
            f"language {lang!r} ({_NO_SEGMENTER[lang]}) is written without spaces between words "
            "and no word segmenter for it is supported here; word-level encoders would see "
            f"whole phrases as single tokens. Supported segmented languages: "
            f"{sorted(SEGMENTED_LANGUAGES)}; use a sentence-level encoder for {lang!r}"
        )


def tokenize(text: str, lang: str | None = None) -> list[str]:
    """Lowercased word tokens of ``text`` in language ``lang`` (see the module docstring).

    ``tokenize("Ein Mann, der läuft!", "de") == ["ein", "mann", "der", "läuft"]``;
    ``tokenize("猫がソファの上で寝ている。", "ja")`` gives 猫 / が / ソファ / の / 上 / で / 寝 / て / いる.
    """
    text = unicodedata.normalize("NFKC", text).lower()
    code = normalize_lang(lang)
    if code is None:
        return _rule(text)
    _check_supported(code)
    for decomposed, composed in _RECOMPOSE.get(code, ()):
        text = text.replace(decomposed, composed)
    if code not in SEGMENTED_LANGUAGES:
        return _rule(text)
    return [t for seg in _segmenter(code)(text) for t in _rule(seg)]


def _pkg_version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "missing"


def tokenizer_signature(lang: str | None) -> str:
    """What decides the tokens of ``lang``: the rule version, plus the segmenter packages and
    their versions for segmented languages (e.g. ``'1+fugashi==1.5.2+unidic-lite==1.0.8'``)."""
    code = normalize_lang(lang)
    if code is not None:
        _check_supported(code)
    rule = _LANG_VERSION.get(code, TOKENIZER_VERSION) if code is not None else TOKENIZER_VERSION
    if code not in SEGMENTED_LANGUAGES:
        return rule
    pkgs = SEGMENTED_LANGUAGES[code][1]
    return "+".join([rule, *(f"{p}=={_pkg_version(p)}" for p in pkgs)])
