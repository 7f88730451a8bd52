"""SIMULATED worlds where the pooled BkR − CORR difference is known: the coverage check of
:mod:`backretrieval.findings.inference`'s joint bootstrap (benchmarks/bench_inference_coverage.py,
tests/test_findings_inference.py). Nothing here is evidence about real encoders.

A world has the dependence of the real cells built in:

* **encoders** are a sample from a population: encoder e has latent quality q_e and metric
  specific traits b_e, c_e (standard normal), *shared by every cell*; in cell c its expected
  metrics are X = q_e + γ g^x_ec, BkR = ρ_b,c q_e + √(1 − ρ_b,c²) b_e + γ g^b_ec and
  CORR = ρ_c,c q_e + √(1 − ρ_c,c²) c_e + γ g^c_ec (g: encoder × cell interactions);
* **items** are a sample from a population: item i has a loading λ_i, *shared by every cell
  that uses its image pool* (two configurations share pool ``A``; every direction of a
  configuration uses the same items); a query's outcome is the encoder's expected metric plus
  λ_i f^m_e (an encoder × item interaction: f^m_e is encoder e's sensitivity, also shared by
  the cells) plus independent noise;
* every seed draws N queries from its pool's items (the seeds re-split the same items).

The population (infinitely many encoders and items) correlation across encoders of BkR with XLR
in cell c is ρ_b,c / (1 + γ²) (Pearson) and (6/π)·asin(r/2) of it (Spearman, bivariate normal),
likewise for CORR; the true pooled difference is the mean over the cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .inference import STATS, SeedOutcomes, crossed_bootstrap, pool_replicates


@dataclass(frozen=True)
class SimCell:
    """One simulated dataset × direction cell."""

    name: str
    encoders: list[str]
    item_keys: list[str]
    seeds: list[SeedOutcomes]


#: (configuration, image pool, directions, number of encoders used: the first n)
LAYOUT = (("cfg1", "A", 4, None), ("cfg2", "A", 2, 10), ("cfg3", "B", 4, None))


def _truth(rho: float, gamma: float, stat: str) -> float:
    r = rho / (1.0 + gamma**2)
    return float(r if stat == "pearson" else 6.0 / np.pi * np.arcsin(r / 2.0))


def simulated_world(
    world: int,
    n_encoders: int = 14,
    n_items: int = 300,
    n_queries: int = 100,
    n_seeds: int = 3,
    gamma: float = 0.3,
    tau: float = 1.0,
    sigma: float = 1.0,
    layout=LAYOUT,
) -> tuple[list[SimCell], dict[str, float]]:
    """SIMULATED cells of world ``world`` (seeded by it) and the true pooled BkR − CORR
    difference per statistic (mean over the cells of the population differences)."""
    rng = np.random.default_rng([20251, world])
    names = [f"enc{e:02d}" for e in range(n_encoders)]
    q, b, c = rng.normal(size=(3, n_encoders))
    f = tau * rng.normal(size=(3, n_encoders))  # sensitivity to the item loading: xlr, bkr, corr
    pools = {p: rng.normal(size=n_items) for p in sorted({p for _, p, _, _ in layout})}
    cells: list[SimCell] = []
    truth = {s: [] for s in STATS}
    for cfg, pool, n_dir, n_enc in layout:
        lam = pools[pool]
        keys = [f"{pool}:{i}" for i in range(n_items)]
        splits = [np.sort(rng.choice(n_items, n_queries, replace=False)) for _ in range(n_seeds)]
        for d in range(n_dir):
            rho_b, rho_c = rng.uniform(0.6, 0.95), rng.uniform(0.6, 0.95)
            g = gamma * rng.normal(size=(3, n_encoders))
            mean = np.stack(
                [
                    q + g[0],
                    rho_b * q + np.sqrt(1 - rho_b**2) * b + g[1],
                    rho_c * q + np.sqrt(1 - rho_c**2) * c + g[2],
                ]
            )  # (3, E)
            E = n_enc or n_encoders
            seeds = []
            for s, idx in enumerate(splits):
                out = mean[:, :E, None] + f[:, :E, None] * lam[idx] + sigma * rng.normal(size=(3, E, n_queries))
                seeds.append(
                    SeedOutcomes(seed=s, query_items=idx, xlr=out[0], per_query={"bkr": out[1], "corr": out[2]})
                )
            cells.append(SimCell(f"{cfg}:d{d}", names[:E], keys, seeds))
            for stat in STATS:
                truth[stat].append(_truth(rho_b, gamma, stat) - _truth(rho_c, gamma, stat))
    return cells, {s: float(np.mean(v)) for s, v in truth.items()}


def world_interval(cells: list[SimCell], B: int, seed: int, stat: str) -> dict:
    """The pooled interval of one world (each cell bootstrapped on its own, the keyed weights
    making the draws joint)."""
    pts, reps = [], []
    for cell in cells:
        res = crossed_bootstrap(cell.seeds, cell.encoders, {"all": cell.encoders}, cell.item_keys, B, seed, None)
        pts.append(res.point[("all", "rho_diff", stat)])
        reps.append(res.replicates[("all", "rho_diff", stat)])
    return pool_replicates(pts, reps)


def coverage(n_worlds: int, B: int = 500, seed: int = 0, stat: str = "pearson", **world_kw) -> dict:
    """Share of ``n_worlds`` SIMULATED worlds whose 95% pooled interval covers the true pooled
    difference, with the mean interval width and the replicates dropped."""
    hits, widths, dropped = 0, [], 0
    for w in range(n_worlds):
        cells, truth = simulated_world(w, **world_kw)
        p = world_interval(cells, B, seed + w, stat)
        hits += int(p["low"] <= truth[stat] <= p["high"])
        widths.append(p["high"] - p["low"])
        dropped += p["n_dropped"]
    return {
        "worlds": n_worlds,
        "coverage": hits / n_worlds,
        "mean_width": float(np.mean(widths)),
        "dropped_replicates": int(dropped),
        "B": B,
        "stat": stat,
    }
