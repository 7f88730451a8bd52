"""Level, power and coverage of the item-unit test and intervals that `rank`, `compare` and
`bkr_report.md` print, on SIMULATED binary hits in the layouts a user runs, beside the pooled
tests they replaced.

    python benchmarks/bench_item_unit.py [--nulls 4000] [--alternatives 1000] [--jobs 2]
        [--permutations 999] [--B 1000] [--layouts rank,n500,parallel] [--json OUT.json]

Each simulated run draws a fresh dataset (its items) and then the evaluation's samples:

* ``rank``: the default `rank` layout, data without parallel texts: 150 items per direction
  (the two directions' items differ), N = 100 queries per direction and seed, 3 seeds drawing
  overlapping samples (about 146 distinct items per direction);
* ``n500``: N = 500 of 1,000 items per direction, 25 seeds (every item queried ~12 times);
* ``parallel``: parallel data (Multi30k-like): 1,000 items, N = 100, 3 seeds, the two
  directions of a seed query the same items (as ``data.sampling.draw_sample`` does) and an
  item's image is one unit in both.

Outcome model (binary hits with item-level heterogeneity): query q of item i with encoder E
hits with probability Φ(μ_E + u_i + v_iE + z_q). u_i ~ N(0, σ_u²): the item's difficulty,
shared by both encoders (so their hits are correlated per item); v_iE ~ N(0, σ_v²): the
encoder × item effect; z_q ~ N(0, σ_z²): the query's distractors in its seed, shared by both
encoders. On parallel data u and v of an item are correlated across the two directions (ρ).
The truth an interval should cover is the population hit rate Φ(μ_E / sqrt(1 + σ_u² + σ_v² +
σ_z²)) and the difference of two of them (items drawn afresh per run: the population of items
the dataset stands for). Null: μ_A = μ_B; alternative: μ_A = μ_B + δ (probit scale).

Every run calls the shipped functions: ``stats.item_paired_test`` (the p of A vs B on the hits
pooled over directions and seeds, and the interval of the difference) and
``stats.item_bootstrap_ci`` (each encoder's pooled hit rate). "Before", the same data through
what those doors printed until the item became the unit: ``stats.mcnemar_exact`` on the
per-query hits pooled over directions and seeds, ``stats.bootstrap_ci`` over the seeds' means
(the per-encoder interval) and ``stats.paired_bootstrap_diff`` over the pooled queries (the
interval of the difference).

Cost: ``--permutations`` random sign patterns per test (the library's default is 9,999). The
Monte Carlo p = (1 + #{|T*| >= |T|}) / (P + 1) is an exact level-α test for any P when α(P + 1)
is an integer (P = 999: P(p <= 0.05) = 50/1000 under the null), so fewer patterns change the
power by a little and the level not at all; ``--B`` bootstrap resamples per interval (the
library's default, 1,000). Runs are spread over ``--jobs`` processes; every run has its own
seed (SeedSequence spawn), so the numbers do not depend on ``--jobs``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import ndtr

from backretrieval import stats

ALPHA = 0.05
#: the acceptance bands of the rejection rate under the null and of the coverages
LEVEL_BAND = (0.04, 0.06)
COVERAGE_BAND = (0.93, 0.97)


@dataclass(frozen=True)
class Layout:
    """Items per direction, queries per direction and seed (N), seeds, directions; ``parallel``:
    the directions share the items (each seed queries the same items in both)."""

    name: str
    items: int
    n: int
    seeds: int
    directions: int = 2
    parallel: bool = False


LAYOUTS = {
    "rank": Layout("rank", items=150, n=100, seeds=3),
    "n500": Layout("n500", items=1000, n=500, seeds=25),
    "parallel": Layout("parallel", items=1000, n=100, seeds=3, parallel=True),
}


@dataclass(frozen=True)
class Model:
    """The outcome model (probit scale). Hit rate about Φ(0.25 / 1.6) = 0.56, items ranging from
    nearly always to nearly never hit; the encoders' item probits correlate at
    σ_u² / (σ_u² + σ_v²) = 0.8."""

    mu: float = 0.25
    sd_item: float = 1.1
    sd_encoder_item: float = 0.55
    sd_query: float = 0.4
    rho_directions: float = 0.7  # parallel data: an item's effects in the two directions

    def scale(self) -> float:
        return float(np.sqrt(1 + self.sd_item**2 + self.sd_encoder_item**2 + self.sd_query**2))

    def truth(self, delta: float) -> tuple[float, float]:
        """Population hit rates of A (μ + δ) and B (μ)."""
        s = self.scale()
        return float(ndtr((self.mu + delta) / s)), float(ndtr(self.mu / s))


def simulate(
    rng: np.random.Generator, lay: Layout, model: Model, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One simulated evaluation: the per-query hits of A and B pooled over directions and seeds
    (direction-major, seeds in order within a direction, as `rank` concatenates them), every
    query's item key and its seed."""
    D, M = lay.directions, lay.items
    if lay.parallel:  # one item set, effects correlated across the directions
        r = model.rho_directions

        def per_dir(sd: float) -> np.ndarray:
            common = rng.normal(0, sd, M)
            return np.sqrt(r) * common + np.sqrt(1 - r) * rng.normal(0, sd, (D, M))

        u = per_dir(model.sd_item)
        va, vb = per_dir(model.sd_encoder_item), per_dir(model.sd_encoder_item)
        draws = np.stack([rng.permutation(M)[: lay.n] for _ in range(lay.seeds)])  # same items in each direction
        idx = np.broadcast_to(draws, (D, lay.seeds, lay.n))
        keys = idx.reshape(D, -1)
    else:  # each direction its own items
        u = rng.normal(0, model.sd_item, (D, M))
        va, vb = rng.normal(0, model.sd_encoder_item, (2, D, M))
        idx = np.stack([np.stack([rng.permutation(M)[: lay.n] for _ in range(lay.seeds)]) for _ in range(D)])
        keys = idx.reshape(D, -1) + M * np.arange(D)[:, None]  # distinct keys per direction
    idx = idx.reshape(D, -1)
    rows = np.arange(D)[:, None]
    z = rng.normal(0, model.sd_query, idx.shape)  # the query's distractors, shared by A and B
    base = model.mu + u[rows, idx] + z
    pa = ndtr(base + delta + va[rows, idx])
    pb = ndtr(base + vb[rows, idx])
    hits_a = (rng.random(idx.shape) < pa).astype(np.float64).ravel()
    hits_b = (rng.random(idx.shape) < pb).astype(np.float64).ravel()
    seed_of = np.broadcast_to(np.repeat(np.arange(lay.seeds), lay.n), (D, lay.seeds * lay.n)).ravel()
    return hits_a, hits_b, keys.ravel(), seed_of


def _covers(low: float, high: float, truth: float) -> float:
    """1 / 0 for an interval, NaN where none was given."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return float("nan")
    return float(low <= truth <= high)


def one_run(task: tuple) -> dict[str, float]:
    """Every statistic of one simulated evaluation (the worker of :func:`run_layout`)."""
    lay, model, delta, seed_seq, B, permutations = task
    rng = np.random.default_rng(seed_seq)
    a, b, keys, seed_of = simulate(rng, lay, model, delta)
    ta, tb = model.truth(delta)
    s = int(rng.integers(1 << 31))
    new = stats.item_paired_test(a, b, keys, B=B, n_permutations=permutations, seed=s)
    ci_a = stats.item_bootstrap_ci(a, keys, B=B, seed=s + 1)
    ci_b = stats.item_bootstrap_ci(b, keys, B=B, seed=s + 2)
    # before: McNemar on the pooled queries; per encoder the bootstrap over the seeds' means;
    # the difference by the paired bootstrap over the pooled queries
    seed_means_a = np.bincount(seed_of, weights=a) / np.bincount(seed_of)
    seed_means_b = np.bincount(seed_of, weights=b) / np.bincount(seed_of)
    old_a = stats.bootstrap_ci(seed_means_a, B=B, seed=s + 3)
    old_b = stats.bootstrap_ci(seed_means_b, B=B, seed=s + 4)
    old_d = stats.paired_bootstrap_diff(a, b, B=B, seed=s + 5)
    return dict(
        reject_new=float(new.pvalue <= ALPHA),
        reject_old=float(stats.mcnemar_exact(a, b).pvalue <= ALPHA),
        cover_diff_new=_covers(new.low, new.high, ta - tb),
        cover_a_new=_covers(ci_a.low, ci_a.high, ta),
        cover_b_new=_covers(ci_b.low, ci_b.high, tb),
        cover_diff_old=_covers(old_d.low, old_d.high, ta - tb),
        cover_a_old=_covers(old_a.low, old_a.high, ta),
        cover_b_old=_covers(old_b.low, old_b.high, tb),
        n_items=float(new.n_items),
        n_queries=float(new.n_queries),
        width_a_new=ci_a.high - ci_a.low,
        width_a_old=old_a.high - old_a.low,
    )


def run_layout(
    lay: Layout,
    n_runs: int,
    *,
    delta: float = 0.0,
    model: Model = Model(),
    B: int = 1000,
    permutations: int = 999,
    seed: int = 0,
    jobs: int = 1,
) -> dict[str, float]:
    """Means over ``n_runs`` simulated evaluations of :func:`one_run`'s numbers (coverages over
    the runs that gave an interval; ``no_interval_*``: the share that gave none)."""
    children = np.random.SeedSequence([seed, int(delta * 1e6), sum(map(ord, lay.name))]).spawn(n_runs)
    tasks = [(lay, model, delta, c, B, permutations) for c in children]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            rows = list(pool.map(one_run, tasks, chunksize=max(1, n_runs // (8 * jobs))))
    else:
        rows = [one_run(t) for t in tasks]
    out: dict[str, float] = {"runs": float(n_runs), "delta": delta}
    ta, tb = model.truth(delta)
    out.update(truth_a=ta, truth_b=tb, truth_diff=ta - tb)
    for key in rows[0]:
        v = np.array([r[key] for r in rows], dtype=np.float64)
        out[key] = float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
        if key.startswith("cover"):
            out["no_interval_" + key[len("cover_") :]] = float(np.mean(~np.isfinite(v)))
    # one per-encoder coverage: A's and B's intervals pooled (two intervals per run)
    for when in ("new", "old"):
        out[f"cover_encoder_{when}"] = (out[f"cover_a_{when}"] + out[f"cover_b_{when}"]) / 2
    return out


def _band(x: float, band: tuple[float, float]) -> str:
    return "in" if band[0] <= x <= band[1] else "**OUT**"


def _power_only(args: argparse.Namespace, model: Model, results: dict) -> None:
    """Power and coverage at one real difference, per layout (no nulls)."""
    print(
        "| layout | runs | Δ | power: item test (McNemar before) | coverage per encoder (before) | "
        "coverage of the difference (before) | seconds |"
    )
    print("|---|---|---|---|---|---|---|", flush=True)
    for name in args.layouts.split(","):
        lay, t0 = LAYOUTS[name], time.perf_counter()
        alt = run_layout(
            lay,
            args.alternatives,
            delta=args.delta,
            model=model,
            B=args.B,
            permutations=args.permutations,
            seed=args.seed,
            jobs=args.jobs,
        )
        secs = time.perf_counter() - t0
        results["layouts"][name] = {"layout": asdict(lay), "alternative": alt, "seconds": secs}
        print(
            f"| {name} | {args.alternatives} | {alt['truth_diff']:.4f} | {alt['reject_new']:.3f} "
            f"({alt['reject_old']:.3f}) | {alt['cover_encoder_new']:.4f} ({alt['cover_encoder_old']:.3f}) | "
            f"{alt['cover_diff_new']:.4f} ({alt['cover_diff_old']:.3f}) | {secs:.0f} |",
            flush=True,
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1, sort_keys=True)
            fh.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nulls", type=int, default=4000, help="simulated nulls per layout (>= 2000)")
    ap.add_argument("--alternatives", type=int, default=1000, help="simulated runs with a real difference")
    ap.add_argument("--delta", type=float, default=0.15, help="A's advantage on the probit scale")
    ap.add_argument("--layouts", default="rank,n500,parallel")
    ap.add_argument("--permutations", type=int, default=999)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (the numbers do not depend on it)")
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--power-only", action="store_true", help="only the runs with a real difference (--delta)")
    args = ap.parse_args()
    model = Model()
    results = {"model": asdict(model), "args": vars(args), "layouts": {}}
    if args.power_only:
        _power_only(args, model, results)
        return
    head = (
        "| layout | items / queries | nulls | rejection at α=0.05: item test (McNemar before) | "
        "power at Δ (before) | coverage per encoder (before) | coverage of the difference, null / alt "
        "(before) | seconds |"
    )
    print(head)
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for name in args.layouts.split(","):
        lay = LAYOUTS[name]
        t0 = time.perf_counter()
        kw = dict(model=model, B=args.B, permutations=args.permutations, seed=args.seed, jobs=args.jobs)
        null = run_layout(lay, args.nulls, delta=0.0, **kw)
        alt = run_layout(lay, args.alternatives, delta=args.delta, **kw)
        secs = time.perf_counter() - t0
        results["layouts"][name] = {"layout": asdict(lay), "null": null, "alternative": alt, "seconds": secs}
        cov_enc = (null["cover_encoder_new"] * args.nulls + alt["cover_encoder_new"] * args.alternatives) / (
            args.nulls + args.alternatives
        )
        cov_enc_old = (null["cover_encoder_old"] * args.nulls + alt["cover_encoder_old"] * args.alternatives) / (
            args.nulls + args.alternatives
        )
        print(
            f"| {name}: {lay.items} items/dir, N={lay.n}, {lay.seeds} seeds, {lay.directions} dirs"
            f"{', parallel' if lay.parallel else ''} | {null['n_items']:.0f} / {null['n_queries']:.0f} | "
            f"{args.nulls} | {null['reject_new']:.4f} ({_band(null['reject_new'], LEVEL_BAND)}) "
            f"({null['reject_old']:.4f}) | {alt['reject_new']:.3f} at Δ={alt['truth_diff']:.3f} "
            f"({alt['reject_old']:.3f}) | {cov_enc:.4f} ({_band(cov_enc, COVERAGE_BAND)}) ({cov_enc_old:.3f}) | "
            f"{null['cover_diff_new']:.4f} ({_band(null['cover_diff_new'], COVERAGE_BAND)}) / "
            f"{alt['cover_diff_new']:.4f} ({_band(alt['cover_diff_new'], COVERAGE_BAND)}) "
            f"({null['cover_diff_old']:.3f} / {alt['cover_diff_old']:.3f}) | {secs:.0f} |",
            flush=True,
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1, sort_keys=True)
            fh.write("\n")


if __name__ == "__main__":
    main()
