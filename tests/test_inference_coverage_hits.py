"""The verdict's coverage in the data's own outcome model (SIMULATED binary hits, family noise,
the real runs' hit rates): benchmarks/bench_inference_coverage.py --world hits wrote
benchmarks/inference_coverage_hits.json with every world's outcome; here it is checked to be
consistent with itself, with the committed layouts and with the code (a world recomputed)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from snake import ROOT

BENCH = ROOT / "benchmarks" / "inference_coverage_hits.json"


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_inference_coverage", ROOT / "benchmarks/bench_inference_coverage.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(BENCH.read_text(encoding="utf-8"))


def test_the_file_covers_every_committed_layout_and_its_shares_follow_from_its_worlds(committed):
    bench = _bench()
    assert committed["world"] == "hits"
    assert {lay.signature() for lay in bench.committed_layouts()} <= set(committed["layouts"])
    W = committed["worlds"]
    for sig, rec in committed["layouts"].items():
        worlds = rec["per_world"]
        assert len(worlds) == W, sig
        for key, share in rec["coverage"].items():
            assert share == pytest.approx(sum(w["hit"][key] for w in worlds) / W), (sig, key)
            widths = [w["width"][key] for w in worlds]
            assert rec["undefined"][key] == sum(not np.isfinite(x) for x in widths)
            assert rec["mean_width"][key] == pytest.approx(float(np.nanmean(widths)))
        for stat, z in rec["median_abs_z0"].items():
            assert z == pytest.approx(float(np.median([abs(w["z0"][stat]) for w in worlds])))


def test_the_file_is_the_settled_run_and_its_diagnostics_agree_with_its_intervals(committed):
    """At least 200 worlds per layout (binomial SD <= 0.016 at 0.95), the real runs' 25 seeds,
    and every world's ``diag`` consistent with the verdict's intervals: encoders fixed
    estimate ± t19·SE with SE = max(bootstrap SE, jackknife SE) (``se_items``), encoders random
    ± t·√(SE² + SE_families²) on the Welch–Satterthwaite df of the two variances."""
    import scipy.stats as st

    from backretrieval.stats.questions import satterthwaite_df

    assert committed["worlds"] >= 200 and committed["n_seeds"] == 25
    for sig, rec in committed["layouts"].items():
        for w in rec["per_world"]:
            for stat, d in w["diag"].items():
                t = st.t.ppf(0.975, d["G"] - 1)
                assert d["se_items"] >= d["se_jackknife"] - 1e-15, sig
                assert w["width"][f"fixed/{stat}"] == pytest.approx(2 * t * d["se_items"], rel=1e-9), sig
                lo, hi = d["estimate"] - t * d["se_items"], d["estimate"] + t * d["se_items"]
                assert w["hit"][f"fixed/{stat}"] == int(lo <= d["truth_fixed"] <= hi), sig
                se_r = np.hypot(d["se_items"], d["se_encoders"])
                df = satterthwaite_df(d["se_items"] ** 2, d["G"] - 1, d["se_encoders"] ** 2, d["n_families"] - 1)
                assert np.isfinite(se_r), sig  # a family's leave-out is defined in every world now
                assert w["width"][f"random/{stat}"] == pytest.approx(2 * st.t.ppf(0.975, df) * se_r, rel=1e-9), sig


def test_a_committed_world_is_what_the_code_gives(committed):
    """The cheapest layout's first world, recomputed with the committed settings."""
    from backretrieval.findings.inference_sim_hits import _world_hits

    bench = _bench()
    layouts = {lay.signature(): lay for lay in bench.committed_layouts()}
    sig = min(layouts, key=lambda s: (len(layouts[s].cells), sum(n for _, _, n in layouts[s].cells)))
    lay = layouts[sig]
    kw = {"n_seeds": committed["n_seeds"], "n_items": committed["n_items"], "n_queries": committed["n_queries"]}
    got = _world_hits((0, lay, bench.layout_rates(lay), committed["B"], committed["seed"], kw))
    want = committed["layouts"][sig]["per_world"][0]
    assert got["hit"] == want["hit"]
    for key in want["width"]:
        assert got["width"][key] == pytest.approx(want["width"][key], rel=1e-9, nan_ok=True)
    for stat in want["z0"]:
        assert got["z0"][stat] == pytest.approx(want["z0"][stat], rel=1e-9)
    # the benchmark's own path (with the diagnostics) gives the same world
    diag = bench.world_hits_diag((0, lay, bench.layout_rates(lay), committed["B"], committed["seed"], kw))
    assert diag["hit"] == want["hit"]
    for stat, d in want["diag"].items():
        for key, v in d.items():
            assert diag["diag"][stat][key] == pytest.approx(v, rel=1e-9, nan_ok=True), (stat, key)


def test_the_hits_world_has_binary_hits_shared_within_a_family_and_the_real_rates():
    """The outcome model itself: hits are 0/1, a family's encoders hit the same queries more
    often than encoders of different families, the rates spread as the real run's."""
    from backretrieval.findings.inference_sim import Layout
    from backretrieval.findings.inference_sim_hits import hits_world, real_rates

    lay = Layout("t", (("multi30k-task2", "p", 1),), (9, 1, 1, 1, 1, 1))
    rates = {"multi30k-task2": real_rates(ROOT, "multi30k-task2", 14)}
    cells, truth, fams = hits_world(3, lay, rates, n_items=400, n_queries=300, n_seeds=2)
    s = cells[0].seeds[0]
    for arr in (s.xlr, s.per_query["bkr"]):
        assert set(np.unique(arr)) <= {0.0, 1.0}
    r = np.corrcoef(s.xlr)
    within = np.nanmean([r[i, j] for i in range(9) for j in range(9) if i < j])
    across = np.nanmean([r[i, j] for i in range(9, 14) for j in range(9, 14) if i < j])
    assert within > across + 0.2
    assert set(truth) == {"fixed", "random"} and len(set(fams.values())) == 6
