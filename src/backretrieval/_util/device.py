"""The one place that turns a ``device`` setting into a torch device name."""

from __future__ import annotations

from ..errors import DeviceUnavailableError


def resolve_device(device: str | None = "auto", what: str = "device") -> str:
    """``None``/``"auto"`` → ``"cuda"`` when torch sees a CUDA device, else ``"cpu"``; any other
    value is returned as given. A CUDA device (``"cuda"``, ``"cuda:1"``) requested where there
    is none raises :class:`~backretrieval.errors.DeviceUnavailableError` naming ``what`` (the
    setting), instead of a late error from torch. torch is imported only when needed."""
    if device in (None, "auto"):
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    device = str(device)
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise DeviceUnavailableError(f"{what}: device {device!r} requested but no CUDA device is available")
    return device
