"""Correlations and orders across encoders with integer weights (multiplicities): the small
statistics of the crossed bootstrap (:mod:`.crossed`). An encoder or an item drawn w times in a
bootstrap replicate counts w times (:func:`weighted_corr`, :func:`pairwise_order_accuracy`);
the weights of a named unit are keyed by its name (:func:`unit_weights`, :func:`item_groups`),
so the same unit gets the same weight wherever it appears."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..errors import InputError

STATS = ("pearson", "spearman")
#: fewest distinct encoders (positive weight) a correlation across encoders is computed on
MIN_ENCODERS = 3


def corr_rows(x: np.ndarray, y: np.ndarray, stat: str) -> np.ndarray:
    """Pearson or Spearman correlation of every row pair of x and y (…, n) → (…,); NaN where
    a row is constant."""
    if stat not in STATS:
        raise InputError(f"stat: expected one of {STATS}, got {stat!r}")
    x = np.asarray(x, dtype=np.float64)
    return weighted_corr(x, y, np.ones(x.shape), stat, min_support=2)


def weighted_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks of the rows of ``x`` (…, n) when value j is repeated ``w[…, j]`` times:
    the rank every copy of x_i gets (ties share their mean rank), as
    ``scipy.stats.rankdata(np.repeat(x, w))`` gives it. Entries with weight 0 get a rank
    that is never used."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    less = x[..., None, :] < x[..., :, None]  # [..., i, j]: x_j < x_i
    equal = x[..., None, :] == x[..., :, None]
    wj = w[..., None, :]
    return np.sum(less * wj, axis=-1) + (np.sum(equal * wj, axis=-1) + 1.0) / 2.0


def weighted_corr(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, stat: str, min_support: int = MIN_ENCODERS
) -> np.ndarray:
    """Pearson or Spearman correlation of the rows of x and y (…, n), entry j counted ``w[…, j]``
    times (integer weights: exactly the correlation of the repeated values). NaN where fewer
    than ``min_support`` entries have a positive weight or a row is constant."""
    if stat not in STATS:
        raise InputError(f"stat: expected one of {STATS}, got {stat!r}")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.broadcast_to(np.asarray(w, dtype=np.float64), np.broadcast_shapes(x.shape, y.shape))
    x, y = np.broadcast_to(x, w.shape), np.broadcast_to(y, w.shape)
    if stat == "spearman":
        x, y = weighted_ranks(x, w), weighted_ranks(y, w)
    sw = np.sum(w, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        xc = x - np.sum(w * x, axis=-1, keepdims=True) / sw
        yc = y - np.sum(w * y, axis=-1, keepdims=True) / sw
        num = np.sum(w * xc * yc, axis=-1)
        sxx, syy = np.sum(w * xc * xc, axis=-1), np.sum(w * yc * yc, axis=-1)
        r = num / np.sqrt(sxx * syy)
    # a row is constant iff its centred sum of squares is ~0 relative to its scale
    const = (sxx <= 1e-24 * (1 + np.sum(w * x * x, axis=-1))) | (syy <= 1e-24 * (1 + np.sum(w * y * y, axis=-1)))
    few = np.sum(w > 0, axis=-1) < min_support
    return np.where(const | few | ~np.isfinite(r), np.nan, np.clip(r, -1.0, 1.0))


def pairwise_order_accuracy(metric: np.ndarray, reference: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Share of item pairs (i < j) with different ``reference`` values that ``metric`` orders
    the same way; a tie of ``metric`` counts half. Rows (…, n) → (…,); NaN if no pair has
    different reference values. ``w`` (…, n): multiplicities (a pair of copies of one entry is
    a reference tie, so it never counts)."""
    m = np.asarray(metric, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    dm = np.sign(m[..., :, None] - m[..., None, :])
    dr = np.sign(r[..., :, None] - r[..., None, :])
    n = m.shape[-1]
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    pw = upper * (1.0 if w is None else np.asarray(w, dtype=np.float64)[..., :, None] * np.asarray(w)[..., None, :])
    valid = (dr != 0) * pw
    agree = valid * ((dm == dr) + 0.5 * (dm == 0))
    n_valid = valid.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_valid > 0, agree.sum(axis=(-2, -1)) / np.maximum(n_valid, 1e-300), np.nan)


def degenerate_probability(n_encoders: int, min_distinct: int = MIN_ENCODERS, scheme: str = "poisson") -> float:
    """Exact probability that one bootstrap draw of ``n_encoders`` encoders has fewer than
    ``min_distinct`` distinct encoders (the replicates :func:`crossed_bootstrap` drops).

    ``poisson``: independent Poisson(1) weights, an encoder is drawn with probability 1 − e^-1,
    so the count of distinct encoders is Binomial(E, 1 − e^-1); ``multinomial``: E draws with
    replacement, P(j distinct) = S(E, j) · E!/(E − j)! / E^E (S: Stirling numbers of the
    second kind)."""
    import math

    E = int(n_encoders)
    if E < 1:
        raise InputError(f"n_encoders: expected at least 1, got {E}")
    if scheme == "poisson":
        p = 1.0 - math.exp(-1.0)
        return float(sum(math.comb(E, j) * p**j * (1 - p) ** (E - j) for j in range(min(min_distinct, E + 1))))
    if scheme == "multinomial":

        def stirling2(n: int, k: int) -> int:
            return sum((-1) ** i * math.comb(k, i) * (k - i) ** n for i in range(k + 1)) // math.factorial(k)

        total = sum(stirling2(E, j) * math.perm(E, j) for j in range(1, min(min_distinct, E + 1)))
        return float(total / E**E)
    raise InputError(f"scheme: expected 'poisson' or 'multinomial', got {scheme!r}")


def unit_weights(keys: Sequence[str], B: int, seed: int, kind: str) -> np.ndarray:
    """Poisson(1) bootstrap weights (len(keys), B) of named units: row j from
    ``default_rng([seed, h])``, h = the first 8 bytes of sha256(``kind`` NUL key). The same
    key gets the same weights in every step, seed, direction and configuration."""
    out = np.empty((len(keys), B), dtype=np.float64)
    for j, key in enumerate(keys):
        h = int.from_bytes(hashlib.sha256(f"{kind}\x00{key}".encode()).digest()[:8], "little")
        out[j] = np.random.default_rng([seed, h]).poisson(1.0, B)
    return out


def item_groups(keys: Sequence[str], n_groups: int) -> np.ndarray:
    """The delete-a-group jackknife's group of every item: sha256(``"group"`` NUL key) mod
    ``n_groups``, so an image is in the same group in every direction and configuration (the
    jackknife values of cells that share images are joint, like the bootstrap's weights)."""
    return np.array(
        [int.from_bytes(hashlib.sha256(f"group\x00{k}".encode()).digest()[:8], "little") % n_groups for k in keys],
        dtype=np.int64,
    )
