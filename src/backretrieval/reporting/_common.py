"""Helpers shared by the tables and the figures. Light on purpose: the case study's training
job draws its loss curves with :mod:`.figures` and should not load SciPy for them."""

from __future__ import annotations


def direction_order(directions: list[str]) -> list[str]:
    """Directions in display order: those from English first, then the rest, each alphabetically."""
    return sorted(directions, key=lambda d: (d.split("-")[0] != "en", d))
