"""The one place that turns a ``device`` setting into a torch device name, and that sets the
thread count of a model job."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType

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
    gave the job: ``--cores 1`` and ``--cores 8`` then give identical bytes.

    torch is not imported here (that takes seconds, and model-free encoders never need it):
    when it is not loaded yet, it gets ``n`` threads the moment it is (``_TorchThreadsOnImport``)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"threads: expected a positive integer, got {n}")
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
        return
    for hook in [h for h in sys.meta_path if isinstance(h, _TorchThreadsOnImport)]:
        sys.meta_path.remove(hook)  # the latest setting wins
    sys.meta_path.insert(0, _TorchThreadsOnImport(n))


class _TorchThreadsOnImport(importlib.abc.MetaPathFinder):
    """An import hook that calls ``torch.set_num_threads(n)`` right after torch is first
    imported, then removes itself; it finds torch with the other finders and changes nothing else."""

    def __init__(self, n: int) -> None:
        self.n = n

    def find_spec(self, name: str, path=None, target=None):  # type: ignore[no-untyped-def]
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None:  # not installed: the import fails as it would without the hook
            return spec
        exec_module = loader.exec_module

        def exec_then_set_threads(module: ModuleType) -> None:
            exec_module(module)
            module.set_num_threads(self.n)

        loader.exec_module = exec_then_set_threads  # type: ignore[method-assign]
        return spec


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
