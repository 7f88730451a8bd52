"""The one place that turns a ``device`` setting into a torch device name, and that sets the
thread count of a model job."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

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


#: torch/BLAS threads of a model job when the config sets no ``model_threads``.
DEFAULT_MODEL_THREADS = 1


def limit_threads(n: int) -> None:
    """Use exactly ``n`` threads for torch's intra-op pool and the BLAS libraries numpy loaded.

    A model job's numbers may depend on its thread count (the order of float reductions), so
    the steps set it from the config (``model_threads``), never from the cores a scheduler
    gave the job: ``--cores 1`` and ``--cores 8`` then give identical bytes."""
    n = int(n)
    if n < 1:
        raise ValueError(f"threads: expected a positive integer, got {n}")
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)
    try:
        import torch
    except ImportError:  # model-free encoders only
        return
    torch.set_num_threads(n)


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run torch CPU ops with ``n`` intra-op threads (restored after): some CPU kernels split
    a reduction across threads, so the thread count would otherwise change the bits."""
    import torch

    old = torch.get_num_threads()
    if n != old:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n != old:
            torch.set_num_threads(old)
