"""The benchmark scripts: their correctness checks hold, and the suite runs end to end (small N).

Timings are never asserted here (speed is measured by the benchmarks themselves); these tests
keep the scripts working and check the evaluated bf16 screening against float64 brute force.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

torch = pytest.importorskip("torch", reason="the bf16 screening benchmark needs torch")

import bench_bf16_screen as S  # noqa: E402


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _ranks64(src: np.ndarray, tgt: np.ndarray) -> np.ndarray:
    s = src.astype(np.float64) @ tgt.astype(np.float64).T
    return 1 + np.count_nonzero(s > np.diag(s)[:, None], axis=1)


def _hard_case(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Near-duplicate targets (scores within the bf16 error of the true score) and exact ties."""
    rng = np.random.default_rng(seed)
    src = _unit(rng.standard_normal((n, d)))
    tgt = _unit(src + 0.3 * rng.standard_normal((n, d)))
    tgt[1::4] = _unit(tgt[0::4][: len(tgt[1::4])] + 1e-3 * rng.standard_normal((len(tgt[1::4]), d)))
    tgt[2] = tgt[0]  # exact duplicate row: exact ties for query 0 and 2
    return src, tgt


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bf16_bound_holds_for_every_pair(seed):
    src, tgt = _hard_case(200, 96, seed)
    q_h = torch.from_numpy(src).bfloat16()
    t_h = torch.from_numpy(tgt).bfloat16()
    s_hat = (q_h @ t_h.T).float().numpy().astype(np.float64)
    exact = src.astype(np.float64) @ tgt.astype(np.float64).T
    eps0 = S.screen_bound(src, q_h.float().numpy(), tgt, t_h.float().numpy())
    err = np.abs(exact - s_hat)
    assert err.max() > 0  # the bf16 product does differ from the exact scores ...
    assert np.all(err <= eps0 + S.C_OUT * np.abs(s_hat))  # ... but never by more than the bound


@pytest.mark.parametrize("seed,block", [(0, 1024), (1, 7), (2, 64)])
def test_bf16_screened_ranks_equal_float64_brute_force(seed, block):
    src, tgt = _hard_case(300, 64, seed)
    ranks, info = S.bf16_screened_xlr_ranks(src, tgt, block_rows=block)
    assert info["band_pairs"] > 0  # the re-check path is exercised
    np.testing.assert_array_equal(ranks, _ranks64(src, tgt))


def test_row_limits_bracket_the_diagonal():
    diag = np.array([-0.9, -1e-3, 0.0, 1e-3, 0.5, 1.0])
    hi, lo = S._row_limits(diag, 1e-3)
    assert np.all(lo < diag) and np.all(diag < hi)


def test_run_all_small_smoke(tmp_path):
    """The suite's sections run end to end at a small N and write the report + raw numbers."""
    out = tmp_path / "bench.md"
    sections = "machine,kernels,baselines,bf16screen,corr"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--quick", "--n", "600", "--only", sections, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "ceiling" in text and "bf16 screening" in text
    import json

    units = json.loads(out.with_suffix(".json").read_text())
    assert units["bf16screen"]["differ"] == 0
    assert units["baselines"]["argsort_agree"] == 1.0
    if "semantic_search_s" in units["baselines"]:  # sentence-transformers installed
        assert units["baselines"]["recall_ours"] == units["baselines"]["recall_ss"]
    runs = {(r["pairs"], r["impl"]): r for r in units["corr"]["runs"]}
    assert set(runs) == {("exact", "old"), ("exact", "new"), ("1e6", "old"), ("1e6", "new")}
    assert runs["exact", "new"]["rho"] == pytest.approx(runs["exact", "old"]["rho"], abs=1e-15)  # same CORR
    quality = units["corr"]["quality"]
    assert len(quality["new"]) == len(quality["old"]) == quality["seeds"] > 0
    assert max(abs(r - quality["exact"]) for r in quality["new"]) < 0.05  # 3.6e4 of 3.6e5 pairs


def test_bench_sample_compares_two_trees(tmp_path):
    """bench_sample.py times this tree against another checkout (here: itself, via a symlink)
    and reports whether both gave the same results and ranks."""
    other = tmp_path / "other"
    other.symlink_to(BENCH.parent)
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_sample.py"), "--n", "300", "--encoders", "2", "--repeats", "1"]
        + ["--against", str(other)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| this tree") or line.startswith("| against")]
    assert len(rows) == 2 and len({r.split("|")[-2] for r in rows}) == 1  # one sha256 for both trees
    assert "identical results and per-query ranks in both trees: True" in proc.stdout


def test_bench_images_times_batch_sizes_side_by_side():
    """bench_images.py times EfficientNet-Lite0 at several batch sizes in one run and counts the
    images whose bits differ from the default batch size's."""
    pytest.importorskip("efficientnet_lite_pytorch")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_images.py"), "--n", "6", "--batch-sizes", "2", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split("|") for line in proc.stdout.splitlines() if line.startswith("| ") and "ms" not in line]
    sizes = [r[1].strip() for r in rows if r[1].strip() and not r[1].strip().startswith("-")]
    assert sizes == ["2", "**4** (default)"], proc.stdout
    assert all(float(r[2]) > 0 for r in rows[-2:]) and rows[-1][3].strip() == "1.00", proc.stdout


def test_protocol_config_validates_on_its_generated_data(tmp_path, monkeypatch):
    """benchmarks/protocol.yaml (the paper protocol on SYNTHETIC data) passes every config check
    on what benchmarks/protocol_data.py writes (here 300 items instead of 25,000, N=100)."""
    import yaml
    from protocol_data import ENCODERS, LANGUAGES, generate

    from backretrieval.cli import main

    monkeypatch.chdir(tmp_path)
    assert generate(Path("data/generated/protocol"), n_items=300)
    assert not generate(Path("data/generated/protocol"), n_items=300)  # up to date: nothing rewritten
    cfg = yaml.safe_load((BENCH / "protocol.yaml").read_text())
    assert len(cfg["encoders"]) == len(ENCODERS) == 10 and len(cfg["directions"]) == 8
    assert len(cfg["seeds"]) == 25 and cfg["sample_size"] == 10_000 and cfg["languages"] == LANGUAGES
    cfg["sample_size"] = 100
    Path("protocol.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["validate-config", "--config", "protocol.yaml"]) == 0
    emb = np.load("data/generated/protocol/text/syn-laser/de.npy")
    assert emb.shape == (300, ENCODERS["syn-laser"]) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
