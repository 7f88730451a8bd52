"""`backretrieval verify`'s comparison of trained results, on real trained heads: the per-seed
BkR of the case study's TRIPLET and TRIPLETXL heads trained under many seeds, with this
machine's kernels and with other ones, and under three real changes of the training
(benchmarks/bench_trained_verify.py wrote them to benchmarks/trained_verify.json; made on one
machine, read here on any). The analysis is recomputed from those values with verify's own
code: a run in which only the kernels or the training seeds changed fails at most 1 % of the
time, and each real change fails."""

from __future__ import annotations

import importlib.util
import json

import pytest
import yaml

from snake import ROOT

BENCH = ROOT / "benchmarks" / "trained_verify.json"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_trained_verify", ROOT / "benchmarks/bench_trained_verify.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def analysis() -> dict:
    values = json.loads(BENCH.read_text())["values"]
    r = len(yaml.safe_load((ROOT / "params.yaml").read_text())["case_study"]["training_seeds"])
    return _bench().analyse(values, r, draws=1000)


def test_verify_rarely_fails_a_run_in_which_only_the_kernels_or_the_seeds_changed(analysis):
    rates = analysis["false_alarms"]
    assert {"other kernels, same seeds", "same kernels, other seeds", "other kernels, other seeds"} <= set(rates)
    for name, r in rates.items():
        assert r["rate"] <= 0.01, (name, r)


def test_verify_fails_each_real_change_of_the_training(analysis):
    real = analysis["real_changes"]
    assert set(real) == {"epochs-20", "alpha-0.3", "base-e5-small"}
    assert all(r["fails"] for r in real.values()), real


def test_the_default_r_decides_tripletxl_vs_triplet_as_all_seeds_do(analysis):
    """With R seeds, the paired interval of TRIPLETXL − TRIPLET excludes 0 in nearly every draw
    of R seeds from the pool (the pool's own mean is well above 0)."""
    spread = analysis["default_spread"]["tripletxl-triplet"]
    assert spread["mean"] > 0
    decided = [v for k, v in spread.items() if k.startswith("decided_ahead_with_R=")]
    assert decided and decided[0] >= 0.99, spread
