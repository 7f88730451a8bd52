"""dataset.json's one schema (pipeline and validate-dataset alike) and a prepared copy that
holds only what the dataset's tables reference (nothing from outside its root)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from backretrieval.cli import main
from backretrieval.data.byo import has_errors, validate_dataset
from backretrieval.data.prepare import copy_prepared, prepare_dataset
from backretrieval.data.prepared import read_meta
from backretrieval.errors import InputError

ITEMS = "item_id,lang,image_id,title,body\nr1,en,img1,Pancakes,Flour\nr2,de,img2,Suppe,Karotten\n"


def _dataset(root: Path, **meta) -> Path:
    (root / "images").mkdir(parents=True)
    for i in (1, 2):
        Image.new("RGB", (6, 6), (i * 60, 10, 10)).save(root / "images" / f"img{i}.png")
    m = {"name": "recipes", "languages": ["en", "de"], "parallel": False, **meta}
    (root / "dataset.json").write_text(json.dumps(m))
    (root / "items.csv").write_text(ITEMS)
    (root / "images.csv").write_text("image_id,path\nimg1,images/img1.png\nimg2,images/img2.png\n")
    return root


def _prepare(src: Path, out: Path) -> None:
    cfg = {"dataset": {"name": "recipes", "source": "prepared", "options": {"path": str(src)}}, "languages": ["en"]}
    prepare_dataset(cfg, out)


def _validate_errors(root: Path) -> list[str]:
    return [str(p) for p in validate_dataset(root) if p.level == "error"]


# -- dataset.json: one strict schema ---------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [("parallel", "false"), ("parallel", "yes"), ("synthetic", "no"), ("parallel", 0), ("languages", "en,de")],
)
def test_wrong_type_in_dataset_json_is_an_error_naming_the_field(tmp_path, field, value, capsys):
    root = _dataset(tmp_path / "ds", **{field: value})
    with pytest.raises(InputError, match=rf"dataset\.json: field '{field}': must be an? (boolean|array)"):
        read_meta(root)  # the pipeline's reader
    errs = _validate_errors(root)
    assert len(errs) == 1 and f"[{field}]" in errs[0], errs  # validate-dataset: the same error
    assert main(["validate-dataset", str(root)]) == 1
    assert f"[{field}]" in capsys.readouterr().out
    with pytest.raises(InputError, match=rf"field '{field}'"):
        _prepare(root, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_boolean_fields_are_read_as_given(tmp_path):
    assert read_meta(_dataset(tmp_path / "a", parallel=False)).parallel is False
    assert read_meta(_dataset(tmp_path / "b", parallel=True)).parallel is True
    assert read_meta(_dataset(tmp_path / "c")).synthetic is False


def test_missing_and_bad_language_codes(tmp_path):
    root = _dataset(tmp_path / "ds")
    (root / "dataset.json").write_text(json.dumps({"name": "x", "languages": ["en", "English"]}))
    with pytest.raises(InputError, match=r"field 'languages\.1'"):
        read_meta(root)
    (root / "dataset.json").write_text(json.dumps({"languages": ["en"]}))
    with pytest.raises(InputError, match=r"field 'name': required field missing"):
        read_meta(root)
    assert any("[name]" in e for e in _validate_errors(root))


# -- the copy holds only what the tables reference ------------------------------------------


def test_copy_holds_only_referenced_files(tmp_path):
    src = _dataset(tmp_path / "ds")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.txt").write_text("private")
    (tmp_path / "secret.txt").write_text("private")
    os.symlink(tmp_path / "secret.txt", src / "link-to-file.txt")  # unreferenced outside file
    os.symlink(tmp_path / "secret", src / "images" / "outside-dir")  # unreferenced outside folder
    (src / "notes.txt").write_text("not part of the dataset")
    assert not has_errors(validate_dataset(src))  # unreferenced links are not errors ...
    warned = {p.file for p in validate_dataset(src) if p.level == "warning"}
    assert {"link-to-file.txt", "images/outside-dir"} <= warned  # ... but they are reported
    out = tmp_path / "out"
    _prepare(src, out)
    copied = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert copied == ["dataset.json", "images.csv", "images/img1.png", "images/img2.png", "items.csv"]
    assert not any("private" in p.read_text(errors="replace") for p in out.rglob("*.txt"))


def test_referenced_link_outside_root_is_refused_by_both(tmp_path):
    src = _dataset(tmp_path / "ds")
    Image.new("RGB", (6, 6)).save(tmp_path / "outside.png")
    (src / "images" / "img2.png").unlink()
    os.symlink(tmp_path / "outside.png", src / "images" / "img2.png")
    assert any("resolves outside the dataset root" in e for e in _validate_errors(src))
    with pytest.raises(InputError, match="resolves outside the dataset root"):
        _prepare(src, tmp_path / "out")
    with pytest.raises(InputError, match="resolves outside the dataset root"):
        copy_prepared(src, tmp_path / "out")  # the copy itself refuses it too
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["dataset.json", "items.csv", "images.csv"])
def test_tables_linked_from_outside_are_refused(tmp_path, name):
    src = _dataset(tmp_path / "ds")
    (tmp_path / name).write_bytes((src / name).read_bytes())
    (src / name).unlink()
    os.symlink(tmp_path / name, src / name)
    assert any("outside the dataset root" in e for e in _validate_errors(src))
    with pytest.raises(InputError, match="outside the dataset root"):
        copy_prepared(src, tmp_path / "out")


def test_features_folder_linked_from_outside_is_refused(tmp_path):
    import numpy as np

    src = _dataset(tmp_path / "ds")
    (tmp_path / "feats").mkdir()
    np.save(tmp_path / "feats" / "bb.npy", np.ones((2, 3), np.float32))
    (tmp_path / "feats" / "bb.ids.txt").write_text("img1\nimg2\n")
    os.symlink(tmp_path / "feats", src / "features")
    assert any("outside the dataset root" in e for e in _validate_errors(src))
    with pytest.raises(InputError, match="outside the dataset root"):
        _prepare(src, tmp_path / "out")


def test_symlink_loop_is_a_one_line_error(tmp_path, capsys):
    src = _dataset(tmp_path / "ds")
    os.symlink(src / "images" / "b.png", src / "images" / "a.png")
    os.symlink(src / "images" / "a.png", src / "images" / "b.png")
    (src / "images.csv").write_text("image_id,path\nimg1,images/a.png\nimg2,images/img2.png\n")
    assert any("symlink loop" in e for e in _validate_errors(src))
    with pytest.raises(InputError, match="symlink loop"):
        _prepare(src, tmp_path / "out")
    assert main(["validate-dataset", str(src)]) == 1
    assert "symlink loop" in capsys.readouterr().out


def test_unreferenced_loop_and_parent_link_are_not_followed(tmp_path):
    src = _dataset(tmp_path / "ds")
    os.symlink("..", src / "images" / "up")  # images/up -> .. (the root again)
    os.symlink(src / "loop2", src / "loop1")
    os.symlink(src / "loop1", src / "loop2")
    assert not has_errors(validate_dataset(src))
    out = tmp_path / "out"
    _prepare(src, out)
    assert not (out / "images" / "up").exists() and not (out / "loop1").exists()
    assert sorted(p.name for p in (out / "images").iterdir()) == ["img1.png", "img2.png"]


def test_image_path_through_parent_link_stays_inside(tmp_path):
    """images/up -> .. : a path through it that stays inside the root is copied as a file; one
    that climbs out of the root through it is refused by both."""
    src = _dataset(tmp_path / "ds")
    os.symlink("..", src / "images" / "up")
    (src / "images.csv").write_text("image_id,path\nimg1,images/up/images/img1.png\nimg2,images/img2.png\n")
    out = tmp_path / "out"
    _prepare(src, out)
    f = out / "images" / "up" / "images" / "img1.png"
    assert f.is_file() and not f.is_symlink() and not (out / "images" / "up").is_symlink()
    Image.new("RGB", (6, 6)).save(tmp_path / "x.png")
    (src / "images.csv").write_text("image_id,path\nimg1,images/up/../x.png\nimg2,images/img2.png\n")
    assert any("outside the dataset root" in e for e in _validate_errors(src))
    with pytest.raises(InputError, match="outside the dataset root"):
        _prepare(src, tmp_path / "out2")


# -- broken images are found before any model runs -----------------------------------------


def _break_images(root: Path) -> list[Path]:
    (root / "images" / "img1.png").write_bytes(b"")  # 0 bytes
    (root / "images" / "img2.png").write_text("this is text, not an image")
    return [root / "images" / "img1.png", root / "images" / "img2.png"]


def test_broken_images_are_named_by_the_users_path_at_prepare(tmp_path):
    src = _dataset(tmp_path / "ds")
    bad = _break_images(src)
    with pytest.raises(InputError) as info:
        _prepare(src, tmp_path / "out")
    msg = str(info.value)
    assert "\n" not in msg and all(str(p) in msg for p in bad), msg
    assert not (tmp_path / "out").exists()


def test_check_dataset_names_every_broken_image(tmp_path):
    from backretrieval.steps.prepare import check_fits

    root = _dataset(tmp_path / "ds")
    (root / "items.csv").write_text(ITEMS + "r1,de,img1,Pfannkuchen,Mehl\nr2,en,img2,Soup,Carrots\n")
    bad = _break_images(root)
    req = {
        "languages": ["en", "de"],
        "directions": ["en-de"],
        "sample_size": 1,
        "image_backbone": "effnet",
        "backbone": {"type": "efficientnet-lite"},
    }
    with pytest.raises(InputError, match="2 image file") as info:
        check_fits(req, root)
    assert all(str(p) in str(info.value) for p in bad)
