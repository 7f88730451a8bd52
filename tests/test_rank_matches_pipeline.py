"""``backretrieval rank`` and the pipeline (snakemake: sample, embed, metrics and report steps)
give byte-identical tables on the same samples and vectors, also where target texts repeat, so
that identical target vectors tie exactly and the documented tie rule decides.

The data is SYNTHETIC and without parallel texts (tests/test_nonparallel.py's folder), with a
third of each language's titles replaced by copies of other titles of that language.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

import snake
from snake import BIN, run_snakemake
from test_nonparallel import LANGS, _cfg, make_nonparallel

pytestmark = pytest.mark.slow

#: the pipeline's encoders (test_nonparallel's config) as `rank --encoders` specs with their labels
MODELS = (
    "{type: char_ngram, dim: 256, n: [2, 3, 4], name: char-ngram}",
    "{type: char_ngram, dim: 64, n: [3], name: char-ngram-3}",
    "{type: random, dim: 32, seed: 0, name: random}",
)
#: the files both doors write with the same function (reporting.ranking.rank_encoders)
TABLES = ("bkr_ci.csv", "ranking.csv", "pairwise.csv")


def _repeat_titles(root: Path) -> int:
    """Every third item of a language takes the title of the item before it: identical texts,
    so identical vectors for every encoder here. Returns how many titles were replaced."""
    items = pd.read_csv(root / "items.csv", dtype=str, keep_default_na=False)
    replaced = 0
    for lang in LANGS:
        rows = items.index[items["lang"] == lang]
        for j in range(2, len(rows), 3):
            items.loc[rows[j], "title"] = items.loc[rows[j - 1], "title"]
            replaced += 1
    items.to_csv(root / "items.csv", index=False)
    return replaced


@pytest.fixture(scope="module")
def both(synthetic_dataset, tmp_path_factory) -> tuple[Path, Path, Path, Path]:
    """(data, the pipeline's reports folder, rank's output folder, the pipeline's workdir)."""
    data = make_nonparallel(
        synthetic_dataset(60, list(LANGS), seed=0, image_size=64), tmp_path_factory.mktemp("dup") / "d"
    )
    assert _repeat_titles(data) >= 10
    wd = tmp_path_factory.mktemp("dup-run")
    cfg = _cfg(data)
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    run_snakemake(wd, "--until", "report", cores=1, configfile=wd / "config.yaml")
    out = wd / "ranked"
    cmd = [str(BIN / "backretrieval"), "rank", "--encoders", *MODELS]
    cmd += ["--dataset", str(data), "--directions", *cfg["directions"], "--image-backbone", cfg["image_backbone"]]
    cmd += ["--sample-size", str(cfg["sample_size"]), "--seeds", *map(str, cfg["seeds"])]
    cmd += ["--recall-k", str(cfg["recall_k"]), "--text-field", cfg["text_field"]]
    cmd += ["--bootstrap", str(cfg["stats"]["bootstrap_B"]), "--cache-dir", str(wd / "rank-cache"), "--quiet"]
    cmd += ["--out-dir", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=snake.env(), timeout=900, cwd=wd)
    assert res.returncode == 0, res.stderr[-3000:]
    return data, wd / cfg["reports_dir"], out, wd


def test_the_sampled_targets_hold_repeated_texts(both):
    """The comparison below is made where ties occur: some seed's BkR targets repeat a text."""
    data, _, _, wd = both
    items = pd.read_csv(data / "items.csv", dtype=str, keep_default_na=False)
    title = dict(zip(items["item_id"], items["title"]))
    samples = sorted(wd.glob("artifacts/*/samples/*.json"))
    assert samples, sorted(str(p.relative_to(wd)) for p in wd.glob("artifacts/**/*"))[:20]
    repeats = 0
    for path in samples:
        for s in json.loads(path.read_text())["samples"]:
            texts = [title[i] for i in s["bkr_targets"]]
            repeats += len(texts) - len(set(texts))
    assert repeats > 0


@pytest.mark.parametrize("name", TABLES)
def test_rank_and_the_pipeline_write_the_same_bytes(both, name):
    _, reports, ranked, _ = both
    pipeline, rank = (reports / name).read_bytes(), (ranked / name).read_bytes()
    assert pipeline == rank, f"{name} differs:\n{pipeline.decode()[:2000]}\n---\n{rank.decode()[:2000]}"


def test_rank_and_the_pipeline_print_the_same_tables(both):
    """bkr_report.md and ranking.md differ in their title and caption only."""
    _, reports, ranked, _ = both
    pipeline = (reports / "bkr_report.md").read_text().splitlines()
    rank = (ranked / "ranking.md").read_text().splitlines()
    assert pipeline[4:] == rank[4:] and pipeline[0] != rank[0]
