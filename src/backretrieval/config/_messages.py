"""How a config check words its error: the field named (:func:`_fail`), a long value cut short
(:func:`_short`)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError


def _fail(source: str, field: str, msg: str, also: tuple[str, ...] = ()) -> None:
    """ConfigError ``<source>: field '<field>': <msg>``; ``also``: other fields the relation
    involves (a command-line override of any of them is named instead of the file)."""
    exc = ConfigError(f"{source}: field '{field}': {msg}")
    exc.fields = (field, *also)  # type: ignore[attr-defined]
    raise exc


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters with the full length said (a 10,000-character
    value is not repeated in a message)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(str(value))} characters)"
