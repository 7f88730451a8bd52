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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InputError
from .bootstrap import bootstrap_ci
from .questions import two_questions
from .weighted import MIN_ENCODERS, STATS, item_groups, pairwise_order_accuracy, unit_weights, weighted_corr

#: the aggregations over seeds: per-seed correlations averaged (``rho_*``), and the correlation
#: of the metrics averaged over the seeds (``rho_*_avg``)
AVG_SUFFIX = "_avg"


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
    the point estimates without each family (``family_loo[(set, family, quantity, stat)]``: the
    mean over the seeds where it is defined; NaN where fewer than 3 encoders are left or no seed
    defines it). Deterministic for a seed; vectorised over the
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
            if q in per_seed:
                # the mean over the seeds where it is defined: without a large family, few
                # encoders are left, and in some seed a metric can be constant across them
                ok = np.isfinite(per_seed[q])
                val = float(np.mean(per_seed[q][ok])) if ok.any() else float("nan")
            else:
                val = avg.get(q, float("nan"))
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
