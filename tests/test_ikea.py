"""IKEA-Dataset: the loader on hand-made folders in the repository's exact layout (NOT real
IKEA data): gz texts per split and language, the image index, the per-split feature matrices
(train, val and test, as upstream master), the product-image zips
``IKEA/image/image.en.<l>/<split>.<1,2>.zip``, per-file downloads from a mirror (with Git LFS
pointers), and a run of BkR/XLR/CORR on both pairs through the CLI."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from backretrieval.cli import main
from backretrieval.config import load_config
from backretrieval.data import prepared as ds
from backretrieval.data.sources import ikea
from backretrieval.errors import InputError
from snake import rendered_step

ROOT = Path(__file__).resolve().parents[1]
DIM = 8
# items per split; the last two en-fr val images are en-de test images (as upstream, where
# en-fr val ends with the first en-de test images): each pair keeps its own feature rows
COUNTS = {"en-de": {"train": 6, "val": 9, "test": 10}, "en-fr": {"train": 5, "val": 8, "test": 9}}
pytestmark = pytest.mark.filterwarnings("ignore::backretrieval.data.UnpinnedDownloadWarning")


def _names(pair: str, split: str, n: int) -> list[str]:
    if pair == "en-fr" and split == "val":
        return [f"{900 + i}.jpg" for i in range(n - 2)] + ["200.jpg", "201.jpg"]
    base = {"train": 0, "val": 100, "test": 200}[split] + (500 if pair == "en-fr" else 0)
    return [f"{base + i}.jpg" for i in range(n)]


def _feats(pair: str, split: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{pair}/{split}".encode()))
    return rng.standard_normal((n, DIM)).astype(np.float32)


def _jpeg(pair: str, name: str) -> bytes:
    """A tiny JPEG whose colour depends on (pair, name): the two pairs' 200.jpg differ."""
    c = zlib.crc32(f"{pair}/{name}".encode())
    buf = io.BytesIO()
    Image.new("RGB", (24, 16), (c & 255, (c >> 8) & 255, (c >> 16) & 255)).save(buf, format="JPEG")
    return buf.getvalue()


def make_repo(root: Path, *, train_features: bool = True, image_zips: bool = True) -> Path:
    """``root/IKEA-Dataset-master/IKEA/...``: texts, index and features of every split, and
    each split's images in two zips (part 1 keeps them in a folder, part 2 at the top, with
    macOS metadata beside them), as a clone of the repository would hold them."""
    repo = root / "IKEA-Dataset-master"
    for pair, splits in COUNTS.items():
        base = repo / "IKEA" / f"data.{pair.replace('-', '.')}"
        imgs = repo / "IKEA" / "image" / f"image.{pair.replace('-', '.')}"
        for sub in ("data.raw", "image.index", "data.image.bpe"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        imgs.mkdir(parents=True, exist_ok=True)
        for split, n in splits.items():
            names = _names(pair, split, n)
            (base / "image.index" / f"{split}_WMT_2017_images.txt").write_text("\n".join(names) + "\n")
            for lang in pair.split("-"):
                with gzip.open(base / "data.raw" / f"{split}_WMT_2017.{lang}.gz", "wt", encoding="utf-8") as fh:
                    fh.write("".join(f"{lang} product {name} : a sturdy chair , wipe clean .\n" for name in names))
            if split != "train" or train_features:
                np.save(base / "data.image.bpe" / f"{split}.norm.tok.lc.10000bpe_ims.npy", _feats(pair, split, n))
            if image_zips:
                half = n // 2
                with zipfile.ZipFile(imgs / f"{split}.1.zip", "w") as zf:
                    for name in names[:half]:
                        zf.writestr(f"{split}/{name}", _jpeg(pair, name))
                with zipfile.ZipFile(imgs / f"{split}.2.zip", "w") as zf:
                    for name in names[half:]:
                        zf.writestr(name, _jpeg(pair, name))
                        zf.writestr(f"__MACOSX/._{name}", b"\0\5\26\7")
    return repo


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "src")


def test_both_pairs_with_upstream_features(repo, tmp_path):
    out = ikea.prepare_ikea(
        repo, tmp_path / "p", pair=["en-de", "en-fr"], splits=["train", "val", "test"], features=True
    )
    items = ds.load_items(out)
    meta = ds.read_meta(out)
    assert meta.languages == ("en", "de", "fr") and meta.parallel
    assert len(items) == 2 * (6 + 9 + 10) + 2 * (5 + 8 + 9)
    assert set(items.split) == {"train", "val", "test"}
    r = items[(items.item_id == "en-fr:val:00007") & (items.lang == "fr")].iloc[0]
    assert r.image_id == "en-fr/201.jpg" and r.split == "val" and "201.jpg" in r.title
    ids, feats = ds.load_precomputed_features(out, "ikea-upstream")
    row = {iid: i for i, iid in enumerate(ids)}
    # row i of each split's matrix = line i of its image index, per pair
    for pair in COUNTS:
        for split in ("train", "val", "test"):
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


def test_missing_train_features_are_named(tmp_path):
    repo = make_repo(tmp_path / "src", train_features=False)
    with pytest.raises(InputError, match=r"train\.norm\.tok\.lc\.10000bpe_ims\.npy: image features of split 'train'"):
        ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["train"], features=True)
    assert not (tmp_path / "p").exists()
    out = ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["train"], features=False)
    assert not (out / "features").exists() and len(ds.load_items(out)) == 2 * 6


def _pair_items(splits) -> dict[str, int]:
    return {p: sum(ikea.UPSTREAM_INDEX_LINES[p][s] for s in splits) for p in ikea.PAIRS}


def test_config_uses_train_val_test_at_the_papers_n():
    cfg = load_config(ROOT / "config/ikea.yaml")
    opts = cfg["dataset"]["options"]
    assert opts["splits"] == ["train", "val", "test"] and opts["features"] is True
    assert cfg["sample_size"] == 1500  # the paper's N for IKEA (Section 3.1)
    items = _pair_items(opts["splits"])
    assert items == {"en-de": 3590, "en-fr": 3321}  # data_stats.csv: tokens / mean length
    assert 2 * cfg["sample_size"] <= min(items.values())  # N queries + N disjoint targets


def test_valtest_config_is_the_largest_disjoint_n():
    cfg = load_config(ROOT / "config/ikea_valtest.yaml")
    opts = cfg["dataset"]["options"]
    assert opts["splits"] == ["val", "test"]
    assert cfg["sample_size"] == min(_pair_items(opts["splits"]).values()) // 2 == 336
    full = load_config(ROOT / "config/ikea.yaml")
    assert cfg["run_name"] != full["run_name"] and cfg["reports_dir"] != full["reports_dir"]
    assert cfg["dataset"]["name"] != full["dataset"]["name"]  # two prepared folders, never one overwritten


def test_image_zips_become_raw_images(repo, tmp_path):
    """Both pairs, every split: each item's image comes out of its pair's zips (part 1 keeps
    them in a folder, part 2 at the top), byte for byte; macOS metadata and unused images are
    dropped; the features are written beside them."""
    out = ikea.prepare_ikea(
        repo, tmp_path / "p", pair=["en-de", "en-fr"], splits=["train", "val", "test"], features=True, image_zips=True
    )
    table = ds.load_image_table(out)
    items = ds.load_items(out)
    assert set(table.image_id) == set(items.image_id) and len(table) == table.image_id.nunique()
    for pair in COUNTS:
        for split, n in COUNTS[pair].items():
            for name in _names(pair, split, n):
                p = out / f"images/{pair}/{name}"
                assert p.read_bytes() == _jpeg(pair, name), p
    # the same file name in both pairs: each pair's own image
    assert (out / "images/en-de/200.jpg").read_bytes() != (out / "images/en-fr/200.jpg").read_bytes()
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert not [f for f in files if "MACOSX" in f or f.startswith(".")]  # no scratch left
    assert len([f for f in files if f.startswith("images/")]) == len(table)
    meta = ds.read_meta(out)
    src = meta.extra["source"]["files"]
    assert "IKEA/image/image.en.de/train.2.zip" in src and len(src["IKEA/image/image.en.de/train.2.zip"]) == 64
    assert "IKEA/data.en.fr/data.image.bpe/train.norm.tok.lc.10000bpe_ims.npy" in src
    assert ds.load_precomputed_features(out, "ikea-upstream")[1].shape[1] == DIM


def test_image_missing_from_the_zips_is_named(repo, tmp_path):
    z = repo / "IKEA/image/image.en.de/test.2.zip"
    with zipfile.ZipFile(z, "w") as zf:  # part 2 loses 205.jpg .. 209.jpg but one
        for name in _names("en-de", "test", 10)[5:9]:
            zf.writestr(name, _jpeg("en-de", name))
    with pytest.raises(
        InputError, match=r"1 of 10 images of en-de are in none of \['test\.1\.zip', 'test\.2\.zip'\].*209\.jpg"
    ):
        ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["test"], image_zips=True)
    assert not (tmp_path / "p").exists()
    (repo / "IKEA/image/image.en.de/test.1.zip").unlink()
    z.unlink()
    with pytest.raises(InputError, match=r"no image zip test\.<part>\.zip .*image_zips: false"):
        ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["test"], image_zips=True)


def test_unsafe_image_zip_is_refused(repo, tmp_path):
    with zipfile.ZipFile(repo / "IKEA/image/image.en.de/val.1.zip", "w") as zf:
        zf.writestr("../../evil.jpg", b"x")
    with pytest.raises(InputError, match=r"val\.1\.zip: refused member '\.\./\.\./evil\.jpg'"):
        ikea.prepare_ikea(repo, tmp_path / "p", pair="en-de", splits=["val"], image_zips=True)
    assert not (tmp_path / "p").exists() and not (tmp_path / "evil.jpg").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]  # no staging or scratch left


def test_per_file_download_fetches_only_the_files_needed(tmp_path):
    """A clone of the repository as the mirror: only the configured splits' texts, index,
    features (and zips when asked) are fetched, into the upstream layout."""
    mirror = make_repo(tmp_path / "src")
    dl = tmp_path / "dl"
    root = ikea.download_ikea_files(dl, ["en-de", "en-fr"], ["val", "test"], features=True, mirror=str(mirror))
    got = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert got == sorted(ikea.upstream_files(["en-de", "en-fr"], ["val", "test"], features=True))
    assert not [g for g in got if "train" in g or g.endswith(".zip")] and len(got) == 2 * 2 * 4
    root = ikea.download_ikea_files(dl, ["en-de"], ["train"], features=True, image_zips=True, mirror=str(mirror))
    assert (root / "IKEA/image/image.en.de/train.1.zip").is_file() and (
        root / "IKEA/image/image.en.de/train.2.zip"
    ).is_file()
    out = ikea.prepare_ikea(root, tmp_path / "p", pair="en-de", splits=["train"], features=True, image_zips=True)
    assert len(ds.load_image_table(out)) == 6
    # a mirror without the train split names the missing file
    for p in (mirror / "IKEA").rglob("train*"):
        p.unlink()
    with pytest.raises(InputError, match=r"train_WMT_2017_images\.txt: no such file"):
        ikea.download_ikea_files(tmp_path / "dl2", ["en-fr"], ["train"], mirror=str(mirror))


LFS_POINTER = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 123\n"


def test_lfs_pointer_from_github_is_replaced_by_the_lfs_object(tmp_path, monkeypatch):
    real = make_repo(tmp_path / "src")
    urls = []

    def fake_fetch(url, dest, sha256, **kw):
        urls.append(url)
        rel = url.split("/master/", 1)[1]
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        lfs = rel.endswith(".npy")  # the feature matrices are LFS objects in this fake GitHub
        data = (
            (real / rel).read_bytes()
            if (not lfs or url.startswith(ikea.LFS_BASE.format(ref="master")))
            else LFS_POINTER
        )
        dest.write_bytes(data)
        return dest

    monkeypatch.setattr(ikea, "fetch", fake_fetch)
    root = ikea.download_ikea_files(tmp_path / "dl", ["en-de"], ["test"], features=True)
    npy = "IKEA/data.en.de/data.image.bpe/test.norm.tok.lc.10000bpe_ims.npy"
    assert urls == [
        f"https://raw.githubusercontent.com/sampalomad/IKEA-Dataset/master/{r}"
        for r in ikea.upstream_files(["en-de"], ["test"], features=True)
    ] + [f"https://media.githubusercontent.com/media/sampalomad/IKEA-Dataset/master/{npy}"]
    np.testing.assert_array_equal(np.load(root / npy), _feats("en-de", "test", 10))


def test_lfs_pointer_in_a_mirror_is_refused(tmp_path):
    mirror = make_repo(tmp_path / "src")
    npy = mirror / "IKEA/data.en.de/data.image.bpe/test.norm.tok.lc.10000bpe_ims.npy"
    npy.write_bytes(LFS_POINTER)
    with pytest.raises(InputError, match=r"holds a Git LFS pointer.*git lfs pull"):
        ikea.download_ikea_files(tmp_path / "dl", ["en-de"], ["test"], mirror=str(mirror))
    with pytest.raises(InputError, match=r"test\.norm\.tok\.lc\.10000bpe_ims\.npy: a Git LFS pointer"):
        ikea.prepare_ikea(mirror, tmp_path / "p", pair="en-de", splits=["test"], features=True)


def test_an_image_backbone_runs_on_the_zip_images(tmp_path, monkeypatch):
    """prepare (per-file mirror, image zips) -> embed-images with EfficientNet-Lite0 (offline
    weights): one feature row per product image."""
    mirror = make_repo(tmp_path / "src")
    cfg = yaml.safe_load((ROOT / "config/ikea.yaml").read_text())
    cfg["dataset"]["options"].update(mirror=str(mirror), pairs=["en-de"], splits=["test"], image_zips=True)
    cfg.update(languages=["en", "de"], directions=["en-de"], sample_size=3, recall_k=1, seeds=[0])
    cfg.update(
        image_backbone="effnet-lite0", backbones={"effnet-lite0": {"type": "efficientnet-lite", "variant": "lite0"}}
    )
    cfg["cache_dir"] = str(tmp_path / "cache")
    monkeypatch.chdir(tmp_path)
    assert main(rendered_step(cfg, "prepare_dataset")) == 0
    assert main(rendered_step(cfg, "embed_images")) == 0
    arr = np.load(tmp_path / "artifacts/ikea/image/effnet-lite0.npz")
    assert sorted(arr["ids"]) == sorted(_names("en-de", "test", 10)) and arr["emb"].shape[0] == 10
    assert np.isfinite(arr["emb"]).all()
    meta = json.loads((tmp_path / "data/prepared/ikea-en-de-fr/dataset.json").read_text())
    assert meta["images"].startswith("image files (from the repository's image zips")


def test_ikea_runs_xlr_bkr_corr_from_a_mirror(tmp_path, monkeypatch):
    """per-file download (a clone as mirror) -> prepare train+val+test with features -> embed
    -> sample -> metrics, for en<->de and en<->fr, through the CLI and config/ikea.yaml's settings."""
    mirror = make_repo(tmp_path / "src")
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
    assert main(rendered_step(cfg, "prepare_dataset")) == 0
    assert main(rendered_step(cfg, "check_dataset")) == 0
    assert main(rendered_step(cfg, "embed_images")) == 0
    for enc in cfg["encoders"]:
        assert main(rendered_step(cfg, "embed_text", encoder=enc)) == 0
    assert main(rendered_step(cfg, "sample")) == 0  # one job samples every direction
    for d in cfg["directions"]:
        assert main(rendered_step(cfg, "metrics", direction=d)) == 0
    c = ["--config", "ikea.yaml"]
    df = pd.concat(pd.read_csv(p) for p in sorted(Path("artifacts/ikea/metrics").glob("*.csv")))
    assert set(df.direction) == {"en-de", "de-en", "en-fr", "fr-en"}
    assert {"xlr_recall", "bkr_recall", "corr"} <= set(df.metric)
    assert df.value.notna().all() and (df.n == 8).all()
    # char n-grams find each product's own description (its file name is in the text)
    xlr = df[(df.metric == "xlr_recall") & (df.encoder == "char-ngram")].value
    assert (xlr == 1.0).all()
    assert set(pd.read_csv("data/prepared/ikea-en-de-fr/items.csv").split) == {"train", "val", "test"}
    # N=12 for en-fr needs 24 items; 22 (train+val+test) -> refused before any work, field named
    assert main(["validate-config", *c, "--set", "sample_size=12"]) == 2


def test_archive_download_keeps_working_with_image_zips(tmp_path):
    """``download: archive``: the repository archive (one folder level more), safely extracted;
    the texts, features and image zips are found inside it."""
    src = make_repo(tmp_path / "src")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with zipfile.ZipFile(mirror / "master.zip", "w") as zf:
        for p in sorted(src.rglob("*")):
            zf.write(p, p.relative_to(src.parent).as_posix())
    repo = ikea.download_ikea(tmp_path / "dl", str(mirror))
    out = ikea.prepare_ikea(repo, tmp_path / "p", pair="en-fr", splits=["val"], features=True, image_zips=True)
    assert (out / "images/201.jpg").read_bytes() == _jpeg("en-fr", "201.jpg")
    assert len(ds.load_image_table(out)) == 8
