"""Table 1's test of BkR − CORR, with the items and the encoder families as the units: the
"encoders random" question (:func:`.questions.two_questions`) on one cell of the item-only
crossed bootstrap (:func:`.crossed.crossed_bootstrap`), its dual t test, Holm across directions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .crossed import crossed_bootstrap
from .questions import JACKKNIFE_GROUPS, MIN_JACKKNIFE_FAMILIES, random_question_test, two_questions
from .weighted import MIN_ENCODERS, STATS

#: the unit label and test name of Table 1's test
ITEMS_UNIT = "items and encoder families"
TABLE1_TEST = "item bootstrap + leave-one-family-out jackknife (encoders random), t test"


def _table1_undefined(
    est: float,
    replicates: np.ndarray,
    family_loo: Mapping[str, Sequence[float]],
    members: Sequence[str],
    families: Mapping[str, str],
) -> str:
    """Why Table 1's test of one (set, stat) is undefined ('' where it is defined)."""
    if not np.isfinite(est):
        return "BkR − CORR is undefined (a metric is constant across the encoders)"
    n_fam = len(family_loo)
    if n_fam < MIN_JACKKNIFE_FAMILIES:
        return (
            f"{len(members)} encoders in {n_fam} encoder {'family' if n_fam == 1 else 'families'}; the "
            f"leave-one-family-out jackknife needs >= {MIN_JACKKNIFE_FAMILIES} families"
        )
    for fam, vals in family_loo.items():
        if not np.isfinite(vals).all():
            left = sum(families[e] != fam for e in members)
            if left < MIN_ENCODERS:
                return (
                    f"without the family {str(fam)!r} {left} encoders are left; the leave-one-family-out "
                    f"jackknife needs >= {MIN_ENCODERS} encoders left without each family"
                )
            return f"without the family {str(fam)!r} BkR − CORR is undefined (a metric is constant across the encoders left)"
    bad = int(np.sum(~np.isfinite(replicates)))
    if bad:
        return f"{bad} of {replicates.size} item-bootstrap replicates are undefined"
    return ""


def table1_tests(
    outcomes: Mapping[str, tuple[Sequence, Sequence[str], Sequence[str]]],
    B: int,
    seed: int,
    alpha: float = 0.05,
    encoder_sets: Mapping[str, Sequence[str]] | None = None,
    families: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Table 1's test of BkR − CORR, one row per (direction, encoder set, stat): the "encoders
    random" question of :func:`two_questions` (the findings' own function) on one cell, and its
    dual test (:func:`random_question_test`).

    ``outcomes[direction] = (seed outcomes, item keys, encoders)`` as
    :func:`backretrieval.evaluation.outcomes.inference_outcomes` returns them (per-query
    XLR and BkR hits and CORR contributions of every seed). ``encoder_sets``: name → encoders
    (default ``{"all": every encoder}``; e.g. ``all`` and ``core``, each >= 3 encoders);
    ``families``: encoder → family (default: every encoder its own family; the report step uses
    :func:`backretrieval.stats.encoder_sets.encoder_families`, the findings' function).

    The statistic is Table 1's: per seed, BkR's minus CORR's correlation with XLR across the
    set's encoders, averaged over the seeds. SE² = the variance of the item-only bootstrap
    (:func:`crossed_bootstrap` with ``resample_encoders=False``: Poisson(1) weights keyed by
    image id, shared by every seed) + the leave-one-family-out jackknife variance
    (F − 1)/F · Σ_f (θ_(−f) − θ̄_(·))² over the set's F encoder families; the interval and
    the reference distribution are two_questions' (estimate ± t_(1−α/2, df)·SE, df the
    Welch–Satterthwaite degrees of freedom of the two parts), t = estimate / SE, two-sided p.
    Columns: direction, set, stat, test, unit, estimate, se, se_items, se_encoders, df, ci_low,
    ci_high, t, p, n_encoders, n_families, n_items, n_seeds, B, why (the
    reason the test is undefined, else empty), p_holm (Holm across the directions, per set and
    stat). Undefined
    (NaN, no mark, ``why`` says which): fewer than :data:`MIN_JACKKNIFE_FAMILIES` families,
    fewer than 3 encoders left without some family, an undefined estimate or replicate. The
    marks are :func:`backretrieval.reporting.significance.table1_marks` of p_holm (not stored:
    verify compares p-values as decisions).
    """
    from .tests import adjust_pvalues

    rows = []
    nan = float("nan")
    for direction, (seeds, keys, encoders) in outcomes.items():
        encoders = list(encoders)
        sets = {"all": encoders} if encoder_sets is None else {n: list(m) for n, m in encoder_sets.items()}
        fam_of = {e: e for e in encoders} if families is None else dict(families)
        res = crossed_bootstrap(
            seeds,
            encoders,
            sets,
            list(keys),
            B=B,
            seed=seed,
            leave_one_out=None,
            resample_encoders=False,
            jackknife_groups=JACKKNIFE_GROUPS,
            families=fam_of,
        )
        for set_name, members in sets.items():
            n_fam = len({fam_of[e] for e in members})
            for stat in STATS:
                key = (set_name, "rho_diff", stat)
                est, rep = float(res.point[key]), np.asarray(res.replicates[key], dtype=np.float64)
                loo = {f: [v] for (sn, f, q, sta), v in res.family_loo.items() if (sn, q, sta) == key}
                why = _table1_undefined(est, rep, loo, members, fam_of)
                row: dict[str, Any] = dict(
                    direction=direction,
                    set=set_name,
                    stat=stat,
                    test=TABLE1_TEST,
                    unit=ITEMS_UNIT,
                    estimate=est,
                    se=nan,
                    se_items=nan,
                    se_encoders=nan,
                    df=nan,
                    ci_low=nan,
                    ci_high=nan,
                    t=nan,
                    p=nan,
                    n_encoders=len(members),
                    n_families=n_fam,
                    n_items=len(keys),
                    n_seeds=len(seeds),
                    B=int(B),
                    why=why,
                )
                if not why:
                    rn = two_questions([est], [rep], [res.jackknife[key]], loo, alpha)["random"]
                    row.update(
                        se=rn["se"],
                        se_items=rn["se_items"],
                        se_encoders=rn["se_encoders"],
                        df=rn["df"],
                        ci_low=rn["low"],
                        ci_high=rn["high"],
                    )
                    row["t"], row["p"] = random_question_test(rn)
                    if not np.isfinite(row["p"]):
                        row["why"] = "SE = 0 (BkR − CORR is the same in every replicate and without every family)"
                rows.append(row)
    out = pd.DataFrame(rows)
    if len(out):
        out["p_holm"] = np.nan
        for _, g in out.groupby(["set", "stat"]):
            p = g["p"].to_numpy(float)
            ok = np.isfinite(p)
            if ok.any():
                adj = np.full(len(p), np.nan)
                adj[ok] = adjust_pvalues(p[ok], method="holm")
                out.loc[g.index, "p_holm"] = adj
    return out
