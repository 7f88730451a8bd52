"""Datasets: the prepared format and everything that produces it.

:mod:`.prepared` (the prepared-dataset format: loading + validation), :mod:`.sampling`
(seeded XLR / BkR samples), :mod:`.prepare` (the configured dataset → prepared folder),
:mod:`.download` (verified downloads: sha256, resume, retry, mirror), :mod:`.archive` (safe
extraction), :mod:`.byo` (validation of bring-your-own corpora), :mod:`.sources` (one module
per real dataset) and the embedded SYNTHETIC dataset generator. See docs/DATASETS.md.
"""

# The names below load their module on first use (PEP 562), so importing a light submodule
# (e.g. ``backretrieval.data.prepare`` for the workflow's parse-time constants) does not import
# pandas through ``.byo``.
_LAZY = {
    "safe_extract": ".archive",
    "Problem": ".byo",
    "has_errors": ".byo",
    "validate_dataset": ".byo",
    "DownloadError": ".download",
    "UnpinnedDownloadWarning": ".download",
    "fetch": ".download",
    "resolve_url": ".download",
    "prepare_dataset": ".prepare",
    "prepare_from_config": ".prepare",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DownloadError",
    "Problem",
    "UnpinnedDownloadWarning",
    "fetch",
    "has_errors",
    "prepare_dataset",
    "prepare_from_config",
    "resolve_url",
    "safe_extract",
    "validate_dataset",
]
