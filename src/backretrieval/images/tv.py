"""torchvision ResNet-50 and ResNeXt-101 32x8d (the paper's image backbones)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._util.hashing import file_signature
from ..errors import ConfigError, ModelUnavailableError
from .base import _TorchBackbone


class TorchvisionBackbone(_TorchBackbone):
    """torchvision ResNet-50 (``arch: resnet50``, average pool, 2048-d) or ResNeXt-101 32x8d
    (``arch: resnext101_32x8d``, last conv block ``layer4`` average-pooled, 2048-d). Needs
    torchvision and its ImageNet weights (downloaded to the torch hub cache by torchvision)
    or ``weights:`` a local state-dict file. Images are preprocessed by the ``transforms()`` of
    the torchvision weights ``weights_name`` (default ``IMAGENET1K_V1``), also when the state
    dict comes from a local file: set ``weights_name`` to the weights that file holds."""

    type_name = "torchvision"
    spec_keys = (*_TorchBackbone.spec_keys, "arch", "weights_name", "weights")
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
        return {
            "type": self.type_name,
            "arch": self.arch,
            "weights_name": self.weights_name,
            "weights": file_signature(self.weights) if self.weights else "torchvision-default",
            "torchvision": tv,
            "preprocess": "torchvision-weights-transforms",
        }

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
