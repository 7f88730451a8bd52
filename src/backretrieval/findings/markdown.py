"""The Markdown the findings write: tables (:func:`markdown_table`) and estimates with their
intervals (:func:`fmt_ci`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def markdown_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub Markdown table of ``df`` (floats with ``digits`` decimals, NaN as n/a)."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "n/a" if not math.isfinite(v) else f"{v:.{digits}f}"
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body]) + "\n"


def fmt_ci(est: float | None, low: float | None, high: float | None, digits: int = 3) -> str:
    """``est [low, high]`` (``n/a`` for a missing estimate)."""
    if est is None or not math.isfinite(est):
        return "n/a"
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return f"{est:.{digits}f}"
    return f"{est:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
