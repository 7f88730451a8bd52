"""validate_dataset on a small, deliberately broken bring-your-own folder (hand-made)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from backretrieval.data.byo import Problem, has_errors, validate_dataset

GOOD_ITEMS = (
    "item_id,lang,image_id,title,body\n"
    "r1,en,img1,Pancakes,Flour eggs milk\n"
    "r1,es,img1,Tortitas,Harina huevos leche\n"
    "r2,en,img2,Soup,Carrots\n"
)


def _good(root: Path) -> Path:
    (root / "images").mkdir(parents=True)
    for i in (1, 2):
        Image.new("RGB", (6, 6), (i * 60, 10, 10)).save(root / "images" / f"img{i}.png")
    (root / "dataset.json").write_text(json.dumps({"name": "recipes", "languages": ["en", "es"], "parallel": False}))
    (root / "items.csv").write_text(GOOD_ITEMS)
    (root / "images.csv").write_text("image_id,path\nimg1,images/img1.png\nimg2,images/img2.png\n")
    return root


def _find(probs: list[Problem], file: str, row, field, level="error", text=""):
    hits = [
        p
        for p in probs
        if p.file == file and p.row == row and p.field == field and p.level == level and text in p.message
    ]
    assert hits, f"no {level} at {file}:{row} [{field}] ~{text!r} in:\n" + "\n".join(map(str, probs))
    return hits[0]


def test_clean_dataset_has_no_problems(tmp_path):
    assert validate_dataset(_good(tmp_path / "ok")) == []


def test_broken_dataset_reports_every_problem(tmp_path):
    root = _good(tmp_path / "bad")
    outside = tmp_path / "outside.png"
    Image.new("RGB", (4, 4)).save(outside)
    (root / "images" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (root / "items.csv").write_text(
        GOOD_ITEMS
        + "r3,en,img3,,body only\n"  # row 5: empty title
        + "r1,en,img1,Pancakes again,x\n"  # row 6: duplicate (r1, en)
        + "r4,en,img2,Soup,Carrots\n"  # row 7: duplicate text of r2
        + "r5,xx,img1,Tarte,Farine\n"  # row 8: unknown language code
        + "r6,English,img1,Pie,Apples\n"  # row 9: malformed language code
        + "r7,en,img9,Cake,Sugar\n"  # row 10: image id without image
        + "r8,en,img4,Stew,Beans\n"  # row 11: image 4 escapes root
        + "r9,en,img5,Tea,Water\n"  # row 12: image 5 unreadable
        + "r10,en,img6,Jam,Fruit\n"  # row 13: image 6 file missing
    )
    (root / "images.csv").write_text(
        "image_id,path\nimg1,images/img1.png\nimg2,images/img2.png\nimg3,images/img1.png\n"
        "img4,../outside.png\nimg5,images/broken.jpg\nimg6,images/nope.png\nimg1,images/img2.png\n"
    )
    probs = validate_dataset(root)
    assert has_errors(probs)
    _find(probs, "items.csv", 5, "title", text="empty text")
    _find(probs, "items.csv", 6, "item_id", text="first at row 2")
    _find(probs, "items.csv", 7, "title", level="warning", text="duplicate text")
    _find(probs, "items.csv", 8, "lang", level="warning", text="unknown language code 'xx'")
    _find(probs, "items.csv", 9, "lang", text="not a language code")
    _find(probs, "items.csv", 10, "image_id", text="'img9' has no entry")
    _find(probs, "images.csv", 5, "path", text="outside the dataset root")
    _find(probs, "images.csv", 6, "path", text="unreadable image")
    _find(probs, "images.csv", 7, "path", text="not found")
    _find(probs, "images.csv", 8, "image_id", text="duplicate image_id 'img1'")
    # 'xx' is also not declared in dataset.json
    _find(probs, "items.csv", 8, "lang", level="warning", text="not listed in dataset.json")
    # and the count of repeated titles per language (one line for the file)
    _find(probs, "items.csv", None, "title", level="warning", text="1 of 9 en items repeat the title")
    # nothing else: exactly the planted problems (each row at most once per field)
    assert len(probs) == 13, "\n".join(map(str, probs))
    assert str(_find(probs, "items.csv", 5, "title")).startswith("error: items.csv:5 [title]")


def test_unreadable_image_skipped_when_not_checking(tmp_path):
    root = _good(tmp_path / "b")
    (root / "images" / "img2.png").write_bytes(b"garbage")
    assert any("unreadable" in p.message for p in validate_dataset(root))
    assert validate_dataset(root, check_images=False) == []


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlink_escaping_root_is_reported(tmp_path):
    root = _good(tmp_path / "s")
    ext = tmp_path / "ext"
    ext.mkdir()
    Image.new("RGB", (4, 4)).save(ext / "x.png")
    os.symlink(ext, root / "images" / "linked")
    (root / "images.csv").write_text("image_id,path\nimg1,images/img1.png\nimg2,images/linked/x.png\n")
    _find(validate_dataset(root), "images.csv", 3, "path", text="outside the dataset root")


def test_missing_files_and_columns(tmp_path):
    empty = tmp_path / "e"
    empty.mkdir()
    probs = validate_dataset(empty)
    _find(probs, "dataset.json", None, None, text="missing")
    _find(probs, "items.csv", None, None, text="missing")
    root = _good(tmp_path / "c")
    (root / "items.csv").write_text("item_id,lang,title\nr1,en,x\n")
    _find(validate_dataset(root), "items.csv", 1, "image_id,body", text="missing column")


def test_features_instead_of_images(tmp_path):
    root = _good(tmp_path / "f")
    (root / "images.csv").unlink()
    (root / "features").mkdir()
    np.save(root / "features" / "rn.npy", np.zeros((2, 3), np.float16))
    (root / "features" / "rn.ids.txt").write_text("img1\nimg2\n")
    assert validate_dataset(root) == []
    (root / "features" / "rn.ids.txt").write_text("img1\n")
    probs = validate_dataset(root)
    _find(probs, "features/rn.npy", None, None, text="shape (2, 3)")
    _find(probs, "items.csv", 4, "image_id", text="'img2' has no entry")
    (root / "features" / "rn.npy").unlink()
    (root / "features" / "rn.ids.txt").unlink()
    (root / "features").rmdir()
    _find(validate_dataset(root), ".", None, None, level="warning", text="no images.csv")


def test_duplicate_feature_id_is_refused(tmp_path):
    """An image id listed twice in features/<name>.ids.txt (with an extra row) is an error, in
    validate-dataset and in the reader the pipeline uses (no row silently wins)."""
    from backretrieval.data.prepared import load_precomputed_features
    from backretrieval.errors import InputError

    root = _good(tmp_path / "d")
    (root / "images.csv").unlink()
    (root / "features").mkdir()
    np.save(root / "features" / "rn.npy", np.arange(9, dtype=np.float32).reshape(3, 3))
    (root / "features" / "rn.ids.txt").write_text("img1\nimg2\nimg1\n")
    _find(validate_dataset(root), "features/rn.ids.txt", None, None, text="line 3: image id 'img1' is listed twice")
    with pytest.raises(InputError, match="listed twice"):
        load_precomputed_features(root, "rn")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_referenced_outside_link_is_not_called_unreferenced(tmp_path):
    root = _good(tmp_path / "s")
    ext = tmp_path / "ext"
    ext.mkdir()
    Image.new("RGB", (4, 4)).save(ext / "x.png")
    os.symlink(ext / "x.png", root / "images" / "linked.png")
    os.symlink(ext, root / "images" / "unused")
    (root / "images.csv").write_text("image_id,path\nimg1,images/img1.png\nimg2,images/linked.png\n")
    probs = validate_dataset(root)
    _find(probs, "images.csv", 3, "path", text="outside the dataset root")
    assert not [p for p in probs if p.file == "images/linked.png"], "\n".join(map(str, probs))
    _find(probs, "images/unused", None, None, level="warning", text="not referenced")


def test_nfd_and_nfc_texts_are_one_text(tmp_path):
    """The same title in NFC and NFD: read as one form (NFC) and warned as a duplicate text."""
    import unicodedata

    from backretrieval.data.prepared import load_items

    root = _good(tmp_path / "u")
    nfc_title, nfd_title = unicodedata.normalize("NFC", "Crème brûlée"), unicodedata.normalize("NFD", "Crème brûlée")
    assert nfc_title != nfd_title
    (root / "items.csv").write_text(
        GOOD_ITEMS + f"r3,en,img1,{nfc_title},Sugar\n" + f"r4,en,img2,{nfd_title},Sugar\n", encoding="utf-8"
    )
    _find(validate_dataset(root), "items.csv", 6, "title", level="warning", text="duplicate text")
    items = load_items(root)
    titles = items.loc[items["item_id"].isin(["r3", "r4"]), "title"].tolist()
    assert titles == [nfc_title, nfc_title]


def test_errors_name_the_file_line_after_a_quoted_newline_and_an_unreadable_ids_file_alone(tmp_path):
    """A title holding a quoted newline makes its record two lines long: later problems are
    named by their file line. A features/*.ids.txt with a duplicate id is named, and alone: not
    followed by one false 'has no entry' per image."""
    import numpy as np

    from backretrieval.data.byo import validate_dataset

    root = tmp_path / "ds"
    (root / "features").mkdir(parents=True)
    (root / "dataset.json").write_text('{"name": "own", "languages": ["en"]}')
    rows = ["item_id,lang,image_id,title,body", 'a,en,i1,"two\nlines",b']
    rows += [f"x{i},en,i{i},title {i},body" for i in range(2, 6)] + ["x6,en,,title 6,body"]
    (root / "items.csv").write_text("\n".join(rows) + "\n")
    (root / "features" / "f.ids.txt").write_text("i1\ni2\ni2\ni3\ni4\ni5\n")
    np.save(root / "features" / "f.npy", np.ones((6, 4), np.float32))
    probs = [p for p in validate_dataset(root) if p.level == "error"]
    empty = [p for p in probs if p.field == "image_id"]
    assert [(p.file, p.row) for p in empty] == [("items.csv", 8)]  # file line 8, record 7
    assert any(p.file == "features/f.ids.txt" and "i2" in p.message for p in probs), probs
    assert not any("has no entry" in p.message for p in probs), probs
