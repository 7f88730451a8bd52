"""Result types and input checks shared by the tests and the bootstrap functions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError

# --------------------------------------------------------------------------- result types


@dataclass(frozen=True)
class TestResult:
    """One hypothesis test. ``pvalue`` is two-sided; ``nan`` where the test is undefined."""

    __test__ = False  # not a pytest test class despite the name

    test: str
    statistic: float
    pvalue: float
    n: int
    effect_size: float | None = None
    effect_size_name: str | None = None
    df: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (for JSON/CSV), ``extra`` kept as a nested dict."""
        d = asdict(self)
        d["extra"] = dict(self.extra)
        return d


@dataclass(frozen=True)
class BootstrapCI:
    """Percentile bootstrap confidence interval of ``estimate`` (the statistic on the data)."""

    estimate: float
    low: float
    high: float
    confidence_level: float
    method: str
    n: int
    n_resamples: int
    seed: int
    n_valid_resamples: int | None = None  # for correlations: resamples with a defined value

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BootstrapDiff:
    """Paired bootstrap of ``mean(a) - mean(b)`` with a percentile CI and a two-sided p."""

    diff: float
    low: float
    high: float
    pvalue: float
    confidence_level: float
    n: int
    n_resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- validation


def _vector(x: ArrayLike, name: str, *, min_n: int = 1) -> NDArray[np.float64]:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: expected a 1-D array of numbers ({exc})") from exc
    if arr.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size < min_n:
        raise InputError(f"{name}: expected at least {min_n} values, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name}: contains NaN or infinite values")
    return arr


def _same_length(a: NDArray[Any], b: NDArray[Any], name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise InputError(f"{name_a} and {name_b} must be paired (same length), got {a.size} and {b.size}")


def _hits(x: ArrayLike, name: str) -> NDArray[np.bool_]:
    arr = _vector(x, name)
    if not np.all((arr == 0) | (arr == 1)):
        bad = arr[(arr != 0) & (arr != 1)][:3]
        raise InputError(f"{name}: expected per-query hits coded 0/1, found values {bad.tolist()}")
    return arr.astype(bool)


def _alpha(alpha: float) -> float:
    if not (0.0 < alpha < 1.0):
        raise InputError(f"alpha: expected a number in (0, 1), got {alpha}")
    return float(alpha)


def _n_resamples(B: int) -> int:
    if int(B) != B or B < 1:
        raise InputError(f"B (number of bootstrap resamples): expected a positive integer, got {B}")
    return int(B)
