"""IKEA-Dataset: the loader on hand-made folders in the repository's exact layout (NOT real
IKEA data): gz texts per split and language, the image index, the per-split feature matrices
(val/test only, as upstream), and a run of BkR/XLR/CORR on both pairs from a zip "mirror"."""

from __future__ import annotations

import gzip
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import steps_cli  # tests/steps_cli.py
from backretrieval.cli import main
from backretrieval.config import load_config
from backretrieval.data import prepared as ds
from backretrieval.data.sources import ikea
from backretrieval.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
DIM = 8
# items per split; the last two en-fr val images are en-de test images (as upstream, where
# en-fr val ends with the first en-de test images): each pair keeps its own feature rows
COUNTS = {"en-de": {"train": 3, "val": 9, "test": 10}, "en-fr": {"train": 3, "val": 8, "test": 9}}


def _names(pair: str, split: str, n: int) -> list[str]:
    if pair == "en-fr" and split == "val":
        return [f"{900 + i}.jpg" for i in range(n - 2)] + ["200.jpg", "201.jpg"]
    base = {"train": 0, "val": 100, "test": 200}[split] + (500 if pair == "en-fr" else 0)
    return [f"{base + i}.jpg" for i in range(n)]


def _feats(pair: str, split: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{pair}/{split}".encode()))
    return rng.standard_normal((n, DIM)).astype(np.float32)


def make_repo(root: Path, train_features: bool = False) -> Path:
    """``root/IKEA-Dataset-master/IKEA/data.en.<l>/...`` with texts, index and features."""
    repo = root / "IKEA-Dataset-master"
    for pair, splits in COUNTS.items():
        base = repo / "IKEA" / f"data.{pair.replace('-', '.')}"
        for sub in ("data.raw", "image.index", "data.image.bpe"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        for split, n in splits.items():
            names = _names(pair, split, n)
            (base / "image.index" / f"{split}_WMT_2017_images.txt").write_text("\n".join(names) + "\n")
            for lang in pair.split("-"):
                with gzip.open(base / "data.raw" / f"{split}_WMT_2017.{lang}.gz", "wt", encoding="utf-8") as fh:
                    fh.write("".join(f"{lang} product {name} : a sturdy chair , wipe clean .\n" for name in names))
            if split != "train" or train_features:
                np.save(base / "data.image.bpe" / f"{split}.norm.tok.lc.10000bpe_ims.npy", _feats(pair, split, n))
    return repo


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "src")


def test_both_pairs_with_upstream_features(repo, tmp_path):
    out = ikea.prepare_ikea(repo, tmp_path / "p", pair=["en-de", "en-fr"], splits=["val", "test"], features=True)
    items = ds.load_items(out)
    meta = ds.read_meta(out)
    assert meta.languages == ("en", "de", "fr") and meta.parallel
    assert len(items) == 2 * (9 + 10) + 2 * (8 + 9)
    r = items[(items.item_id == "en-fr:val:00007") & (items.lang == "fr")].iloc[0]
    assert r.image_id == "en-fr/201.jpg" and r.split == "val" and "201.jpg" in r.title
    ids, feats = ds.load_precomputed_features(out, "ikea-upstream")
    row = {iid: i for i, iid in enumerate(ids)}
    # row i of each split's matrix = line i of its image index, per pair
    for pair in COUNTS:
        for split in ("val", "test"):
            n = COUNTS[pair][split]
            want = _feats(pair, split, n)
            got = feats[[row[f"{pair}/{name}"] for name in _names(pair, split, n)]]
            np.testing.assert_array_equal(got, want)
    # the same image file in both pairs keeps each pair's own row
    assert not np.array_equal(feats[row["en-de/201.jpg"]], feats[row["en-fr/201.jpg"]])
    assert set(items.image_id) <= set(ids)
    assert ds.read_meta(out).extra["features"]["ikea-upstream"]["dim"] == DIM


def test_single_pair_keeps_plain_ids(repo, tmp_path):
    out = ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["test"], features=True)
    items = ds.load_items(out)
    assert items.item_id.iloc[0] == "test:00000" and items.image_id.iloc[0] == "200.jpg"
    ids, _ = ds.load_precomputed_features(out, "ikea-upstream")
    assert list(ids) == _names("en-de", "test", 10)


def test_feature_rows_must_match_the_index(repo, tmp_path):
    npy = repo / "IKEA/data.en.fr/data.image.bpe/test.norm.tok.lc.10000bpe_ims.npy"
    np.save(npy, _feats("en-fr", "test", 8))  # one row short of the 9 index lines
    with pytest.raises(InputError) as exc:
        ikea.prepare_ikea(repo, tmp_path / "p", pair=["en-de", "en-fr"], splits=["val", "test"], features=True)
    msg = str(exc.value)
    assert str(npy) in msg and "test_WMT_2017_images.txt" in msg and "(8, 8)" in msg and "9 lines" in msg
    assert not (tmp_path / "p").exists() and [p.name for p in tmp_path.iterdir()] == ["src"]


def test_nonfinite_feature_row_is_named(repo, tmp_path):
    npy = repo / "IKEA/data.en.de/data.image.bpe/val.norm.tok.lc.10000bpe_ims.npy"
    bad = _feats("en-de", "val", 9)
    bad[4, 2] = np.inf
    np.save(npy, bad)
    with pytest.raises(
        InputError, match=r"val\.norm\.tok\.lc\.10000bpe_ims\.npy: 1 of 9 feature rows .*rows \[4\].*104\.jpg"
    ):
        ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["val"], features=True)
    assert not (tmp_path / "p").exists()


def test_train_split_has_no_upstream_features(repo, tmp_path):
    with pytest.raises(InputError, match="split 'train' not found .*features: false"):
        ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["train"], features=True)
    out = ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["train"], features=False)
    assert not (out / "features").exists() and len(ds.load_items(out)) == 6


def test_config_sample_size_is_the_largest_disjoint_n():
    cfg = load_config(ROOT / "config/ikea.yaml")
    opts = cfg["dataset"]["options"]
    items = {p: sum(ikea.UPSTREAM_INDEX_LINES[p][s] for s in opts["splits"]) for p in opts["pairs"]}
    assert cfg["sample_size"] == min(items.values()) // 2
    assert set(opts["splits"]) == {"val", "test"}  # the splits with upstream features


@pytest.mark.filterwarnings("ignore::backretrieval.data.UnpinnedDownloadWarning")
def test_ikea_runs_xlr_bkr_corr_from_a_zip_mirror(tmp_path, monkeypatch):
    """download (file mirror) -> safe extraction -> prepare with features -> embed -> sample ->
    metrics, for en<->de and en<->fr, through the CLI and config/ikea.yaml's settings."""
    src = make_repo(tmp_path / "src")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with zipfile.ZipFile(mirror / "master.zip", "w") as zf:
        for p in sorted(src.rglob("*")):
            zf.write(p, p.relative_to(src.parent).as_posix())
    cfg = yaml.safe_load((ROOT / "config/ikea.yaml").read_text())
    cfg["dataset"]["options"]["mirror"] = str(mirror)
    cfg.update(sample_size=8, recall_k=3, seeds=[0, 1], cache_dir=str(tmp_path / "cache"))
    cfg["encoders"] = {
        "char-ngram": {"type": "char_ngram", "dim": 256},
        "char3": {"type": "char_ngram", "dim": 64, "n": [3]},
        "random": {"type": "random", "dim": 16, "seed": 0},
    }
    (tmp_path / "ikea.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(tmp_path)
    assert main(steps_cli.prepare(cfg)) == 0
    assert main(steps_cli.check(cfg)) == 0
    assert main(steps_cli.embed_images(cfg)) == 0
    for enc in cfg["encoders"]:
        assert main(steps_cli.embed_text(cfg, enc)) == 0
    for d in cfg["directions"]:
        assert main(steps_cli.sample(cfg, d)) == 0
        assert main(steps_cli.metrics(cfg, d)) == 0
    c = ["--config", "ikea.yaml"]
    df = pd.concat(pd.read_csv(p) for p in sorted(Path("artifacts/ikea/metrics").glob("*.csv")))
    assert set(df.direction) == {"en-de", "de-en", "en-fr", "fr-en"}
    assert {"xlr_recall", "bkr_recall", "corr"} <= set(df.metric)
    assert df.value.notna().all() and (df.n == 8).all()
    # char n-grams find each product's own description (its file name is in the text)
    xlr = df[(df.metric == "xlr_recall") & (df.encoder == "char-ngram")].value
    assert (xlr == 1.0).all()
    # N=9 for en-fr needs 18 items; 17 (val+test) -> refused before any work, field named
    assert main(["validate-config", *c, "--set", "sample_size=9"]) == 2
