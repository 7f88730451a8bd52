"""Tests and intervals whose unit is a distinct item, for per-query outcomes of several
overlapping samples.

The seeds of one evaluation draw their N queries from the same items, so one item is often
queried several times (two or more seeds, both directions of a parallel pair). Its outcomes
are not independent: the item is as easy or as hard each time. A test that counts every query
as a new one (McNemar on the pooled hits) treats a re-drawn item as new evidence and rejects a
true null too often; a percentile interval over 3 seeds' means rests on 3 numbers. Here the
unit is the item:

* :func:`item_totals`: per item, the sum of its outcomes and how often it was queried.
* :func:`item_paired_test`: two encoders on the same queries. The estimate is the pooled
  difference ``mean(a) − mean(b)`` over the queries (what a table shows); the test flips the
  sign of each item's summed difference (a paired permutation test over items, the test of
  :func:`scipy.stats.permutation_test` with ``permutation_type="samples"``, here
  :func:`sign_flip_pvalue`: under the null the two encoders are exchangeable on every item),
  exact when the items with a nonzero difference are few, Monte Carlo otherwise; the interval
  is the item bootstrap below.
* :func:`item_bootstrap_ci`: the percentile interval of a pooled mean (or, with ``values_b``,
  of a pooled difference) under resampling items with replacement
  (:func:`scipy.stats.bootstrap`, the ratio Σ sums / Σ counts of the resampled items). Not
  given (NaN, with the reason in ``note``) with fewer than :data:`MIN_ITEMS` items or when
  every item has the same mean: a resampling interval is then no honest interval.

Rejection rates under a simulated null and coverages in the ``rank`` layouts:
benchmarks/bench_item_unit.py (benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats as st
from numpy.typing import ArrayLike

from ..errors import InputError
from ._common import _alpha, _n_resamples, _vector

#: fewest distinct items an item-bootstrap interval is given for
MIN_ITEMS = 20
#: default random sign patterns of the permutation test (cheap: one matrix product per 1,024)
DEFAULT_PERMUTATIONS = 9999
#: default bootstrap resamples
DEFAULT_RESAMPLES = 1000


@dataclass(frozen=True)
class ItemTotals:
    """Per distinct item (in order of first appearance): the key, the sum of its outcomes and
    the number of its queries."""

    keys: list[Hashable]
    sums: np.ndarray
    counts: np.ndarray

    @property
    def n_items(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class ItemInterval:
    """A pooled mean (or difference) with its item-bootstrap interval; ``low``/``high`` NaN and
    ``note`` saying why where no honest interval exists."""

    estimate: float
    low: float
    high: float
    confidence_level: float
    n_items: int
    n_queries: int
    n_resamples: int
    seed: int
    method: str
    note: str = ""

    @property
    def has_interval(self) -> bool:
        return bool(np.isfinite(self.low) and np.isfinite(self.high))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ItemPairedTest:
    """:func:`item_paired_test`'s result. ``diff`` = mean(a) − mean(b) over the queries,
    ``low``/``high`` its item-bootstrap interval (NaN where none, see ``note``), ``pvalue`` the
    two-sided paired permutation p over items; ``n_items`` distinct items, ``n_queries``
    queries, ``n_items_differing`` items whose summed difference is not 0; ``n10`` / ``n01``
    the queries only A / only B hit (0/1 outcomes; else None)."""

    diff: float
    low: float
    high: float
    pvalue: float
    confidence_level: float
    n_items: int
    n_queries: int
    n_items_differing: int
    n10: int | None
    n01: int | None
    n_resamples: int
    n_permutations: int
    exact: bool
    seed: int
    test: str = "paired permutation test over items (sign flips of each item's summed difference)"
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _keys(items: Sequence[Hashable] | ArrayLike, n: int) -> np.ndarray:
    keys = np.asarray(items, dtype=object) if not isinstance(items, np.ndarray) else items
    if keys.ndim != 1 or keys.shape[0] != n:
        raise InputError(f"items: expected one key per query ({n}), got shape {np.shape(keys)}")
    return keys


def item_totals(values: ArrayLike, items: Sequence[Hashable] | ArrayLike) -> ItemTotals:
    """Sum and count of ``values`` per distinct key of ``items`` (one key per value, e.g. the
    query's image id), items in order of first appearance."""
    v = _vector(values, "values")
    keys = _keys(items, v.size)
    codes, uniq = _codes(keys)
    sums = np.bincount(codes, weights=v, minlength=len(uniq))
    counts = np.bincount(codes, minlength=len(uniq)).astype(np.int64)
    return ItemTotals(uniq, sums, counts)


def _codes(keys: np.ndarray) -> tuple[np.ndarray, list[Hashable]]:
    """Integer code of every key (codes in order of first appearance) and the distinct keys.
    :func:`pandas.factorize` (a hash table in C: a Python dict took 20 ms per 25,000 queries,
    three times per test); a missing key (None, NaN) is a key of its own, not dropped."""
    codes, uniq = pd.factorize(keys, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), list(uniq.tolist() if hasattr(uniq, "tolist") else uniq)


def _ratio(s: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(s, axis=axis) / np.sum(c, axis=axis)


def _interval(
    sums: np.ndarray, counts: np.ndarray, B: int, seed: int, alpha: float, what: str
) -> tuple[float, float, str]:
    """(low, high, note) of the item-bootstrap percentile interval of Σ sums / Σ counts."""
    n = sums.size
    if n < MIN_ITEMS:
        return math_nan, math_nan, f"no interval: {n} distinct items (an item bootstrap needs at least {MIN_ITEMS})"
    means = sums / counts
    if np.all(means == means[0]):
        return math_nan, math_nan, f"no interval: every item has the same {what} ({means[0]:.3g})"
    res = st.bootstrap(
        (sums, counts),
        _ratio,
        paired=True,
        vectorized=True,
        n_resamples=B,
        confidence_level=1.0 - alpha,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high), ""


math_nan = float("nan")


#: rows of random signs drawn at once (bounds the memory of the Monte Carlo flips)
_FLIP_CHUNK = 1024


def sign_flip_pvalue(d: np.ndarray, B: int = DEFAULT_PERMUTATIONS, seed: int = 0) -> tuple[float, bool]:
    """Two-sided p of the paired permutation (sign-flip) test of Σ d: (p, exact).

    The same test as :func:`scipy.stats.permutation_test` with ``permutation_type="samples"``
    on the pairs (x_i, y_i), d_i = x_i − y_i, and the statistic Σ (x − y) (tests compare the
    two): every sign pattern when 2^len(d) <= B (p = share of patterns with |Σ ±d| >= |Σ d|),
    else B random patterns from ``default_rng(seed)``, p = (1 + #{|T*| >= |T|}) / (B + 1).
    Written as matrix products of random signs because scipy's paired resampler took 0.4 s
    per call at 256 items and about 9 s at 2,000 (a ranking makes tens of calls)."""
    d = np.asarray(d, dtype=np.float64)
    k = d.size
    if k == 0:
        return 1.0, True
    t = abs(float(d.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(d).sum()))  # sums of the same values in another order
    if 2**k <= B:
        signs = 1 - 2 * ((np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1)
        tstar = np.abs(signs @ d)
        return float(np.mean(tstar >= t - tol)), True
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, B, _FLIP_CHUNK):
        m = min(_FLIP_CHUNK, B - start)
        flips = 1.0 - 2.0 * rng.integers(0, 2, size=(m, k), dtype=np.int8)
        count += int(np.sum(np.abs(flips @ d) >= t - tol))
    return (1 + count) / (B + 1), False


def item_bootstrap_ci(
    values: ArrayLike,
    items: Sequence[Hashable] | ArrayLike,
    values_b: ArrayLike | None = None,
    *,
    B: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    alpha: float = 0.05,
) -> ItemInterval:
    """The pooled mean of ``values`` over the queries (or, with ``values_b`` paired to them, of
    ``values − values_b``) with the percentile interval of resampling the distinct ``items``
    with replacement (each resampled item brings all of its queries). ``items``: one key per
    query (e.g. its image id; a key shared across seeds and directions is one unit). No
    interval (NaN, ``note``) with fewer than :data:`MIN_ITEMS` items or when every item has the
    same mean."""
    v = _vector(values, "values")
    if values_b is not None:
        vb = _vector(values_b, "values_b")
        if vb.shape != v.shape:
            raise InputError(f"values and values_b must be paired (same length), got {v.size} and {vb.size}")
        v = v - vb
    B, alpha = _n_resamples(B), _alpha(alpha)
    tot = item_totals(v, items)
    low, high, note = _interval(tot.sums, tot.counts, B, seed, alpha, "difference" if values_b is not None else "mean")
    return ItemInterval(
        estimate=float(v.mean()),
        low=low,
        high=high,
        confidence_level=1.0 - alpha,
        n_items=tot.n_items,
        n_queries=int(v.size),
        n_resamples=B,
        seed=int(seed),
        method="percentile bootstrap over distinct items",
        note=note,
    )


def item_paired_test(
    values_a: ArrayLike,
    values_b: ArrayLike,
    items: Sequence[Hashable] | ArrayLike,
    *,
    B: int = DEFAULT_RESAMPLES,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    alpha: float = 0.05,
) -> ItemPairedTest:
    """Two encoders' per-query outcomes (hits 0/1, reciprocal ranks, ...) on the same queries,
    compared with the distinct item as the unit.

    ``values_a[i]``, ``values_b[i]``: the outcomes of query i; ``items[i]``: its item's key
    (e.g. the query's image id), equal for the queries of one item in every seed and direction.
    Per item the difference is summed over its queries; the statistic is the sum over items
    (``n_queries · diff``) and the null distribution that of random sign flips per item
    (:func:`sign_flip_pvalue`, two-sided; exact when 2^(items with a nonzero difference) <=
    ``n_permutations``, else that many random flips, p >= 1/(n_permutations + 1)). The interval
    of ``diff``: :func:`item_bootstrap_ci` of the differences (``B`` resamples). Deterministic
    for a seed.
    """
    a = _vector(values_a, "values_a")
    b = _vector(values_b, "values_b")
    if a.shape != b.shape:
        raise InputError(f"values_a and values_b must be paired (same length), got {a.size} and {b.size}")
    B, alpha = _n_resamples(B), _alpha(alpha)
    binary = bool(np.all((a == 0) | (a == 1)) and np.all((b == 0) | (b == 1)))
    tot = item_totals(a - b, items)  # the items' summed differences (one pass over the keys)
    d = tot.sums
    moving = d[d != 0]  # items without a difference flip nothing
    k = int(moving.size)
    p, exact = sign_flip_pvalue(moving, _n_resamples(n_permutations), seed)
    low, high, note = _interval(d, tot.counts, B, seed, alpha, "difference")
    return ItemPairedTest(
        diff=float(a.mean() - b.mean()),
        low=low,
        high=high,
        pvalue=p,
        confidence_level=1.0 - alpha,
        n_items=tot.n_items,
        n_queries=int(a.size),
        n_items_differing=k,
        n10=int(np.sum((a == 1) & (b == 0))) if binary else None,
        n01=int(np.sum((a == 0) & (b == 1))) if binary else None,
        n_resamples=B,
        n_permutations=int(n_permutations),
        exact=exact,
        seed=int(seed),
        note=note,
    )
