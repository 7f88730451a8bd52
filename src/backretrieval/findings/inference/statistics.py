"""Section 1: the right unit of inference.

Table 1 treats the seeds as independent replicates, but every seed re-splits the *same* items
and evaluates the *same* encoders: the per-seed correlations share most of their data, so
their spread understates the uncertainty. The same holds across cells (dataset × direction):
the same encoders are evaluated in every cell, both directions of a language pair use the same
items, and two configurations can use the same images (Multi30K task 1 and task 2 both use the
test_2016 images). The encoders are a sample of models and the items a sample of texts/images;
the bootstrap here resamples both at once (the "pigeonhole" bootstrap of a crossed
random-effects design, Owen 2007, Ann. Appl. Stat. 1(2)), with **Poisson(1) weights keyed by
the unit's name** (the Poisson bootstrap, Hanley & MacGibbon 2006; Chamandy et al. 2012):

* **items**: the weight of an item in replicate b is drawn from a generator seeded by
  (bootstrap seed, sha256 of ``"item"`` and its key, e.g. the image id), so every seed, every
  direction and every configuration that uses the same image gives it the same weight in
  replicate b: the dependence across seeds, directions and configurations is kept without any
  step seeing the others' data (:func:`unit_weights`).
* **encoders**: likewise keyed by the encoder's name: one draw per replicate, shared by all
  seeds, metrics, cells and configurations (so BkR − CORR is a paired difference and the
  pooled statistic sees one encoder draw). Correlations across encoders use the weights as
  multiplicities (:func:`weighted_corr`; Spearman with average ranks of the repeated values).

**Every metric is treated alike**: XLR, BkR and CORR are each the mean over the sample's queries
of a per-query quantity computed once on the full sample (XLR / BkR: the hit at k; CORR: the
query's row contribution to Spearman's rho, :func:`corr_contributions`, whose mean over the
queries *is* the sample's CORR), and a replicate reweights the queries by their items' weights
(a linear bootstrap of each metric; the targets' own variability is left out for all three
metrics alike).

The statistic is the paper's (Section 3.1: the experiment, correlations included, is re-run
with 25 seeds and "the average" reported; its Table 1 gives mean ± sd of the correlations over
the seeds): per seed, the correlation across encoders between a metric and XLR, averaged over
the seeds used (``rho_*``). Also, as an alternative reading that the paper does not use: the
correlation of the metrics averaged over the seeds first (``rho_*_avg``). A replicate whose
encoder draw has fewer than 3 distinct encoders (or makes a metric constant) leaves the
correlation undefined: it is **dropped** (NaN) and counted (``n_dropped``); the probability of
such a draw is :func:`degenerate_probability` (Poisson weights: 2.4e-4 for 14 encoders, 0.26
for 5). ``resample_encoders=False`` keeps every encoder's weight at 1 (an item-only bootstrap,
never degenerate): Table 1's test (:func:`table1_tests`) combines it with a leave-one-family-out
jackknife over the encoders, as the "encoders random" question does (:func:`two_questions`).

Pooling over cells (:func:`pool_replicates`): in each replicate the mean over the cells of the
per-cell statistic, the percentile interval of those means; the replicates where any cell is
undefined are dropped and counted. :mod:`backretrieval.findings.inference_sim` checks the
interval's coverage on SIMULATED worlds with this dependence built in.

Also here: pairwise-order accuracy (the share of encoder pairs a metric orders as XLR does; a
tie of the metric counts half) and sensitivity (leave-one-encoder-out, encoder subsets). No
random-effects pooling or sign test: both assume independent cells.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.stats as st

from ...errors import InputError
from ...stats import bootstrap_ci

STATS = ("pearson", "spearman")
#: the aggregations over seeds: per-seed correlations averaged (``rho_*``), and the correlation
#: of the metrics averaged over the seeds (``rho_*_avg``)
AVG_SUFFIX = "_avg"
#: fewest distinct encoders (positive weight) a correlation across encoders is computed on
MIN_ENCODERS = 3


@dataclass(frozen=True)
class SeedOutcomes:
    """One seed's sample of one direction, every encoder (rows in ``encoders`` order).

    ``query_items``: index of each query into the bootstrap's item keys (item keys shared by
    seeds, directions and configurations get the same weights). ``xlr``: (E, N) the reference's
    per-query outcome (XLR hits at k); ``per_query[metric]``: (E, N) per-query quantity whose
    mean over queries is the metric (BkR hits; CORR's row contributions).
    """

    seed: int
    query_items: np.ndarray
    xlr: np.ndarray
    per_query: Mapping[str, np.ndarray]

    def metric_names(self) -> list[str]:
        return list(self.per_query)


@dataclass
class BootstrapOutcome:
    """Point estimates and replicates of every (encoder set, quantity, stat)."""

    B: int
    seed: int
    n_items: int
    n_seeds: int
    point: dict[tuple[str, str, str], float] = field(default_factory=dict)
    replicates: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    per_seed: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    #: per encoder set: replicates whose encoder draw has fewer than MIN_ENCODERS distinct ones
    degenerate: dict[str, int] = field(default_factory=dict)
    #: delete-a-group item jackknife values per (set, quantity, stat), encoders at weight 1
    jackknife: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    #: point estimates without one encoder family: (set, family, quantity, stat) → value
    family_loo: dict[tuple[str, str, str, str], float] = field(default_factory=dict)

    def frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """Tidy rows: set, quantity, stat, estimate, CI, se, valid and dropped replicates, and the
        naive interval that treats the seeds as independent replicates. With jackknife values
        and family estimates (an item-only bootstrap, :func:`crossed_bootstrap`'s
        ``jackknife_groups`` and ``families``): low/high/se answer "encoders fixed", and
        low_random/high_random/se_random "encoders random" (:func:`two_questions`); otherwise the
        percentile interval of the replicates."""
        rows = []
        for key in sorted(self.point):
            set_name, quantity, stat = key
            est = self.point[key]
            rep = self.replicates.get(key, np.empty(0))
            rep = rep[np.isfinite(rep)]
            extra: dict[str, float | int] = {}
            low = high = se = float("nan")
            if key in self.jackknife and rep.size == self.B and np.isfinite(est):
                fam = {f: [v] for (sn, f, q, sta), v in self.family_loo.items() if (sn, q, sta) == key}
                tq = two_questions([est], [rep], [self.jackknife[key]], fam, alpha)
                fx, rn = tq["fixed"], tq["random"]
                low, high, se = fx["low"], fx["high"], fx["se"]
                extra = dict(
                    z0=fx["z0"],
                    a=fx["a"],
                    low_random=rn["low"],
                    high_random=rn["high"],
                    se_random=rn["se"],
                    n_families=rn["n_families"],
                )
            elif rep.size >= 2:
                low, high = (float(v) for v in np.quantile(rep, [alpha / 2, 1 - alpha / 2]))
                se = float(np.std(rep, ddof=1))
            ps = self.per_seed.get(key)
            naive_low = naive_high = seed_sd = float("nan")
            if ps is not None and np.isfinite(ps).all() and ps.size >= 2:
                seed_sd = float(np.std(ps, ddof=1))
                ci = bootstrap_ci(ps, B=self.B, seed=self.seed, alpha=alpha)
                naive_low, naive_high = ci.low, ci.high
            rows.append(
                dict(
                    set=set_name,
                    quantity=quantity,
                    stat=stat,
                    estimate=est,
                    low=low,
                    high=high,
                    se=se,
                    **extra,
                    n_valid=int(rep.size),
                    n_dropped=int(self.B - rep.size) if key in self.replicates else 0,
                    B=self.B,
                    seed_sd=seed_sd,
                    naive_low=naive_low,
                    naive_high=naive_high,
                    n_seeds=self.n_seeds,
                    n_items=self.n_items,
                )
            )
        return pd.DataFrame(rows)


# --------------------------------------------------------------------------- small statistics


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


# --------------------------------------------------------------------------- the bootstrap


def _check_seeds(seeds: Sequence[SeedOutcomes], n_encoders: int, n_items: int) -> list[str]:
    if not seeds:
        raise InputError("crossed_bootstrap: no seed samples")
    names = seeds[0].metric_names()
    for s in seeds:
        if s.metric_names() != names:
            raise InputError(f"seed {s.seed}: metrics {s.metric_names()} differ from seed {seeds[0].seed}'s {names}")
        n = s.query_items.shape[0]
        for what, arr in [("xlr", s.xlr), *s.per_query.items()]:
            if arr.shape != (n_encoders, n):
                raise InputError(f"seed {s.seed}: {what} has shape {arr.shape}, expected ({n_encoders}, {n})")
        idx = s.query_items
        if idx.size and (idx.min() < 0 or idx.max() >= n_items):
            raise InputError(f"seed {s.seed}: query_items index outside [0, {n_items})")
    return names


def _set_indices(encoders: Sequence[str], encoder_sets: Mapping[str, Sequence[str]]) -> dict[str, np.ndarray]:
    pos = {e: i for i, e in enumerate(encoders)}
    out = {}
    for name, members in encoder_sets.items():
        unknown = [e for e in members if e not in pos]
        if unknown:
            raise InputError(f"encoder set {name!r}: unknown encoders {unknown} (known: {list(encoders)})")
        out[name] = np.array([pos[e] for e in members], dtype=np.int64)
    return out


def _quantities(
    values: Mapping[str, np.ndarray],
    xlr: np.ndarray,
    metrics: Sequence[str],
    w: np.ndarray,
    order: bool = True,
    suffix: str = "",
) -> dict[tuple[str, str], np.ndarray]:
    """(quantity, stat) → per row: correlations with XLR, pairwise-order accuracy, and the
    BkR − CORR differences. ``values[m]``, ``xlr`` and the weights ``w`` are (…, n_encoders)."""
    out: dict[tuple[str, str], np.ndarray] = {}
    few = np.sum(w > 0, axis=-1) < MIN_ENCODERS
    for m in metrics:
        for stat in STATS:
            out[(f"rho_{m}{suffix}", stat)] = weighted_corr(values[m], xlr, w, stat)
        if order:
            acc = pairwise_order_accuracy(values[m], xlr, w)
            out[(f"order_acc_{m}", "pairs")] = np.where(few, np.nan, acc)
    if "bkr" in metrics and "corr" in metrics:
        for stat in STATS:
            out[(f"rho_diff{suffix}", stat)] = out[(f"rho_bkr{suffix}", stat)] - out[(f"rho_corr{suffix}", stat)]
        if order:
            out[("order_acc_diff", "pairs")] = out[("order_acc_bkr", "pairs")] - out[("order_acc_corr", "pairs")]
    return out


def _reweighted(
    seeds: Sequence[SeedOutcomes],
    metrics: Sequence[str],
    sets: Mapping[str, np.ndarray],
    W: np.ndarray,
    Wenc: np.ndarray,
) -> dict[tuple[str, str, str], np.ndarray]:
    """Every (set, quantity, stat) at R weightings at once: ``W`` (n_items, R) item weights,
    ``Wenc`` (R, E) encoder weights. Per seed, each metric is its per-query outcomes averaged
    with the queries' item weights; the per-seed quantities are averaged over the seeds, and the
    ``_avg`` quantities correlate the metrics averaged over the seeds."""
    acc: dict[tuple[str, str, str], np.ndarray] = {}
    R, E = Wenc.shape
    sums = {m: np.zeros((R, E)) for m in [*metrics, "xlr"]}
    for s in seeds:
        wq = W[s.query_items]  # (N, R)
        tot = wq.sum(axis=0)
        tot[tot == 0] = np.nan  # no query of this seed weighted: undefined here
        vals = {m: (s.per_query[m] @ wq / tot).T for m in metrics}  # (R, E)
        x = (s.xlr @ wq / tot).T
        for m in metrics:
            sums[m] += vals[m]
        sums["xlr"] += x
        for name, idx in sets.items():
            q = _quantities({m: vals[m][:, idx] for m in metrics}, x[:, idx], metrics, Wenc[:, idx])
            for (quantity, stat), r in q.items():
                key = (name, quantity, stat)
                acc[key] = acc.get(key, 0.0) + r
    out = {key: total / len(seeds) for key, total in acc.items()}
    for name, idx in sets.items():
        qa = _quantities(
            {m: sums[m][:, idx] / len(seeds) for m in metrics},
            sums["xlr"][:, idx] / len(seeds),
            metrics,
            Wenc[:, idx],
            False,
            AVG_SUFFIX,
        )
        for (quantity, stat), r in qa.items():
            out[(name, quantity, stat)] = r
    return out


def item_groups(keys: Sequence[str], n_groups: int) -> np.ndarray:
    """The delete-a-group jackknife's group of every item: sha256(``"group"`` NUL key) mod
    ``n_groups``, so an image is in the same group in every direction and configuration (the
    jackknife values of cells that share images are joint, like the bootstrap's weights)."""
    return np.array(
        [int.from_bytes(hashlib.sha256(f"group\x00{k}".encode()).digest()[:8], "little") % n_groups for k in keys],
        dtype=np.int64,
    )


def crossed_bootstrap(
    seeds: Sequence[SeedOutcomes],
    encoders: Sequence[str],
    encoder_sets: Mapping[str, Sequence[str]],
    item_keys: Sequence[str],
    B: int = 1000,
    seed: int = 0,
    leave_one_out: str | None = "all",
    resample_encoders: bool = True,
    jackknife_groups: int = 0,
    families: Mapping[str, str] | None = None,
) -> BootstrapOutcome:
    """Crossed encoder × item bootstrap of every metric's correlation with XLR (module doc).

    ``item_keys``: the name of every item ``query_items`` indexes (the unit its weight is keyed
    by, e.g. the image id). ``encoder_sets``: name → encoders (e.g. ``all``, ``no_random``,
    ``core``); an encoder has the same weight in every set. ``leave_one_out``: the set whose
    leave-one-encoder-out point estimates are added (sets named ``<set>-<encoder>``, point
    estimates only). ``resample_encoders=False``: every encoder keeps weight 1 in every
    replicate (an item-only bootstrap; no replicate is degenerate). ``jackknife_groups`` G > 0:
    also the delete-a-group item jackknife values (``jackknife``: G per key; groups from
    :func:`item_groups`), encoders at weight 1. ``families`` (encoder → family): also, per set,
    the point estimates without each family (``family_loo[(set, family, quantity, stat)]``; NaN
    where fewer than 3 encoders are left). Deterministic for a seed; vectorised over the
    replicates.
    """
    if B < 2:
        raise InputError(f"B: expected at least 2 bootstrap replicates, got {B}")
    E = len(encoders)
    n_items = len(item_keys)
    metrics = _check_seeds(seeds, E, n_items)
    sets = _set_indices(encoders, encoder_sets)
    for name, idx in sets.items():
        if idx.size < MIN_ENCODERS:
            raise InputError(f"encoder set {name!r}: a correlation across encoders needs >= 3 encoders, got {idx.size}")
    res = BootstrapOutcome(B=B, seed=seed, n_items=n_items, n_seeds=len(seeds))

    # point estimates, per seed and their mean; and of the metrics averaged over the seeds
    point_vals = [({m: s.per_query[m].mean(axis=1) for m in metrics}, s.xlr.mean(axis=1)) for s in seeds]
    avg_vals = {m: np.mean([v[m] for v, _ in point_vals], axis=0) for m in metrics}
    avg_x = np.mean([x for _, x in point_vals], axis=0)
    loo_sets = dict(sets)
    if leave_one_out is not None:
        base = sets[leave_one_out]
        for i in base:
            loo_sets[f"{leave_one_out}-{encoders[i]}"] = base[base != i]
    fam_sets: dict[tuple[str, str], np.ndarray] = {}
    if families is not None:
        missing = [e for e in encoders if e not in families]
        if missing:
            raise InputError(f"families: no family for encoders {missing}")
        fam_of = np.array([families[e] for e in encoders])
        for name, idx in sets.items():
            for fam in sorted(set(fam_of[idx])):
                fam_sets[(name, fam)] = idx[fam_of[idx] != fam]

    def points(idx: np.ndarray) -> tuple[dict[tuple[str, str], np.ndarray], dict[tuple[str, str], float]]:
        ones = np.ones(idx.size)
        per_seed: dict[tuple[str, str], list[float]] = {}
        for v, x in point_vals:
            q = _quantities({m: v[m][idx] for m in metrics}, x[idx], metrics, ones)
            for key, val in q.items():
                per_seed.setdefault(key, []).append(float(val))
        qa = _quantities({m: avg_vals[m][idx] for m in metrics}, avg_x[idx], metrics, ones, False, AVG_SUFFIX)
        return {k: np.array(v) for k, v in per_seed.items()}, {k: float(v) for k, v in qa.items()}

    for name, idx in loo_sets.items():
        per_seed, avg = points(idx)
        for (quantity, stat), arr in per_seed.items():
            res.per_seed[(name, quantity, stat)] = arr
            res.point[(name, quantity, stat)] = float(np.mean(arr))
        for (quantity, stat), val in avg.items():
            res.point[(name, quantity, stat)] = val
    for (name, fam), idx in fam_sets.items():
        per_seed, avg = points(idx)
        for key in [k for k in res.point if k[0] == name]:
            q = (key[1], key[2])
            val = float(np.mean(per_seed[q])) if q in per_seed else avg.get(q, float("nan"))
            res.family_loo[(name, fam, key[1], key[2])] = val

    # replicates: item weights keyed by item, encoder weights keyed by encoder name
    W = unit_weights(item_keys, B, seed, "item")  # (n_items, B)
    Wenc = unit_weights(encoders, B, seed, "encoder").T if resample_encoders else np.ones((B, E))  # (B, E)
    res.replicates.update(_reweighted(seeds, metrics, sets, W, Wenc))
    for name, idx in sets.items():
        res.degenerate[name] = int(np.sum(np.sum(Wenc[:, idx] > 0, axis=1) < MIN_ENCODERS))
    if jackknife_groups:
        groups = item_groups(item_keys, jackknife_groups)
        Wj = (groups[:, None] != np.arange(jackknife_groups)[None, :]).astype(np.float64)  # (n_items, G)
        res.jackknife.update(_reweighted(seeds, metrics, sets, Wj, np.ones((jackknife_groups, E))))
    return res


def pool_replicates(
    points: Sequence[float], replicates: Sequence[np.ndarray], alpha: float = 0.05
) -> dict[str, float | int]:
    """Pool cells whose replicates come from one joint draw (same B, same keyed weights): the
    estimate is the mean of the cells' point estimates, replicate b the mean of the cells'
    replicate b; a replicate where any cell is undefined (NaN) is dropped and counted. Returns
    estimate, low, high (percentile), se, B, n_valid, n_dropped, k (cells)."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 1 or pts.size < 1 or len(replicates) != pts.size:
        raise InputError(f"pool_replicates: need one replicate array per cell, got {pts.size} and {len(replicates)}")
    reps = np.stack([np.asarray(r, dtype=np.float64) for r in replicates])
    if not np.isfinite(pts).all():
        raise InputError("pool_replicates: a cell's point estimate is not finite")
    B = reps.shape[1]
    ok = np.isfinite(reps).all(axis=0)
    pooled = reps[:, ok].mean(axis=0)
    low = high = se = float("nan")
    if pooled.size >= 2:
        low, high = (float(v) for v in np.quantile(pooled, [alpha / 2, 1 - alpha / 2]))
        se = float(np.std(pooled, ddof=1))
    return {
        "estimate": float(pts.mean()),
        "low": low,
        "high": high,
        "se": se,
        "B": int(B),
        "n_valid": int(ok.sum()),
        "n_dropped": int(B - ok.sum()),
        "k": int(pts.size),
    }


# --------------------------------------------------------------------------- two questions
#
# A pooled (or per-configuration) BkR − CORR answers one of two questions, named in every text:
# * **encoders fixed** ("for these encoders"): only the items are a sample. Item-only Poisson
#   bootstrap (weights keyed by image id, so joint across cells); the interval is the estimate
#   ± t·SE of the replicates, t the Student quantile on G − 1 degrees of freedom (G: the groups
#   of the delete-a-group item jackknife, as for a variance estimated from G replicate groups).
#   The SE is itself an estimate, varying from sample to sample and with the error: the normal
#   quantile covered 0.92 in the simulated 14-encoder layouts (benchmarks/README.md). Nothing is
#   dropped. Reported beside it: BCa's bias correction z0 (from the replicates) and acceleration
#   a (from the jackknife). BCa's own interval is not used: on the simulated worlds it covered
#   0.85–0.89 for Spearman (the bootstrap's bias of a correlation of noisy means overstates the
#   estimator's).
# * **encoders random** ("for encoders like these"): the encoders are a sample too. The item
#   bootstrap's variance plus a leave-one-family-out jackknife variance over the encoders (a
#   family: encoders built from the same base vectors, e.g. the fastText variants, which are
#   not independent draws; at least 3 families), normal interval. The sum counts the
#   item × encoder noise twice (the jackknife at the full items contains it too), so it errs
#   wide: with Student t on families − 1 degrees of freedom it covered 0.98–0.99 in the
#   simulated layouts, with the normal quantile 0.95–0.97 (``df`` is kept for reference).
# Both are checked for coverage on SIMULATED worlds in the verdict's own layouts
# (benchmarks/bench_inference_coverage.py).

#: item groups of the delete-a-group jackknife behind BCa's acceleration
JACKKNIFE_GROUPS = 20
#: fewest encoders a cell set needs for an inferential (pooled) result; below it the results
#: are descriptive (a Spearman correlation across 3 encoders takes 4 values)
MIN_POOL_ENCODERS = 8
#: fewest encoder families the leave-one-family-out jackknife ("encoders random") needs
MIN_JACKKNIFE_FAMILIES = 3
#: the two questions, in the order the texts give them
INTERVAL_QUESTIONS = ("fixed", "random")
QUESTION_LABELS = {
    "fixed": "encoders fixed (for these encoders)",
    "random": "encoders random (for encoders like these)",
}


def bca_interval(
    estimate: float, replicates: np.ndarray, jackknife: np.ndarray, alpha: float = 0.05
) -> dict[str, float]:
    """BCa interval (Efron 1987) from bootstrap replicates and jackknife values of one statistic:
    z0 = Φ⁻¹(share of replicates below the estimate, ties half), acceleration a =
    Σd³ / (6 (Σd²)^{3/2}) with d the jackknife values' deviations from their mean. NaN replicates
    are an error (nothing is dropped). A constant bootstrap distribution gives the estimate."""
    rep = np.asarray(replicates, dtype=np.float64)
    jk = np.asarray(jackknife, dtype=np.float64)
    if rep.size < 2 or not np.isfinite(rep).all():
        raise InputError(f"bca_interval: {int((~np.isfinite(rep)).sum())} undefined replicates of {rep.size}")
    B = rep.size
    share = (np.sum(rep < estimate) + 0.5 * np.sum(rep == estimate)) / B
    share = min(max(share, 0.5 / B), 1 - 0.5 / B)
    z0 = float(st.norm.ppf(share))
    a = 0.0
    if jk.size >= 2 and np.isfinite(jk).all():
        d = jk.mean() - jk
        ss = float(np.sum(d * d))
        if ss > 0:
            a = float(np.sum(d**3) / (6.0 * ss**1.5))
    if np.ptp(rep) == 0:
        return {"low": float(rep[0]), "high": float(rep[0]), "z0": z0, "a": a}
    qs = []
    for z in (st.norm.ppf(alpha / 2), st.norm.ppf(1 - alpha / 2)):
        qs.append(float(st.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))))
    low, high = (float(v) for v in np.quantile(rep, qs))
    return {"low": low, "high": high, "z0": z0, "a": a}


def two_questions(
    points: Sequence[float],
    replicates: Sequence[np.ndarray],
    jackknife: Sequence[np.ndarray],
    family_loo: Mapping[str, Sequence[float]],
    alpha: float = 0.05,
) -> dict[str, dict]:
    """The mean over cells of BkR − CORR and its interval for both questions (section comment
    above). ``points`` (C,), ``replicates`` C arrays (B,) of the item-only bootstrap,
    ``jackknife`` C arrays (G,) of the delete-a-group item jackknife, ``family_loo[f]`` (C,)
    the cells' estimates without encoder family f. The cells must share their encoders and
    their replicates must be one joint draw (weights keyed by item)."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 1 or pts.size < 1 or not (len(replicates) == len(jackknife) == pts.size):
        raise InputError(
            f"two_questions: need one replicate and one jackknife array per cell, got {pts.size} cells, "
            f"{len(replicates)} and {len(jackknife)}"
        )
    if not np.isfinite(pts).all():
        raise InputError("two_questions: a cell's point estimate is not finite")
    est = float(pts.mean())
    T = np.stack([np.asarray(r, dtype=np.float64) for r in replicates]).mean(axis=0)
    J = np.stack([np.asarray(j, dtype=np.float64) for j in jackknife]).mean(axis=0)
    var_items = float(np.var(T, ddof=1))
    se_items = float(np.sqrt(var_items))
    zq = float(st.norm.ppf(1 - alpha / 2))
    df_items = int(J.size - 1)
    if df_items < 1:
        raise InputError(f"two_questions: the fixed question's interval needs >= 2 jackknife groups, got {J.size}")
    tq = float(st.t.ppf(1 - alpha / 2, df_items))
    bca = bca_interval(est, T, J, alpha)
    fixed = {
        "estimate": est,
        "low": est - tq * se_items,
        "high": est + tq * se_items,
        "se": se_items,
        "df": df_items,
        "z0": bca["z0"],
        "a": bca["a"],
        "bias": float(T.mean() - est),
        "se_jackknife": float(np.sqrt((J.size - 1) / J.size * np.sum((J - J.mean()) ** 2)))
        if J.size >= 2
        else float("nan"),
        "B": int(T.size),
        "G": int(J.size),
        "method": "item bootstrap SE, Student t on jackknife groups - 1 df",
    }
    fam = {f: float(np.mean(v)) for f, v in sorted(family_loo.items())}
    F = len(fam)
    random = {
        "estimate": est,
        "n_families": F,
        "se_items": float(np.sqrt(var_items)),
        "method": "item bootstrap + leave-one-family-out jackknife, normal interval",
    }
    loo = np.array(list(fam.values()))
    if F >= MIN_JACKKNIFE_FAMILIES and np.isfinite(loo).all():
        var_enc = float((F - 1) / F * np.sum((loo - loo.mean()) ** 2))
        se = float(np.sqrt(var_items + var_enc))
        random.update(se=se, se_encoders=float(np.sqrt(var_enc)), df=F - 1, low=est - zq * se, high=est + zq * se)
    else:
        random.update(se=float("nan"), se_encoders=float("nan"), df=F - 1, low=float("nan"), high=float("nan"))
    return {"fixed": fixed, "random": random, "k": int(pts.size)}


# --------------------------------------------------------------------------- CORR per query


def corr_contributions(
    q_img: np.ndarray, t_img: np.ndarray, texts: Sequence[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """CORR's per-query contributions (E, N) of one sample: with a_ij, b_ij the average ranks
    (over all N·M query × target pairs) of the text and image cosine distances, z their
    standardised values (population SD), query i contributes c_i = (1/M) Σ_j z^a_ij z^b_ij.
    The mean of c over the queries is Pearson's r of the ranks: the sample's CORR (Spearman's
    rho, ties averaged), so a replicate reweights CORR's queries exactly as it reweights BkR's
    and XLR's. ``texts[e] = (src, tgt)`` rows aligned with ``q_img`` / ``t_img``; distances in
    float32, as the CORR kernel computes them. NaN rows where a side is constant."""
    from ...metrics import average_ranks, normalize

    def z_ranks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = np.subtract(np.float32(1), normalize(a) @ normalize(b).T, dtype=np.float32)
        r = average_ranks(d.ravel()).reshape(d.shape)
        sd = r.std()
        return (r - r.mean()) / sd if sd > 0 else np.full(r.shape, np.nan)

    zi = z_ranks(q_img, t_img)
    return np.stack([(z_ranks(s, t) * zi).mean(axis=1) for s, t in texts])


# --------------------------------------------------------------------------- figure


def figure_title(info) -> str:
    """The title of ``figures/inference_ci`` (a :class:`~backretrieval.findings.document.RunInfo`)."""
    return f"{info.figure_label}: correlation with XLR across encoders, 95% CIs"


def plot_intervals(frame: pd.DataFrame, out_base, title: str, set_name: str = "all") -> list:
    """Per direction and statistic: BkR's and CORR's correlation with XLR, the crossed-bootstrap
    95% CI (thick) and the seeds-as-replicates CI (thin); PNG/SVG/PDF, reproducible bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ...reporting.figures import finish_figure, legend_outside

    f = frame[(frame["set"] == set_name) & frame["quantity"].isin(["rho_bkr", "rho_corr"])]
    directions = list(dict.fromkeys(f["direction"]))
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(
        1, len(STATS), figsize=(4.2 * len(STATS) + 1.4, 0.45 * len(directions) + 1.6), squeeze=False, sharey=True
    )
    colors = {"rho_bkr": sns.color_palette()[0], "rho_corr": sns.color_palette()[1]}
    labels = {"rho_bkr": "BkR", "rho_corr": "CORR"}
    for ax, stat in zip(axes[0], STATS):
        for j, quantity in enumerate(("rho_bkr", "rho_corr")):
            g = f[(f["stat"] == stat) & (f["quantity"] == quantity)].set_index("direction").reindex(directions)
            y = np.arange(len(directions)) + (j - 0.5) * 0.3
            ax.hlines(y, g["naive_low"], g["naive_high"], color=colors[quantity], linewidth=1.0)
            ax.hlines(y, g["low"], g["high"], color=colors[quantity], linewidth=3.5, alpha=0.45)
            ax.plot(g["estimate"], y, "o", color=colors[quantity], markersize=4, label=labels[quantity])
        ax.set_yticks(np.arange(len(directions)), [d.replace("-", "→") for d in directions])
        ax.invert_yaxis()
        ax.set_xlabel(f"{stat.capitalize()} correlation with XLR (across encoders)")
        ax.set_title(stat.capitalize(), fontsize=9)
    # outside the panels: inside, it covered an interval
    legend_outside(
        axes[0][-1], where="right", title="thick: encoders × items\nthin: seeds as replicates", title_fontsize=6
    )
    return finish_figure(fig, out_base, title)


# --------------------------------------------------------------------------- text
# --------------------------------------------------------------------------- across configurations


def overall_cells(records) -> pd.DataFrame:
    """One row per (configuration, direction, stat) from the ``inference`` records: the
    BkR − CORR difference of the correlations with XLR, its crossed-bootstrap SE and CI."""
    rows = []
    for rec in records:
        if rec.analysis != "inference" or rec.status != "ok":
            continue
        for r in rec.numbers.get("per_direction", []):
            d = r.get("rho_diff") or {}
            if not d:
                continue
            rows.append(
                {
                    "run_name": rec.run.run_name,
                    "dataset": rec.run.dataset,
                    "synthetic": rec.run.synthetic,
                    "direction": r["direction"],
                    "stat": r["stat"],
                    "bkr": (r.get("rho_bkr") or {}).get("estimate"),
                    "corr": (r.get("rho_corr") or {}).get("estimate"),
                    "diff": d.get("estimate"),
                    "se": d.get("se"),
                    "low": d.get("low"),
                    "high": d.get("high"),
                }
            )
    cols = ["run_name", "dataset", "synthetic", "direction", "stat", "bkr", "corr", "diff", "se", "low", "high"]
    return pd.DataFrame(rows, columns=cols).astype(
        {"bkr": float, "corr": float, "diff": float, "se": float, "low": float, "high": float}
    )


#: the encoder sets the overall verdict reports (findings step ``encoder_sets``)
VERDICT_SETS = ("all", "core")


def cell_key(direction: str, set_name: str, quantity: str, stat: str) -> str:
    """The column of one cell's quantity in a replicate table."""
    return f"{direction}|{set_name}|{quantity}|{stat}"


def replicate_table(
    reps: Mapping[str, np.ndarray], jack: Mapping[str, np.ndarray], fam_loo: Mapping[str, Mapping[str, float]]
) -> pd.DataFrame:
    """One column per cell key; rows ``kind``/``unit``: ``boot`` (replicate b), ``jack`` (item
    group g left out), ``loo`` (encoder family left out, at the full items)."""
    keys = list(reps)
    fams = sorted({f for k in keys for f in fam_loo.get(k, {})})
    B = len(next(iter(reps.values()))) if reps else 0
    G = len(next(iter(jack.values()))) if jack else 0
    rows = {
        "kind": ["boot"] * B + ["jack"] * G + ["loo"] * len(fams),
        "unit": [*map(str, range(B)), *map(str, range(G)), *fams],
    }
    cols = {k: np.concatenate([reps[k], jack[k], [fam_loo[k].get(f, np.nan) for f in fams]]) for k in keys}
    return pd.DataFrame({**rows, **cols})


def read_replicate_table(table: pd.DataFrame, key: str) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """(bootstrap replicates, jackknife values, family → estimate without it) of one cell key."""
    kind = table["kind"].astype(str)
    col = table[key].to_numpy(dtype=np.float64)
    fams = table.loc[kind == "loo", "unit"].astype(str).tolist()
    return (
        col[(kind == "boot").to_numpy()],
        col[(kind == "jack").to_numpy()],
        dict(zip(fams, col[(kind == "loo").to_numpy()])),
    )


def verdict_layouts(records: Sequence) -> dict[str, list]:
    """``{set: [Layout]}``: the pooled groups the verdict reports (real-data configurations
    that share one encoder set of at least :data:`MIN_POOL_ENCODERS`), as simulation layouts
    (cells per configuration and image pool, encoder families). Configurations on the same
    images (Multi30K task 1 and task 2: test_2016) share a pool."""
    from ..inference_sim import Layout

    out: dict[str, list] = {}
    for set_name, groups in _groups(records).items():
        for members, recs in groups.items():
            if len(members) < MIN_POOL_ENCODERS:
                continue
            fams: dict[str, int] = {}
            fam_of = recs[0].settings.get("encoder_families") or {}
            for e in members:
                fams[fam_of.get(e, e)] = fams.get(fam_of.get(e, e), 0) + 1
            fam_sizes = tuple(sorted(fams.values(), reverse=True))
            if len(recs) > 1:  # each configuration's own result is stated too: its layout alone
                for r in recs:
                    one = ((r.run.run_name, _image_pool(r), len(r.run.directions)),)
                    out.setdefault(set_name, []).append(Layout(f"{set_name}:{r.run.run_name}", one, fam_sizes))
            cells = tuple((r.run.run_name, _image_pool(r), len(r.run.directions)) for r in recs)
            out.setdefault(set_name, []).append(
                Layout(
                    f"{set_name}:{'+'.join(r.run.run_name for r in recs)}",
                    cells,
                    tuple(sorted(fams.values(), reverse=True)),
                )
            )
    return out


def _image_pool(rec) -> str:
    # the images a configuration samples: Multi30K task 1 and task 2 both use test_2016's
    ds = str(rec.run.dataset)
    return "multi30k-test2016" if ds.startswith("multi30k-") and ds.endswith("test2016") else ds


def _verdict_records(records: Sequence) -> list:
    """The records the verdict rests on: the real-data ones, or (none) the SYNTHETIC ones."""
    return [r for r in records if not r.run.synthetic] or list(records)


def _groups(records: Sequence) -> dict[str, dict[tuple[str, ...], list]]:
    out: dict[str, dict[tuple[str, ...], list]] = {}
    for set_name in VERDICT_SETS:
        for r in _verdict_records(records):
            members = (r.settings.get("encoder_sets") or {}).get(set_name)
            if members:
                out.setdefault(set_name, {}).setdefault(tuple(sorted(members)), []).append(r)
    return out


def verdict_pooled(records: Sequence, tables: Sequence[pd.DataFrame], alpha: float = 0.05) -> dict[str, Any]:
    """The overall verdict's numbers. ``configurations``: every real-data configuration's own
    BkR − CORR (mean over its directions; both questions; its encoder count), first.
    ``pooled[set]``: the groups of configurations that share one encoder set of at least
    :data:`MIN_POOL_ENCODERS` encoders, pooled (:func:`two_questions`) over their cells; smaller
    sets are descriptive only. ``records[i]`` is an ``inference`` record, ``tables[i]`` its
    replicate table; all must share B and the bootstrap seed (then an image has the same weight
    in replicate b of every configuration)."""
    if len(records) != len(tables):
        raise InputError("verdict_pooled: one replicate table per inference record")
    designs = {(int(r.settings.get("B", -1)), int(r.settings.get("bootstrap_seed", -1))) for r in records}
    if len(designs) > 1:
        names = ", ".join(
            f"{r.run.run_name} (B={r.settings.get('B')}, seed {r.settings.get('bootstrap_seed')})" for r in records
        )
        raise InputError(
            f"verdict_pooled: the inference records were not drawn jointly (differing B or bootstrap seed): {names}"
        )
    table_of = {id(r): t for r, t in zip(records, tables)}
    configs = []
    for r in _verdict_records(records):
        conf = r.numbers.get("configuration") or {}
        configs.append(
            {
                "run_name": r.run.run_name,
                "dataset": r.run.dataset,
                "synthetic": bool(r.run.synthetic),
                "N": int(r.run.sample_size),
                "n_seeds": int(r.settings.get("n_seeds_used") or len(r.run.seeds)),
                "directions": list(r.run.directions),
                **{sn: conf[sn] for sn in VERDICT_SETS if sn in conf},
            }
        )
    pooled: dict[str, list] = {}
    for set_name, groups in _groups(records).items():
        for members, recs in groups.items():
            entry: dict[str, Any] = {
                "configurations": [r.run.run_name for r in recs],
                "datasets": sorted({r.run.dataset for r in recs}),
                "encoders": list(members),
                "n_encoders": len(members),
                "inferential": len(members) >= MIN_POOL_ENCODERS,
            }
            for stat in STATS:
                pts, reps, jack, loo, cells = [], [], [], {}, []
                for r in recs:
                    for d in r.run.directions:
                        key = cell_key(d, set_name, "rho_diff", stat)
                        pt = (r.numbers.get("cell_points") or {}).get(key)
                        t = table_of[id(r)]
                        if pt is None or key not in t.columns:
                            continue
                        rep, jk, fam = read_replicate_table(t, key)
                        pts.append(float(pt))
                        reps.append(rep)
                        jack.append(jk)
                        for f_, v in fam.items():
                            loo.setdefault(f_, []).append(v)
                        cells.append(f"{r.run.run_name}:{d}")
                if not pts:
                    continue
                loo = {f_: v for f_, v in loo.items() if len(v) == len(pts) and np.isfinite(v).all()}
                res = two_questions(pts, reps, jack, loo, alpha)
                res.update(cells=cells, n_positive=int(np.sum(np.array(pts) > 0)))
                entry[stat] = res
            entry["n_families"] = entry.get("pearson", {}).get("random", {}).get("n_families")
            pooled.setdefault(set_name, []).append(entry)
    return {"configurations": configs, "pooled": pooled}


#: the README's verdict: at most this many characters of prose (the table beside it not counted)
VERDICT_MAX_CHARS = 600
#: how the two encoder sets are named in the verdict's tables
SET_LABELS = {"all": "all", "core": "without random, English-only"}


@dataclass(frozen=True)
class VerdictRow:
    """One row of the verdict's table: a configuration's (or a pooled group's) encoder set."""

    configuration: str
    set_name: str
    n_encoders: int
    pearson: Mapping[str, Any]
    inferential: bool
    pooled: bool
    layout: str  # the name of its simulation layout (numbers["layouts"])

    @property
    def encoders(self) -> str:
        return f"{self.n_encoders} ({SET_LABELS.get(self.set_name, self.set_name)})"


def lean(q: Mapping) -> str:
    """Which metric one interval puts ahead: ``BkR ahead``, ``CORR ahead``, ``neither`` (the
    interval holds 0) or ``undetermined`` (no interval)."""
    low, high = q.get("low"), q.get("high")
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return "undetermined"
    return "BkR ahead" if low > 0 else "CORR ahead" if high < 0 else "neither"


def verdict_rows(numbers: Mapping[str, Any]) -> list[VerdictRow]:
    """Every configuration's encoder sets (descriptive ones included), then the pooled groups
    of at least :data:`MIN_POOL_ENCODERS` shared encoders over two or more configurations."""
    rows = []
    for c in numbers.get("configurations") or []:
        for set_name in VERDICT_SETS:
            conf = c.get(set_name)
            if not conf or "pearson" not in conf:
                continue
            rows.append(
                VerdictRow(
                    configuration=str(c["run_name"]),
                    set_name=set_name,
                    n_encoders=int(conf["n_encoders"]),
                    pearson=conf["pearson"],
                    inferential=int(conf["n_encoders"]) >= MIN_POOL_ENCODERS,
                    pooled=False,
                    layout=f"{set_name}:{c['run_name']}",
                )
            )
    for set_name in VERDICT_SETS:
        for g in (numbers.get("pooled") or {}).get(set_name, []):
            if not g["inferential"] or len(g["configurations"]) < 2 or "pearson" not in g:
                continue
            rows.append(
                VerdictRow(
                    configuration="pooled: " + " + ".join(g["configurations"]),
                    set_name=set_name,
                    n_encoders=int(g["n_encoders"]),
                    pearson=g["pearson"],
                    inferential=True,
                    pooled=True,
                    layout=f"{set_name}:{'+'.join(g['configurations'])}",
                )
            )
    return rows


def _layout_signature(numbers: Mapping[str, Any], row: VerdictRow) -> str | None:
    for lay in (numbers.get("layouts") or {}).get(row.set_name, []):
        if lay["name"] == row.layout:
            return str(lay["signature"])
    return None


def _ci_cell(q: Mapping) -> str:
    from ..document import fmt_ci

    low, high = q.get("low"), q.get("high")
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    return fmt_ci(q["estimate"], low, high).split(" ", 1)[1] + f" {lean(q)}"


def verdict_table(numbers: Mapping[str, Any]) -> str:
    """The verdict's small table (Markdown): per tested row (at least :data:`MIN_POOL_ENCODERS`
    encoders) the configuration, its encoders, BkR − CORR (Pearson with XLR) and its 95% interval
    for both questions. The descriptive rows are in :func:`detail_table`."""
    rows = [r for r in verdict_rows(numbers) if r.inferential]
    if not rows:
        return ""
    lines = [
        "| configuration | encoders | BkR − CORR | 95% CI, these encoders | 95% CI, encoders like these |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        p = r.pearson
        lines.append(
            f"| {r.configuration} | {r.encoders} | {p['fixed']['estimate']:.3f} | {_ci_cell(p['fixed'])} "
            f"| {_ci_cell(p['random'])} |"
        )
    return "\n".join(lines) + "\n"


def detail_table(numbers: Mapping[str, Any], coverage: Mapping | None) -> str:
    """docs/FINDINGS.md's table of every row of the verdict: both intervals with the simulated
    coverage of the nominal 95% in the row's layout (benchmarks/bench_inference_coverage.py)
    and BCa's z0 of the item bootstrap; the rows with fewer than :data:`MIN_POOL_ENCODERS`
    encoders with their estimate only (descriptive)."""
    rows = verdict_rows(numbers)
    if not rows:
        return ""
    lines = [
        "| configuration | encoders | families | BkR − CORR | these encoders: 95% CI | coverage | z0 "
        "| encoders like these: 95% CI | coverage |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cov = (coverage or {}).get("layouts") or {}
    for r in rows:
        p = r.pearson
        fams = p["random"].get("n_families")
        head = f"| {r.configuration} | {r.encoders} | {fams if fams is not None else 'n/a'} | {p['fixed']['estimate']:.3f} "
        if not r.inferential:
            lines.append(head + "| descriptive only | | | descriptive only | |")
            continue
        sig = _layout_signature(numbers, r)
        c = cov.get(sig) if sig else None
        fixed_cov = f"{c['fixed/pearson']:.3f}" if c else "not simulated"
        random_cov = f"{c['random/pearson']:.3f}" if c else "not simulated"
        z0 = p["fixed"].get("z0")
        z0s = f"{z0:.2f}" if z0 is not None and np.isfinite(z0) else "n/a"
        lines.append(
            head + f"| {_ci_cell(p['fixed'])} | {fixed_cov} | {z0s} | {_ci_cell(p['random'])} | {random_cov} |"
        )
    return "\n".join(lines) + "\n"


def _share(k: int, n: int) -> str:
    """``k`` of ``n`` in words: none of the n, both, all n, k of the n."""
    if k == 0:
        return f"none of the {n}"
    if k == n:
        return "both" if n == 2 else "the one" if n == 1 else f"all {n}"
    return f"{k} of the {n}"


def overall_brief(numbers: Mapping[str, Any]) -> str:
    """The verdict in at most three sentences (:data:`VERDICT_MAX_CHARS`): the conclusion and
    its scope first (how many tested rows put BkR ahead of CORR, for both questions), which
    rows are descriptive only, and what the numbers of :func:`verdict_table` are."""
    configs = numbers.get("configurations") or []
    if not configs:
        return "No overall verdict yet: no real-data configuration has been analysed."
    rows = verdict_rows(numbers)
    own = [r for r in rows if r.inferential and not r.pooled]
    pooled = [r for r in rows if r.pooled]

    def tally(q: str, side: str) -> tuple[int, int]:
        return (
            sum(lean(r.pearson[q]) == side for r in own),
            sum(lean(r.pearson[q]) == side for r in pooled),
        )

    def where(q: str, side: str) -> str:
        k, kp = tally(q, side)
        if pooled and k == kp == 0:
            return "none of them"
        return f"{_share(k, len(own))} tested rows" + (f" and {_share(kp, len(pooled))} pooled rows" if pooled else "")

    if all(c.get("synthetic") for c in configs):
        scope = "On SYNTHETIC data only (a demonstration of the method, not evidence about real encoders)"
    elif all(str(c["dataset"]).startswith("multi30k") for c in configs):
        scope = "On Multi30K images and captions (not the paper's datasets)"
    else:
        scope = f"On {len(configs)} real-data configurations"
    if not own:
        first = f"{scope}, no configuration has the {MIN_POOL_ENCODERS} encoders a tested row needs."
    else:
        corr = sum(tally(q, "CORR ahead")[0] + tally(q, "CORR ahead")[1] for q in INTERVAL_QUESTIONS)
        first = (
            f"{scope}, BkR tracks XLR across encoders better than CORR for these encoders in "
            f"{where('fixed', 'BkR ahead')}, and for encoders like these in {where('random', 'BkR ahead')}; "
            + ("CORR is ahead in none." if corr == 0 else f"CORR is ahead in {corr} interval{'s' * (corr != 1)}.")
        )
    small = sorted({r.configuration for r in rows if not r.pooled and not r.inferential and r.set_name == "all"})
    if not small:
        second = f"Every row has at least the {MIN_POOL_ENCODERS} encoders a test needs."
    elif len(small) <= 2:
        second = f"{' and '.join(small)} (fewer than {MIN_POOL_ENCODERS} encoders) {'is' if len(small) == 1 else 'are'} descriptive only."
    else:
        second = f"{len(small)} configurations with fewer than {MIN_POOL_ENCODERS} encoders are descriptive only."
    third = (
        "Table: BkR − CORR in Pearson correlation with XLR, mean over directions; 95% intervals for these "
        "encoders (items resampled) and encoders like these (encoder families resampled too)."
    )
    return f"{first} {second} {third}"


def overall_text(numbers: Mapping[str, Any], coverage: Mapping | None = None) -> tuple[str, str]:
    """(answer, verdict). The verdict: :func:`overall_brief` (its table, :func:`verdict_table`,
    is rendered beside it). The answer, for docs/FINDINGS.md: the verdict, then every row with
    its simulated coverage and z0 (:func:`detail_table`), the scope and the method."""
    configs = numbers.get("configurations") or []
    verdict = overall_brief(numbers)
    if not configs:
        return "No real-data configuration has an inference result; no overall verdict.", verdict
    notes = []
    if all(str(c["dataset"]).startswith("multi30k") for c in configs):
        notes.append(
            "All configurations are Multi30K images and captions, not the paper's datasets (STAIR, Multi30K, IKEA)."
        )
    small = sorted({r.configuration for r in verdict_rows(numbers) if not r.pooled and not r.inferential})
    if small:
        notes.append(
            f"Descriptive only ({', '.join(small)}): fewer than {MIN_POOL_ENCODERS} encoders, where a correlation "
            "across encoders takes few values; pooled only where configurations share one set of at least "
            f"{MIN_POOL_ENCODERS} encoders."
        )
    method = (
        "Method: per cell (configuration × direction), BkR − CORR is the mean over the seeds of the per-seed "
        "Pearson correlations across encoders (the paper's statistic), averaged over the configuration's "
        "directions (or the pooled cells). Encoders fixed (*these encoders*): an item-only Poisson bootstrap, "
        "every image keyed by its id so that cells on the same images (both directions; task 1 and task 2 share "
        "test_2016) get the same weight in a replicate; the interval is the estimate ± t·SE of the replicates "
        f"averaged over the cells (Student t on {JACKKNIFE_GROUPS - 1} degrees of freedom: the SE is itself estimated), "
        "and nothing is dropped; z0 is BCa's bias correction of the replicates. Encoders random (*encoders like "
        "these*): the same item variance plus a leave-one-family-out jackknife over the shared encoders (the "
        "word-vector variants are one family: they share their base vectors), normal interval (Student t "
        "over-covered in the simulated layouts). Coverage: of the nominal 95% interval, simulated in the row's "
        "layout (benchmarks/bench_inference_coverage.py, benchmarks/README.md)"
        + (f" over {coverage['worlds']} worlds." if coverage and "worlds" in coverage else ".")
    )
    answer = "\n\n".join([verdict, detail_table(numbers, coverage).rstrip("\n"), " ".join(notes + [method])])
    return answer, verdict


#: the title of the forest plot (reports/findings_summary/figures/overall_forest)
FOREST_TITLE = "BkR − CORR per configuration and direction"


def plot_forest(cells: pd.DataFrame, pooled: Mapping[str, list], out_base, stat: str = "pearson") -> list:
    """Forest plot: BkR − CORR per configuration × direction with its 95% CI for these encoders
    (items resampled), and the pooled estimates (diamond: that interval; thin line: the interval
    for encoders like these). The real-data rows and the SYNTHETIC rows are separate panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ...reporting.figures import save_figure, wrap_title

    g = cells[cells["stat"] == stat].reset_index(drop=True)
    extra = [
        (f"pooled ({set_name}): {' + '.join(p['configurations'])}", p[stat])
        for set_name in VERDICT_SETS
        for p in (pooled.get(set_name) or [])
        if p["inferential"] and len(p["configurations"]) >= 2 and stat in p
    ]
    real, synthetic = g[~g["synthetic"].astype(bool)], g[g["synthetic"].astype(bool)]
    panels = [(real, extra, "real data")] if len(real) else []
    if len(synthetic):
        panels.append((synthetic, [] if len(real) else extra, "SYNTHETIC data (a demonstration, not evidence)"))
    heights = [len(rows) + len(ext) + 1.2 for rows, ext, _ in panels]
    sns.set_theme(style="whitegrid", context="paper")
    width = 6.4
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(width, 0.26 * sum(heights) + 1.9),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
    )
    for ax, (rows, ext, name) in zip(axes[:, 0], panels):
        labels = [f"{r.run_name}: {r.direction.replace('-', '→')}" for r in rows.itertuples()]
        y = np.arange(len(rows))
        ax.hlines(y, rows["low"], rows["high"], color="#4c72b0", linewidth=1.6)
        ax.plot(rows["diff"], y, "o", color="#4c72b0", markersize=4)
        for i, (lab, p) in enumerate(ext):
            yy = len(rows) + i + 0.5
            rnd = p.get("random") if isinstance(p, Mapping) else None
            fx = p["fixed"]
            if rnd and np.isfinite(rnd.get("low", np.nan)):
                ax.hlines(yy, rnd["low"], rnd["high"], color="#c44e52", linewidth=0.8)
            ax.fill(
                [fx["low"], fx["estimate"], fx["high"], fx["estimate"]], [yy, yy - 0.3, yy, yy + 0.3], color="#c44e52"
            )
            labels.append(lab)
        ax.set_yticks(list(y) + [len(rows) + i + 0.5 for i in range(len(ext))], labels, fontsize=7)
        ax.axvline(0, color="grey", linewidth=0.8)
        ax.invert_yaxis()
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(f"BkR − CORR ({stat.capitalize()} correlation with XLR across encoders)")
    note = (
        "points and diamonds: 95% CI for these encoders (items resampled); "
        "thin line through a diamond: 95% CI for encoders like these (encoder families resampled too)"
    )
    fig.suptitle(wrap_title(f"{FOREST_TITLE}\n{note}", width - 0.3, 8), fontsize=8)
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


# ---------------------------------------------------------------------------------------------
# Table 1's test of BkR − CORR (items and encoder families as units): "encoders random" above

#: the unit label and test name of Table 1's test
ITEMS_UNIT = "items and encoder families"
TABLE1_TEST = "item bootstrap + leave-one-family-out jackknife (encoders random), z test"


def random_question_test(random: Mapping[str, Any]) -> tuple[float, float]:
    """(z, p): the two-sided test of BkR − CORR = 0 dual to the "encoders random" interval of
    :func:`two_questions` (its ``random`` result): z = estimate / se against the interval's own
    normal reference, so p < α exactly where the 1 − α interval excludes 0. NaN where the
    interval is undefined or se = 0."""
    se = float(random["se"])
    if not np.isfinite(se) or se <= 0:
        return float("nan"), float("nan")
    z = float(random["estimate"]) / se
    return z, float(2 * st.norm.sf(abs(z)))


def _table1_undefined(
    est: float,
    replicates: np.ndarray,
    family_loo: Mapping[str, Sequence[float]],
    members: Sequence[str],
    families: Mapping[str, str],
) -> str:
    """Why Table 1's test of one (set, stat) is undefined ('' where it is defined)."""
    if not np.isfinite(est):
        return "BkR − CORR is undefined (a metric is constant across the encoders)"
    n_fam = len(family_loo)
    if n_fam < MIN_JACKKNIFE_FAMILIES:
        return (
            f"{len(members)} encoders in {n_fam} encoder {'family' if n_fam == 1 else 'families'}; the "
            f"leave-one-family-out jackknife needs >= {MIN_JACKKNIFE_FAMILIES} families"
        )
    for fam, vals in family_loo.items():
        if not np.isfinite(vals).all():
            left = sum(families[e] != fam for e in members)
            if left < MIN_ENCODERS:
                return (
                    f"without the family {str(fam)!r} {left} encoders are left; the leave-one-family-out "
                    f"jackknife needs >= {MIN_ENCODERS} encoders left without each family"
                )
            return f"without the family {str(fam)!r} BkR − CORR is undefined (a metric is constant across the encoders left)"
    bad = int(np.sum(~np.isfinite(replicates)))
    if bad:
        return f"{bad} of {replicates.size} item-bootstrap replicates are undefined"
    return ""


def table1_tests(
    outcomes: Mapping[str, tuple[Sequence, Sequence[str], Sequence[str]]],
    B: int,
    seed: int,
    alpha: float = 0.05,
    encoder_sets: Mapping[str, Sequence[str]] | None = None,
    families: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Table 1's test of BkR − CORR, one row per (direction, encoder set, stat): the "encoders
    random" question of :func:`two_questions` (the findings' own function) on one cell, and its
    dual test (:func:`random_question_test`).

    ``outcomes[direction] = (seed outcomes, item keys, encoders)`` as
    :func:`backretrieval.findings.inference.inference_outcomes` returns them (per-query
    XLR and BkR hits and CORR contributions of every seed). ``encoder_sets``: name → encoders
    (default ``{"all": every encoder}``; e.g. ``all`` and ``core``, each >= 3 encoders);
    ``families``: encoder → family (default: every encoder its own family; the report step uses
    :func:`backretrieval.findings.inference.encoder_families`, the findings' function).

    The statistic is Table 1's: per seed, BkR's minus CORR's correlation with XLR across the
    set's encoders, averaged over the seeds. SE² = the variance of the item-only bootstrap
    (:func:`crossed_bootstrap` with ``resample_encoders=False``: Poisson(1) weights keyed by
    image id, shared by every seed) + the leave-one-family-out jackknife variance
    (F − 1)/F · Σ_f (θ_(−f) − θ̄_(·))² over the set's F encoder families; the interval and
    the reference distribution are two_questions' (estimate ± z_(1−α/2)·SE), z = estimate / SE,
    two-sided normal p. Columns: direction, set, stat, test, unit, estimate, se, se_items,
    se_encoders, ci_low, ci_high, z, p, n_encoders, n_families, n_items, n_seeds, B, why (the
    reason the test is undefined, else empty), p_holm (Holm across the directions, per set and
    stat). Undefined
    (NaN, no mark, ``why`` says which): fewer than :data:`MIN_JACKKNIFE_FAMILIES` families,
    fewer than 3 encoders left without some family, an undefined estimate or replicate. The
    marks are :func:`backretrieval.reporting.significance.table1_marks` of p_holm (not stored:
    verify compares p-values as decisions).
    """
    from ...stats import adjust_pvalues

    rows = []
    nan = float("nan")
    for direction, (seeds, keys, encoders) in outcomes.items():
        encoders = list(encoders)
        sets = {"all": encoders} if encoder_sets is None else {n: list(m) for n, m in encoder_sets.items()}
        fam_of = {e: e for e in encoders} if families is None else dict(families)
        res = crossed_bootstrap(
            seeds,
            encoders,
            sets,
            list(keys),
            B=B,
            seed=seed,
            leave_one_out=None,
            resample_encoders=False,
            jackknife_groups=JACKKNIFE_GROUPS,
            families=fam_of,
        )
        for set_name, members in sets.items():
            n_fam = len({fam_of[e] for e in members})
            for stat in STATS:
                key = (set_name, "rho_diff", stat)
                est, rep = float(res.point[key]), np.asarray(res.replicates[key], dtype=np.float64)
                loo = {f: [v] for (sn, f, q, sta), v in res.family_loo.items() if (sn, q, sta) == key}
                why = _table1_undefined(est, rep, loo, members, fam_of)
                row = dict(
                    direction=direction,
                    set=set_name,
                    stat=stat,
                    test=TABLE1_TEST,
                    unit=ITEMS_UNIT,
                    estimate=est,
                    se=nan,
                    se_items=nan,
                    se_encoders=nan,
                    ci_low=nan,
                    ci_high=nan,
                    z=nan,
                    p=nan,
                    n_encoders=len(members),
                    n_families=n_fam,
                    n_items=len(keys),
                    n_seeds=len(seeds),
                    B=int(B),
                    why=why,
                )
                if not why:
                    rn = two_questions([est], [rep], [res.jackknife[key]], loo, alpha)["random"]
                    row.update(
                        se=rn["se"],
                        se_items=rn["se_items"],
                        se_encoders=rn["se_encoders"],
                        ci_low=rn["low"],
                        ci_high=rn["high"],
                    )
                    row["z"], row["p"] = random_question_test(rn)
                    if not np.isfinite(row["p"]):
                        row["why"] = "SE = 0 (BkR − CORR is the same in every replicate and without every family)"
                rows.append(row)
    out = pd.DataFrame(rows)
    if len(out):
        out["p_holm"] = np.nan
        for _, g in out.groupby(["set", "stat"]):
            p = g["p"].to_numpy(float)
            ok = np.isfinite(p)
            if ok.any():
                adj = np.full(len(p), np.nan)
                adj[ok] = adjust_pvalues(p[ok], method="holm")
                out.loc[g.index, "p_holm"] = adj
    return out
