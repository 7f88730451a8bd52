"""Real datasets: verified downloads (sha256, resume, retry, mirror), safe extraction, and
preparation into the prepared-dataset format of :mod:`backretrieval.dataset`.

Modules: :mod:`.download`, :mod:`.archive`, :mod:`.multi30k`, :mod:`.stair` (STAIR + COCO),
:mod:`.ikea`, :mod:`.byo` (validation of bring-your-own corpora). See docs/DATASETS.md.
"""

from .archive import safe_extract
from .byo import Problem, has_errors, validate_dataset
from .download import DownloadError, UnpinnedDownloadWarning, fetch, resolve_url, sha256_file
from .from_config import prepare_from_config

__all__ = [
    "DownloadError",
    "Problem",
    "UnpinnedDownloadWarning",
    "fetch",
    "has_errors",
    "prepare_from_config",
    "resolve_url",
    "safe_extract",
    "sha256_file",
    "validate_dataset",
]
