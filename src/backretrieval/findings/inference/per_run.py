"""Analysis ``inference`` on one run: the per-query outcomes of its artifacts, the item bootstrap
of every direction (:func:`backretrieval.stats.crossed.crossed_bootstrap`), the record's numbers and its answer."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...evaluation.outcomes import inference_outcomes
from ...evaluation.run_artifacts import RunArtifacts, RunInfo
from ...stats.crossed import crossed_bootstrap
from ...stats.encoder_sets import encoder_families, encoder_sets
from ...stats.questions import JACKKNIFE_GROUPS, two_questions
from ...stats.weighted import STATS
from ..answers import synthetic_note
from ..markdown import markdown_table
from ..result import Csv, Result
from .figures import figure_title, plot_intervals
from .replicates import REPLICATES_FILE, cell_key, replicate_table
from .verdict import MIN_POOL_ENCODERS

log = logging.getLogger("backretrieval")


#: the quantities whose replicates are kept for pooling across directions and configurations
POOLED_QUANTITIES = ("rho_diff", "rho_diff_avg")


def inference_result(art: RunArtifacts, s: Mapping[str, Any]) -> Result:
    """Every direction → inference.{csv,md,json}, inference_replicates.csv (the pooled
    quantities' item bootstrap replicates, item jackknife values and leave-one-family-out
    estimates, for the cross-configuration verdict) + figures/inference_ci.*"""
    B, boot_seed, n_seeds = s["bootstrap"], s["bootstrap_seed"], s["max_seeds"]
    random_encoders, english_only = s["random_encoders"], s["english_only"] or []
    family, family_name = s["family"] or [], s["family_name"]
    info = art.info()
    frames = []
    n_items_by_dir = {}
    reps: dict[str, np.ndarray] = {}
    jack: dict[str, np.ndarray] = {}
    fam_loo: dict[str, dict[str, float]] = {}
    points: dict[str, float] = {}
    sets: dict[str, list[str]] = {}
    families: dict[str, str] = {}
    n_used = 0
    pool: set[str] = set()
    for d in art.directions:
        pool.update(str(i) for i in art.image_of(d.split("-")[0]).values())
        seeds, keys, encoders = inference_outcomes(art, d, n_seeds, with_corr=True)
        n_used = len(seeds)
        sets = encoder_sets(encoders, random_encoders, family, english_only)
        families = encoder_families(encoders, family, family_name)
        res = crossed_bootstrap(
            seeds,
            encoders,
            sets,
            keys,
            B=B,
            seed=boot_seed,
            leave_one_out="all",
            resample_encoders=False,
            jackknife_groups=JACKKNIFE_GROUPS,
            families=families,
        )
        f = res.frame()
        f.insert(0, "direction", d)
        frames.append(f)
        n_items_by_dir[d] = len(keys)
        for (set_name, quantity, stat), r in sorted(res.replicates.items()):
            if quantity in POOLED_QUANTITIES:
                k = cell_key(d, set_name, quantity, stat)
                reps[k] = r
                jack[k] = res.jackknife[(set_name, quantity, stat)]
                points[k] = res.point[(set_name, quantity, stat)]
                fam_loo[k] = {
                    fam: v
                    for (sn, fam, q, st_), v in res.family_loo.items()
                    if (sn, q, st_) == (set_name, quantity, stat)
                }
        log.info("findings inference %s: %d seeds, %d items, B=%d", d, len(seeds), len(keys), B)
    frame = pd.concat(frames, ignore_index=True)
    settings = {
        "B": B,
        "bootstrap_seed": boot_seed,
        "n_seeds_used": n_used,
        "method": (
            "encoders fixed: item-only Poisson bootstrap (weights keyed by image id), estimate ± t·SE with SE the larger of the "
            f"bootstrap's and the item jackknife's (Student t on {JACKKNIFE_GROUPS - 1} df), z0 and "
            "acceleration reported; encoders random: plus a leave-one-family-out jackknife over the encoders, "
            "Student t on the Welch-Satterthwaite df"
        ),
        "item_key": "image_id",
        "jackknife_groups": JACKKNIFE_GROUPS,
        "min_pool_encoders": MIN_POOL_ENCODERS,
        "random_encoders": list(random_encoders),
        "english_only": list(english_only),
        "family": list(family),
        "family_name": family_name,
        "encoder_families": families,
        "encoder_sets": sets,
        "confidence": 0.95,
        "items_per_direction": n_items_by_dir,
        # the images the configuration samples, as a digest of their ids: configurations on the
        # same images share the verdict's bootstrap weights and count as one image pool
        "image_pool": hashlib.sha256("\n".join(sorted(pool)).encode()).hexdigest()[:16],
        "replicates_file": REPLICATES_FILE,
    }
    pooled: dict[str, dict[str, Any]] = {}
    for set_name in sets:
        for stat in STATS:
            ks = [cell_key(d, set_name, "rho_diff", stat) for d in info.directions]
            if all(k in reps for k in ks):
                loo = {fam: [fam_loo[k].get(fam, np.nan) for k in ks] for fam in sorted(fam_loo[ks[0]])}
                pooled.setdefault(set_name, {})[stat] = two_questions(
                    [points[k] for k in ks], [reps[k] for k in ks], [jack[k] for k in ks], loo
                )
    numbers = inference_numbers(frame, info.directions, pooled.get("all"))
    numbers["configuration"] = {
        set_name: {"n_encoders": len(sets[set_name]), "n_families": len(set(families[e] for e in sets[set_name])), **v}
        for set_name, v in pooled.items()
    }
    numbers["cell_points"] = points
    md = inference_markdown(frame, info, settings)
    title = figure_title(info)
    answer, verdict = inference_answer(numbers, info, settings)
    return Result(
        run=info,
        settings=settings,
        numbers=numbers,
        answer=answer,
        verdict=verdict,
        files={
            "inference.md": md,
            "inference.csv": frame,
            REPLICATES_FILE: Csv(replicate_table(reps, jack, fam_loo), float_format="%.6g"),
        },
        figures={"inference_ci": lambda p: plot_intervals(frame, p, title)},
    )


def _row(frame: pd.DataFrame, direction: str, set_name: str, quantity: str, stat: str) -> dict[str, Any]:
    g = frame[
        (frame["direction"] == direction)
        & (frame["set"] == set_name)
        & (frame["quantity"] == quantity)
        & (frame["stat"] == stat)
    ]
    if g.empty:
        return {}
    r = g.iloc[0]
    return {
        k: (float(r[k]) if isinstance(r[k], (float, np.floating)) else r[k])
        for k in (
            "estimate",
            "low",
            "high",
            "se",
            "low_random",
            "high_random",
            "se_random",
            "z0",
            "naive_low",
            "naive_high",
            "seed_sd",
            "n_valid",
        )
        if k in r.index
    }


def inference_numbers(
    frame: pd.DataFrame, directions: Sequence[str], pooled: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Key numbers: per direction and statistic (``all`` encoders) BkR's and CORR's correlation
    with XLR, their difference, order accuracies (with CIs); width ratios; ``pooled`` (the
    difference pooled over the directions within each joint replicate, per stat); sensitivity
    (sets, leave-one-out extremes)."""
    per_direction = []
    for d in directions:
        for stat in STATS:
            row: dict[str, Any] = {"direction": d, "stat": stat}
            for q in ("rho_bkr", "rho_corr", "rho_diff"):
                row[q] = _row(frame, d, "all", q, stat)
            per_direction.append(row)
    order = []
    for d in directions:
        order.append(
            {
                "direction": d,
                **{q: _row(frame, d, "all", q, "pairs") for q in ("order_acc_bkr", "order_acc_corr", "order_acc_diff")},
            }
        )
    widths = []
    for r in per_direction:
        for q in ("rho_bkr", "rho_corr"):
            x = r[q]
            if (
                x
                and np.isfinite(x.get("high", np.nan))
                and np.isfinite(x.get("naive_high", np.nan))
                and x["naive_high"] > x["naive_low"]
            ):
                widths.append((x["high"] - x["low"]) / (x["naive_high"] - x["naive_low"]))
    sets = {}
    for set_name in sorted(set(frame["set"])):
        if "-" in set_name:
            continue
        sets[set_name] = {
            stat: {
                "diff_mean": float(
                    np.nanmean([_row(frame, d, set_name, "rho_diff", stat).get("estimate", np.nan) for d in directions])
                ),
                "bkr_mean": float(
                    np.nanmean([_row(frame, d, set_name, "rho_bkr", stat).get("estimate", np.nan) for d in directions])
                ),
                "corr_mean": float(
                    np.nanmean([_row(frame, d, set_name, "rho_corr", stat).get("estimate", np.nan) for d in directions])
                ),
                "diff_ci_excludes_0": int(
                    sum(1 for d in directions if _excl0(_row(frame, d, set_name, "rho_diff", stat)))
                ),
                "n_directions": len(directions),
            }
            for stat in STATS
        }
    loo = {}
    for stat in STATS:
        shifts = []
        for d in directions:
            base = _row(frame, d, "all", "rho_bkr", stat).get("estimate", np.nan)
            base_diff = _row(frame, d, "all", "rho_diff", stat).get("estimate", np.nan)
            for set_name in sorted(s for s in set(frame["set"]) if s.startswith("all-")):
                e = set_name[len("all-") :]
                shifts.append(
                    {
                        "direction": d,
                        "left_out": e,
                        "bkr_shift": _row(frame, d, set_name, "rho_bkr", stat).get("estimate", np.nan) - base,
                        "diff_shift": _row(frame, d, set_name, "rho_diff", stat).get("estimate", np.nan) - base_diff,
                        "diff": _row(frame, d, set_name, "rho_diff", stat).get("estimate", np.nan),
                    }
                )
        if shifts:
            worst = max(shifts, key=lambda x: abs(x["diff_shift"]) if np.isfinite(x["diff_shift"]) else -1)
            flips = sum(
                1
                for x in shifts
                if np.isfinite(x["diff"])
                and np.sign(x["diff"])
                != np.sign(_row(frame, x["direction"], "all", "rho_diff", stat).get("estimate", np.nan))
            )
            loo[stat] = {
                "max_abs_bkr_shift": float(np.nanmax([abs(x["bkr_shift"]) for x in shifts])),
                "max_abs_diff_shift": float(abs(worst["diff_shift"])),
                "worst_left_out": worst["left_out"],
                "worst_direction": worst["direction"],
                "sign_flips": int(flips),
                "n": len(shifts),
            }
    return {
        "per_direction": per_direction,
        "order_accuracy": order,
        "pooled_diff": dict(pooled or {}),
        "ci_width_ratio_median": float(np.median(widths)) if widths else None,
        "sets": sets,
        "leave_one_out": loo,
    }


def _excl0(r: dict[str, Any]) -> bool:
    return bool(r) and np.isfinite(r.get("low", np.nan)) and (r["low"] > 0 or r["high"] < 0)


def inference_markdown(frame: pd.DataFrame, info: RunInfo, settings: dict[str, Any]) -> str:
    from ..markdown import fmt_ci

    head = (
        f"## Unit of inference — {info.label()}\n\n{info.scale()}. Two questions. **Encoders fixed** (for these "
        f"encoders): an item-only Poisson bootstrap (weights keyed by image id, B={settings['B']}, seed "
        f"{settings['bootstrap_seed']}, first {settings['n_seeds_used']} seeds; XLR, BkR and CORR all reweight "
        f"their per-query outcomes), 95% CI = estimate ± t·SE, SE the larger of the bootstrap's and the "
        f"delete-a-group item jackknife's (Student t on {settings['jackknife_groups'] - 1} degrees "
        "of freedom: the SE is itself estimated); nothing is dropped. **Encoders random** (for "
        "encoders like these): the same item variance plus a leave-one-family-out jackknife over the encoders "
        f"(the {settings['family_name']} encoders count as one family), Student t on the Welch–Satterthwaite degrees of freedom of the two "
        "variances (about families − 1); at least 3 families. "
        "'seeds CI' treats the seeds as independent replicates (Table 1's view; too narrow: every seed "
        "re-splits the same items).\n\n"
    )
    parts = [head]
    set_names = [s for s in ("all", "no_random", "core", "family") if s in set(frame["set"])]
    for set_name in set_names:
        title = {
            "all": "all encoders",
            "no_random": "without the random encoder(s)",
            "core": "without the random and English-only encoders",
            "family": f"{settings['family_name']} family only",
        }[set_name]
        rows = []
        for d in dict.fromkeys(frame["direction"]):
            for stat in STATS:
                b, c, df_ = (_row(frame, d, set_name, q, stat) for q in ("rho_bkr", "rho_corr", "rho_diff"))
                if not b:
                    continue
                rows.append(
                    {
                        "direction": d.replace("-", "→"),
                        "stat": stat,
                        "BkR ρ [CI]": fmt_ci(b["estimate"], b["low"], b["high"]),
                        "BkR seeds CI": fmt_ci(b["estimate"], b["naive_low"], b["naive_high"]),
                        "CORR ρ [CI]": fmt_ci(c["estimate"], c["low"], c["high"]),
                        "CORR seeds CI": fmt_ci(c["estimate"], c["naive_low"], c["naive_high"]),
                        "BkR − CORR [CI]": fmt_ci(df_["estimate"], df_["low"], df_["high"]),
                        "BkR − CORR [CI, encoders random]": fmt_ci(
                            df_["estimate"], df_.get("low_random", np.nan), df_.get("high_random", np.nan)
                        ),
                    }
                )
        parts.append(f"### Correlation with XLR, {title}\n\n" + markdown_table(pd.DataFrame(rows)) + "\n")
    rows = []
    for d in dict.fromkeys(frame["direction"]):
        b, c, df_ = (_row(frame, d, "all", q, "pairs") for q in ("order_acc_bkr", "order_acc_corr", "order_acc_diff"))
        rows.append(
            {
                "direction": d.replace("-", "→"),
                "BkR [CI]": fmt_ci(b["estimate"], b["low"], b["high"]),
                "CORR [CI]": fmt_ci(c["estimate"], c["low"], c["high"]),
                "BkR − CORR [CI]": fmt_ci(df_["estimate"], df_["low"], df_["high"]),
            }
        )
    parts.append(
        "### Pairwise-order accuracy (share of encoder pairs ordered as XLR orders them)\n\n"
        + markdown_table(pd.DataFrame(rows))
        + "\n"
    )
    rows = []
    for set_name in sorted(s for s in set(frame["set"]) if s.startswith("all-")):
        for stat in STATS:
            vals = [
                _row(frame, d, set_name, "rho_diff", stat).get("estimate", np.nan)
                for d in dict.fromkeys(frame["direction"])
            ]
            bk = [
                _row(frame, d, set_name, "rho_bkr", stat).get("estimate", np.nan)
                for d in dict.fromkeys(frame["direction"])
            ]
            rows.append(
                {
                    "left out": set_name[len("all-") :],
                    "stat": stat,
                    "mean BkR ρ": float(np.nanmean(bk)),
                    "mean BkR − CORR": float(np.nanmean(vals)),
                }
            )
    if rows:
        parts.append(
            "### Leave one encoder out (point estimates, mean over directions)\n\n"
            + markdown_table(pd.DataFrame(rows))
            + "\n"
        )
    return "".join(parts)


def configuration_verdict(label: str, conf: Mapping[str, Any], n_directions: int) -> str:
    """One configuration's sentence: BkR − CORR (Pearson, mean over its directions) for both
    questions where it has at least MIN_POOL_ENCODERS encoders, else descriptive."""
    from ..markdown import fmt_ci

    p = conf.get("pearson")
    if not p:
        return ""
    fx, rn = p["fixed"], p["random"]
    n_enc = conf["n_encoders"]
    if n_enc < MIN_POOL_ENCODERS:
        return (
            f"On {label} ({n_enc} encoders, descriptive only: fewer than {MIN_POOL_ENCODERS}), Pearson BkR − CORR "
            f"is {fx['estimate']:.3f} (mean over {n_directions} directions)."
        )
    return (
        f"On {label} ({n_enc} encoders in {conf['n_families']} families), Pearson BkR − CORR (mean over "
        f"{n_directions} directions) is {fmt_ci(fx['estimate'], fx['low'], fx['high'])} for these encoders: "
        f"{lean_text(fx)}; for encoders like these {fmt_ci(rn['estimate'], rn['low'], rn['high'])}: {lean_text(rn)}."
    )


def lean_text(q: Mapping[str, Any]) -> str:
    if not np.isfinite(q.get("low", np.nan)):
        return "undetermined"
    if q["low"] > 0:
        return "BkR tracks XLR better than CORR"
    if q["high"] < 0:
        return "CORR tracks XLR better than BkR"
    return "neither detectably better"


def inference_answer(numbers: dict[str, Any], info: RunInfo, settings: dict[str, Any]) -> tuple[str, str]:
    """The generated paragraph and one-sentence verdict of section 1 for one configuration."""
    from ..markdown import fmt_ci

    pd_rows = numbers["per_direction"]
    parts = [
        f"Item bootstrap (B={settings['B']}, first {settings['n_seeds_used']} of {len(info.seeds)} seeds, "
        f"N={info.sample_size}; XLR, BkR and CORR all reweight their per-query outcomes) for the {len(info.encoders)} "
        "encoders as they are, plus a leave-one-family-out jackknife over the encoders for encoders like these."
    ]
    ratio = numbers.get("ci_width_ratio_median")
    if ratio is not None:
        parts.append(
            f"Its 95% intervals for a metric's correlation with XLR are a median {ratio:.1f}× as wide as "
            "intervals that treat the seeds as independent replicates."
        )
    verdict = ""
    for stat in ("pearson", "spearman"):
        diffs = [r["rho_diff"] for r in pd_rows if r["stat"] == stat and r["rho_diff"]]
        if not diffs:
            continue
        pos = sum(1 for x in diffs if _excl0(x) and x["estimate"] > 0)
        neg = sum(1 for x in diffs if _excl0(x) and x["estimate"] < 0)
        txt = (
            f"{stat.capitalize()}: BkR − CORR excludes 0 in BkR's favour in {pos} and in CORR's favour in {neg} "
            f"of {len(diffs)} directions"
        )
        p = numbers["pooled_diff"].get(stat)
        if p:
            fx, rn = p["fixed"], p["random"]
            txt += (
                f"; mean over directions {fmt_ci(fx['estimate'], fx['low'], fx['high'])} for these encoders "
                f"(z0 = {fx['z0']:.2f}), {fmt_ci(rn['estimate'], rn['low'], rn['high'])} for encoders like these "
                f"({rn['n_families']} families)"
            )
        parts.append(txt + ".")
        if stat == "pearson" and p:
            verdict = configuration_verdict(info.label(), numbers["configuration"].get("all", {}), len(diffs))
    acc = numbers["order_accuracy"]
    if acc and all(a["order_acc_bkr"] for a in acc):
        mb = float(np.mean([a["order_acc_bkr"]["estimate"] for a in acc]))
        mc = float(np.mean([a["order_acc_corr"]["estimate"] for a in acc]))
        wb = float(np.mean([a["order_acc_bkr"]["high"] - a["order_acc_bkr"]["low"] for a in acc]))
        parts.append(
            f"Pairwise-order accuracy (mean over directions): BkR {mb:.3f}, CORR {mc:.3f} "
            f"(mean CI width for BkR {wb:.3f})."
        )
    sets = numbers["sets"]
    for set_name, label in (
        ("no_random", "Without the random encoder"),
        ("core", "Without the random and English-only encoders"),
        ("family", f"Within the {settings['family_name']} family"),
    ):
        if set_name in sets:
            s = sets[set_name]["pearson"]
            parts.append(
                f"{label}: mean Pearson BkR {s['bkr_mean']:.3f} vs CORR {s['corr_mean']:.3f}; the difference's CI "
                f"excludes 0 in {s['diff_ci_excludes_0']} of {s['n_directions']} directions."
            )
    loo = numbers["leave_one_out"].get("pearson")
    if loo:
        parts.append(
            f"Leaving one encoder out moves BkR's Pearson correlation by at most {loo['max_abs_bkr_shift']:.3f} and "
            f"BkR − CORR by at most {loo['max_abs_diff_shift']:.3f} (leaving out {loo['worst_left_out']} in "
            f"{loo['worst_direction'].replace('-', '→')}); the sign of BkR − CORR flips in {loo['sign_flips']} of "
            f"{loo['n']} (direction, left-out encoder) cases."
        )
    return " ".join(parts) + synthetic_note(info), verdict
