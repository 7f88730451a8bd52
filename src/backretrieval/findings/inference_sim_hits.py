"""SIMULATED worlds with the data's own outcome model: binary XLR and BkR hits per query, noise
shared within an encoder family, hit rates as in the real runs (benchmarks/bench_inference_coverage.py
``--world hits``; issue 59, section 3). Nothing here is evidence about real encoders.

:mod:`.inference_sim`'s worlds give every query a continuous outcome with noise independent
across encoders. Real outcomes differ in three ways this world builds in:

* **binary hits**: a query's XLR and BkR outcome is a hit at k (0 or 1); CORR's per-query
  contribution is continuous (as :func:`~.inference.corr_contributions` makes it);
* **noise shared within a family**: the word-vector variants hit and miss the same queries. Per
  metric m, query q of item i in seed s, encoder e of family F has the latent

      η = μ_e + a·u_i + f·v_iF + w·w_ie + z·ζ_qs + zf·ζ_qsF,    hit = [η + ε > 0], ε ~ N(0, 1),

  u: the item's difficulty for every encoder; v: the family's own item effect (an encoder alone
  is its own family); w: the encoder's; ζ: the seed's distractors (the other queries and
  targets), for every encoder and per family. CORR: μ_e + sd·(the same sum + ε)/√(1 + V). The
  three metrics' item effects correlate at :data:`RHO_METRICS`; an image's effects are shared
  by the cells on its pool at :data:`POOL_SHARE` (the same images, other captions);
* **hit rates as in the real runs**: per configuration, μ spreads the encoders' latent quality
  over the probits of the committed run's own rates (``reports/<run>/metrics.json``: mean and SD
  over the layout's encoders of Φ⁻¹(XLR), Φ⁻¹(BkR) and CORR's mean), so a world has rates from
  near 0 (a random encoder) to near 1 as Multi30K's.

The variance components (:data:`COMPONENTS`) were fitted to the per-query hits of the committed
multi30k-task2 en→de run (its first 6 seeds of 500 among 1,000 items, 14 encoders, read with
:func:`~.inference.per_run.inference_outcomes`): :func:`query_moments` of the real outcomes
(the correlation of two encoders' outcomes on the same query, within the word-vector family and
between other encoders, and of one item's outcomes in two seeds) matched by Nelder-Mead on the
same moments of 12 simulated seeds at that run's rates (:data:`MEASURED`, :data:`FITTED`).

Encoders are a sample from a population as in :mod:`.inference_sim` (latent quality q_e and
metric traits shared by every cell, a family's traits correlated at κ), so both questions have
a truth:

* **encoders random**: the population correlation across encoders of the expected metrics
  (Pearson: Monte Carlo over 200,000 encoders of the population; Spearman: (6/π)·asin(r/2) of
  the latent correlation, exact as the rates are monotone in the latents);
* **encoders fixed**: E over samples of N fresh items of one seed's correlation difference for
  these encoders (the per-encoder means' mean vector and covariance from 20,000 fresh queries,
  the correlation's expectation over 2,000 normal draws of the N-query means).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.stats as st

from ..stats.crossed import SeedOutcomes
from ..stats.questions import INTERVAL_QUESTIONS
from ..stats.weighted import STATS
from .inference_sim import Layout, SimCell, world_intervals

#: per metric: standard deviations of the latent's components (a, f, w, z, zf), ε's being 1;
#: fitted to multi30k-task2 en→de (module doc)
COMPONENTS: dict[str, tuple[float, float, float, float, float]] = {
    "xlr": (11.99, 9.37, 5.18, 0.69, 0.63),
    "bkr": (1.47, 1.07, 0.44, 0.38, 0.80),
    "corr": (2.35, 4.41, 2.29, 0.40, 0.40),
}
#: what they were fitted to, measured on multi30k-task2 en→de's first 6 seeds (correlations of
#: per-query outcomes, :func:`query_moments`: the same query, two encoders of the word-vector
#: family / two others; the same item in two seeds, one encoder / two of the family / two others)
#: and what the fitted components give (12 simulated seeds of the same rates)
MEASURED = {
    "xlr": {"query_family": 0.706, "query_other": 0.280, "item_same": 0.926, "item_family": 0.711, "item_other": 0.284},
    "bkr": {"query_family": 0.483, "query_other": 0.258, "item_same": 0.465, "item_family": 0.311, "item_other": 0.188},
    "corr": {
        "query_family": 0.810,
        "query_other": 0.182,
        "item_same": 0.968,
        "item_family": 0.800,
        "item_other": 0.177,
    },
}
FITTED = {
    "xlr": {"query_family": 0.682, "query_other": 0.272, "item_same": 0.913, "item_family": 0.673, "item_other": 0.258},
    "bkr": {"query_family": 0.525, "query_other": 0.219, "item_same": 0.418, "item_family": 0.391, "item_other": 0.207},
}
#: the correlation of the three metrics' item effects: the same query's XLR and BkR hits
#: correlate at 0.131 on multi30k-task2 en→de (simulated: 0.10), CORR's contribution with XLR's
#: hit at 0.106 (0.20), with BkR's at 0.107 (0.12)
RHO_METRICS = 0.3
#: the share of an item's effects common to every cell on its image pool
POOL_SHARE = 0.5
#: SD of a query's CORR contribution (multi30k-task2: 0.10-0.23 for the real encoders)
CORR_SD = 0.16
METRICS = ("xlr", "bkr", "corr")


def real_rates(root: Path, run_name: str, n_encoders: int) -> dict[str, tuple[float, float]]:
    """Mean and SD over a committed run's encoders of Φ⁻¹(XLR Recall@k), Φ⁻¹(BkR Recall@k) and
    CORR (``reports/<run_name>/metrics.json``); the ``n_encoders`` = 12 layout leaves out the
    random and English-only encoders, as the verdict's ``core`` set does."""
    enc = json.loads((root / "reports" / run_name / "metrics.json").read_text(encoding="utf-8"))["encoders"]
    names = sorted(enc)
    if n_encoders < len(names):
        names = [e for e in names if e not in ("random", "minilm-en")]
    if len(names) != n_encoders:
        raise ValueError(f"{run_name}: {len(names)} encoders in its metrics, the layout has {n_encoders}")
    probit = lambda v: st.norm.ppf(np.clip(np.asarray(v, float), 1e-3, 1 - 1e-3))  # noqa: E731
    x = probit([enc[e]["xlr_recall"] for e in names])
    b = probit([enc[e]["bkr_recall"] for e in names])
    c = np.array([enc[e]["corr"] for e in names])
    return {
        "xlr": (float(x.mean()), float(x.std())),
        "bkr": (float(b.mean()), float(b.std())),
        "corr": (float(c.mean()), float(c.std())),
    }


def _var(m: str) -> float:
    return float(sum(s * s for s in COMPONENTS[m]))


class _Items:
    """One cell's item effects per metric (``n`` items, E encoders in F families), shared across
    metrics at RHO_METRICS and with the image pool at POOL_SHARE."""

    def __init__(self, rng: np.random.Generator, pool: dict[str, np.ndarray], n: int, E: int, F: int):
        def mix(shared: np.ndarray, shape: tuple[int, ...]) -> list[np.ndarray]:
            common = np.sqrt(POOL_SHARE) * shared + np.sqrt(1 - POOL_SHARE) * rng.normal(size=shape)
            return [np.sqrt(RHO_METRICS) * common + np.sqrt(1 - RHO_METRICS) * rng.normal(size=shape) for _ in METRICS]

        self.u = dict(zip(METRICS, mix(pool["u"][:n], (n,))))
        self.v = dict(zip(METRICS, mix(pool["v"][:n, :F], (n, F))))
        self.w = dict(zip(METRICS, mix(pool["w"][:n, :E], (n, E))))


def _outcomes(
    rng: np.random.Generator, mu: dict[str, np.ndarray], items: _Items, idx: np.ndarray, fam_idx: np.ndarray
) -> dict[str, np.ndarray]:
    """(E, len(idx)) outcomes per metric of one seed's queries ``idx`` (item positions)."""
    n, E, F = idx.size, fam_idx.size, items.v["xlr"].shape[1]
    zq = rng.normal(size=n)
    zf = rng.normal(size=(n, F))
    out = {}
    for m in METRICS:
        a, f, w, z, zfs = COMPONENTS[m]
        lat = (
            a * items.u[m][idx][None, :]
            + f * items.v[m][idx][:, fam_idx].T
            + w * items.w[m][idx].T
            + z * zq[None, :]
            + zfs * zf[:, fam_idx].T
            + rng.normal(size=(E, n))
        )
        if m == "corr":
            out[m] = mu[m][:, None] + CORR_SD * lat / np.sqrt(1.0 + _var(m))
        else:
            out[m] = (mu[m][:, None] + lat > 0).astype(np.float64)
    return out


def _corr(x: np.ndarray, y: np.ndarray, stat: str) -> np.ndarray:
    """Row-wise correlation of (R, E) arrays."""
    if stat == "spearman":
        x, y = st.rankdata(x, axis=-1), st.rankdata(y, axis=-1)
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    return np.sum(x * y, axis=-1) / np.sqrt(np.sum(x * x, axis=-1) * np.sum(y * y, axis=-1))


def _fixed_truth(
    rng: np.random.Generator, mu: dict[str, np.ndarray], fam_idx: np.ndarray, F: int, n: int, queries: int = 20000
) -> dict[str, float]:
    """E over samples of ``n`` fresh items of one seed's BkR − CORR correlation difference."""
    pool = {
        "u": rng.normal(size=queries),
        "v": rng.normal(size=(queries, F)),
        "w": rng.normal(size=(queries, fam_idx.size)),
    }
    items = _Items(rng, pool, queries, fam_idx.size, F)
    out = _outcomes(rng, mu, items, np.arange(queries), fam_idx)
    Y = np.concatenate([out[m] for m in METRICS])  # (3E, Q)
    mean, cov = Y.mean(axis=1), np.cov(Y) / n
    draws = rng.multivariate_normal(mean, cov, size=2000, method="cholesky")
    E = fam_idx.size
    x, b, c = draws[:, :E], draws[:, E : 2 * E], draws[:, 2 * E :]
    return {s: float(np.mean(_corr(b, x, s) - _corr(c, x, s))) for s in STATS}


def _random_truth(
    rng: np.random.Generator, rates: dict[str, tuple[float, float]], rho_b: float, rho_c: float, gamma: float
) -> dict[str, float]:
    """The population correlation across encoders of the expected metrics, BkR's minus CORR's."""
    P = 200_000
    q, b, c = rng.normal(size=(3, P))
    g = rng.normal(size=(3, P))
    lat = _latents(q, b, c, g, rho_b, rho_c, gamma)
    exp = {m: _expected(m, rates, lat[m]) for m in METRICS}
    r = 1.0 / (1.0 + gamma**2)
    return {
        "pearson": float(np.corrcoef(exp["bkr"], exp["xlr"])[0, 1] - np.corrcoef(exp["corr"], exp["xlr"])[0, 1]),
        "spearman": float(6.0 / np.pi * (np.arcsin(rho_b * r / 2.0) - np.arcsin(rho_c * r / 2.0))),
    }


def _latents(q, b, c, g, rho_b: float, rho_c: float, gamma: float) -> dict[str, np.ndarray]:
    s = np.sqrt(1.0 + gamma**2)
    return {
        "xlr": (q + gamma * g[0]) / s,
        "bkr": (rho_b * q + np.sqrt(1 - rho_b**2) * b + gamma * g[1]) / s,
        "corr": (rho_c * q + np.sqrt(1 - rho_c**2) * c + gamma * g[2]) / s,
    }


def _mu(m: str, rates: dict[str, tuple[float, float]], latent: np.ndarray) -> np.ndarray:
    """The latent's threshold: marginal hit rate Φ(mean + sd·latent) (XLR, BkR), CORR's mean."""
    mean, sd = rates[m]
    if m == "corr":
        return mean + sd * latent
    return (mean + sd * latent) * np.sqrt(1.0 + _var(m))


def _expected(m: str, rates: dict[str, tuple[float, float]], latent: np.ndarray) -> np.ndarray:
    mean, sd = rates[m]
    return mean + sd * latent if m == "corr" else st.norm.cdf(mean + sd * latent)


def hits_world(
    world: int,
    layout: Layout,
    rates: dict[str, dict[str, tuple[float, float]]],
    n_items: int = 1000,
    n_queries: int = 500,
    n_seeds: int = 25,
    gamma: float = 0.3,
    kappa: float = 0.9,
) -> tuple[list[SimCell], dict[str, dict[str, float]], dict[str, str]]:
    """SIMULATED cells of world ``world`` (seeded by it) in the binary-hit / family-noise model,
    the truths ``{question: {stat: value}}`` and the encoders' families; ``rates[cfg]``: the
    configuration's real rates (:func:`real_rates`)."""
    rng = np.random.default_rng([20259, world])
    E, F = layout.n_encoders, len(layout.families)
    names = [f"enc{e:02d}" for e in range(E)]
    fam_idx = np.repeat(np.arange(F), layout.families)
    families = {n: f"fam{k}" for n, k in zip(names, fam_idx)}
    shared = np.array([layout.families[k] > 1 for k in fam_idx])
    v = rng.normal(size=(3, F))[:, fam_idx]
    u = rng.normal(size=(3, E))
    q, b, c = np.where(shared, np.sqrt(kappa) * v + np.sqrt(1 - kappa) * u, u)
    pools = {
        p: {"u": rng.normal(size=n_items), "v": rng.normal(size=(n_items, F)), "w": rng.normal(size=(n_items, E))}
        for p in sorted({p for _, p, _ in layout.cells})
    }
    cells: list[SimCell] = []
    truth: dict[str, dict[str, list[float]]] = {qn: {s: [] for s in STATS} for qn in INTERVAL_QUESTIONS}
    for cfg, pool, n_dir in layout.cells:
        keys = [f"{pool}:{i}" for i in range(n_items)]
        splits = [np.sort(rng.choice(n_items, n_queries, replace=False)) for _ in range(n_seeds)]
        for d in range(n_dir):
            rho_b, rho_c = rng.uniform(0.6, 0.95), rng.uniform(0.6, 0.95)
            g = rng.normal(size=(3, E))
            lat = _latents(q, b, c, g, rho_b, rho_c, gamma)
            mu = {m: _mu(m, rates[cfg], lat[m]) for m in METRICS}
            items = _Items(rng, pools[pool], n_items, E, F)
            seeds = []
            for s, idx in enumerate(splits):
                out = _outcomes(rng, mu, items, idx, fam_idx)
                seeds.append(
                    SeedOutcomes(
                        seed=s, query_items=idx, xlr=out["xlr"], per_query={"bkr": out["bkr"], "corr": out["corr"]}
                    )
                )
            cells.append(SimCell(f"{cfg}:d{d}", names, keys, seeds))
            fixed = _fixed_truth(rng, mu, fam_idx, F, n_queries)
            random = _random_truth(rng, rates[cfg], rho_b, rho_c, gamma)
            for stat in STATS:
                truth["fixed"][stat].append(fixed[stat])
                truth["random"][stat].append(random[stat])
    return cells, {qn: {s: float(np.mean(v)) for s, v in t.items()} for qn, t in truth.items()}, families


def _world_hits(args: tuple) -> dict:
    w, layout, rates, B, seed, world_kw = args
    cells, truth, families = hits_world(w, layout, rates, **world_kw)
    iv = world_intervals(cells, families, B, seed + w)
    out: dict = {"hit": {}, "width": {}, "z0": {}}
    for qn in INTERVAL_QUESTIONS:
        for s in STATS:
            r = iv[s][qn]
            out["hit"][f"{qn}/{s}"] = int(r["low"] <= truth[qn][s] <= r["high"])
            out["width"][f"{qn}/{s}"] = float(r["high"] - r["low"])
    for s in STATS:
        out["z0"][s] = float(iv[s]["fixed"]["z0"])
    return out


def hits_coverage(
    n_worlds: int, layout: Layout, rates: dict, B: int = 200, seed: int = 0, jobs: int = 1, **world_kw
) -> dict:
    """Per question and statistic: the share of ``n_worlds`` SIMULATED binary-hit worlds whose
    95% interval covers the truth, the mean width, and the median |z0| of the fixed question's
    bootstrap (the real runs' reached 2.5). A world depends only on its index and ``seed``."""
    tasks = [(w, layout, rates, B, seed, world_kw) for w in range(n_worlds)]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_world_hits, tasks, chunksize=max(1, n_worlds // (4 * jobs))))
    else:
        results = [_world_hits(t) for t in tasks]
    keys = list(results[0]["hit"])
    return {
        "worlds": n_worlds,
        "B": B,
        "layout": layout.signature(),
        "coverage": {k: sum(r["hit"][k] for r in results) / n_worlds for k in keys},
        # worlds whose interval is undefined (NaN) count as not covering, and are counted here
        "undefined": {k: int(sum(not np.isfinite(r["width"][k]) for r in results)) for k in keys},
        "mean_width": {k: float(np.nanmean([r["width"][k] for r in results])) for k in keys},
        "median_abs_z0": {s: float(np.median([abs(r["z0"][s]) for r in results])) for s in STATS},
        "per_world": results,
    }


def query_moments(seeds: list[SeedOutcomes], fam: np.ndarray, other: np.ndarray, metric: str) -> dict[str, float]:
    """The calibration's moments of per-query outcomes (:data:`MEASURED`) from seeds of one
    direction: ``fam`` marks the encoders of the one family of several, ``other`` the encoders
    of families of one compared with each other (the random encoder left out: its rare hits
    correlate with nothing). Correlations over pairs of seeds (0, 1), (2, 3), …"""

    def get(s: SeedOutcomes) -> np.ndarray:
        return s.xlr if metric == "xlr" else s.per_query[metric]

    def mean_r(a: np.ndarray, b: np.ndarray, pairs) -> float:
        rs = []
        for i, j in pairs:
            if a[i].std() > 0 and b[j].std() > 0:
                rs.append(np.corrcoef(a[i], b[j])[0, 1])
        return float(np.mean(rs)) if rs else float("nan")

    fi = np.flatnonzero(fam)
    oi = np.flatnonzero(other)
    fam_pairs = [(i, j) for i in fi for j in fi if i < j]
    other_pairs = [(i, j) for i in oi for j in oi if i < j]
    res = {k: [] for k in ("query_family", "query_other", "item_same", "item_family", "item_other")}
    for t in range(0, len(seeds) - 1, 2):
        s0, s1 = seeds[t], seeds[t + 1]
        a, b = get(s0), get(s1)
        res["query_family"].append(mean_r(a, a, fam_pairs))
        res["query_other"].append(mean_r(a, a, other_pairs))
        pos = {k: i for i, k in enumerate(s0.query_items.tolist())}
        com = [(pos[k], j) for j, k in enumerate(s1.query_items.tolist()) if k in pos]
        ia, ib = np.array([x for x, _ in com]), np.array([y for _, y in com])
        a2, b2 = a[:, ia], b[:, ib]
        res["item_same"].append(mean_r(a2, b2, [(i, i) for i in np.flatnonzero(fam | other)]))
        res["item_family"].append(mean_r(a2, b2, fam_pairs))
        res["item_other"].append(mean_r(a2, b2, other_pairs))
    return {k: float(np.nanmean(v)) for k, v in res.items()}
