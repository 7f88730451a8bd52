"""A small version of benchmarks/bench_item_unit.py (the full numbers: benchmarks/README.md):
the simulator's truth is what it simulates, and in the default `rank` layout the item test
keeps its level and the item-bootstrap intervals cover the truth, on SIMULATED binary hits with
item-level heterogeneity. Bands: three binomial standard deviations around the nominal rate."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_item_unit as B  # noqa: E402


def test_the_simulated_truth_is_the_population_hit_rate():
    """Many simulated evaluations pooled: the hit rates approach Model.truth (the known truth the
    coverages are measured against), under the null and with a real difference."""
    model = B.Model()
    lay = B.Layout("big", items=4000, n=2000, seeds=1)
    rng = np.random.default_rng(0)
    for delta in (0.0, 0.15):
        a, b, keys, seed_of = B.simulate(rng, lay, model, delta)
        ta, tb = model.truth(delta)
        # 4,000 items × 2 directions: the item-to-item sd of a hit rate is below 0.01
        assert a.mean() == pytest.approx(ta, abs=0.03) and b.mean() == pytest.approx(tb, abs=0.03)
        assert len(set(keys.tolist())) == 2 * 2000 and set(seed_of.tolist()) == {0}


def test_overlapping_samples_redraw_items_and_parallel_directions_share_them():
    rng = np.random.default_rng(1)
    _, _, keys, _ = B.simulate(rng, B.LAYOUTS["rank"], B.Model(), 0.0)
    assert keys.size == 600 and 250 < len(set(keys.tolist())) < 300  # 3 × 100 of 150, per direction
    assert not set(keys[:300].tolist()) & set(keys[300:].tolist())  # the directions' items differ
    _, _, keys, _ = B.simulate(rng, B.LAYOUTS["parallel"], B.Model(), 0.0)
    np.testing.assert_array_equal(keys[:300], keys[300:])  # a seed queries the same items both ways


def test_level_and_coverage_in_the_rank_layout():
    runs = 300
    out = B.run_layout(B.LAYOUTS["rank"], runs, B=200, permutations=199, seed=3)
    sd = (0.05 * 0.95 / runs) ** 0.5
    assert abs(out["reject_new"] - 0.05) < 3 * sd, out["reject_new"]
    assert abs(out["cover_encoder_new"] - 0.95) < 3 * sd, out["cover_encoder_new"]
    assert abs(out["cover_diff_new"] - 0.95) < 3 * sd, out["cover_diff_new"]
    # the interval over 3 seeds' means, as printed before: far below its nominal 95 %
    assert out["cover_encoder_old"] < 0.95 - 6 * sd, out["cover_encoder_old"]
    assert out["no_interval_diff_new"] == 0 and out["n_items"] < out["n_queries"]
