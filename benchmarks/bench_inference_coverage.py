"""Coverage of the findings' two questions (encoders fixed, encoders random) on SIMULATED worlds
in the layouts the committed verdict uses (backretrieval.findings.inference_sim): the cells per
configuration and image pool, the shared encoders and their families (the word-vector variants
are one family), as the committed ``reports/*/findings/inference.json`` records give them.

    python benchmarks/bench_inference_coverage.py [--worlds 1000] [--B 200] [--seed 0] [--jobs 2]

Prints, per layout, question and statistic, the share of worlds whose 95% interval covers that
question's truth (the binomial SD at 1,000 worlds is 0.007, at 200 worlds 0.015), and writes
benchmarks/inference_coverage.json, which the verdict cites by layout. A verdict whose layout
is not in that file says so, and tests/test_findings_inference.py fails until this is rerun.

    python benchmarks/bench_inference_coverage.py --world hits [--worlds 400] [--seeds 25] [--layouts SUBSTR,...]
        [--checkpoint FILE.jsonl] [--max-cpu-minutes M] [--out PATH]
    python benchmarks/bench_inference_coverage.py --alt-intervals benchmarks/inference_coverage_hits.json

The same layouts in the data's own outcome model (backretrieval.findings.inference_sim_hits:
binary XLR and BkR hits, noise shared within an encoder family, each configuration's hit rates
from its committed reports/<run>/metrics.json; 1,000 items, N = 500 per seed as the real runs):
writes benchmarks/inference_coverage_hits.json with every world's outcome, which
tests/test_inference_coverage_hits.py recomputes. One process (``--jobs`` is ignored here);
worlds run world-major (world w of every layout, then w + 1), each appended to ``--checkpoint``
(a rerun resumes), and ``--max-cpu-minutes`` stops after the world past it, so every layout has
the same number of worlds and the file's ``worlds`` is the number run. Every world also keeps
its ``diag`` (estimate, truth, the SEs, percentile/BCa bounds, family leave-outs), on which
``--alt-intervals`` scores PROTOTYPE intervals (not the verdict's) without rerunning anything.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from backretrieval.findings.inference import COVERAGE_FILE
from backretrieval.findings.inference.verdict import verdict_layouts
from backretrieval.findings.inference_sim import coverage
from backretrieval.findings.inference_sim_hits import real_rates
from backretrieval.findings.record import read_record

ROOT = Path(__file__).resolve().parents[1]


def committed_layouts(root: Path = ROOT) -> list:
    """The verdict's layouts, from the committed inference records of every configuration."""
    recs = [read_record(p) for p in sorted(root.glob("reports/*/findings/inference.json"))]
    recs = [r for r in recs if r.status == "ok" and r.run is not None and "jackknife_groups" in r.settings]
    layouts = {lay.signature(): lay for lays in verdict_layouts(recs).values() for lay in lays}
    return [layouts[k] for k in sorted(layouts)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=1000)
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (the numbers do not depend on it)")
    ap.add_argument("--world", choices=["continuous", "hits"], default="continuous")
    ap.add_argument("--seeds", type=int, default=25, help="--world hits: sample seeds per cell (the real runs: 25)")
    ap.add_argument("--layouts", default="", help="--world hits: only layouts whose name holds one of these")
    ap.add_argument("--out", default=HITS_FILE, help="--world hits: the JSON written (relative to the repository)")
    ap.add_argument("--checkpoint", default="", help="--world hits: JSON-lines file of finished worlds (resumed)")
    ap.add_argument(
        "--max-cpu-minutes", type=float, default=float("inf"), help="--world hits: stop after the world past it"
    )
    ap.add_argument(
        "--alt-intervals",
        default="",
        metavar="JSON",
        help="score the PROTOTYPE intervals on a hits JSON's worlds; runs nothing",
    )
    args = ap.parse_args()
    if args.alt_intervals:
        print(ALT_DOC)
        print(json.dumps(alt_intervals(Path(args.alt_intervals)), indent=1))
        return
    if args.world == "hits":
        hits_main(args)
        return
    out = {"worlds": args.worlds, "B": args.B, "seed": args.seed, "layouts": {}}
    print("| layout | worlds | fixed, Pearson | fixed, Spearman | random, Pearson | random, Spearman | seconds |")
    print("|---|---|---|---|---|---|---|")
    for lay in committed_layouts():
        t0 = time.perf_counter()
        c = coverage(args.worlds, lay, B=args.B, seed=args.seed, jobs=args.jobs)
        out["layouts"][lay.signature()] = c["coverage"]
        cv = c["coverage"]
        print(
            f"| {lay.signature()} | {args.worlds} | {cv['fixed/pearson']:.3f} | {cv['fixed/spearman']:.3f} | "
            f"{cv['random/pearson']:.3f} | {cv['random/spearman']:.3f} | {time.perf_counter() - t0:.0f} |",
            flush=True,
        )
    (ROOT / COVERAGE_FILE).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


HITS_FILE = "benchmarks/inference_coverage_hits.json"
#: the hits world's design (the real runs: 1,000 items per direction, N = 500)
HITS_DESIGN = {"n_items": 1000, "n_queries": 500}


def layout_rates(lay, root: Path = ROOT) -> dict:
    """Each configuration's real hit rates (:func:`real_rates`) for a layout's encoder count."""
    return {cfg: real_rates(root, cfg, lay.n_encoders) for cfg, _, _ in lay.cells}


def world_hits_diag(args: tuple) -> dict:
    """One SIMULATED hits world: what ``inference_sim_hits._world_hits`` gives (``hit``, ``width``,
    ``z0``; the same numbers, the same code path: ``crossed_bootstrap`` per cell as
    ``world_intervals`` runs it, then ``two_questions``) plus ``diag`` per question/statistic:
    the estimate, the truth and the interval's ingredients, so that other intervals can be
    scored on the committed worlds without rerunning them (``--alt-intervals``)."""
    import numpy as np

    from backretrieval.findings.inference_sim_hits import hits_world
    from backretrieval.stats.crossed import crossed_bootstrap
    from backretrieval.stats.questions import INTERVAL_QUESTIONS, JACKKNIFE_GROUPS, bca_interval, two_questions
    from backretrieval.stats.weighted import STATS

    w, layout, rates, B, seed, world_kw = args
    cells, truth, families = hits_world(w, layout, rates, **world_kw)
    per = {s: {"pts": [], "reps": [], "jack": [], "fam": []} for s in STATS}
    for cell in cells:
        res = crossed_bootstrap(
            cell.seeds,
            cell.encoders,
            {"all": cell.encoders},
            cell.item_keys,
            B,
            seed + w,
            None,
            resample_encoders=False,
            jackknife_groups=JACKKNIFE_GROUPS,
            families=families,
        )
        for stat in STATS:
            key = ("all", "rho_diff", stat)
            per[stat]["pts"].append(res.point[key])
            per[stat]["reps"].append(res.replicates[key])
            per[stat]["jack"].append(res.jackknife[key])
            per[stat]["fam"].append({k[1]: v for k, v in res.family_loo.items() if k[2:] == ("rho_diff", stat)})
    out: dict = {"hit": {}, "width": {}, "z0": {}, "diag": {}}
    for stat, p in per.items():
        fams = sorted(p["fam"][0])
        loo = {fam: [d[fam] for d in p["fam"]] for fam in fams}
        iv = two_questions(p["pts"], p["reps"], p["jack"], loo)
        T = np.stack(p["reps"]).mean(axis=0)
        J = np.stack(p["jack"]).mean(axis=0)
        for qn in INTERVAL_QUESTIONS:
            r = iv[qn]
            out["hit"][f"{qn}/{stat}"] = int(r["low"] <= truth[qn][stat] <= r["high"])
            out["width"][f"{qn}/{stat}"] = float(r["high"] - r["low"])
        out["z0"][stat] = float(iv["fixed"]["z0"])
        f, rd = iv["fixed"], iv["random"]
        bca = bca_interval(f["estimate"], T, J)
        q = np.quantile(T, [0.025, 0.975])
        out["diag"][stat] = {
            "estimate": float(f["estimate"]),
            "truth_fixed": float(truth["fixed"][stat]),
            "truth_random": float(truth["random"][stat]),
            "se_items": float(f["se"]),
            "se_jackknife": float(f["se_jackknife"]),
            "bias": float(f["bias"]),
            "a": float(f["a"]),
            "G": int(f["G"]),
            "pct_low": float(q[0]),
            "pct_high": float(q[1]),
            "bca_low": float(bca["low"]),
            "bca_high": float(bca["high"]),
            "se_encoders": float(rd["se_encoders"]),
            "n_families": int(rd["n_families"]),
            "family_loo": [float(np.mean(v)) for v in loo.values()],
        }
    return out


def summarise(results: list[dict]) -> dict:
    """The shares, undefined counts, mean widths and median |z0| of a layout's worlds (the same
    formulas as ``inference_sim_hits.hits_coverage``)."""
    import numpy as np

    n = len(results)
    keys = list(results[0]["hit"])
    return {
        "coverage": {k: sum(r["hit"][k] for r in results) / n for k in keys},
        "undefined": {k: int(sum(not np.isfinite(r["width"][k]) for r in results)) for k in keys},
        "mean_width": {k: float(np.nanmean([r["width"][k] for r in results])) for k in keys},
        "median_abs_z0": {s: float(np.median([abs(r["z0"][s]) for r in results])) for s in results[0]["z0"]},
    }


def hits_main(args) -> None:
    """World-major: world 0 of every layout, then world 1, ...; each finished world is appended
    to ``--checkpoint`` (JSON lines; rerunning resumes from it), and the run stops after the
    first world past ``--max-cpu-minutes``, so every layout ends with the same number of worlds
    (the file's ``worlds``: the worlds actually run, never the number asked for)."""
    wanted = [w for w in args.layouts.split(",") if w]
    lays = [lay for lay in committed_layouts() if not wanted or any(w in lay.name for w in wanted)]
    rates = {lay.signature(): layout_rates(lay) for lay in lays}
    kw = {"n_seeds": args.seeds, **HITS_DESIGN}
    settings = {"world": "hits", "B": args.B, "seed": args.seed, "n_seeds": args.seeds, **HITS_DESIGN}
    ckpt = Path(args.checkpoint) if args.checkpoint else None
    done: dict[str, list] = {lay.signature(): [] for lay in lays}
    cpu = {lay.signature(): 0.0 for lay in lays}
    if ckpt and ckpt.exists():
        for line in ckpt.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec["settings"] != settings or rec["layout"] not in done:
                continue
            if rec["world"] == len(done[rec["layout"]]):
                done[rec["layout"]].append(rec["result"])
                cpu[rec["layout"]] += rec["cpu_s"]
    n_done = min(len(v) for v in done.values())
    for v in done.values():
        del v[n_done:]
    t_start = time.process_time()
    w = n_done
    while w < args.worlds and (time.process_time() - t_start) / 60 < args.max_cpu_minutes:
        for lay in lays:
            t0 = time.process_time()
            res = world_hits_diag((w, lay, rates[lay.signature()], args.B, args.seed, kw))
            dt = time.process_time() - t0
            done[lay.signature()].append(res)
            cpu[lay.signature()] += dt
            if ckpt:
                rec = {"settings": settings, "layout": lay.signature(), "world": w, "cpu_s": dt, "result": res}
                with ckpt.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec) + "\n")
        w += 1
        if w % 10 == 0:
            print(f"# {w} worlds, {time.process_time() - t_start:.0f} CPU s this run", flush=True)
    n = min(len(v) for v in done.values())
    out = {**settings, "worlds": n, "worlds_asked": args.worlds, "cpu_s": {k: round(v, 1) for k, v in cpu.items()}}
    out["layouts"] = {}
    print(
        "| layout | worlds | fixed, Pearson | fixed, Spearman | random, Pearson | random, Spearman | median abs z0 (P / S) | CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for lay in lays:
        sig = lay.signature()
        c = summarise(done[sig])
        out["layouts"][sig] = {"name": lay.name, **c, "per_world": done[sig]}
        cv, z = c["coverage"], c["median_abs_z0"]
        print(
            f"| {sig} | {n} | {cv['fixed/pearson']:.3f} | {cv['fixed/spearman']:.3f} | "
            f"{cv['random/pearson']:.3f} | {cv['random/spearman']:.3f} | {z['pearson']:.2f} / {z['spearman']:.2f} | "
            f"{cpu[sig]:.0f} |",
            flush=True,
        )
    (ROOT / args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


ALT_DOC = """PROTOTYPE intervals, scored on a hits file's worlds' ``diag``. Written for a file
made before the recalibration, where ``se_items`` is the bootstrap's SE (SE_boot below); in a
file made after it, ``se_items`` is the verdict's max(SE_boot, SE_jack) (an undefined interval
counts as not covering; *_defined: the share among the defined ones;
stud_*: (truth - estimate) / SE, rms_err_over_rms_se: the estimator's RMS error over the SE's):
  fixed:  t_se      est ± t19·SE_boot (the verdict's, for reference)
          t_jk      est ± t19·SE_jack (the delete-a-group jackknife's SE, G = 20)
          t_max     est ± t19·max(SE_boot, SE_jack)
          bc_t      (est − bias) ± t19·SE_boot (bootstrap bias removed)
          pct, bca  the replicates' percentile and BCa intervals
  random: z_se      est ± z·√(SE_boot² + SE_fam²) (the verdict's)
          t_fam     est ± t_{F−1}·√(SE_boot² + SE_fam²)
          z_jkfam   est ± z·√(SE_jack² + SE_fam²)
          t_jkfam   est ± t_{F−1}·√(SE_jack² + SE_fam²)"""


def alt_intervals(path: Path) -> dict:
    """Coverage of the PROTOTYPE intervals (:data:`ALT_DOC`) per layout and statistic, and the
    studentized errors' mean and SD (truth − estimate over the verdict's SE)."""
    import numpy as np
    import scipy.stats as st

    data = json.loads(path.read_text(encoding="utf-8"))
    z = st.norm.ppf(0.975)
    res = {}
    for rec in data["layouts"].values():
        for stat in ("pearson", "spearman"):
            d = [w["diag"][stat] for w in rec["per_world"] if "diag" in w]
            if not d:
                continue
            est = np.array([x["estimate"] for x in d])
            tf = np.array([x["truth_fixed"] for x in d])
            tr = np.array([x["truth_random"] for x in d])
            se = np.array([x["se_items"] for x in d])
            sj = np.array([x["se_jackknife"] for x in d])
            bias = np.array([x["bias"] for x in d])
            sf = np.array([x["se_encoders"] for x in d])
            F = np.array([x["n_families"] for x in d])
            G = d[0]["G"]
            t19 = st.t.ppf(0.975, G - 1)
            tF = st.t.ppf(0.975, F - 1)

            def cov(lo, hi, truth):
                return float(np.mean((lo <= truth) & (truth <= hi)))

            sr, srj = np.sqrt(se**2 + sf**2), np.sqrt(sj**2 + sf**2)
            row = {
                "worlds": len(d),
                "fixed": {
                    "t_se": cov(est - t19 * se, est + t19 * se, tf),
                    "t_jk": cov(est - t19 * sj, est + t19 * sj, tf),
                    "t_max": cov(est - t19 * np.maximum(se, sj), est + t19 * np.maximum(se, sj), tf),
                    "bc_t": cov(est - bias - t19 * se, est - bias + t19 * se, tf),
                    "pct": cov(np.array([x["pct_low"] for x in d]), np.array([x["pct_high"] for x in d]), tf),
                    "bca": cov(np.array([x["bca_low"] for x in d]), np.array([x["bca_high"] for x in d]), tf),
                    "stud_mean": float(np.mean((tf - est) / se)),
                    "stud_sd": float(np.std((tf - est) / se)),
                    "stud_sd_jack": float(np.std((tf - est) / sj)),
                    "rms_err_over_rms_se": float(np.sqrt(np.mean((est - tf) ** 2) / np.mean(se**2))),
                    "rms_err_over_rms_se_jack": float(np.sqrt(np.mean((est - tf) ** 2) / np.mean(sj**2))),
                },
                "random": {
                    "z_se": cov(est - z * sr, est + z * sr, tr),
                    "t_fam": cov(est - tF * sr, est + tF * sr, tr),
                    "z_jkfam": cov(est - z * srj, est + z * srj, tr),
                    "t_jkfam": cov(est - tF * srj, est + tF * srj, tr),
                    "undefined": int(np.sum(~np.isfinite(sr))),
                    "z_se_defined": cov(est - z * sr, est + z * sr, tr) * len(d) / max(1, int(np.sum(np.isfinite(sr)))),
                    "t_fam_defined": cov(est - tF * sr, est + tF * sr, tr)
                    * len(d)
                    / max(1, int(np.sum(np.isfinite(sr)))),
                    "stud_mean": float(np.nanmean((tr - est) / sr)),
                    "stud_sd": float(np.nanstd((tr - est) / sr)),
                },
            }
            res[f"{rec['name']}/{stat}"] = row
    return res


if __name__ == "__main__":
    main()
