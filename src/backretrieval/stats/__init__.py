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
holds the result types and input checks.

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

from ._common import BootstrapCI, BootstrapDiff, TestResult
from .bootstrap import bootstrap_ci, bootstrap_corr_ci, paired_bootstrap_diff
from .correlation import correlate, rank_agreement
from .format import format_p, significance_marker
from .items import ItemInterval, ItemPairedTest, item_bootstrap_ci, item_paired_test, item_totals, sign_flip_pvalue
from .tests import (
    adjust_pvalues,
    fisher_exact_counts,
    mann_whitney,
    mcnemar_exact,
    paired_tests,
    steiger_z,
    williams_t,
)

__all__ = [
    "TestResult",
    "BootstrapCI",
    "BootstrapDiff",
    "paired_tests",
    "steiger_z",
    "williams_t",
    "adjust_pvalues",
    "mcnemar_exact",
    "item_paired_test",
    "item_bootstrap_ci",
    "item_totals",
    "sign_flip_pvalue",
    "ItemPairedTest",
    "ItemInterval",
    "paired_bootstrap_diff",
    "bootstrap_ci",
    "bootstrap_corr_ci",
    "mann_whitney",
    "fisher_exact_counts",
    "correlate",
    "rank_agreement",
    "format_p",
    "significance_marker",
]
