"""The image-backbone protocol and the shared torch batching loop."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._util.device import resolve_device, torch_threads
from .._util.hashing import fingerprint_from
from ..errors import ConfigError
from .preprocess import load_rgb, preprocess


@runtime_checkable
class ImageBackbone(Protocol):
    id: str
    dim: int

    def fingerprint(self) -> str: ...

    def encode_images(self, paths: list[Path]) -> np.ndarray: ...


class _TorchBackbone:
    """Shared batching loop; subclasses set ``res``, ``normalize`` and implement ``_features``."""

    type_name = "torch"
    #: the spec keys this class reads besides ``type`` (a config's other keys are refused)
    spec_keys: tuple[str, ...] = ("batch_size", "threads", "device")
    res = 224
    normalize = "imagenet"

    def __init__(self, bb_id: str, spec: dict) -> None:
        self.id = bb_id
        self.spec = dict(spec)
        #: images per forward pass; every pass has exactly this many rows (canonical batching:
        #: zero images complete a short batch), because a convolution may give an image other
        #: bits in a batch of another size (oneDNN picks its kernels by shape); 4 keeps the
        #: activations in the CPU cache (benchmarks/README.md, goal 5)
        self.batch_size = int(spec.get("batch_size", 4))
        if self.batch_size < 1:
            raise ConfigError(f"backbone '{bb_id}': batch_size must be a positive integer, got {self.batch_size}")
        threads = spec.get("threads", 1)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ConfigError(f"backbone '{bb_id}': threads must be a positive integer, got {threads!r}")
        #: torch intra-op threads of the forward pass (in the fingerprint: a model's float
        #: reductions may depend on the count); the workflow reserves that many cores
        self.threads = threads
        self.device_spec = spec.get("device", "auto")
        self._model: Any = None
        self._device: str | None = None

    def _load_model(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _features(self, model: Any, x: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "memory_format": "channels_last"}

    def _all_fp_parts(self) -> dict[str, Any]:
        return {**self._fp_parts(), "threads": self.threads, "batching": "canonical-v1", "batch_size": self.batch_size}

    def fingerprint(self) -> str:
        return fingerprint_from(self._all_fp_parts(), "img", ensure_ascii=True)

    def fingerprint_info(self) -> dict[str, Any]:
        return self._all_fp_parts()

    def _preprocess(self, im: Any) -> Any:
        """RGB PIL image -> float32 CHW array (or tensor) as the model expects it."""
        return preprocess(im, self.res, self.normalize)

    def model(self) -> Any:
        if self._model is None:
            import torch

            self._device = resolve_device(self.device_spec, f"backbone '{self.id}'")
            torch.backends.cudnn.benchmark = False
            # channels-last: the faster layout for depthwise/pointwise convolutions on CPU
            # (benchmarks/README.md); part of the fingerprint
            self._model = self._load_model().eval().to(self._device).to(memory_format=torch.channels_last)
        return self._model

    def encode_images(self, paths: Sequence[Path]) -> np.ndarray:
        import torch

        model = self.model()
        outs: list[np.ndarray] = []
        with torch.no_grad(), torch_threads(self.threads):
            for i in range(0, len(paths), self.batch_size):
                arrs = [torch.as_tensor(self._preprocess(load_rgb(p))) for p in paths[i : i + self.batch_size]]
                n = len(arrs)
                arrs += [torch.zeros_like(arrs[0])] * (self.batch_size - n)  # fillers: a full batch
                x = torch.stack(arrs).to(self._device).contiguous(memory_format=torch.channels_last)
                outs.append(self._features(model, x)[:n].float().cpu().numpy())
        if not outs:
            return np.zeros((0, self.dim), np.float32)
        return np.ascontiguousarray(np.concatenate(outs), dtype=np.float32)
