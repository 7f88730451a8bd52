"""The method's main use: a dataset WITHOUT parallel texts (``"parallel": false``, different
items per language) runs end to end, through ``snakemake`` and through ``backretrieval
evaluate`` / ``compare``, and its reports hold what such a user needs: BkR Recall@k and MRR
per encoder and direction with CIs over seeds, a ranking of the encoders with pairwise
McNemar tests (Holm-adjusted), the random baseline, a figure, and no XLR (with the reason).

The data is SYNTHETIC: the generator's items split between the languages (even-numbered items
keep only their English text, odd-numbered ones only their German text, ids made per
language), so no item has a translation in the other language.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

import snake
from snake import BIN, run_snakemake

pytestmark = pytest.mark.slow
LANGS = ("en", "de")
ENCODERS = ("char-ngram", "char-ngram-3", "random")


def make_nonparallel(src: Path, dst: Path) -> Path:
    """A prepared, non-parallel copy of the SYNTHETIC dataset ``src``: item i keeps its text in
    LANGS[i % 2] only, under the id ``<lang>-<id>`` (its own image)."""
    dst.mkdir(parents=True)
    # image side: precomputed 'pixels' features (each image's 8×8 grey thumbnail; a cheap
    # stand-in for a backbone, so the test runs in seconds)
    images = pd.read_csv(src / "images.csv", dtype=str, keep_default_na=False)
    feats = [
        np.asarray(Image.open(src / p).convert("L").resize((8, 8), Image.BILINEAR), dtype=np.float32).ravel()
        for p in images["path"]
    ]
    (dst / "features").mkdir()
    np.save(dst / "features/pixels.npy", np.stack(feats) - np.mean(feats, axis=0))
    (dst / "features/pixels.ids.txt").write_text("".join(f"{i}\n" for i in images["image_id"]))
    items = pd.read_csv(src / "items.csv", dtype=str, keep_default_na=False)
    ids = sorted(items["item_id"].unique())
    owner = {i: LANGS[n % len(LANGS)] for n, i in enumerate(ids)}
    items = items[items["item_id"].map(owner) == items["lang"]].copy()
    items["item_id"] = items["lang"] + "-" + items["item_id"]
    items.to_csv(dst / "items.csv", index=False)
    meta = json.loads((src / "dataset.json").read_text())
    meta.update(name="synthetic-nonparallel", parallel=False, languages=list(LANGS))
    (dst / "dataset.json").write_text(json.dumps(meta, indent=2))
    return dst


def _cfg(data: Path) -> dict:
    return {
        "run_name": "nonpar",
        "dataset": {"name": "nonpar", "source": "prepared", "options": {"path": str(data)}},
        "languages": list(LANGS),
        "directions": ["en-de", "de-en"],
        "text_field": "title",
        "sample_size": 15,
        "seeds": [0, 1],
        "recall_k": 5,
        "figure_seed": 0,
        "corr_max_pairs": None,
        "image_backbone": "pixels",
        "backbones": {"pixels": {"type": "precomputed", "name": "pixels"}},
        "encoders": {
            "char-ngram": {"type": "char_ngram", "dim": 256, "n": [2, 3, 4]},
            "char-ngram-3": {"type": "char_ngram", "dim": 64, "n": [3]},
            "random": {"type": "random", "dim": 32, "seed": 0},
        },
        "model_threads": 2,
        "cache_dir": ".cache/embeddings",
        "reports_dir": "reports/nonpar",
        "stats": {"bootstrap_B": 200, "bootstrap_seed": 0},
    }


@pytest.fixture(scope="module")
def data(synthetic_dataset, tmp_path_factory) -> Path:
    src = synthetic_dataset(60, list(LANGS), seed=0, image_size=64)
    return make_nonparallel(src, tmp_path_factory.mktemp("byo") / "nonpar")


@pytest.fixture(scope="module")
def run_dir(data, tmp_path_factory) -> Path:
    wd = tmp_path_factory.mktemp("nonpar-run")
    (wd / "config.yaml").write_text(yaml.safe_dump(_cfg(data)))
    run_snakemake(wd, cores=1, configfile=wd / "config.yaml")
    return wd


def test_dataset_is_not_parallel(data):
    items = pd.read_csv(data / "items.csv", dtype=str)
    en, de = (set(items.loc[items["lang"] == lang, "item_id"]) for lang in LANGS)
    assert len(en) == len(de) == 30 and not en & de
    assert json.loads((data / "dataset.json").read_text())["parallel"] is False


def test_snakemake_reports(run_dir):
    rep = run_dir / "reports/nonpar"
    # no XLR artefacts at all: Table 1 and Figure 2 need ground-truth correspondences
    for name in ("table1.md", "table1.tex", "figures/fig2_scatter.png", "plots/fig2_xlr_vs_bkr.csv"):
        assert not (rep / name).exists(), name
    assert not (run_dir / "artifacts/nonpar/correlations.csv").exists()
    for name in ("figures/bkr_per_encoder.png", "figures/bkr_per_encoder.svg", "figures/bkr_per_encoder.pdf"):
        assert (rep / name).stat().st_size > 0, name

    ci = pd.read_csv(rep / "bkr_ci.csv")
    assert list(ci.columns) == [
        "direction",
        "encoder",
        "metric",
        "mean",
        "ci_low",
        "ci_high",
        "n_seeds",
        "n_items",
        "ci_note",
    ]
    assert set(ci["metric"]) == {"bkr_recall", "bkr_mrr", "corr"}
    assert set(ci["encoder"]) == set(ENCODERS) | {"random baseline"}
    assert set(ci["direction"]) == {"en-de", "de-en"}
    base = ci[ci["encoder"] == "random baseline"]
    assert set(base["metric"]) == {"bkr_recall", "bkr_mrr"}
    assert base[base.metric == "bkr_recall"]["mean"].tolist() == pytest.approx([5 / 15] * 2)  # k/N
    h15 = sum(1 / i for i in range(1, 16))
    assert base[base.metric == "bkr_mrr"]["mean"].tolist() == pytest.approx([h15 / 15] * 2)  # H_N/N
    enc = ci[(ci["encoder"] != "random baseline")]
    with_ci = enc[enc["metric"] != "corr"]  # CORR has no per-query values: no item bootstrap, no interval
    assert (enc["n_seeds"] == 2).all() and enc.loc[enc["metric"] == "corr", "ci_low"].isna().all()
    assert (with_ci["ci_low"] <= with_ci["mean"]).all() and (with_ci["mean"] <= with_ci["ci_high"]).all()
    assert (with_ci["n_items"] < 2 * 15).all()  # 2 seeds re-draw items: fewer items than queries

    ranking = pd.read_csv(rep / "ranking.csv")
    assert list(ranking.columns) == [
        "rank", "encoder", "bkr_recall", "ci_low", "ci_high", "bkr_mrr", "worst_direction", "n_queries", "n_items"
    ]  # fmt: skip
    assert ranking["bkr_recall"].is_monotonic_decreasing and set(ranking["encoder"]) == set(ENCODERS)
    assert ranking["n_queries"].tolist() == [2 * 2 * 15] * 3  # directions × seeds × N

    pw = pd.read_csv(rep / "pairwise.csv")
    assert {"direction", "encoder_a", "encoder_b", "diff", "ci_low", "ci_high", "n10", "n01"} <= set(pw.columns)
    assert {"p", "p_holm", "n_items"} <= set(pw.columns)
    pooled = pw[pw["direction"] == "all"]
    assert len(pooled) == 3  # every pair of the 3 encoders
    assert (pooled["p_holm"] >= pooled["p"]).all()
    assert (pooled["p_holm"] <= 1).all()
    assert (pooled["n_items"] < pooled["n_queries"]).all()  # the unit: a distinct item
    # Holm: the smallest p is multiplied by the number of pairs (capped at 1)
    smallest = pooled.sort_values("p").iloc[0]
    assert smallest["p_holm"] == pytest.approx(min(1.0, 3 * smallest["p"]))
    assert set(pw["direction"]) == {"all", "en-de", "de-en"}

    md = (rep / "bkr_report.md").read_text()
    assert "XLR" in md and "not parallel" in md and "ground-truth" in md
    assert "XLR Recall" not in md and "Pearson" not in md and "xlr_recall" not in md
    assert "random baseline" in md and "Holm" in md and "SYNTHETIC" in md
    assert "Unit of every test and interval: the distinct item" in md
    assert "Repeated target texts:" in md  # how many sampled targets repeat a text (they tie)
    assert "BkR Recall@5" in md and "MRR" in md
    for e in ENCODERS:
        assert e in md

    mj = json.loads((rep / "metrics.json").read_text())
    assert mj["meta"]["parallel"] is False and "correlation_with_xlr" not in mj
    assert set(mj["encoders"]) == set(ENCODERS)
    assert "xlr_recall" not in mj["encoders"]["char-ngram"] and "bkr_recall" in mj["encoders"]["char-ngram"]
    assert mj["random_baseline"] == {
        "bkr_recall": pytest.approx(5 / 15, abs=1e-6),
        "bkr_mrr": pytest.approx(h15 / 15, abs=1e-6),
    }
    assert mj["ranking"] == ranking["encoder"].tolist()


def test_evaluate_and_compare_cli(data, tmp_path):
    out = {}
    for name, spec in (("char", "{type: char_ngram, dim: 256}"), ("random", "{type: random, dim: 32, seed: 0}")):
        out[name] = tmp_path / f"{name}.json"
        cmd = [str(BIN / "backretrieval"), "evaluate", "--encoder", spec, "--name", name, "--dataset", str(data)]
        cmd += ["--directions", "en-de", "de-en", "--sample-size", "15", "--n-seeds", "2", "--recall-k", "5", "--quiet"]
        cmd += ["--image-backbone", "pixels"]
        cmd += ["--cache-dir", str(tmp_path / "cache"), "--out", str(out[name]), "--bootstrap", "200"]
        res = subprocess.run(cmd, capture_output=True, text=True, env=snake.env(), timeout=600, cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-3000:]
        assert "BkR Recall@5" in res.stdout and "XLR Recall" not in res.stdout
        assert "(no XLR: the dataset is not parallel)" in res.stdout
        assert "random baseline: Recall@5 = k/N = 0.333" in res.stdout
        result = out[name].read_text()
        assert "bkr_hits" in result and "xlr_hits" not in result and "xlr_recall" not in result
    cmd = [str(BIN / "backretrieval"), "compare", str(out["char"]), str(out["random"])]
    res = subprocess.run(cmd, capture_output=True, text=True, env=snake.env(), timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Holm-adjusted over 2 directions" in res.stdout and "en→de" in res.stdout
