"""p-values and significance markers as printed in the tables."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import InputError


def format_p(p: float, digits: int = 3) -> str:
    """p-value for tables: ``"0.042"``, ``"<0.001"`` (below ``10**-digits``), ``"n/a"`` for NaN."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    p = float(p)
    if not (0.0 <= p <= 1.0):
        raise InputError(f"p: expected a p-value in [0, 1], got {p}")
    floor = 10.0 ** (-digits)
    if p < floor:
        return f"<{floor:.{digits}f}"
    return f"{p:.{digits}f}"


def significance_marker(p: float, levels: Sequence[float] = (0.05, 0.01, 0.001)) -> str:
    """``"*"`` per level that ``p`` is strictly below: with the defaults ``*`` p<.05, ``**``
    p<.01, ``***`` p<.001, ``""`` otherwise (and for NaN)."""
    if p is None or math.isnan(float(p)):
        return ""
    return "*" * sum(1 for lv in levels if float(p) < lv)
