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
never degenerate): Table 1's test combines it with a leave-one-encoder-out jackknife
(:mod:`backretrieval.reporting.significance`).

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

import numpy as np
import pandas as pd
import scipy.stats as st

from ..errors import InputError
from ..stats import bootstrap_ci

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

    def frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """Tidy rows: set, quantity, stat, estimate, CI (percentile), se, valid and dropped
        replicates, and the naive interval that treats the seeds as independent replicates."""
        rows = []
        for key in sorted(self.point):
            set_name, quantity, stat = key
            est = self.point[key]
            rep = self.replicates.get(key, np.empty(0))
            rep = rep[np.isfinite(rep)]
            low = high = se = float("nan")
            if rep.size >= 2:
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


def _rank_rows(x: np.ndarray) -> np.ndarray:
    return st.rankdata(x, axis=-1)


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


def crossed_bootstrap(
    seeds: Sequence[SeedOutcomes],
    encoders: Sequence[str],
    encoder_sets: Mapping[str, Sequence[str]],
    item_keys: Sequence[str],
    B: int = 1000,
    seed: int = 0,
    leave_one_out: str | None = "all",
    resample_encoders: bool = True,
) -> BootstrapOutcome:
    """Crossed encoder × item bootstrap of every metric's correlation with XLR (module doc).

    ``item_keys``: the name of every item ``query_items`` indexes (the unit its weight is keyed
    by, e.g. the image id). ``encoder_sets``: name → encoders (e.g. ``all``, ``no_random``,
    ``core``); an encoder has the same weight in every set. ``leave_one_out``: the set whose
    leave-one-encoder-out point estimates are added (sets named ``<set>-<encoder>``, point
    estimates only). ``resample_encoders=False``: every encoder keeps weight 1 in every
    replicate (an item-only bootstrap; no replicate is degenerate). Deterministic for a seed;
    vectorised over the replicates.
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
    for name, idx in loo_sets.items():
        ones = np.ones(idx.size)
        per_seed: dict[tuple[str, str], list[float]] = {}
        for v, x in point_vals:
            q = _quantities({m: v[m][idx] for m in metrics}, x[idx], metrics, ones)
            for key, val in q.items():
                per_seed.setdefault(key, []).append(float(val))
        for (quantity, stat), vals in per_seed.items():
            arr = np.array(vals)
            res.per_seed[(name, quantity, stat)] = arr
            res.point[(name, quantity, stat)] = float(np.mean(arr))
        qa = _quantities({m: avg_vals[m][idx] for m in metrics}, avg_x[idx], metrics, ones, False, AVG_SUFFIX)
        for (quantity, stat), val in qa.items():
            res.point[(name, quantity, stat)] = float(val)

    # replicates: item weights keyed by item, encoder weights keyed by encoder name
    W = unit_weights(item_keys, B, seed, "item")  # (n_items, B)
    Wenc = unit_weights(encoders, B, seed, "encoder").T if resample_encoders else np.ones((B, E))  # (B, E)
    acc: dict[tuple[str, str, str], np.ndarray] = {}
    sums = {m: np.zeros((B, E)) for m in [*metrics, "xlr"]}
    for s in seeds:
        wq = W[s.query_items]  # (N, B)
        tot = wq.sum(axis=0)
        tot[tot == 0] = np.nan  # no query of this seed drawn: the replicate is undefined here
        vals = {m: (s.per_query[m] @ wq / tot).T for m in metrics}  # (B, E)
        x = (s.xlr @ wq / tot).T
        for m in metrics:
            sums[m] += vals[m]
        sums["xlr"] += x
        for name, idx in sets.items():
            q = _quantities({m: vals[m][:, idx] for m in metrics}, x[:, idx], metrics, Wenc[:, idx])
            for (quantity, stat), r in q.items():
                key = (name, quantity, stat)
                acc[key] = acc.get(key, 0.0) + r
    for key, total in acc.items():
        res.replicates[key] = total / len(seeds)
    for name, idx in sets.items():
        w = Wenc[:, idx]
        res.degenerate[name] = int(np.sum(np.sum(w > 0, axis=1) < MIN_ENCODERS))
        qa = _quantities(
            {m: sums[m][:, idx] / len(seeds) for m in metrics},
            sums["xlr"][:, idx] / len(seeds),
            metrics,
            w,
            False,
            AVG_SUFFIX,
        )
        for (quantity, stat), r in qa.items():
            res.replicates[(name, quantity, stat)] = r
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
    from ..metrics import average_ranks, normalize

    def z_ranks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = np.subtract(np.float32(1), normalize(a) @ normalize(b).T, dtype=np.float32)
        r = average_ranks(d.ravel()).reshape(d.shape)
        sd = r.std()
        return (r - r.mean()) / sd if sd > 0 else np.full(r.shape, np.nan)

    zi = z_ranks(q_img, t_img)
    return np.stack([(z_ranks(s, t) * zi).mean(axis=1) for s, t in texts])


# --------------------------------------------------------------------------- figure


def plot_intervals(frame: pd.DataFrame, out_base, title: str, set_name: str = "all") -> list:
    """Per direction and statistic: BkR's and CORR's correlation with XLR, the crossed-bootstrap
    95% CI (thick) and the seeds-as-replicates CI (thin); PNG/SVG/PDF, reproducible bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figures import finish_figure

    f = frame[(frame["set"] == set_name) & frame["quantity"].isin(["rho_bkr", "rho_corr"])]
    directions = list(dict.fromkeys(f["direction"]))
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(
        1, len(STATS), figsize=(4.2 * len(STATS), 0.45 * len(directions) + 1.6), squeeze=False, sharey=True
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
    axes[0][0].legend(loc="lower left", fontsize=7, title="thick: encoders × items\nthin: seeds", title_fontsize=6)
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


SCOPES = ("real", "all")
#: the encoder sets the overall verdict reports (findings step ``encoder_sets``)
VERDICT_SETS = ("all", "core")


def joint_pooled(
    records: Sequence, replicates: Sequence[pd.DataFrame], alpha: float = 0.05
) -> dict[str, dict[str, dict[str, dict[str, dict]]]]:
    """``{scope: {set: {quantity: {stat: pooled}}}}`` over every configuration's cells
    (dataset × direction), pooled within each joint replicate (:func:`pool_replicates`).
    ``records[i]`` is an ``inference`` record and ``replicates[i]`` its replicate table (columns
    ``direction|set|quantity|stat``). All records must share B and the bootstrap seed: then an
    encoder or image has the same weight in replicate b of every configuration. Scope ``real``:
    the non-synthetic configurations; ``all``: every configuration. ``pooled`` adds the cells'
    datasets, the encoder set (union of the configurations') and the cells where BkR leads."""
    if len(records) != len(replicates):
        raise InputError("joint_pooled: one replicate table per inference record")
    designs = {(int(r.settings.get("B", -1)), int(r.settings.get("bootstrap_seed", -1))) for r in records}
    if len(designs) > 1:
        names = ", ".join(
            f"{r.run.run_name} (B={r.settings.get('B')}, seed {r.settings.get('bootstrap_seed')})" for r in records
        )
        raise InputError(
            f"joint_pooled: the inference records were not drawn jointly (differing B or bootstrap seed): {names}"
        )
    out: dict[str, dict[str, dict[str, dict[str, dict]]]] = {}
    for scope in SCOPES:
        use = [(r, t) for r, t in zip(records, replicates) if scope == "all" or not r.run.synthetic]
        for set_name in VERDICT_SETS:
            for quantity in ("rho_diff", "rho_diff_avg"):
                for stat in STATS:
                    pts, reps, datasets, encs, cells = [], [], set(), set(), []
                    sizes: dict[str, list[int]] = {}
                    for r, t in use:
                        members = (r.settings.get("encoder_sets") or {}).get(set_name)
                        for d in r.run.directions:
                            key = f"{d}|{set_name}|{quantity}|{stat}"
                            pt = (r.numbers.get("cell_points") or {}).get(key)
                            if key not in t.columns or pt is None or not members:
                                continue
                            pts.append(float(pt))
                            reps.append(t[key].to_numpy(dtype=np.float64))
                            datasets.add(r.run.dataset)
                            n_seeds = int(r.settings.get("n_seeds_used") or len(r.run.seeds))
                            sizes[r.run.dataset] = [int(r.run.sample_size), n_seeds]
                            encs.update(members)
                            cells.append(f"{r.run.run_name}:{d}")
                    if len(pts) < 2:
                        continue
                    res = pool_replicates(pts, reps, alpha)
                    res.update(
                        n_datasets=len(datasets),
                        datasets=sorted(datasets),
                        dataset_sizes={d: sizes[d] for d in sorted(sizes)},
                        encoders=sorted(encs),
                        n_positive=int(np.sum(np.array(pts) > 0)),
                        n_negative=int(np.sum(np.array(pts) < 0)),
                        cells=cells,
                    )
                    out.setdefault(scope, {}).setdefault(set_name, {}).setdefault(quantity, {})[stat] = res
    return out


def _lean(p: Mapping) -> str:
    if p["low"] > 0:
        return "BkR tracks XLR better than CORR"
    if p["high"] < 0:
        return "CORR tracks XLR better than BkR"
    return "neither BkR nor CORR tracks XLR detectably better"


def overall_text(cells: pd.DataFrame, pooled: Mapping) -> tuple[str, str]:
    """(paragraph, verdict) of the joint bootstrap pooled across configurations: its scope (cells,
    datasets, encoders), the verdict without the random and English-only encoders, and whether
    averaging the metrics over the seeds before correlating changes it."""
    from .document import fmt_ci

    scope = "real" if "real" in pooled else "all" if "all" in pooled else None
    if scope is None or "pearson" not in pooled[scope].get("all", {}).get("rho_diff", {}):
        return (
            "Fewer than two dataset × direction cells have an inference result; no pooled verdict.",
            "No overall verdict yet: fewer than two dataset × direction cells have been analysed.",
        )
    sets = pooled[scope]
    p = sets["all"]["rho_diff"]["pearson"]
    ds = p["datasets"]
    what = "real-data " if scope == "real" else ""
    origin = ""
    if ds and all(d.lower().startswith("multi30k") for d in ds):
        origin = (
            "; all of them Multi30K images and captions, which is not the paper's setting "
            "(it evaluated on STAIR, Multi30K and IKEA)"
        )
    note = " including SYNTHETIC ones" if scope == "all" and cells["synthetic"].any() else ""

    def est(q: Mapping) -> str:
        return f"{fmt_ci(q['estimate'], q['low'], q['high'])}"

    sizes = p.get("dataset_sizes") or {}
    named = [f"{d} (N={sizes[d][0]}, {sizes[d][1]} seeds)" if d in sizes else d for d in ds]
    verdict = (
        f"Pooled over {p['k']} {what}dataset × direction cells ({p['n_datasets']} dataset"
        f"{'s' if p['n_datasets'] != 1 else ''}{note}: {', '.join(named)}{origin}) and {len(p['encoders'])} encoders "
        f"({', '.join(p['encoders'])}), {_lean(p)}: the Pearson correlation with XLR differs by BkR − CORR = "
        f"{est(p)} (mean over cells; 95% interval of a joint bootstrap that draws the encoders once and every "
        f"image once per replicate for all cells, {p['n_dropped']} of {p['B']} replicates dropped; BkR ahead in "
        f"{p['n_positive']} of {p['k']} cells)."
    )
    core = sets.get("core", {}).get("rho_diff", {}).get("pearson")
    if core:
        dropped = sorted(set(p["encoders"]) - set(core["encoders"]))
        verdict += (
            f" Without the random and English-only encoders ({', '.join(dropped)}; {len(core['encoders'])} left): "
            f"{_lean(core)}, {est(core)} ({core['n_dropped']} of {core['B']} replicates dropped"
            + (
                f" because some cell drew fewer than 3 distinct encoders: the interval rests on the other "
                f"{core['B'] - core['n_dropped']}"
                if core["n_dropped"] > core["B"] / 2
                else ""
            )
            + ")."
        )
    flips = []
    for set_name, label in (("all", "all encoders"), ("core", "without the random and English-only encoders")):
        a, b = (
            sets.get(set_name, {}).get("rho_diff", {}).get("pearson"),
            sets.get(set_name, {}).get("rho_diff_avg", {}).get("pearson"),
        )
        if a and b:
            flips.append((label, _lean(a) != _lean(b), b))
    if flips:
        changed = [f"{lab}: {est(b)}, {_lean(b)}" for lab, ch, b in flips if ch]
        if changed:
            verdict += (
                " The verdict depends on the aggregation over seeds: correlating the metrics averaged over the seeds "
                f"(not the paper's statistic, which averages the per-seed correlations) instead gives {'; '.join(changed)}."
            )
        else:
            verdict += (
                " Correlating the metrics averaged over the seeds instead of averaging per-seed correlations gives "
                f"the same verdict ({'; '.join(f'{lab}: {est(b)}' for lab, _, b in flips)})."
            )
    parts = []
    for sc in SCOPES:
        for set_name in VERDICT_SETS:
            for quantity, agg in (
                ("rho_diff", "per-seed correlations averaged"),
                ("rho_diff_avg", "seed-averaged metrics"),
            ):
                for st_ in STATS:
                    q = pooled.get(sc, {}).get(set_name, {}).get(quantity, {}).get(st_)
                    if q:
                        parts.append(
                            f"{'Real data' if sc == 'real' else 'All configurations'}, "
                            f"{'all encoders' if set_name == 'all' else 'without random/English-only'}, "
                            f"{agg}, {st_.capitalize()}: BkR − CORR = {est(q)} over {q['k']} cells from "
                            f"{q['n_datasets']} dataset(s), {len(q['encoders'])} encoders (BkR ahead in "
                            f"{q['n_positive']}, CORR in {q['n_negative']}; {q['n_valid']} of {q['B']} replicates valid)."
                        )
    parts.append(
        "Method: in each bootstrap replicate every encoder (keyed by name) and every image (keyed by its id) gets "
        "one Poisson(1) weight, shared by every seed, direction and configuration that uses it (task 1 and task 2 "
        "share the test_2016 images; both directions of a pair share items); XLR, BkR and CORR reweight their "
        "per-query outcomes alike; every cell's BkR − CORR is recomputed and the cells are averaged within the "
        "replicate; the interval is the 2.5–97.5 percentile of those averages. Replicates whose encoder draw has "
        "fewer than 3 distinct encoders are dropped. The cells are not independent, so no sign test or "
        "random-effects pooling is used; the per-cell intervals in the table are the same bootstrap's."
    )
    return " ".join(parts), verdict


def plot_forest(cells: pd.DataFrame, pooled: dict[str, dict[str, dict]], out_base, stat: str = "pearson") -> list:
    """Forest plot: BkR − CORR per dataset × direction with its 95% CI, and the pooled estimates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figures import save_figure

    g = cells[cells["stat"] == stat].reset_index(drop=True)
    labels = [f"{r.run_name}{' (SYN)' if r.synthetic else ''}: {r.direction.replace('-', '→')}" for r in g.itertuples()]
    extra = [
        (f"pooled, {sc}", pooled[sc]["all"]["rho_diff"][stat])
        for sc in ("all", "real")
        if stat in pooled.get(sc, {}).get("all", {}).get("rho_diff", {})
    ]
    n = len(g) + len(extra)
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(6.0, 0.28 * n + 1.4))
    y = np.arange(len(g))
    ax.hlines(y, g["low"], g["high"], color="#4c72b0")
    ax.plot(g["diff"], y, "o", color="#4c72b0", markersize=4)
    for i, (lab, p) in enumerate(extra):
        yy = len(g) + i + 0.5
        ax.fill([p["low"], p["estimate"], p["high"], p["estimate"]], [yy, yy - 0.3, yy, yy + 0.3], color="#c44e52")
        labels.append(lab)
    ax.set_yticks(list(y) + [len(g) + i + 0.5 for i in range(len(extra))], labels, fontsize=7)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlabel(f"BkR − CORR ({stat.capitalize()} correlation with XLR), 95% CI")
    fig.tight_layout()
    written = save_figure(fig, out_base)
    plt.close(fig)
    return written


# ---------------------------------------------------------------------------------------------
# Table 1's test of BkR − CORR (items and encoders as units), on the crossed bootstrap above

#: the unit label and test name of Table 1's test
ITEMS_UNIT = "items and encoders"
TABLE1_TEST = "encoder jackknife + item bootstrap"
#: fewest encoders the leave-one-encoder-out jackknife needs (each left-out set keeps >= 3)
MIN_JACKKNIFE_ENCODERS = 4


def table1_tests(
    outcomes: Mapping[str, tuple[Sequence, Sequence[str], Sequence[str]]],
    B: int,
    seed: int,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Table 1's test of BkR − CORR (module doc), one row per (direction, stat).

    ``outcomes[direction] = (seed outcomes, item keys, encoders)`` as
    :func:`backretrieval.steps.findings.inference.inference_outcomes` returns them (per-query
    XLR and BkR hits and CORR contributions of every seed). Columns: estimate (mean over seeds
    of BkR − CORR), se, se_items, se_encoders, ci_low, ci_high, z, p, p_holm (across the
    directions, per stat), n_encoders, n_items, n_seeds, B, unit, test. With fewer than
    :data:`MIN_JACKKNIFE_ENCODERS` encoders the test is undefined (NaN, no mark). The marks are
    :func:`backretrieval.reporting.significance.table1_marks` of p_holm (not stored: verify compares p-values as decisions).
    """
    from ..stats import adjust_pvalues

    zq = float(st.norm.ppf(1 - alpha / 2))
    rows = []
    for direction, (seeds, keys, encoders) in outcomes.items():
        encoders = list(encoders)
        E = len(encoders)
        res = crossed_bootstrap(
            seeds, encoders, {"all": encoders}, list(keys), B=B, seed=seed, leave_one_out="all", resample_encoders=False
        )
        for stat in STATS:
            est = res.point[("all", "rho_diff", stat)]
            rep = res.replicates[("all", "rho_diff", stat)]
            rep = rep[np.isfinite(rep)]
            var_items = float(np.var(rep, ddof=1)) if rep.size >= 2 else float("nan")
            var_enc = float("nan")
            if E >= MIN_JACKKNIFE_ENCODERS:
                loo = np.array([res.point[(f"all-{e}", "rho_diff", stat)] for e in encoders])
                if np.isfinite(loo).all():
                    var_enc = float((E - 1) / E * np.sum((loo - loo.mean()) ** 2))
            se = float(np.sqrt(var_items + var_enc))
            z = est / se if se > 0 else float("nan")
            p = float(2 * st.norm.sf(abs(z))) if np.isfinite(z) else float("nan")
            rows.append(
                dict(
                    direction=direction,
                    stat=stat,
                    test=TABLE1_TEST,
                    unit=ITEMS_UNIT,
                    estimate=float(est),
                    se=se,
                    se_items=float(np.sqrt(var_items)),
                    se_encoders=float(np.sqrt(var_enc)),
                    ci_low=float(est - zq * se),
                    ci_high=float(est + zq * se),
                    z=z,
                    p=p,
                    n_encoders=E,
                    n_items=len(keys),
                    n_seeds=len(seeds),
                    B=int(B),
                )
            )
    out = pd.DataFrame(rows)
    if len(out):
        out["p_holm"] = np.nan
        for _, g in out.groupby("stat"):
            p = g["p"].to_numpy(float)
            ok = np.isfinite(p)
            if ok.any():
                adj = np.full(len(p), np.nan)
                adj[ok] = adjust_pvalues(p[ok], method="holm")
                out.loc[g.index, "p_holm"] = adj
    return out
