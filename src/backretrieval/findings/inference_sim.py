"""SIMULATED worlds where the pooled BkR − CORR difference is known: the coverage check of
the two questions (:mod:`backretrieval.stats.questions`) of the verdict across configurations
(:mod:`backretrieval.findings.inference.verdict`, whose :class:`Layout` a world takes;
benchmarks/bench_inference_coverage.py, tests/test_findings_inference.py). Nothing here is evidence about real encoders.

A world has the dependence of the real cells built in, in a :class:`Layout` (the cells, their
image pools, the encoders and their families, as the verdict's configurations have them):

* **encoders** are a sample from a population: encoder e has latent quality q_e and metric
  specific traits b_e, c_e and item sensitivities f_e, *shared by every cell*. Encoders of one
  **family** (like the 9 fastText variants: one base model, several alignments) share most of
  them: trait = √κ·v_family + √(1 − κ)·u_e, every term standard normal, so each encoder's
  traits are still standard normal, but a family is close to one draw. In cell c the expected
  metrics are X = q_e + γ g^x_ec, BkR = ρ_b,c q_e + √(1 − ρ_b,c²) b_e + γ g^b_ec and
  CORR = ρ_c,c q_e + √(1 − ρ_c,c²) c_e + γ g^c_ec (g: encoder × cell interactions);
* **items** are a sample from a population: item i has a loading λ_i, *shared by every cell
  that uses its image pool* (configurations on the same images share the pool; every direction
  of a configuration uses the same items); a query's outcome is the encoder's expected metric
  plus λ_i f^m_e plus independent noise;
* every seed draws N queries from its pool's items (the seeds re-split the same items).

The two truths (per statistic, the mean over the cells):

* **encoders random**: the population correlation across encoders of BkR with XLR in cell c is
  ρ_b,c / (1 + γ²) (Pearson) and (6/π)·asin(r/2) of it (Spearman, bivariate normal), likewise for
  CORR;
* **encoders fixed**: the correlation across *these* encoders of their expected metrics
  (infinitely many items: λ and the noise average out), BkR's minus CORR's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.stats as st

from ..stats.crossed import SeedOutcomes, crossed_bootstrap
from ..stats.questions import INTERVAL_QUESTIONS, JACKKNIFE_GROUPS, two_questions
from ..stats.weighted import STATS
from .inference.verdict import Layout


@dataclass(frozen=True)
class SimCell:
    """One simulated dataset × direction cell."""

    name: str
    encoders: list[str]
    item_keys: list[str]
    seeds: list[SeedOutcomes]


#: a default for tests: two configurations on one image pool and one on another, 14 encoders
LAYOUT = Layout("example", (("cfg1", "A", 2), ("cfg2", "A", 2), ("cfg3", "B", 2)), (6, 1, 1, 1, 1, 1, 1, 1, 1))


def _truth(rho: float, gamma: float, stat: str) -> float:
    r = rho / (1.0 + gamma**2)
    return float(r if stat == "pearson" else 6.0 / np.pi * np.arcsin(r / 2.0))


def _corr(x: np.ndarray, y: np.ndarray, stat: str) -> float:
    return float(st.pearsonr(x, y)[0] if stat == "pearson" else st.spearmanr(x, y)[0])


def _expected_at_n(
    mean: np.ndarray, f: np.ndarray, sigma: float, n: int, stat: str, rng: np.random.Generator, draws: int = 400
) -> float:
    """E over samples of n fresh items of one seed's BkR − CORR correlation difference, for these
    encoders (Monte Carlo, ``draws`` samples): the "encoders fixed" truth at the design's sample
    size (a correlation of noisy per-encoder means is attenuated; the metrics themselves, e.g. a
    recall among n candidates, are defined at n)."""
    lam = rng.normal(size=(draws, 1, 1, n))
    out = mean[None, :, :, None] + f[None, :, :, None] * lam + sigma * rng.normal(size=(draws, *mean.shape, n))
    m = out.mean(axis=-1)  # (draws, 3, E)
    if stat == "spearman":
        m = st.rankdata(m, axis=-1)
    m = m - m.mean(axis=-1, keepdims=True)
    r = np.sum(m[:, 1:] * m[:, :1], axis=-1) / np.sqrt(np.sum(m[:, 1:] ** 2, axis=-1) * np.sum(m[:, :1] ** 2, axis=-1))
    return float(np.mean(r[:, 0] - r[:, 1]))


def simulated_world(
    world: int,
    layout: Layout = LAYOUT,
    n_items: int = 300,
    n_queries: int = 100,
    n_seeds: int = 3,
    gamma: float = 0.3,
    tau: float = 1.0,
    sigma: float = 1.0,
    kappa: float = 0.9,
) -> tuple[list[SimCell], dict[str, dict[str, float]], dict[str, str]]:
    """SIMULATED cells of world ``world`` (seeded by it), the truths ``{question: {stat: value}}``
    and the encoders' families."""
    rng = np.random.default_rng([20251, world])
    E = layout.n_encoders
    names = [f"enc{e:02d}" for e in range(E)]
    fam_idx = np.repeat(np.arange(len(layout.families)), layout.families)
    families = {n: f"fam{k}" for n, k in zip(names, fam_idx)}
    shared = np.array([layout.families[k] > 1 for k in fam_idx])
    v = rng.normal(size=(6, len(layout.families)))[:, fam_idx]
    u = rng.normal(size=(6, E))
    traits = np.where(shared, np.sqrt(kappa) * v + np.sqrt(1 - kappa) * u, u)
    q, b, c = traits[:3]
    f = tau * traits[3:]  # sensitivity to the item loading: xlr, bkr, corr
    pools = {p: rng.normal(size=n_items) for p in sorted({p for _, p, _ in layout.cells})}
    cells: list[SimCell] = []
    truth: dict[str, dict[str, list[float]]] = {qn: {s: [] for s in STATS} for qn in INTERVAL_QUESTIONS}
    for cfg, pool, n_dir in layout.cells:
        lam = pools[pool]
        keys = [f"{pool}:{i}" for i in range(n_items)]
        splits = [np.sort(rng.choice(n_items, n_queries, replace=False)) for _ in range(n_seeds)]
        for d in range(n_dir):
            rho_b, rho_c = rng.uniform(0.6, 0.95), rng.uniform(0.6, 0.95)
            g = gamma * rng.normal(size=(3, E))
            mean = np.stack(
                [
                    q + g[0],
                    rho_b * q + np.sqrt(1 - rho_b**2) * b + g[1],
                    rho_c * q + np.sqrt(1 - rho_c**2) * c + g[2],
                ]
            )  # (3, E)
            seeds = []
            for s, idx in enumerate(splits):
                out = mean[:, :, None] + f[:, :, None] * lam[idx] + sigma * rng.normal(size=(3, E, n_queries))
                seeds.append(
                    SeedOutcomes(seed=s, query_items=idx, xlr=out[0], per_query={"bkr": out[1], "corr": out[2]})
                )
            cells.append(SimCell(f"{cfg}:d{d}", names, keys, seeds))
            for stat in STATS:
                truth["random"][stat].append(_truth(rho_b, gamma, stat) - _truth(rho_c, gamma, stat))
                truth["fixed"][stat].append(_expected_at_n(mean, f, sigma, n_queries, stat, rng))
    return cells, {qn: {s: float(np.mean(v)) for s, v in t.items()} for qn, t in truth.items()}, families


def world_intervals(
    cells: list[SimCell], families: dict[str, str], B: int, seed: int, groups: int = JACKKNIFE_GROUPS
) -> dict[str, dict]:
    """Both questions' pooled intervals of one world, per statistic (each cell bootstrapped on
    its own; the keyed weights and groups make the draws joint)."""
    per: dict[str, dict[str, list]] = {s: {"pts": [], "reps": [], "jack": [], "fam": []} for s in STATS}
    for cell in cells:
        res = crossed_bootstrap(
            cell.seeds,
            cell.encoders,
            {"all": cell.encoders},
            cell.item_keys,
            B,
            seed,
            None,
            resample_encoders=False,
            jackknife_groups=groups,
            families=families,
        )
        for stat in STATS:
            key = ("all", "rho_diff", stat)
            per[stat]["pts"].append(res.point[key])
            per[stat]["reps"].append(res.replicates[key])
            per[stat]["jack"].append(res.jackknife[key])
            per[stat]["fam"].append({k[1]: v for k, v in res.family_loo.items() if k[2:] == ("rho_diff", stat)})
    out = {}
    for stat, p in per.items():
        fams = sorted(p["fam"][0])
        loo = {fam: [d[fam] for d in p["fam"]] for fam in fams}
        out[stat] = two_questions(p["pts"], p["reps"], p["jack"], loo)
    return out


def _world_hits(args: tuple) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], float]]:
    w, layout, B, seed, world_kw = args
    cells, truth, families = simulated_world(w, layout, **world_kw)
    iv = world_intervals(cells, families, B, seed + w)
    hits, widths = {}, {}
    for qn in INTERVAL_QUESTIONS:
        for s in STATS:
            r = iv[s][qn]
            hits[(qn, s)] = int(r["low"] <= truth[qn][s] <= r["high"])
            widths[(qn, s)] = r["high"] - r["low"]
    return hits, widths


def coverage(n_worlds: int, layout: Layout = LAYOUT, B: int = 500, seed: int = 0, jobs: int = 1, **world_kw) -> dict:
    """Per question and statistic: the share of ``n_worlds`` SIMULATED worlds whose 95% interval
    covers the truth, and the mean interval width. A world depends only on its index and
    ``seed``, so ``jobs`` worker processes give the same numbers as one."""
    tasks = [(w, layout, B, seed, world_kw) for w in range(n_worlds)]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_world_hits, tasks, chunksize=max(1, n_worlds // (4 * jobs))))
    else:
        results = [_world_hits(t) for t in tasks]
    keys = [(qn, s) for qn in INTERVAL_QUESTIONS for s in STATS]
    return {
        "worlds": n_worlds,
        "B": B,
        "layout": layout.signature(),
        "coverage": {f"{qn}/{s}": sum(h[(qn, s)] for h, _ in results) / n_worlds for qn, s in keys},
        "mean_width": {f"{qn}/{s}": float(np.mean([w[(qn, s)] for _, w in results])) for qn, s in keys},
    }
