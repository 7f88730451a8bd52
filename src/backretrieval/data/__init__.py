"""Datasets: the prepared format and everything that produces it.

:mod:`.prepared` (the prepared-dataset format: loading + validation), :mod:`.sampling`
(seeded XLR / BkR samples), :mod:`.prepare` (the configured dataset → prepared folder),
:mod:`.download` (verified downloads: sha256, resume, retry, mirror), :mod:`.archive` (safe
extraction), :mod:`.byo` (validation of bring-your-own corpora), :mod:`.sources` (one module
per real dataset) and the embedded SYNTHETIC dataset generator. See docs/DATASETS.md.
"""

from .archive import safe_extract
from .byo import Problem, has_errors, validate_dataset
from .download import DownloadError, UnpinnedDownloadWarning, fetch, resolve_url
from .prepare import prepare_dataset, prepare_from_config

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
