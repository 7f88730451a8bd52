"""The two questions a BkR − CORR difference answers (encoders fixed, encoders random), BCa's
bias correction and acceleration, and the test dual to the encoders-random interval. The
replicates and jackknife values come from the item-only crossed bootstrap (:mod:`.crossed`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.stats as st

from ..errors import InputError

#
# A pooled (or per-configuration) BkR − CORR answers one of two questions, named in every text:
# * **encoders fixed** ("for these encoders"): only the items are a sample. Item-only Poisson
#   bootstrap (weights keyed by image id, so joint across cells) and the delete-a-group item
#   jackknife (G groups); the interval is the estimate ± t·SE with SE the larger of the
#   bootstrap's and the jackknife's, t the Student quantile on G − 1 degrees of freedom (a
#   variance estimated from G replicate groups). Under binary hits with noise shared within an
#   encoder family the bootstrap SE alone was too small (RMS error / RMS SE up to 1.23; the
#   interval covered 0.90–0.92 for Spearman in three simulated layouts), the jackknife's is not
#   (benchmarks/README.md). Nothing is dropped. Reported beside it: BCa's bias correction z0
#   (from the replicates) and acceleration a (from the jackknife). BCa's own interval is not
#   used: the bootstrap's bias of a correlation of noisy means overstates the estimator's.
# * **encoders random** ("for encoders like these"): the encoders are a sample too. The item
#   variance above plus a leave-one-family-out jackknife variance over the encoders (a family:
#   encoders built from the same base vectors, e.g. the fastText variants, which are not
#   independent draws; at least 3 families); Student t on the Welch–Satterthwaite degrees of
#   freedom of that sum (G − 1 for the item part, families − 1 for the encoder part; in
#   practice close to families − 1, as the encoder part dominates). The normal quantile covered
#   0.80–0.92 in the simulated layouts with 4 families. The sum counts the item × encoder noise
#   twice (the jackknife at the full items contains it too), so it errs wide.
# Both are checked for coverage on SIMULATED worlds in the verdict's own layouts
# (benchmarks/bench_inference_coverage.py).

#: item groups of the delete-a-group jackknife behind BCa's acceleration
JACKKNIFE_GROUPS = 20
#: fewest encoders a cell set needs for an inferential (pooled) result; below it the results
#: fewest encoder families the leave-one-family-out jackknife ("encoders random") needs
MIN_JACKKNIFE_FAMILIES = 3
#: the two questions, in the order the texts give them
INTERVAL_QUESTIONS = ("fixed", "random")
QUESTION_LABELS = {
    "fixed": "encoders fixed (for these encoders)",
    "random": "encoders random (for encoders like these)",
}


def bca_interval(
    estimate: float, replicates: np.ndarray, jackknife: np.ndarray, alpha: float = 0.05
) -> dict[str, float]:
    """BCa interval (Efron 1987) from bootstrap replicates and jackknife values of one statistic:
    z0 = Φ⁻¹(share of replicates below the estimate, ties half), acceleration a =
    Σd³ / (6 (Σd²)^{3/2}) with d the jackknife values' deviations from their mean. NaN replicates
    are an error (nothing is dropped). A constant bootstrap distribution gives the estimate."""
    rep = np.asarray(replicates, dtype=np.float64)
    jk = np.asarray(jackknife, dtype=np.float64)
    if rep.size < 2 or not np.isfinite(rep).all():
        raise InputError(f"bca_interval: {int((~np.isfinite(rep)).sum())} undefined replicates of {rep.size}")
    B = rep.size
    share = (np.sum(rep < estimate) + 0.5 * np.sum(rep == estimate)) / B
    share = min(max(share, 0.5 / B), 1 - 0.5 / B)
    z0 = float(st.norm.ppf(share))
    a = 0.0
    if jk.size >= 2 and np.isfinite(jk).all():
        d = jk.mean() - jk
        ss = float(np.sum(d * d))
        if ss > 0:
            a = float(np.sum(d**3) / (6.0 * ss**1.5))
    if np.ptp(rep) == 0:
        return {"low": float(rep[0]), "high": float(rep[0]), "z0": z0, "a": a}
    qs = []
    for z in (st.norm.ppf(alpha / 2), st.norm.ppf(1 - alpha / 2)):
        qs.append(float(st.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))))
    low, high = (float(v) for v in np.quantile(rep, qs))
    return {"low": low, "high": high, "z0": z0, "a": a}


def two_questions(
    points: Sequence[float],
    replicates: Sequence[np.ndarray],
    jackknife: Sequence[np.ndarray],
    family_loo: Mapping[str, Sequence[float]],
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The mean over cells of BkR − CORR and its interval for both questions (section comment
    above). ``points`` (C,), ``replicates`` C arrays (B,) of the item-only bootstrap,
    ``jackknife`` C arrays (G,) of the delete-a-group item jackknife, ``family_loo[f]`` (C,)
    the cells' estimates without encoder family f. The cells must share their encoders and
    their replicates must be one joint draw (weights keyed by item)."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 1 or pts.size < 1 or not (len(replicates) == len(jackknife) == pts.size):
        raise InputError(
            f"two_questions: need one replicate and one jackknife array per cell, got {pts.size} cells, "
            f"{len(replicates)} and {len(jackknife)}"
        )
    if not np.isfinite(pts).all():
        raise InputError("two_questions: a cell's point estimate is not finite")
    est = float(pts.mean())
    T = np.stack([np.asarray(r, dtype=np.float64) for r in replicates]).mean(axis=0)
    J = np.stack([np.asarray(j, dtype=np.float64) for j in jackknife]).mean(axis=0)
    df_items = int(J.size - 1)
    if df_items < 1:
        raise InputError(f"two_questions: the fixed question's interval needs >= 2 jackknife groups, got {J.size}")
    se_boot = float(np.std(T, ddof=1))
    se_jack = float(np.sqrt((J.size - 1) / J.size * np.sum((J - J.mean()) ** 2)))
    se_items = max(se_boot, se_jack)
    var_items = se_items**2
    tq = float(st.t.ppf(1 - alpha / 2, df_items))
    bca = bca_interval(est, T, J, alpha)
    fixed = {
        "estimate": est,
        "low": est - tq * se_items,
        "high": est + tq * se_items,
        "se": se_items,
        "se_bootstrap": se_boot,
        "se_jackknife": se_jack,
        "df": df_items,
        "z0": bca["z0"],
        "a": bca["a"],
        "bias": float(T.mean() - est),
        "B": int(T.size),
        "G": int(J.size),
        "method": "max(item bootstrap SE, item jackknife SE), Student t on jackknife groups - 1 df",
    }
    fam = {f: float(np.mean(v)) for f, v in sorted(family_loo.items())}
    F = len(fam)
    random = {
        "estimate": est,
        "n_families": F,
        "se_items": se_items,
        "method": "item SE (as fixed) + leave-one-family-out jackknife, Student t on Welch-Satterthwaite df",
    }
    loo = np.array(list(fam.values()))
    if F >= MIN_JACKKNIFE_FAMILIES and np.isfinite(loo).all():
        var_enc = float((F - 1) / F * np.sum((loo - loo.mean()) ** 2))
        se = float(np.sqrt(var_items + var_enc))
        df = satterthwaite_df(var_items, df_items, var_enc, F - 1)
        tr = float(st.t.ppf(1 - alpha / 2, df))
        random.update(se=se, se_encoders=float(np.sqrt(var_enc)), df=df, low=est - tr * se, high=est + tr * se)
    else:
        random.update(se=float("nan"), se_encoders=float("nan"), df=float("nan"), low=float("nan"), high=float("nan"))
    return {"fixed": fixed, "random": random, "k": int(pts.size)}


def satterthwaite_df(v1: float, df1: float, v2: float, df2: float) -> float:
    """Welch–Satterthwaite degrees of freedom of the sum of two independent variance estimates
    ``v1`` (on ``df1``) and ``v2`` (on ``df2``): (v1 + v2)² / (v1²/df1 + v2²/df2); between
    min(df1, df2) and df1 + df2. Both zero: ``df1 + df2``."""
    den = v1 * v1 / df1 + v2 * v2 / df2
    if den <= 0:
        return float(df1 + df2)
    return float((v1 + v2) ** 2 / den)


def random_question_test(random: Mapping[str, Any]) -> tuple[float, float]:
    """(t, p): the two-sided test of BkR − CORR = 0 dual to the "encoders random" interval of
    :func:`two_questions` (its ``random`` result): t = estimate / se against the interval's own
    Student t reference (its ``df``), so p < α exactly where the 1 − α interval excludes 0. NaN
    where the interval is undefined or se = 0."""
    se = float(random["se"])
    df = float(random.get("df", float("nan")))
    if not np.isfinite(se) or se <= 0 or not np.isfinite(df) or df <= 0:
        return float("nan"), float("nan")
    t = float(random["estimate"]) / se
    return t, float(2 * st.t.sf(abs(t), df))
