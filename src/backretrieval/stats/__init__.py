"""Significance tests and bootstrap confidence intervals for the Backretrieval results.

The paper (Fain, Twomey, Bollegala, SIGIR 2021) calls its differences "statistically
significant" without naming a test. This module names the tests and computes them. Library
first: scipy.stats and statsmodels are used wherever they implement the test; only the two
tests for dependent correlations sharing one variable (Steiger 1980 Z, Williams 1959 t) and
the vectorised pair-bootstrap of a correlation are written here.

Every test returns a :class:`TestResult` carrying the test name, statistic, two-sided p-value,
effect size (with its name) where one is defined, and ``n``. Bootstrap functions return
:class:`BootstrapCI` / :class:`BootstrapDiff`. All randomness comes from
``np.random.default_rng(seed)``: the same inputs and seed give bit-identical results.

Modules: :mod:`.tests` (hypothesis tests), :mod:`.bootstrap`, :mod:`.items` (the item as
the unit), :mod:`.correlation`
(:func:`correlate`: metric vs XLR across encoders, Table 1), :mod:`.format`; :mod:`._common`
holds the result types and input checks. The crossed encoder × item bootstrap of a metric's
correlation with XLR across encoders: :mod:`.weighted` (correlations and orders with
multiplicities, weights keyed by a unit's name), :mod:`.crossed` (the bootstrap, pooling over
cells), :mod:`.questions` (encoders fixed / random, BCa), :mod:`.contributions` (CORR's
per-query contributions), :mod:`.encoder_sets` (the encoders by role, sets and families) and
:mod:`.table1` (Table 1's test of BkR − CORR).

The names below are imported on first use (PEP 562): :mod:`.encoder_sets` is read when the
workflow parses, which must not load SciPy.

Which test answers which question:

* BkR-vs-XLR correlation against CORR-vs-XLR correlation, paired over seeds:
  :func:`paired_tests` (Wilcoxon signed-rank + paired t).
* The same comparison within one seed, where both correlations are computed over the same
  encoders and share the variable XLR: :func:`steiger_z`, :func:`williams_t`.
* Several comparisons at once: :func:`adjust_pvalues` (Bonferroni / Holm).
* Two models on one retrieval metric, paired per query, with the distinct item as the unit
  (queries of overlapping samples: an item drawn by several seeds is one unit):
  :func:`item_paired_test`; a pooled mean's interval: :func:`item_bootstrap_ci` (:mod:`.items`).
  For independent queries only: :func:`mcnemar_exact`, :func:`paired_bootstrap_diff`.
* Uncertainty of a mean / Recall@k / a correlation over ~10 encoders: :func:`bootstrap_ci`,
  :func:`bootstrap_corr_ci`.
* Human study: :func:`mann_whitney` (ratings), :func:`fisher_exact_counts` (yes/no counts).
* Do two metrics rank the same models alike (Bakarov et al. 2018 "benchmark disagreement"):
  :func:`rank_agreement`.
"""

from __future__ import annotations

import importlib
from typing import Any

#: where each public name is defined
_HOME = {
    "TestResult": "_common",
    "BootstrapCI": "_common",
    "BootstrapDiff": "_common",
    "bootstrap_ci": "bootstrap",
    "bootstrap_corr_ci": "bootstrap",
    "paired_bootstrap_diff": "bootstrap",
    "correlate": "correlation",
    "rank_agreement": "correlation",
    "format_p": "format",
    "significance_marker": "format",
    "ItemInterval": "items",
    "ItemPairedTest": "items",
    "item_bootstrap_ci": "items",
    "item_paired_test": "items",
    "item_totals": "items",
    "sign_flip_pvalue": "items",
    "adjust_pvalues": "tests",
    "fisher_exact_counts": "tests",
    "mann_whitney": "tests",
    "mcnemar_exact": "tests",
    "paired_tests": "tests",
    "steiger_z": "tests",
    "williams_t": "tests",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'backretrieval.stats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
