"""Multi30K download + prepare, on the real files in ../shared/datasets (skipped where absent).

Also: STAIR / COCO and IKEA parsers on tiny *hand-made format fixtures* (no real data
of those datasets is available here), and the packaged checksum file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from backretrieval.data import prepared as ds
from backretrieval.data.sources import ikea, multi30k, stair
from backretrieval.errors import InputError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
M30K = SHARED / "multi30k"
NPY = SHARED / "multi30k-resnet50" / "test_2016_flickr-resnet50-avgpool.npy"
F8K = SHARED / "flickr8k-images"
F8K_CSV = SHARED / "flickr8k-images-in-multi30k.csv"
_skip_no_shared = pytest.mark.skipif(not M30K.is_dir(), reason=f"real data folder {M30K} absent")


def needs_shared(f):
    """Marks a test as using ../shared/datasets (marker ``shared_data``) and skips it there absent."""
    return pytest.mark.shared_data(_skip_no_shared(f))


def _gz_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


# ----------------------------------------------------------------------------- checksums


@needs_shared
def test_packaged_checksums_equal_shared_list():
    shared = multi30k.parse_checksums((SHARED / "multi30k.sha256").read_text())
    assert multi30k.load_checksums() == shared
    assert len(shared) == 58


def test_file_list_is_pinned_and_skips_missing_pairs():
    pins = multi30k.load_checksums()
    files = multi30k.multi30k_files(list(multi30k.TASK1_SPLITS), ["en", "de", "fr", "cs"], task2=True)
    assert set(files) == set(pins)  # every upstream file we use is pinned, and nothing else
    two = multi30k.multi30k_files(["test_2017_mscoco"], ["en", "cs"])
    assert two == ["data/task1/image_splits/test_2017_mscoco.txt", "data/task1/raw/test_2017_mscoco.en.gz"]
    with pytest.raises(InputError, match="unknown Multi30K split"):
        multi30k.multi30k_files(["test"], ["en"])
    with pytest.raises(InputError, match="unknown Multi30K language"):
        multi30k.multi30k_files(["val"], ["xx"])


def test_parse_checksums_rejects_garbage():
    with pytest.raises(InputError, match="line 2"):
        multi30k.parse_checksums("# c\nnot-a-hash  file\n")


# ----------------------------------------------------------------------------- download


@needs_shared
def test_download_from_local_mirror_verifies_every_file(tmp_path):
    paths = multi30k.download_multi30k(
        tmp_path / "raw", mirror=str(M30K), splits=["test_2016_flickr"], langs=["en", "de"], task2=True
    )
    rels = sorted(str(p.relative_to(tmp_path / "raw")) for p in paths)
    assert len(rels) == 1 + 2 + 10
    pins = multi30k.load_checksums()
    for rel in rels:
        assert hashlib.sha256((tmp_path / "raw" / rel).read_bytes()).hexdigest() == pins[rel]


@needs_shared
def test_download_detects_tampered_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    rel = "data/task1/raw/test_2016_flickr.en.gz"
    for r in (rel, "data/task1/image_splits/test_2016_flickr.txt"):
        (mirror / r).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(M30K / r, mirror / r)
    (mirror / rel).write_bytes(gzip.compress(b"tampered\n"))
    with pytest.raises(InputError, match="sha256 mismatch"):
        multi30k.download_multi30k(tmp_path / "raw", mirror=mirror.as_uri(), splits=["test_2016_flickr"], langs=["en"])
    assert not (tmp_path / "raw" / rel).exists()


# ----------------------------------------------------------------------------- task 1


@needs_shared
def test_prepare_task1_precomputed(tmp_path):
    out = multi30k.prepare_task1(
        M30K,
        tmp_path / "t1",
        ["test_2016_flickr"],
        ["en", "de"],
        {"type": "precomputed", "npy": str(NPY), "ids_from_split": "test_2016_flickr"},
    )
    items = ds.load_items(out)
    meta = ds.read_meta(out)
    assert meta.parallel and not meta.synthetic and meta.languages == ("en", "de")
    assert len(items) == 2000 and set(items["split"]) == {"test"}
    names = (M30K / "data/task1/image_splits/test_2016_flickr.txt").read_text().split()
    en = _gz_lines(M30K / "data/task1/raw/test_2016_flickr.en.gz")
    de = _gz_lines(M30K / "data/task1/raw/test_2016_flickr.de.gz")
    row = items[(items.item_id == "test_2016_flickr:00417") & (items.lang == "de")].iloc[0]
    assert row.title == de[417] and row.image_id == names[417] and row.body == ""
    row = items[(items.item_id == "test_2016_flickr:00999") & (items.lang == "en")].iloc[0]
    assert row.title == en[999]
    ids, feats = ds.load_precomputed_features(out, "resnet50")
    assert list(ids) == names and feats.dtype == np.float32 and feats.shape == (1000, 2048)
    np.testing.assert_array_equal(feats[123], np.load(NPY)[123].astype(np.float32))


@needs_shared
def test_prepare_task1_precomputed_refuses_uncovered_split(tmp_path):
    with pytest.raises(InputError, match="features cover only split"):
        multi30k.prepare_task1(
            M30K,
            tmp_path / "x",
            ["val"],
            ["en"],
            {"type": "precomputed", "npy": str(NPY), "ids_from_split": "test_2016_flickr"},
        )
    assert not (tmp_path / "x").exists()
    with pytest.raises(InputError, match="shape"):
        multi30k.prepare_task1(
            M30K,
            tmp_path / "x",
            ["val"],
            ["en"],
            {"type": "precomputed", "npy": str(NPY), "ids_from_split": "val"},
        )


@needs_shared
def test_prepare_task1_missing_flickr30k_folder_explains(tmp_path):
    with pytest.raises(InputError, match="request") as ei:
        multi30k.prepare_task1(
            M30K, tmp_path / "x", ["test_2016_flickr"], ["en"], {"type": "folder", "path": str(tmp_path / "nope")}
        )
    assert "precomputed" in str(ei.value)
    assert not (tmp_path / "x").exists()


@needs_shared
def test_prepare_task1_folder_links_images_inside_root(tmp_path):
    # a fake "Flickr30k folder": the real Flickr8k JPEGs renamed to their Flickr30k names
    # for the 31 test_2016_flickr images we have; the rest of the split is not available,
    # so a text subset via a custom raw dir (first N lines) is built from the real files.
    mp = pd.read_csv(F8K_CSV, dtype=str)
    sub = mp[mp.multi30k_split == "test_2016_flickr"].sort_values("line_index")
    folder = tmp_path / "flickr30k"
    folder.mkdir()
    for r in sub.itertuples():
        shutil.copyfile(F8K / r.flickr8k_file, folder / r.multi30k_image)
    with pytest.raises(InputError, match=r"969 of 1000 images missing"):
        multi30k.prepare_task1(
            M30K, tmp_path / "x", ["test_2016_flickr"], ["en"], {"type": "folder", "path": str(folder)}
        )
    # fill the gaps with copies of one real JPEG to check the happy path end to end
    names = (M30K / "data/task1/image_splits/test_2016_flickr.txt").read_text().split()
    filler = folder / sub.multi30k_image.iloc[0]
    for n in names:
        if not (folder / n).exists():
            shutil.copyfile(filler, folder / n)
    out = multi30k.prepare_task1(
        M30K, tmp_path / "t1", ["test_2016_flickr"], ["en"], {"type": "folder", "path": str(folder)}
    )
    table = ds.load_image_table(out)  # resolves every path inside the root
    assert len(table) == 1000
    p = out / table.loc[table.image_id == names[5], "path"].iloc[0]
    assert not p.is_symlink() and p.read_bytes() == (folder / names[5]).read_bytes()


# ----------------------------------------------------------------------------- flickr8k subset


@needs_shared
def test_prepare_flickr8k_subset_real_images(tmp_path):
    out = multi30k.prepare_flickr8k_subset(M30K, F8K, F8K_CSV, tmp_path / "f8k")
    items = ds.load_items(out)
    table = ds.load_image_table(out)
    assert len(table) == 937 and len(items) == 937 * 4
    assert set(items["lang"]) == {"en", "de", "fr", "cs"} and set(items["split"]) == {"eval"}
    # row 2 of the CSV: 1000268201_693b08cb0e.jpg = train line 2
    fr = _gz_lines(M30K / "data/task1/raw/train.fr.gz")
    row = items[(items.item_id == "train:00002") & (items.lang == "fr")].iloc[0]
    assert row.image_id == "1000268201.jpg" and row.title == fr[2]
    path = table.loc[table.image_id == "1000268201.jpg", "path"].iloc[0]
    assert (out / path).read_bytes() == (F8K / "1000268201_693b08cb0e.jpg").read_bytes()
    assert set(items.image_id) == set(table.image_id)
    meta = json.loads((out / "dataset.json").read_text())
    assert meta["source"]["splits"] == {"test_2016_flickr": 31, "train": 872, "val": 34}


@needs_shared
def test_prepare_flickr8k_subset_checks_mapping(tmp_path):
    bad = pd.read_csv(F8K_CSV, dtype=str).head(3)
    bad.loc[1, "line_index"] = "3"
    bad.to_csv(tmp_path / "map.csv", index=False)
    with pytest.raises(InputError, match="row 3.*line_index"):
        multi30k.prepare_flickr8k_subset(M30K, F8K, tmp_path / "map.csv", tmp_path / "o")
    bad.drop(columns=["line_index"]).to_csv(tmp_path / "map2.csv", index=False)
    with pytest.raises(InputError, match="missing column"):
        multi30k.prepare_flickr8k_subset(M30K, F8K, tmp_path / "map2.csv", tmp_path / "o")


# ----------------------------------------------------------------------------- task 2


@needs_shared
def test_prepare_task2_independent_captions(tmp_path):
    out = multi30k.prepare_task2(
        M30K,
        tmp_path / "t2",
        "test_2016",
        {"type": "precomputed", "npy": str(NPY), "ids_from_split": "test_2016_flickr"},
    )
    meta = json.loads((out / "dataset.json").read_text())
    assert meta["parallel"] is True and meta["texts_independent"] is True
    items = ds.load_items(out)
    assert len(items) == 2000
    caps = [_gz_lines(M30K / f"data/task2/raw/test_2016.{k}.de.gz") for k in range(1, 6)]
    row = items[(items.item_id == "test_2016:00010") & (items.lang == "de")].iloc[0]
    assert row.title == caps[0][10]
    assert row.body.split("\n") == [c[10] for c in caps[1:]]
    en = items[items.lang == "en"].set_index("item_id")
    de = items[items.lang == "de"].set_index("item_id")
    assert (en.image_id == de.image_id).all()  # same item id = same image
    assert (en.title != de.title).all()


@needs_shared
def test_prepare_task2_training_text_only(tmp_path):
    out = multi30k.prepare_task2_training(M30K, tmp_path / "tr")
    items = ds.load_items(out)
    assert len(items) == 2 * 29000 and set(items.split) == {"train"}
    assert not (out / "images.csv").exists() and not (out / "features").exists()
    names = (M30K / "data/task1/image_splits/train.txt").read_text().split()
    assert items[items.lang == "en"].image_id.tolist() == names


@needs_shared
def test_prepare_replaces_previous_prepared_but_not_foreign_folder(tmp_path):
    out = tmp_path / "t"
    multi30k.prepare_task1(M30K, out, ["test_2016_flickr"], ["en"])
    multi30k.prepare_task1(M30K, out, ["test_2016_flickr"], ["de"])
    assert set(ds.load_items(out).lang) == {"de"}
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("x")
    with pytest.raises(InputError, match="refusing"):
        multi30k.prepare_task1(M30K, foreign, ["test_2016_flickr"], ["en"])
    assert (foreign / "thesis.tex").exists()


def test_prepare_task1_line_count_mismatch(tmp_path):
    """Hand-made raw folder (format fixture): caption file shorter than the image list."""
    raw = tmp_path / "raw"
    (raw / "data/task1/image_splits").mkdir(parents=True)
    (raw / "data/task1/raw").mkdir(parents=True)
    (raw / "data/task1/image_splits/val.txt").write_text("1.jpg\n2.jpg\n")
    with gzip.open(raw / "data/task1/raw/val.en.gz", "wt") as fh:
        fh.write("only one caption\n")
    with pytest.raises(InputError, match="1 lines, expected 2"):
        multi30k.prepare_task1(raw, tmp_path / "o", ["val"], ["en"])
    with gzip.open(raw / "data/task1/raw/val.en.gz", "wt") as fh:
        fh.write("a caption\n\n")
    with pytest.raises(InputError, match="empty caption at line 2"):
        multi30k.prepare_task1(raw, tmp_path / "o", ["val"], ["en"])
    with pytest.raises(InputError, match="has no"):
        multi30k.prepare_task1(raw, tmp_path / "o", ["test_2017_flickr"], ["cs"])


# ----------------------------------------------------------------------------- STAIR / COCO (hand-made format fixtures)


def _coco_json(path: Path, images, anns) -> Path:
    path.write_text(json.dumps({"info": {}, "licenses": [], "images": images, "annotations": anns}, ensure_ascii=False))
    return path


def test_stair_coco_parser_on_handmade_fixture(tmp_path):
    """Hand-made files in the documented COCO captions layout (not real STAIR/COCO data)."""
    imgs = [
        {"id": 1, "file_name": "COCO_val2014_000000000001.jpg"},
        {"id": 2, "file_name": "COCO_val2014_000000000002.jpg"},
        {"id": 3, "file_name": "COCO_val2014_000000000003.jpg"},
    ]
    en = _coco_json(
        tmp_path / "captions_val2014.json",
        imgs,
        [
            {"id": 11, "image_id": 1, "caption": "A cat on a mat. "},
            {"id": 10, "image_id": 1, "caption": "A cat sleeping."},
            {"id": 12, "image_id": 2, "caption": "Two dogs."},
            {"id": 13, "image_id": 3, "caption": "A bus."},
        ],
    )
    ja = _coco_json(
        tmp_path / "stair_captions_v1.2_val.json",
        imgs[:2],
        [
            {"id": 5, "image_id": 2, "caption": "二匹の犬。"},
            {"id": 4, "image_id": 1, "caption": "マットの上の猫。", "tokenized_caption": "マット の 上 の 猫 。"},
            {"id": 6, "image_id": 1, "caption": "寝ている猫。"},
        ],
    )
    img_dir = tmp_path / "val2014"
    img_dir.mkdir()
    from PIL import Image

    for im in imgs:
        Image.new("RGB", (8, 8), (im["id"] * 40, 0, 0)).save(img_dir / im["file_name"])
    out = stair.prepare_stair(ja, en, tmp_path / "p", images_dir=img_dir)
    items = ds.load_items(out)
    meta = ds.read_meta(out)
    assert meta.parallel and meta.extra["texts_independent"] and meta.languages == ("en", "ja")
    # only images with captions in both languages: ids 1 and 2; captions ordered by annotation id
    assert sorted(set(items.item_id)) == ["coco:000000000001", "coco:000000000002"]
    r = items[(items.item_id == "coco:000000000001") & (items.lang == "en")].iloc[0]
    assert r.title == "A cat sleeping." and r.body == "A cat on a mat."
    r = items[(items.item_id == "coco:000000000001") & (items.lang == "ja")].iloc[0]
    assert r.title == "マットの上の猫。" and r.body == "寝ている猫。"
    assert len(ds.load_image_table(out)) == 2
    with pytest.raises(InputError, match="annotations"):
        stair.load_coco_captions(_coco_json(tmp_path / "bad.json", imgs, [{"id": 1, "caption": "x"}]))


def test_ikea_parser_on_handmade_fixture(tmp_path):
    """Hand-made folder in the IKEA-Dataset repo layout (not real IKEA data)."""
    base = tmp_path / "IKEA-Dataset-master" / "IKEA" / "data.en.de"
    (base / "data.raw").mkdir(parents=True)
    (base / "image.index").mkdir()
    (base / "data.raw/test_WMT_2017.en").write_text("A chair . Wipe clean .\nA lamp .\n")
    with gzip.open(base / "data.raw/test_WMT_2017.de.gz", "wt", encoding="utf-8") as fh:
        fh.write("Ein Stuhl . Abwischen .\nEine Lampe .\n")
    (base / "image.index/test_WMT_2017_images.txt").write_text("17.jpg\n4.jpg\n")
    out = ikea.prepare_ikea(tmp_path / "IKEA-Dataset-master", tmp_path / "p", pair="en-de", splits=["test"])
    items = ds.load_items(out)
    assert len(items) == 4 and ds.read_meta(out).languages == ("en", "de")
    r = items[(items.item_id == "test:00001") & (items.lang == "de")].iloc[0]
    assert r.title == "Eine Lampe ." and r.image_id == "4.jpg"
    (base / "image.index/test_WMT_2017_images.txt").write_text("17.jpg\n")
    with pytest.raises(InputError, match="expected 1"):
        ikea.prepare_ikea(tmp_path / "IKEA-Dataset-master", tmp_path / "p2", pair="en-de", splits=["test"])
