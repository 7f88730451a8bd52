"""Section 1: the right unit of inference.

Table 1 treats the seeds as independent replicates, but every seed re-splits the *same* items
and evaluates the *same* encoders: the per-seed correlations share most of their data, so
their spread understates the uncertainty. The encoders are a sample of models and the items a
sample of texts/images; the design is crossed (every encoder is evaluated on every item), so
the bootstrap here resamples both at once, independently (the "pigeonhole" bootstrap of a
crossed random-effects design, Owen 2007, Ann. Appl. Stat. 1(2)):

* **items**: one multinomial weight per distinct item id over all seeds used
  (``n_items`` draws with replacement); an item drawn twice counts twice in *every* seed it
  appears in, so the dependence between seeds is kept. Per-query metrics (XLR, BkR Recall@k)
  become weighted means of their per-query outcomes; CORR is recomputed on the resampled
  queries × resampled targets (rows repeated by their weight) with the project's CORR kernel,
  or CORR's estimator on a seeded subsample of ``max_pairs`` of those pairs (then the bootstrap
  spread also contains the subsampling noise: a conservative interval; :func:`corr_resampler`).
* **encoders**: ``E`` draws with replacement from the encoder set, shared by all seeds and all
  metrics of a replicate (so BkR − CORR is a paired difference).

The statistic is the paper's: per seed, the correlation across encoders between a metric and
XLR, averaged over the seeds used. Replicates whose drawn encoders make a correlation undefined
(constant metric or XLR, fewer than 3 distinct encoders) are dropped and counted.

Also here: pairwise-order accuracy (the share of encoder pairs a metric orders as XLR does; a
tie of the metric counts half), sensitivity (leave-one-encoder-out, without the random
encoder, within one model family) and the random-effects summary of BkR − CORR over
datasets × directions (:func:`random_effects_summary`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.stats as st

from ..errors import InputError
from ..stats import bootstrap_ci

STATS = ("pearson", "spearman")
#: per-replicate CORR of every encoder: (query rows, target rows, replicate) of the seed's
#: sample → (E,)
CorrFn = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


@dataclass(frozen=True)
class SeedOutcomes:
    """One seed's sample of one direction, every encoder (rows in ``encoders`` order).

    ``query_items`` / ``target_items``: index of each query / BkR target into the global item
    list of the bootstrap (item ids shared across seeds map to the same index).
    ``per_query[metric]``: (E, N) per-query outcome whose mean over queries is the metric
    (e.g. BkR hits); ``xlr``: (E, N) the reference's per-query outcome (XLR hits at k).
    ``corr_point``: (E,) CORR on the full sample (the metrics CSV); ``corr``: recomputes it on
    resampled rows (None: CORR is left out).
    """

    seed: int
    query_items: np.ndarray
    target_items: np.ndarray
    xlr: np.ndarray
    per_query: Mapping[str, np.ndarray]
    corr_point: np.ndarray | None = None
    corr: CorrFn | None = None

    def metric_names(self) -> list[str]:
        return list(self.per_query) + (["corr"] if self.corr_point is not None else [])


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

    def frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """Tidy rows: set, quantity, stat, estimate, CI (percentile), se, valid replicates,
        and the naive interval that treats the seeds as independent replicates."""
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
    y = np.asarray(y, dtype=np.float64)
    if stat == "spearman":
        x, y = _rank_rows(x), _rank_rows(y)
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    num = np.sum(xc * yc, axis=-1)
    sxx, syy = np.sum(xc * xc, axis=-1), np.sum(yc * yc, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / np.sqrt(sxx * syy)
    # a row is constant iff its centred sum of squares is ~0 relative to its scale
    const = (sxx <= 1e-24 * (1 + np.sum(x * x, axis=-1))) | (syy <= 1e-24 * (1 + np.sum(y * y, axis=-1)))
    r = np.where(const, np.nan, np.clip(r, -1.0, 1.0))
    return r


def pairwise_order_accuracy(metric: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Share of item pairs (i < j) with different ``reference`` values that ``metric`` orders
    the same way; a tie of ``metric`` counts half. Rows (…, n) → (…,); NaN if no pair has
    different reference values."""
    m = np.asarray(metric, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    dm = np.sign(m[..., :, None] - m[..., None, :])
    dr = np.sign(r[..., :, None] - r[..., None, :])
    n = m.shape[-1]
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    valid = (dr != 0) & upper
    agree = np.where(valid, (dm == dr) + 0.5 * (dm == 0), 0.0)
    n_valid = valid.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_valid > 0, agree.sum(axis=(-2, -1)) / np.maximum(n_valid, 1), np.nan)


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
        for what, idx in (("query_items", s.query_items), ("target_items", s.target_items)):
            if idx.size and (idx.min() < 0 or idx.max() >= n_items):
                raise InputError(f"seed {s.seed}: {what} index outside [0, {n_items})")
        if s.corr_point is not None and s.corr_point.shape != (n_encoders,):
            raise InputError(f"seed {s.seed}: corr_point has shape {s.corr_point.shape}, expected ({n_encoders},)")
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
    values: Mapping[str, np.ndarray], xlr: np.ndarray, metrics: Sequence[str]
) -> dict[tuple[str, str], np.ndarray]:
    """(quantity, stat) → per row: correlations with XLR, pairwise-order accuracy, and the
    BkR − CORR differences. ``values[m]`` and ``xlr`` are (…, n_encoders)."""
    out: dict[tuple[str, str], np.ndarray] = {}
    for m in metrics:
        for stat in STATS:
            out[(f"rho_{m}", stat)] = corr_rows(values[m], xlr, stat)
        out[(f"order_acc_{m}", "pairs")] = pairwise_order_accuracy(values[m], xlr)
    if "bkr" in metrics and "corr" in metrics:
        for stat in STATS:
            out[("rho_diff", stat)] = out[("rho_bkr", stat)] - out[("rho_corr", stat)]
        out[("order_acc_diff", "pairs")] = out[("order_acc_bkr", "pairs")] - out[("order_acc_corr", "pairs")]
    return out


def crossed_bootstrap(
    seeds: Sequence[SeedOutcomes],
    encoders: Sequence[str],
    encoder_sets: Mapping[str, Sequence[str]],
    n_items: int,
    B: int = 200,
    seed: int = 0,
    leave_one_out: str | None = "all",
) -> BootstrapOutcome:
    """Crossed encoder × item bootstrap of every metric's correlation with XLR (module doc).

    ``encoder_sets``: name → encoders (e.g. ``all``, ``no_random``, ``wordvec``); each gets its
    own encoder draws. ``leave_one_out``: the set whose leave-one-encoder-out point estimates
    are added (sets named ``<set>-<encoder>``, point estimates only). Deterministic for a seed.
    """
    if B < 2:
        raise InputError(f"B: expected at least 2 bootstrap replicates, got {B}")
    E = len(encoders)
    metrics = _check_seeds(seeds, E, n_items)
    sets = _set_indices(encoders, encoder_sets)
    for name, idx in sets.items():
        if idx.size < 3:
            raise InputError(f"encoder set {name!r}: a correlation across encoders needs >= 3 encoders, got {idx.size}")
    res = BootstrapOutcome(B=B, seed=seed, n_items=n_items, n_seeds=len(seeds))

    # point estimates, per seed and their mean
    point_vals = []
    for s in seeds:
        v = {m: s.per_query[m].mean(axis=1) for m in s.per_query}
        if s.corr_point is not None:
            v["corr"] = np.asarray(s.corr_point, dtype=np.float64)
        point_vals.append((v, s.xlr.mean(axis=1)))
    loo_sets = dict(sets)
    if leave_one_out is not None:
        base = sets[leave_one_out]
        for i in base:
            loo_sets[f"{leave_one_out}-{encoders[i]}"] = base[base != i]
    for name, idx in loo_sets.items():
        per_seed: dict[tuple[str, str], list[float]] = {}
        for v, x in point_vals:
            q = _quantities({m: v[m][idx] for m in metrics}, x[idx], metrics)
            for key, val in q.items():
                per_seed.setdefault(key, []).append(float(val))
        for (quantity, stat), vals in per_seed.items():
            arr = np.array(vals)
            res.per_seed[(name, quantity, stat)] = arr
            res.point[(name, quantity, stat)] = float(np.mean(arr))

    # replicates: item weights (shared by seeds), encoder draws per set (shared by seeds/metrics)
    rng = np.random.default_rng(seed)
    W = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=B)  # (B, n_items)
    draws = {name: idx[rng.integers(0, idx.size, size=(B, idx.size))] for name, idx in sets.items()}
    acc: dict[tuple[str, str, str], np.ndarray] = {}
    for s in seeds:
        wq = W[:, s.query_items].astype(np.float64)  # (B, N)
        tot = wq.sum(axis=1)
        tot[tot == 0] = np.nan  # no query of this seed drawn: the replicate is undefined here
        vals = {m: (s.per_query[m] @ wq.T) / tot for m in s.per_query}  # (E, B)
        x = (s.xlr @ wq.T) / tot
        if s.corr is not None:
            c = np.full((E, B), np.nan)
            wt = W[:, s.target_items]
            for b in range(B):
                rq = np.repeat(np.arange(s.query_items.size), W[b, s.query_items])
                rt = np.repeat(np.arange(s.target_items.size), wt[b])
                if rq.size >= 2 and rt.size >= 2:
                    c[:, b] = s.corr(rq, rt, b)
            vals["corr"] = c
        cols = np.arange(B)[:, None]
        for name, d in draws.items():
            q = _quantities({m: vals[m][d, cols] for m in metrics}, x[d, cols], metrics)
            for (quantity, stat), r in q.items():
                key = (name, quantity, stat)
                acc[key] = acc.get(key, 0.0) + r
    for key, total in acc.items():
        res.replicates[key] = total / len(seeds)
    return res


# --------------------------------------------------------------------------- random effects


@dataclass(frozen=True)
class RandomEffects:
    """Random-effects (Paule–Mandel) summary of several effects with standard errors, plus a
    sign test of how many effects are positive."""

    k: int
    estimate: float
    se: float
    low: float
    high: float
    pvalue: float
    tau2: float
    i2: float
    n_positive: int
    n_negative: int
    sign_pvalue: float
    method: str = "Paule-Mandel random effects (statsmodels combine_effects, method_re='iterated')"

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def random_effects_summary(effects: Sequence[float], ses: Sequence[float], alpha: float = 0.05) -> RandomEffects:
    """Pool effects (e.g. BkR − CORR correlation differences of several dataset × direction
    cells) with :func:`statsmodels.stats.meta_analysis.combine_effects`, Paule–Mandel
    between-cell variance (``method_re='iterated'``, statsmodels' default and the estimator
    DerSimonian & Kacker 2007 recommend; statsmodels' one-step ``'dl'`` does not truncate a
    negative variance at 0), a normal-theory CI,
    and a two-sided exact sign test (:func:`scipy.stats.binomtest`) of positive vs negative
    effects (zeros dropped). I² = max(0, (Q − df)/Q) (Higgins & Thompson 2002; statsmodels'
    ``i2`` is not truncated, negative when Q < df). Effects with a non-finite or zero SE are
    refused."""
    from statsmodels.stats.meta_analysis import combine_effects

    eff = np.asarray(effects, dtype=np.float64)
    se = np.asarray(ses, dtype=np.float64)
    if eff.ndim != 1 or eff.shape != se.shape or eff.size < 2:
        raise InputError(f"random_effects_summary: need >= 2 effects with one SE each, got {eff.shape} and {se.shape}")
    if not (np.isfinite(eff).all() and np.isfinite(se).all() and (se > 0).all()):
        raise InputError("random_effects_summary: effects and SEs must be finite, SEs > 0")
    res = combine_effects(eff, se**2, method_re="iterated", use_t=False, alpha=alpha)
    est = float(res.mean_effect_re)
    sd = float(res.sd_eff_w_re)
    z = st.norm.ppf(1 - alpha / 2)
    pos, neg = int(np.sum(eff > 0)), int(np.sum(eff < 0))
    sign_p = float(st.binomtest(pos, pos + neg, 0.5).pvalue) if pos + neg else 1.0
    return RandomEffects(
        k=int(eff.size),
        estimate=est,
        se=sd,
        low=est - z * sd,
        high=est + z * sd,
        pvalue=float(2 * st.norm.sf(abs(est / sd))) if sd > 0 else float("nan"),
        tau2=float(res.tau2),
        i2=max(0.0, float(res.i2)),
        n_positive=pos,
        n_negative=neg,
        sign_pvalue=sign_p,
    )


# --------------------------------------------------------------------------- corr resampling


def corr_resampler(
    q_img: np.ndarray,
    t_img: np.ndarray,
    texts: Sequence[tuple[np.ndarray, np.ndarray]],
    max_pairs: int | None,
    seed: int,
) -> CorrFn:
    """A :data:`CorrFn` for one sample: CORR of every encoder (``texts[e] = (src, tgt)`` rows
    aligned with the images) on the resampled rows ``(rq, rt)`` of replicate ``b``.

    All pairs (``max_pairs`` None or not smaller than ``len(rq)·len(rt)``): the project's exact
    CORR kernel (:class:`~backretrieval.metrics.CorrImageSide`, image side shared by the
    encoders). Otherwise CORR's estimator on ``max_pairs`` pairs drawn uniformly with replacement
    from ``rq × rt`` (generator ``default_rng([seed, b])``): Spearman's rho of the text and image
    cosine distances of those pairs (float32, as the kernel computes them), average ranks by
    :func:`~backretrieval.metrics.average_ranks`. The sample's distance matrices are computed
    once, so a replicate costs a few sorts; the subsampling noise widens the bootstrap interval
    (conservative).
    """
    from ..metrics import CorrImageSide, average_ranks, normalize

    qi, ti = normalize(q_img), normalize(t_img)
    tx = [(normalize(s), normalize(t)) for s, t in texts]
    n_pairs = qi.shape[0] * ti.shape[0]
    if max_pairs is not None and (len(tx) + 1) * n_pairs * 4 > _MAX_DISTANCE_BYTES:
        raise InputError(
            f"corr_resampler: {len(tx) + 1} distance matrices of {qi.shape[0]}x{ti.shape[0]} pairs "
            f"exceed {_MAX_DISTANCE_BYTES >> 20} MiB; use fewer seeds, encoders or a smaller N"
        )
    dist = None
    if max_pairs is not None:
        dist = [np.subtract(np.float32(1), a @ b.T, dtype=np.float32) for a, b in [(qi, ti), *tx]]

    def fn(rq: np.ndarray, rt: np.ndarray, b: int = 0) -> np.ndarray:
        if dist is None or max_pairs >= rq.size * rt.size:
            side = CorrImageSide.build(qi[rq], ti[rt], assume_normalized=True)
            return np.array([side.spearman(s[rq], t[rt]) for s, t in tx], dtype=np.float64)
        rng = np.random.default_rng([seed, b])
        i, j = rq[rng.integers(0, rq.size, max_pairs)], rt[rng.integers(0, rt.size, max_pairs)]
        ranks = np.stack([average_ranks(d[i, j]) for d in dist])
        return corr_rows(ranks[1:], np.broadcast_to(ranks[0], ranks[1:].shape), "pearson")

    return fn


_MAX_DISTANCE_BYTES = 1 << 30


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


def pooled_summaries(cells: pd.DataFrame) -> dict[str, dict[str, dict]]:
    """``{scope: {stat: RandomEffects dict}}`` for scope ``all`` and ``real`` (non-synthetic
    configurations), wherever at least two cells with a positive SE exist."""
    out: dict[str, dict[str, dict]] = {}
    for scope, sub in (("all", cells), ("real", cells[~cells["synthetic"].astype(bool)])):
        for stat in STATS:
            g = sub[(sub["stat"] == stat) & np.isfinite(sub["diff"]) & np.isfinite(sub["se"]) & (sub["se"] > 0)]
            if len(g) >= 2:
                r = random_effects_summary(g["diff"].to_numpy(), g["se"].to_numpy()).to_dict()
                r["n_datasets"] = int(g["dataset"].nunique())
                out.setdefault(scope, {})[stat] = r
    return out


def overall_text(cells: pd.DataFrame, pooled: dict[str, dict[str, dict]]) -> tuple[str, str]:
    """(paragraph, one-sentence verdict) of the random-effects summary across configurations."""
    from .document import fmt_ci

    if not pooled:
        return (
            "Fewer than two dataset × direction cells have an inference result; no pooled verdict.",
            "No overall verdict yet: fewer than two dataset × direction cells have been analysed.",
        )
    scope = "real" if "real" in pooled and "pearson" in pooled["real"] else "all"
    p = pooled[scope].get("pearson") or next(iter(pooled[scope].values()))
    stat = "pearson" if "pearson" in pooled[scope] else next(iter(pooled[scope]))
    n_cfg = p["n_datasets"]
    what = "real-data " if scope == "real" else ""
    note = " including SYNTHETIC ones" if scope == "all" and cells["synthetic"].any() else ""
    lean = (
        "BkR tracks XLR better than CORR"
        if p["low"] > 0
        else "CORR tracks XLR better than BkR"
        if p["high"] < 0
        else "neither BkR nor CORR tracks XLR detectably better"
    )
    verdict = (
        f"Pooled over {p['k']} {what}dataset × direction cells ({n_cfg} dataset{'s' if n_cfg != 1 else ''}{note}), "
        f"{lean}: the {stat.capitalize()} correlation with XLR differs by BkR − CORR = "
        f"{fmt_ci(p['estimate'], p['low'], p['high'])} (random effects; BkR ahead in {p['n_positive']} of "
        f"{p['n_positive'] + p['n_negative']} cells, sign test p = {p['sign_pvalue']:.2g})."
    )
    parts = []
    for sc in ("real", "all"):
        for st_ in STATS:
            q = pooled.get(sc, {}).get(st_)
            if q:
                parts.append(
                    f"{'Real data' if sc == 'real' else 'All configurations'}, {st_.capitalize()}: "
                    f"BkR − CORR = {fmt_ci(q['estimate'], q['low'], q['high'])} over {q['k']} cells from "
                    f"{q['n_datasets']} dataset(s) (p = {q['pvalue']:.2g}; between-cell τ² = {q['tau2']:.2g}, "
                    f"I² = {q['i2']:.2f}; BkR ahead in {q['n_positive']}, CORR in {q['n_negative']}, "
                    f"sign test p = {q['sign_pvalue']:.2g})."
                )
    parts.append(
        "Each cell's SE comes from its crossed encoder × item bootstrap; the directions of one dataset share "
        "encoders and images, so they are not independent and the pooled interval is, if anything, too narrow."
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
    extra = [(f"pooled, {sc}", pooled[sc][stat]) for sc in ("all", "real") if stat in pooled.get(sc, {})]
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
