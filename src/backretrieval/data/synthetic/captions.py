"""SYNTHETIC captions: every language written independently from the scene with its own
random stream (synonyms, templates, word order, optional details), see the package docstring.

This module holds the registry of writers and :func:`describe_scene`; the writers live in one
module per language family (:mod:`.captions_germanic` en/de, :mod:`.captions_romance` fr/es,
:mod:`.captions_slavic` ru, :mod:`.captions_semitic` ar, :mod:`.captions_austronesian` id), on
the shared helpers of :mod:`.captions_base`. A new language is one writer there and one line in
``_WRITERS`` and ``SUPPORTED_LANGUAGES``."""

from __future__ import annotations

import random
from collections.abc import Callable

from ...errors import InputError
from .captions_austronesian import _id
from .captions_base import _join, _sent
from .captions_germanic import _de, _en
from .captions_romance import _es, _fr
from .captions_semitic import _ar
from .captions_slavic import _ru
from .scenes import _check_scene, _rng

SUPPORTED_LANGUAGES = ("en", "de", "fr", "es", "ru", "ar", "id")


_WRITERS: dict[str, Callable[[dict, random.Random], tuple[str, str]]] = {
    "en": _en,
    "de": _de,
    "fr": _fr,
    "es": _es,
    "ru": _ru,
    "ar": _ar,
    "id": _id,
}


def describe_scene(scene: dict, lang: str, seed: int | str = 0) -> tuple[str, str]:
    """(title, body) describing ``scene`` in ``lang``; different seeds give different paraphrases.

    Titles are short noun phrases; bodies are 2-4 sentences. Details (size, position, the second
    object group, a filler sentence) are included or omitted at random per call.
    """
    if lang not in _WRITERS:
        raise InputError(
            f"language {lang!r} is not supported by the synthetic generator; "
            f"supported: {', '.join(SUPPORTED_LANGUAGES)}"
        )
    _check_scene(scene, "to describe")
    title, body = _WRITERS[lang](scene, _rng("text", seed, lang))
    if len(body) <= len(title):  # never expected; keeps the "title shorter than body" contract
        body = _join(body, _sent(title))
    return title, body
