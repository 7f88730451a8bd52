"""Findings steps: thin functions from explicit artifact files to
``<out_dir>/<analysis>.{csv,md,json}`` and figures (see backretrieval.findings.document).

Every step takes its inputs and settings as arguments (the CLI passes them as flags; the
Snakemake rules in workflow/rules/findings.smk name the files): no path comes from the config.
Blocks: the shared run loader, then one block per analysis (inference, calibration, bli,
agreement, document; image quality, sample size, hubness).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util import io
from ..data.prepared import DatasetMeta, load_items, read_meta
from ..data.sampling import Sample
from ..errors import InputError
from ..evaluation.core import rows_of
from ..findings import hubness as hub_mod
from ..findings import image_quality as iq
from ..findings import sample_size as ss
from ..findings.document import FindingsRecord, RunInfo, markdown_table, write_record
from ..findings.views import Lookup, iter_views
from ..metrics.retrieval import CSLS_K, MARGIN_K
from .layout import load_embedding, skipped_reason
from .metrics import read_metrics
from .sample import read_samples

log = logging.getLogger("backretrieval")


# ============================================================================================
# shared: the cached artifacts of one run


_TEXT_EMB = re.compile(r"^(?P<lang>[A-Za-z0-9_-]+)\.(?P<field>title|body|title_body)\.npz$")


@dataclass
class RunArtifacts:
    """The main pipeline's artifacts of one configuration, read from explicit files."""

    dataset: Path
    meta: DatasetMeta
    metrics: pd.DataFrame
    samples: dict[str, list[Sample]]
    ranks_files: dict[str, Path]
    image_file: Path | None
    text_files: dict[tuple[str, str], Path]
    k: int
    _items: pd.DataFrame | None = None
    _image: tuple[dict[str, int], np.ndarray] | None = None
    _text: dict[tuple[str, str], tuple[dict[str, int], np.ndarray] | None] = field(default_factory=dict)

    @property
    def directions(self) -> list[str]:
        return [d for d in self.samples if d in set(self.metrics["direction"])]

    @property
    def encoders(self) -> list[str]:
        return sorted(self.metrics["encoder"].unique())

    def run_info(self, run_name: str, reports_dir: str) -> RunInfo:
        m = self.metrics
        return RunInfo(
            run_name=run_name,
            dataset=self.meta.name,
            synthetic=self.meta.synthetic,
            reports_dir=reports_dir,
            sample_size=int(m["n"].max()),
            seeds=tuple(sorted(int(s) for s in m["seed"].unique())),
            directions=tuple(self.directions),
            encoders=tuple(self.encoders),
            image_backbone=str(m["backbone"].iloc[0]),
            k=self.k,
        )

    def items(self) -> pd.DataFrame:
        if self._items is None:
            self._items = load_items(self.dataset)
        return self._items

    def image_of(self, lang: str) -> dict[str, str]:
        sub = self.items()[self.items()["lang"] == lang]
        return dict(zip(sub["item_id"], sub["image_id"]))

    def image(self) -> tuple[dict[str, int], np.ndarray]:
        if self._image is None:
            if self.image_file is None:
                raise InputError("no image embedding file given (--image-emb)")
            img = load_embedding(self.image_file)
            if img is None:
                raise InputError(f"{self.image_file}: image backbone was skipped; the analysis needs image features")
            self._image = img
        return self._image

    def text(self, encoder: str, lang: str) -> tuple[dict[str, int], np.ndarray] | None:
        key = (encoder, lang)
        if key not in self._text:
            if key not in self.text_files:
                raise InputError(f"no text embedding of encoder {encoder!r} in {lang!r} among --text-emb")
            self._text[key] = load_embedding(self.text_files[key])
        return self._text[key]

    def ranks(self, direction: str) -> dict[str, np.ndarray]:
        if direction not in self.ranks_files:
            raise InputError(f"no per-query ranks file for direction {direction} among --ranks")
        return io.load_npz(self.ranks_files[direction])

    def sample_embeddings(self, direction: str, sample: Sample, encoders: Sequence[str]) -> dict[str, Any]:
        """Rows of one sample: ``q_img``, ``t_img`` and per encoder ``(bkr_src, bkr_tgt, xlr_tgt)``."""
        src, tgt = direction.split("-")
        index, emb = self.image()
        img_src, img_tgt = self.image_of(src), self.image_of(tgt)
        out: dict[str, Any] = {
            "q_img": rows_of((index, emb), [img_src[i] for i in sample.queries], str(self.image_file)),
            "t_img": rows_of((index, emb), [img_tgt[i] for i in sample.bkr_targets], str(self.image_file)),
            "text": {},
        }
        for enc in encoders:
            s, t = self.text(enc, src), self.text(enc, tgt)
            if s is None or t is None:
                raise InputError(f"encoder {enc!r} was skipped in {direction}; its metrics cannot be recomputed")
            xlr_t = rows_of(t, sample.xlr_targets, f"{enc}/{tgt}") if sample.xlr_targets is not None else None
            out["text"][enc] = (
                rows_of(s, sample.queries, f"{enc}/{src}"),
                rows_of(t, sample.bkr_targets, f"{enc}/{tgt}"),
                xlr_t,
            )
        return out


def load_run(
    *,
    dataset: Path,
    metrics_files: Sequence[Path],
    samples_files: Sequence[Path] = (),
    ranks_files: Sequence[Path] = (),
    image_file: Path | None = None,
    text_files: Sequence[Path] = (),
    k: int,
) -> RunArtifacts:
    """Read the artifacts (checks before any work: every file exists, directions match)."""
    for p in [*metrics_files, *samples_files, *ranks_files, *text_files, *([image_file] if image_file else [])]:
        if not Path(p).is_file():
            raise InputError(f"{p}: input file not found (run the main pipeline first)")
    if not metrics_files:
        raise InputError("no metrics CSV given (--metrics)")
    metrics = read_metrics([Path(p) for p in metrics_files])
    samples: dict[str, list[Sample]] = {}
    for p in samples_files:
        ss = read_samples(Path(p))
        if ss:
            samples[f"{ss[0].src_lang}-{ss[0].tgt_lang}"] = ss
    if not samples_files:  # directions of the metrics, without samples
        samples = {d: [] for d in sorted(metrics["direction"].unique())}
    ranks = {}
    for p in ranks_files:
        name = Path(p).name
        if not name.endswith(".ranks.npz"):
            raise InputError(f"{p}: expected a '<direction>.ranks.npz' file")
        ranks[name[: -len(".ranks.npz")]] = Path(p)
    texts: dict[tuple[str, str], Path] = {}
    for p in text_files:
        m = _TEXT_EMB.match(Path(p).name)
        if not m:
            raise InputError(f"{p}: expected a text embedding '<encoder>/<lang>.<field>.npz'")
        texts[(Path(p).parent.name, m["lang"])] = Path(p)
    missing = sorted(set(metrics["direction"]) - set(samples))
    if samples_files and missing:
        raise InputError(f"no samples file for direction(s) {missing} of the metrics (--samples)")
    return RunArtifacts(
        dataset=Path(dataset),
        meta=read_meta(dataset),
        metrics=metrics,
        samples=samples,
        ranks_files=ranks,
        image_file=Path(image_file) if image_file else None,
        text_files=texts,
        k=int(k),
    )


def _write_tables(out_dir: Path, name: str, frame: pd.DataFrame, markdown: str) -> list[str]:
    io.write_csv(out_dir / f"{name}.csv", frame)
    io.write_text(out_dir / f"{name}.md", markdown)
    return [f"{name}.md", f"{name}.csv"]


def _figure_outputs(name: str) -> list[str]:
    return [f"figures/{name}.{ext}" for ext in ("png", "svg", "pdf")]


def _record(out_dir: Path, rec: FindingsRecord) -> None:
    write_record(out_dir / f"{rec.analysis}.json", rec)


# ============================================================================================
# 1. the unit of inference


def _per_query(ranks: dict[str, np.ndarray], enc: str, seed: int, kind: str, k: int, as_ranks: bool) -> np.ndarray:
    key = f"{enc}/{seed}/{kind}"
    if key not in ranks:
        raise InputError(f"per-query ranks: no entry {key!r} (metrics and ranks files out of step?)")
    r = ranks[key].astype(np.int64)
    return (r <= k).astype(np.float64) if as_ranks else r.astype(np.float64)


def inference_outcomes(
    run: RunArtifacts,
    direction: str,
    n_seeds: int | None,
    with_corr: bool = True,
) -> tuple[list, list[str], list[str]]:
    """The per-query outcomes of the first ``n_seeds`` seeds (None: all) of one direction
    (:class:`~backretrieval.findings.inference.SeedOutcomes`: XLR and BkR hits, CORR's per-query
    contributions), the item keys the queries index (the image id of each query item: items
    that show the same image share a bootstrap weight in every direction and configuration) and
    the encoders (rows). Checks that the ranks and contributions reproduce the metrics CSV."""
    from ..findings.inference import SeedOutcomes, corr_contributions

    encoders = run.encoders
    m = run.metrics[run.metrics["direction"] == direction]
    wide = m.pivot_table(index=["seed", "encoder"], columns="metric", values="value")
    bkr_as_ranks = "bkr_mrr" in wide.columns
    samples = sorted(run.samples[direction], key=lambda s: s.seed)[:n_seeds]
    if not samples:
        raise InputError(f"direction {direction}: no samples")
    if samples[0].xlr_targets is None:
        raise InputError(f"direction {direction}: the dataset is not parallel; XLR (the reference) is undefined")
    if with_corr and "corr" not in wide.columns:
        raise InputError(f"{direction}: the metrics CSV has no 'corr' rows")
    ranks = run.ranks(direction)
    image_of = run.image_of(direction.split("-")[0])
    keys = sorted({image_of[i] for s in samples for i in s.queries})
    pos = {k: j for j, k in enumerate(keys)}
    out = []
    for s in samples:
        xlr = np.stack([_per_query(ranks, e, s.seed, "xlr", run.k, True) for e in encoders])
        bkr = np.stack([_per_query(ranks, e, s.seed, "bkr", run.k, bkr_as_ranks) for e in encoders])
        per_query = {"bkr": bkr}
        checks = [("xlr", xlr, "xlr_recall", 1e-9), ("bkr", bkr, "bkr_recall", 1e-9)]
        if with_corr:
            emb = run.sample_embeddings(direction, s, encoders)
            per_query["corr"] = corr_contributions(emb["q_img"], emb["t_img"], [emb["text"][e][:2] for e in encoders])
            checks.append(("corr", per_query["corr"], "corr", 1e-5))
        for what, arr, metric, tol in checks:
            csv = wide.loc[s.seed].reindex(encoders)[metric].to_numpy(float)
            if not np.allclose(arr.mean(axis=1), csv, rtol=0, atol=tol):
                raise InputError(
                    f"{direction} seed {s.seed}: per-query {what} outcomes do not reproduce {metric} of the metrics CSV"
                )
        out.append(
            SeedOutcomes(
                seed=s.seed,
                query_items=np.array([pos[image_of[i]] for i in s.queries]),
                xlr=xlr,
                per_query=per_query,
            )
        )
    return out, keys, encoders


def encoder_sets(
    encoders: Sequence[str],
    random_encoders: Sequence[str],
    family: Sequence[str],
    english_only: Sequence[str] = (),
) -> dict[str, list[str]]:
    """``all``; ``no_random`` (without the chance-level encoders); ``core`` (without the random
    and the English-only encoders, which inflate both correlations: they fail every non-English
    side alike); ``family`` (one model family alone); sets with fewer than 3 encoders are left
    out."""
    sets = {"all": list(encoders)}
    no_random = [e for e in encoders if e not in set(random_encoders)]
    if len(no_random) < len(encoders) and len(no_random) >= 3:
        sets["no_random"] = no_random
    core = [e for e in no_random if e not in set(english_only)]
    if len(core) < len(encoders) and len(core) >= 3:
        sets["core"] = core
    fam = [e for e in encoders if e in set(family)]
    if len(fam) >= 3:
        sets["family"] = fam
    return sets


#: the replicate table beside inference.json: one row per replicate, one column per cell key
REPLICATES_FILE = "inference_replicates.csv"
#: the quantities whose replicates are kept for pooling across directions and configurations
POOLED_QUANTITIES = ("rho_diff", "rho_diff_avg")


def cell_key(direction: str, set_name: str, quantity: str, stat: str) -> str:
    return f"{direction}|{set_name}|{quantity}|{stat}"


def inference_step(
    run: RunArtifacts,
    *,
    run_name: str,
    out_dir: Path,
    B: int,
    boot_seed: int,
    n_seeds: int | None,
    random_encoders: Sequence[str] = ("random",),
    english_only: Sequence[str] = (),
    family: Sequence[str] = (),
    family_name: str = "word-vector",
) -> FindingsRecord:
    """Section 1 for every direction → inference.{csv,md,json}, inference_replicates.csv (the
    pooled quantities' replicates, for the cross-configuration verdict) + figures/inference_ci.*"""
    from ..findings import inference as inf

    out_dir = Path(out_dir)
    info = run.run_info(run_name, str(out_dir.parent))
    frames = []
    n_items_by_dir = {}
    reps: dict[str, np.ndarray] = {}
    points: dict[str, float] = {}
    degenerate: dict[str, dict[str, int]] = {}
    sets: dict[str, list[str]] = {}
    n_used = 0
    for d in run.directions:
        seeds, keys, encoders = inference_outcomes(run, d, n_seeds)
        n_used = len(seeds)
        sets = encoder_sets(encoders, random_encoders, family, english_only)
        res = inf.crossed_bootstrap(seeds, encoders, sets, keys, B=B, seed=boot_seed, leave_one_out="all")
        f = res.frame()
        f.insert(0, "direction", d)
        frames.append(f)
        n_items_by_dir[d] = len(keys)
        degenerate[d] = dict(res.degenerate)
        for (set_name, quantity, stat), r in sorted(res.replicates.items()):
            if quantity in POOLED_QUANTITIES:
                reps[cell_key(d, set_name, quantity, stat)] = r
                points[cell_key(d, set_name, quantity, stat)] = res.point[(set_name, quantity, stat)]
        log.info("findings inference %s: %d seeds, %d items, B=%d", d, len(seeds), len(keys), B)
    frame = pd.concat(frames, ignore_index=True)
    settings = {
        "B": B,
        "bootstrap_seed": boot_seed,
        "n_seeds_used": n_used,
        "method": "joint Poisson bootstrap of encoders and items, weights keyed by encoder name and image id",
        "item_key": "image_id",
        "random_encoders": list(random_encoders),
        "english_only": list(english_only),
        "family": list(family),
        "family_name": family_name,
        "encoder_sets": sets,
        "confidence": 0.95,
        "items_per_direction": n_items_by_dir,
        "replicates_file": REPLICATES_FILE,
    }
    pooled = {}
    for stat in inf.STATS:
        ks = [cell_key(d, "all", "rho_diff", stat) for d in info.directions]
        if all(k in reps for k in ks):
            pooled[stat] = inf.pool_replicates([points[k] for k in ks], [reps[k] for k in ks])
    numbers = inference_numbers(frame, info.directions, pooled)
    numbers["cell_points"] = points
    numbers["degenerate_replicates"] = degenerate
    md = inference_markdown(frame, info, settings)
    outputs = _write_tables(out_dir, "inference", frame, md)
    io.write_csv(out_dir / REPLICATES_FILE, pd.DataFrame(reps), float_format="%.6g")
    outputs.append(REPLICATES_FILE)
    inf.plot_intervals(
        frame,
        out_dir / "figures" / "inference_ci",
        f"{'SYNTHETIC — ' if info.synthetic else ''}{info.dataset}: correlation with XLR, 95% CIs",
    )
    outputs += _figure_outputs("inference_ci")
    answer, verdict = inference_answer(numbers, info, settings)
    rec = FindingsRecord(
        analysis="inference",
        run=info,
        settings=settings,
        numbers=numbers,
        answer=answer,
        verdict=verdict,
        outputs=tuple(outputs),
    )
    _record(out_dir, rec)
    return rec


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
        for k in ("estimate", "low", "high", "se", "naive_low", "naive_high", "seed_sd", "n_valid")
    }


def inference_numbers(
    frame: pd.DataFrame, directions: Sequence[str], pooled: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Key numbers: per direction and statistic (``all`` encoders) BkR's and CORR's correlation
    with XLR, their difference, order accuracies (with CIs); width ratios; ``pooled`` (the
    difference pooled over the directions within each joint replicate, per stat); sensitivity
    (sets, leave-one-out extremes)."""
    from ..findings.inference import STATS

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
    from ..findings.document import fmt_ci
    from ..findings.inference import STATS

    head = (
        f"## Unit of inference — {info.label()}\n\n{info.scale()}. Joint bootstrap over encoders and "
        f"items (Poisson weights keyed by encoder name and image id, B={settings['B']}, seed "
        f"{settings['bootstrap_seed']}, first {settings['n_seeds_used']} seeds; XLR, BkR and CORR all "
        "reweight their per-query outcomes). 95% percentile CIs over the valid replicates (a replicate "
        "whose encoder draw has fewer than 3 distinct encoders is dropped); 'seeds CI' treats the seeds as "
        "independent replicates (Table 1's view).\n\n"
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


def _synthetic_note(info: RunInfo) -> str:
    return (
        " These are SYNTHETIC data: a demonstration of the method, not evidence about real encoders."
        if info.synthetic
        else ""
    )


def inference_answer(numbers: dict[str, Any], info: RunInfo, settings: dict[str, Any]) -> tuple[str, str]:
    """The generated paragraph and one-sentence verdict of section 1 for one configuration."""
    from ..findings.document import fmt_ci

    pd_rows = numbers["per_direction"]
    parts = [
        f"Joint bootstrap over the {len(info.encoders)} encoders and the items (B={settings['B']}, first "
        f"{settings['n_seeds_used']} of {len(info.seeds)} seeds, N={info.sample_size}; XLR, BkR and CORR all "
        "reweight their per-query outcomes)."
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
            txt += (
                f"; mean over directions {fmt_ci(p['estimate'], p['low'], p['high'])} (pooled within each joint "
                f"replicate, {p['n_dropped']} of {p['B']} replicates dropped)"
            )
        parts.append(txt + ".")
        if stat == "pearson":
            if p:
                lean = "BkR" if p["low"] > 0 else "CORR" if p["high"] < 0 else "neither metric"
                verdict = (
                    f"On {info.label()}, {lean} tracks XLR better (Pearson BkR − CORR "
                    f"{fmt_ci(p['estimate'], p['low'], p['high'])}, mean over {len(diffs)} directions)."
                )
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
    return " ".join(parts) + _synthetic_note(info), verdict


# ============================================================================================
# 5. calibration and soft BkR


def calibration_points(run: RunArtifacts, soft_m: Sequence[int], n_seeds: int | None = None) -> pd.DataFrame:
    """Per (direction, seed, encoder): XLR@1, XLR@k, MRR, BkR, soft BkR for each m, CORR, and
    the sample's image side (p_hit, p_miss). Soft BkR is recomputed from the embeddings; its
    m=1 column must equal the metrics CSV's BkR (checked)."""
    from ..findings.calibration import image_side
    from ..metrics import BkrImageIndex, nearest_m

    ms = sorted(set(int(m) for m in soft_m) | {1})
    encoders = run.encoders
    rows = []
    for d in run.directions:
        wide = run.metrics[run.metrics["direction"] == d].pivot_table(
            index=["seed", "encoder"], columns="metric", values="value"
        )
        ranks = run.ranks(d)
        samples = sorted(run.samples[d], key=lambda s: s.seed)
        for s in samples[: n_seeds or len(samples)]:
            emb = run.sample_embeddings(d, s, encoders)
            index = BkrImageIndex.build(emb["q_img"], emb["t_img"], k=run.k)
            side = image_side(emb["q_img"], emb["t_img"], run.k, index=index)
            for e in encoders:
                src, tgt, _ = emb["text"][e]
                top = nearest_m(src, tgt, max(ms))
                csv = wide.loc[(s.seed, e)]
                row: dict[str, Any] = {
                    "dataset": run.meta.name,
                    "direction": d,
                    "seed": s.seed,
                    "encoder": e,
                    "n": len(s.queries),
                    "p_hit": side.p_hit,
                    "p_miss": side.p_miss,
                }
                xr = ranks[f"{e}/{s.seed}/xlr"].astype(np.int64)
                br = _per_query(ranks, e, s.seed, "bkr", run.k, "bkr_mrr" in wide.columns)
                row.update(
                    xlr_r1=float(np.mean(xr <= 1)),
                    xlr_rk=float(np.mean(xr <= run.k)),
                    xlr_mrr=float(np.mean(1.0 / xr)),
                    bkr=float(np.mean(br)),
                    corr=float(csv["corr"]) if "corr" in csv else float("nan"),
                )
                for m in ms:
                    row[f"soft_bkr_m{m}"] = float(np.mean(index.soft_hits(top[:, :m])))
                if row["soft_bkr_m1"] != row["bkr"] or abs(row["bkr"] - float(csv["bkr_recall"])) > 1e-9:
                    raise InputError(
                        f"{d} seed {s.seed} {e}: recomputed BkR {row['soft_bkr_m1']}, per-query ranks "
                        f"{row['bkr']} and the metrics CSV's {csv['bkr_recall']} differ (stale artifacts?)"
                    )
                rows.append(row)
    return pd.DataFrame(rows)


def calibration_step(
    run: RunArtifacts,
    *,
    run_name: str,
    out_dir: Path,
    soft_m: Sequence[int],
    n_seeds: int | None = None,
) -> FindingsRecord:
    """Section 5 for one configuration → calibration_points.csv (input of the cross-dataset
    evaluation), calibration.{csv,md,json}, calibration_soft.csv, figures/calibration.*"""
    from ..findings import calibration as cal

    out_dir = Path(out_dir)
    info = run.run_info(run_name, str(out_dir.parent))
    points = calibration_points(run, soft_m, n_seeds)
    io.write_csv(out_dir / "calibration_points.csv", points)
    cells = cal.cell_means(points)
    preds = []
    for target in ("xlr_r1", "xlr_rk"):
        preds.append(cal.leave_one_group_out(cells, "encoder", target))
    loeo = pd.concat(preds, ignore_index=True)
    summary = cal.error_summary(loeo)
    summary.insert(0, "validation", "leave-one-encoder-out")
    soft_cols = [c for c in cells.columns if c.startswith("soft_bkr_m")]
    soft_cols = sorted(soft_cols, key=lambda c: int(c[len("soft_bkr_m") :]))
    refs = {"XLR@1": "xlr_r1", f"XLR@{run.k}": "xlr_rk", "MRR": "xlr_mrr"}
    soft = cal.soft_agreement(cells, soft_cols, refs)
    io.write_csv(out_dir / "calibration_soft.csv", soft)
    label = f"{'SYNTHETIC — ' if info.synthetic else ''}{info.dataset}"
    side = points.groupby("direction")[["p_hit", "p_miss"]].mean().reset_index()
    md = (
        f"## Calibration — {info.label()}\n\n{info.scale()}; seed means per (direction, encoder); "
        f"image side: p_hit = image-oracle BkR, p_miss = chance (see backretrieval.findings.calibration).\n\n"
        "### Image side per direction (mean over seeds)\n\n"
        + markdown_table(side, 4)
        + "\n### XLR estimated from BkR, leave one encoder out\n\n"
        + markdown_table(summary, 4)
        + "\n### Soft BkR: correlation across encoders with XLR@1, XLR@k and MRR (mean over directions)\n\n"
        + markdown_table(
            soft[soft["direction"] == "mean"]
            .pivot_table(index=["metric", "stat"], columns="reference", values="value", sort=False)
            .reset_index(),
            3,
        )
    )
    outputs = _write_tables(out_dir, "calibration", summary, md) + ["calibration_soft.csv", "calibration_points.csv"]
    cal.plot_calibration(cells, loeo, out_dir / "figures" / "calibration", f"{label}: BkR → XLR@1")
    outputs += _figure_outputs("calibration")
    numbers = calibration_numbers(cells, summary, soft, refs)
    settings = {
        "soft_m": sorted(set(int(m) for m in soft_m) | {1}),
        "n_seeds_used": int(points["seed"].nunique()),
        "models": list(cal.MODELS),
    }
    answer, verdict = calibration_answer(numbers, info)
    rec = FindingsRecord(
        analysis="calibration",
        run=info,
        settings=settings,
        numbers=numbers,
        answer=answer,
        verdict=verdict,
        outputs=tuple(outputs),
    )
    _record(out_dir, rec)
    return rec


def calibration_numbers(
    cells: pd.DataFrame, summary: pd.DataFrame, soft: pd.DataFrame, refs: dict[str, str]
) -> dict[str, Any]:
    errs = {
        f"{r.model}/{r.target}": {"mae": r.mae, "rmse": r.rmse, "bias": r.bias, "spearman": r.spearman, "n": r.n}
        for r in summary.itertuples()
    }
    mean = soft[soft["direction"] == "mean"]
    soft_n = {f"{r.metric}/{r.reference}/{r.stat}": r.value for r in mean.itertuples()}
    from ..findings.calibration import implied_image_side

    ph_fit, pm_fit = implied_image_side(cells)
    return {
        "p_hit_mean": float(cells["p_hit"].mean()),
        "p_miss_mean": float(cells["p_miss"].mean()),
        "p_hit_implied": ph_fit,
        "p_miss_implied": pm_fit,
        "xlr_r1_range": [float(cells["xlr_r1"].min()), float(cells["xlr_r1"].max())],
        "loeo": errs,
        "soft": soft_n,
        "references": list(refs),
    }


def calibration_answer(numbers: dict[str, Any], info: RunInfo) -> tuple[str, str]:
    e = numbers["loeo"]
    mix, lin = e.get("mixture/xlr_r1"), e.get("linear_bkr/xlr_r1")
    linm = e.get("linear_mixture/xlr_r1")
    parts = [
        f"The image side alone gives p_hit = {numbers['p_hit_mean']:.3f} (image-oracle BkR) and "
        f"p_miss = {numbers['p_miss_mean']:.4f} (chance) on average; XLR@1 ranges over "
        f"{numbers['xlr_r1_range'][0]:.3f}–{numbers['xlr_r1_range'][1]:.3f} across encoders and directions."
    ]
    if mix:
        parts.append(
            f"The mixture XLR@1 ≈ (BkR − p_miss)/(p_hit − p_miss), fitted to no XLR value, misses XLR@1 by "
            f"MAE {mix['mae']:.3f} (bias {mix['bias']:+.3f}, Spearman {mix['spearman']:.2f}); the line through "
            f"the encoders' (XLR@1, BkR) points implies p_hit = {numbers['p_hit_implied']:.3f} and "
            f"p_miss = {numbers['p_miss_implied']:.4f} instead."
        )
    if lin and linm:
        parts.append(
            f"Fitted leave one encoder out, a line in BkR has MAE {lin['mae']:.3f} and a line in the mixture "
            f"estimate MAE {linm['mae']:.3f}."
        )
    ref = numbers["references"]
    s1 = numbers["soft"].get(f"soft_bkr_m1/{ref[0]}/spearman")
    ms = sorted({k.split("/")[0] for k in numbers["soft"]}, key=lambda c: int(c[len("soft_bkr_m") :]))
    if s1 is not None and len(ms) > 1:
        best = ms[-1]
        parts.append(
            "Soft BkR vs BkR (mean Spearman across encoders with "
            + ", ".join(
                f"{r}: {numbers['soft'][f'soft_bkr_m1/{r}/spearman']:.3f} → {numbers['soft'][f'{best}/{r}/spearman']:.3f}"
                for r in ref
            )
            + f" for m = 1 → {best[len('soft_bkr_m') :]})."
        )
    verdict = ""
    if mix:
        verdict = f"On {info.label()}, the image-side mixture estimates XLR@1 from BkR with MAE {mix['mae']:.3f}."
    return " ".join(parts) + _synthetic_note(info), verdict


# ============================================================================================
# 6. BLI for the word-vector family, and the agreement matrix


def bli_step(
    run: RunArtifacts,
    *,
    run_name: str,
    out_dir: Path,
    specs: dict[str, dict],
    test_size: int = 2000,
    min_count: int = 5,
    seed: int = 0,
    csls_k: int = 10,
) -> FindingsRecord:
    """Section 6a → bli.{csv,md,json} + figures/bli.* . ``specs``: the word-vector encoders'
    params entries (``type: wordvec``); their vectors, seed dictionaries and maps come from the
    wordvec cache (trained there by the embedding step, else trained now, deterministically)."""
    from ..encoders.dictionaries import load_freedict_pairs
    from ..encoders.wordvec import build_wordvec_encoder, normalize_embeddings
    from ..findings import bli as B

    out_dir = Path(out_dir)
    info = run.run_info(run_name, str(out_dir.parent))
    settings = {
        "test_size": test_size,
        "min_count": min_count,
        "seed": seed,
        "csls_k": csls_k,
        "retrievals": list(B.RETRIEVALS),
        "encoders": sorted(specs),
    }
    if len(specs) == 0:
        rec = FindingsRecord(
            analysis="bli",
            run=info,
            settings=settings,
            numbers={},
            status="not_applicable",
            answer="This configuration has no word-vector (type: wordvec) encoders, so there is nothing to induce a lexicon from.",
            verdict="",
            outputs=(),
        )
        _record(out_dir, rec)
        return rec
    encs = {e: build_wordvec_encoder(e, spec) for e, spec in sorted(specs.items())}
    hubs = {enc.spec.hub for enc in encs.values()}
    if len(hubs) != 1:
        raise InputError(f"BLI: the word-vector encoders use different hub languages {sorted(hubs)}")
    hub = hubs.pop()
    langs = sorted({lang for enc in encs.values() for lang in enc.spec.languages if lang != hub})
    rows = []
    test_sizes = {}
    test_rows = []
    for lang in langs:
        members = {e: enc for e, enc in encs.items() if lang in enc.spec.languages}
        ex_src, ex_tgt = set(), set()
        vocab_src: set[str] | None = None
        vocab_tgt: set[str] | None = None
        for enc in members.values():
            sd = enc.seed_dictionary(lang)
            ex_tgt |= {h for h, _ in sd["pairs"]}
            ex_src |= {w for _, w in sd["pairs"]}
            vs, vt = set(enc.mono(lang).words), set(enc.mono(hub).words)
            vocab_src = vs if vocab_src is None else vocab_src & vs
            vocab_tgt = vt if vocab_tgt is None else vocab_tgt & vt
        first = next(iter(members.values()))
        assert vocab_src is not None and vocab_tgt is not None  # members is not empty
        pairs = load_freedict_pairs(hub, lang, Path(first.spec.dict_dir), vocab=(vocab_tgt, vocab_src))
        counts = first.mono(lang).count_map()
        test = B.held_out_dictionary(
            ((w, h) for h, w in pairs), ex_src, ex_tgt, counts, vocab_tgt, test_size, min_count, seed
        )
        test_sizes[lang] = len(test)
        test_rows += [{"lang": lang, "word": w, "gold": " ".join(g)} for w, g in sorted(test.items())]
        if not test:
            log.warning("BLI %s-%s: no held-out dictionary pairs left", lang, hub)
            continue
        for e, enc in members.items():
            src_mv, hub_mv = enc.mono(lang), enc.mono(hub)
            S = normalize_embeddings(src_mv.vectors).astype(np.float64) @ enc.mapping(lang)["W"]
            T = normalize_embeddings(hub_mv.vectors).astype(np.float64) @ enc.mapping(hub)["W"]
            si, ti = src_mv.index, hub_mv.index
            words = sorted(test)
            queries = [si[w] for w in words]
            gold = [[ti[t] for t in test[w]] for w in words]
            sd = enc.seed_dictionary(lang)
            for retrieval in B.RETRIEVALS:
                r = B.evaluate_bli(S, T, queries, gold, retrieval=retrieval, csls_k=csls_k)
                rows.append(
                    {
                        "encoder": e,
                        "method": enc.spec.method,
                        "dict_size": enc.spec.dict_size,
                        "seed_pairs": sd["size"],
                        "lang": lang,
                        "direction": f"{lang}-{hub}",
                        "retrieval": retrieval,
                        "p_at_1": r.p_at_1,
                        "map": r.map,
                        "n_test": r.n_queries,
                        "n_candidates": r.n_candidates,
                    }
                )
    frame = pd.DataFrame(rows)
    md_rows = frame.pivot_table(
        index=["method", "dict_size", "lang"], columns="retrieval", values=["p_at_1", "map"]
    ).reset_index()
    md_rows.columns = [
        " ".join(c for c in col if c).strip() if isinstance(col, tuple) else col for col in md_rows.columns
    ]
    md = (
        f"## BLI — {info.label()}\n\nHeld-out FreeDict test dictionaries (no word of any seed dictionary), "
        f"up to {test_size} source words with corpus count ≥ {min_count} per language ({', '.join(f'{k}: {v}' for k, v in test_sizes.items())}); "
        f"queries in the source language, candidates: the whole {hub} vocabulary; CSLS k={csls_k}.\n\n"
        + markdown_table(md_rows, 3)
    )
    outputs = _write_tables(out_dir, "bli", frame, md)
    io.write_csv(out_dir / "bli_test_dictionary.csv", pd.DataFrame(test_rows, columns=["lang", "word", "gold"]))
    outputs.append("bli_test_dictionary.csv")
    B.plot_bli(
        frame, out_dir / "figures" / "bli", f"{info.dataset}: BLI of the word-vector family (mean over languages)"
    )
    outputs += _figure_outputs("bli")
    settings["test_dictionary_sizes"] = test_sizes
    numbers = bli_numbers(frame)
    answer = bli_answer(numbers, info, test_sizes)
    rec = FindingsRecord(
        analysis="bli", run=info, settings=settings, numbers=numbers, answer=answer, verdict="", outputs=tuple(outputs)
    )
    _record(out_dir, rec)
    return rec


def bli_numbers(frame: pd.DataFrame) -> dict[str, Any]:
    g = frame.groupby(["encoder", "retrieval"])[["p_at_1", "map"]].mean().reset_index()
    per = {f"{r.encoder}/{r.retrieval}": {"p_at_1": r.p_at_1, "map": r.map} for r in g.itertuples()}
    by_method = frame.groupby(["method", "retrieval"])["map"].mean()
    by_size = frame.groupby(["dict_size", "retrieval"])["map"].mean()
    nn = g[g["retrieval"] == "nn"].set_index("encoder")["map"]
    cs = g[g["retrieval"] == "csls"].set_index("encoder")["map"]
    return {
        "per_encoder": per,
        "by_method": {f"{m}/{r}": float(v) for (m, r), v in by_method.items()},
        "by_dict_size": {f"{d}/{r}": float(v) for (d, r), v in by_size.items()},
        "best_nn": str(nn.idxmax()),
        "best_nn_map": float(nn.max()),
        "csls_gain_mean": float((cs - nn).mean()),
        "csls_helps": int((cs > nn).sum()),
        "n_encoders": int(nn.size),
    }


def bli_answer(numbers: dict[str, Any], info: RunInfo, test_sizes: dict[str, int]) -> str:
    bm = numbers["by_method"]
    methods = sorted({k.split("/")[0] for k in bm})
    sizes = sorted({int(k.split("/")[0]) for k in numbers["by_dict_size"]})
    parts = [
        f"On held-out FreeDict pairs ({', '.join(f'{k}: {v} words' for k, v in test_sizes.items())}), mean MAP over "
        "languages with nearest-neighbour retrieval: "
        + ", ".join(f"{m} {bm[f'{m}/nn']:.3f}" for m in methods)
        + "; by seed dictionary size: "
        + ", ".join(f"{s} {numbers['by_dict_size'][f'{s}/nn']:.3f}" for s in sizes)
        + "."
    ]
    parts.append(
        f"The best model is {numbers['best_nn']} (MAP {numbers['best_nn_map']:.3f}). CSLS changes MAP by "
        f"{numbers['csls_gain_mean']:+.3f} on average and helps {numbers['csls_helps']} of {numbers['n_encoders']} models."
    )
    return " ".join(parts) + _synthetic_note(info)


AGREEMENT_METRICS = {
    "XLR R@1": "xlr_r1",
    "XLR R@k": "xlr_rk",
    "XLR MRR": "xlr_mrr",
    "BkR": "bkr",
    "BkR MRR": "bkr_mrr",
    "CORR": "corr",
}


def agreement_step(
    run: RunArtifacts,
    *,
    run_name: str,
    out_dir: Path,
    points_file: Path,
    bli_file: Path | None,
    soft_m: int,
    B: int,
    boot_seed: int,
) -> FindingsRecord:
    """Section 6b → agreement.{csv,md,json} + figures/agreement_clustermap.* . Per-encoder values
    come from calibration_points.csv (XLR R@1/R@k/MRR, BkR, soft BkR, CORR), the metrics CSVs
    (BkR MRR) and bli.csv (MAP, nearest neighbour), each averaged over directions and seeds."""
    from ..findings.agreement import agreement_matrix, agreement_table, plot_clustermap

    out_dir = Path(out_dir)
    info = run.run_info(run_name, str(out_dir.parent))
    points = pd.read_csv(points_file)
    soft_col = f"soft_bkr_m{soft_m}"
    if soft_col not in points.columns:
        raise InputError(f"{points_file}: no column {soft_col!r} (soft BkR with m={soft_m} was not computed)")
    per = points.groupby("encoder")[["xlr_r1", "xlr_rk", "xlr_mrr", "bkr", "corr", soft_col]].mean()
    if "bkr_mrr" in set(run.metrics["metric"]):
        per["bkr_mrr"] = run.metrics[run.metrics["metric"] == "bkr_mrr"].groupby("encoder")["value"].mean()
    names = {
        **{k.replace("R@k", f"R@{run.k}"): v for k, v in AGREEMENT_METRICS.items()},
        f"soft BkR (m={soft_m})": soft_col,
    }
    if bli_file is not None and Path(bli_file).is_file() and Path(bli_file).stat().st_size > 1:
        bli = pd.read_csv(bli_file)
        if len(bli):
            nn = bli[bli["retrieval"] == "nn"].groupby("encoder")["map"].mean()
            per["bli_map"] = nn
            names["BLI MAP"] = "bli_map"
    names = {k: v for k, v in names.items() if v in per.columns}
    wide = per.rename(columns={v: k for k, v in names.items()})[list(names)]
    table = agreement_table(wide, list(names), B=B, seed=boot_seed)
    matrix = agreement_matrix(table, list(names))
    md = (
        f"## Agreement matrix — {info.label()}\n\nSpearman ρ across encoders between per-encoder means "
        f"(over directions and seeds; BLI over languages, word-vector encoders only) with 95% bootstrap CIs over encoders "
        f"(B={B}).\n\n"
        + markdown_table(table.drop(columns=["encoders"]), 3)
        + "\n### Matrix\n\n"
        + markdown_table(matrix.reset_index().rename(columns={"index": "metric"}), 2)
        + "\n### Per-encoder values\n\n"
        + markdown_table(wide.reset_index(), 4)
    )
    outputs = _write_tables(out_dir, "agreement", table, md)
    plot_clustermap(
        matrix,
        out_dir / "figures" / "agreement_clustermap",
        f"{'SYNTHETIC — ' if info.synthetic else ''}{info.dataset}: agreement across encoders (Spearman)",
    )
    outputs += _figure_outputs("agreement_clustermap")
    numbers = {
        "pairs": {
            f"{r.metric_a} ~ {r.metric_b}": {"spearman": r.spearman, "low": r.low, "high": r.high, "n": r.n_encoders}
            for r in table.itertuples()
        },
        "metrics": list(names),
    }
    answer = agreement_answer(table, info, f"XLR R@{run.k}")
    rec = FindingsRecord(
        analysis="agreement",
        run=info,
        settings={"B": B, "bootstrap_seed": boot_seed, "soft_m": soft_m},
        numbers=numbers,
        answer=answer,
        verdict="",
        outputs=tuple(outputs),
    )
    _record(out_dir, rec)
    return rec


def agreement_answer(table: pd.DataFrame, info: RunInfo, xlr: str) -> str:
    from ..findings.document import fmt_ci

    ref = table[(table["metric_a"] == xlr) | (table["metric_b"] == xlr)].copy()
    ref["other"] = np.where(ref["metric_a"] == xlr, ref["metric_b"], ref["metric_a"])
    ref = ref[~ref["other"].str.startswith("XLR")].sort_values("spearman", ascending=False)
    parts = [
        f"Agreement with {xlr} across encoders (Spearman, 95% CI over encoders): "
        + "; ".join(f"{r.other} {fmt_ci(r.spearman, r.low, r.high, 2)} (n={r.n_encoders})" for r in ref.itertuples())
        + "."
    ]
    valid = table.dropna(subset=["spearman"])
    if len(valid):
        lo = valid.sort_values("spearman").iloc[0]
        parts.append(
            f"The least agreeing pair is {lo.metric_a} vs {lo.metric_b} (ρ = {lo.spearman:.2f}, n={lo.n_encoders})."
        )
    return " ".join(parts) + _synthetic_note(info)


# ============================================================================================
# across configurations: overall verdict, calibration leave-one-dataset-out, docs/FINDINGS.md,
# the README's verdict sentence


def summary_records(record_files: Sequence[Path], summary_dir: Path) -> list[FindingsRecord]:
    """The cross-configuration records (``overall``, ``calibration_lodo``) from every
    configuration's records; their tables and figures go to ``summary_dir``."""
    from ..findings import calibration as cal
    from ..findings import inference as inf
    from ..findings.document import read_record

    summary_dir = Path(summary_dir)
    recs = [(Path(p), read_record(p)) for p in record_files]
    out = []
    cells = inf.overall_cells([r for _, r in recs])
    inf_recs, inf_reps, stale = [], [], []
    for path, rec in recs:
        if rec.analysis == "inference" and rec.status == "ok" and rec.run is not None:
            if "replicates_file" not in rec.settings:  # a record from before the joint bootstrap
                stale.append(rec.run.run_name)
                continue
            rp = path.parent / str(rec.settings["replicates_file"])
            if not rp.is_file():
                raise InputError(f"{rp}: missing; the inference record {path} needs its replicate table")
            inf_recs.append(rec)
            inf_reps.append(pd.read_csv(rp))
    cells = cells[~cells["run_name"].isin(stale)].reset_index(drop=True)
    pooled = inf.joint_pooled(inf_recs, inf_reps)
    answer, verdict = inf.overall_text(cells, pooled)
    if stale:
        note = (
            f" Left out: the inference records of {', '.join(sorted(stale))}, made before the joint bootstrap "
            "(no replicate table); rerun their `snakemake findings`."
        )
        if pooled:
            answer, verdict = answer + note, verdict + note
        else:
            verdict = (
                f"No overall verdict: the inference records of {', '.join(sorted(stale))} were made before the "
                "joint encoder × image bootstrap (their cells were treated as independent) and have no replicate "
                "table; rerun their `snakemake findings`."
            )
            answer = verdict
    outputs: list[str] = []
    if len(cells):
        io.write_csv(summary_dir / "overall.csv", cells)
        io.write_text(
            summary_dir / "overall.md",
            "## BkR − CORR per dataset × direction\n\n" + markdown_table(cells, 3) + "\n" + answer + "\n",
        )
        outputs = ["overall.md", "overall.csv"]
        if pooled:
            inf.plot_forest(cells, pooled, summary_dir / "figures" / "overall_forest")
            outputs += _figure_outputs("overall_forest")
    out.append(
        FindingsRecord(
            analysis="overall",
            run=None,
            settings={
                "method": "joint Poisson bootstrap (weights keyed by encoder name and image id), mean over cells"
            },
            numbers={"pooled": pooled, "n_cells": int(len(cells[cells["stat"] == "pearson"])) if len(cells) else 0},
            answer=answer,
            verdict=verdict,
            outputs=tuple(outputs),
        )
    )
    frames = []
    for path, rec in recs:
        if rec.analysis == "calibration" and rec.status == "ok":
            pts = path.parent / "calibration_points.csv"
            if not pts.is_file():
                raise InputError(f"{pts}: missing; the calibration record {path} names it")
            frames.append(pd.read_csv(pts))
    datasets: list[str] = []
    summary = pd.DataFrame()
    lodo_outputs: list[str] = []
    if frames:
        points = pd.concat(frames, ignore_index=True)
        datasets = sorted(points["dataset"].unique())
        if len(datasets) >= 2:
            cells_c = cal.cell_means(points[[c for c in points.columns if not c.startswith("soft_")]])
            pred = pd.concat(
                [cal.leave_one_group_out(cells_c, "dataset", t) for t in ("xlr_r1", "xlr_rk")], ignore_index=True
            )
            summary = cal.error_summary(pred)
            io.write_csv(summary_dir / "calibration_lodo.csv", pred)
            io.write_text(
                summary_dir / "calibration_lodo.md",
                "## Calibration, leave one dataset out\n\n" + markdown_table(summary, 4),
            )
            lodo_outputs = ["calibration_lodo.md", "calibration_lodo.csv"]
    ans_c, verdict_c = cal.lodo_text(summary, datasets)
    out.append(
        FindingsRecord(
            analysis="calibration_lodo",
            run=None,
            settings={"models": list(cal.MODELS)},
            numbers={
                "datasets": datasets,
                "errors": {
                    f"{r.model}/{r.target}": {"mae": r.mae, "rmse": r.rmse, "bias": r.bias, "n": r.n}
                    for r in summary.itertuples()
                }
                if len(summary)
                else {},
            },
            answer=ans_c,
            verdict=verdict_c,
            outputs=tuple(lodo_outputs),
        )
    )
    for rec in out:
        write_record(summary_dir / f"{rec.analysis}.json", rec)
    return out


def document_step(
    record_files: Sequence[Path],
    *,
    doc: Path,
    summary_dir: Path,
    readme: Path | None = None,
) -> None:
    """The cross-configuration records, docs/FINDINGS.md, and (``readme``) the README's block."""
    from ..findings.document import read_record, render_findings, update_readme_block

    record_files = sorted(
        {Path(p) for p in record_files if Path(p).name not in ("overall.json", "calibration_lodo.json")}
    )
    per_run = [read_record(p) for p in record_files]
    cross = summary_records(record_files, summary_dir)
    records = per_run + cross
    doc = Path(doc)
    text = render_findings(records, doc_dir=_posix_rel(doc.parent), summary_dir=_posix_rel(Path(summary_dir)))
    if readme is not None:
        readme = Path(readme)
        new = update_readme_block(readme.read_text(encoding="utf-8"), records, str(readme))
        io.write_text(doc, text)
        if new != readme.read_text(encoding="utf-8"):
            io.write_text(readme, new)
    else:
        io.write_text(doc, text)


def _posix_rel(p: Path) -> str:
    return Path(p).as_posix()


# ============================================================================================
# 2. image quality, 3. sample size, 4. hubness


def load_texts(text_files: Mapping[tuple[str, str], Path]) -> dict[str, dict[str, Lookup]]:
    """``{(encoder, lang): npz}`` → ``{encoder: {lang: lookup}}``; a skipped model is left out
    (with a warning), as in the metrics step."""
    out: dict[str, dict[str, Lookup]] = {}
    skipped = set()
    for (enc, lang), path in sorted(text_files.items()):
        lk = load_embedding(Path(path))
        if lk is None:
            log.warning("encoder %s skipped: %s", enc, skipped_reason(Path(path)))
            skipped.add(enc)
            continue
        out.setdefault(enc, {})[lang] = lk
    for enc in skipped:
        out.pop(enc, None)
    if len(out) < 3:
        raise InputError(f"findings: agreement across encoders needs >= 3 encoders with embeddings, got {sorted(out)}")
    return out


def load_image(path: Path) -> Lookup:
    lk = load_embedding(Path(path))
    if lk is None:
        raise InputError(f"{path}: image backbone was skipped; the analysis needs image features")
    return lk


def _samples(samples_files: list[Path], max_seeds: int | None) -> list:
    """The samples of every file, the first ``max_seeds`` seeds of each (file order)."""
    out = []
    for p in samples_files:
        s = read_samples(Path(p))
        out.extend(s if max_seeds is None else s[:max_seeds])
    if not out:
        raise InputError("findings: no samples given")
    return out


def _verdict(answer: str) -> str:
    """The first sentence of a generated answer (its headline)."""
    head = re.split(r"(?<=[.!?])\s+(?=[A-Z])", answer.strip(), maxsplit=1)[0]
    return head if head.endswith((".", "!", "?")) else head + "."


def _write_outputs(
    out_dir: Path,
    analysis: str,
    answer: str,
    run: RunInfo,
    summary: pd.DataFrame,
    samples: pd.DataFrame,
    numbers: dict,
    settings: dict,
    extra_md: str = "",
) -> FindingsRecord:
    """``<analysis>.{csv,md}``, the per-sample rows ``<analysis>.samples.csv`` and the record
    ``<analysis>.json`` (:class:`~backretrieval.findings.document.FindingsRecord`); the figures
    ``figures/<analysis>.*`` are written by the step before."""
    from ..findings.document import QUESTION_BY_ANALYSIS

    out_dir = Path(out_dir)
    q = QUESTION_BY_ANALYSIS[analysis]
    io.write_csv(out_dir / f"{analysis}.samples.csv", samples)
    io.write_csv(out_dir / f"{analysis}.csv", summary)
    label = "SYNTHETIC data. " if run.synthetic else ""
    md = [
        f"## {q.title}",
        "",
        f"*{q.question}*",
        "",
        f"{label}Configuration `{run.run_name}` ({run.dataset}). Settings: "
        + ", ".join(f"{k}={v}" for k, v in settings.items()),
        "",
        answer,
        "",
        markdown_table(summary),
    ]
    if extra_md:
        md += ["", extra_md]
    io.write_text(out_dir / f"{analysis}.md", "\n".join(md))
    outputs = (f"{analysis}.md", f"{analysis}.csv", f"{analysis}.samples.csv", *_figure_outputs(analysis))
    rec = FindingsRecord(
        analysis=analysis,
        run=run,
        settings=settings,
        numbers=numbers,
        answer=answer,
        verdict=_verdict(answer),
        outputs=outputs,
    )
    _record(out_dir, rec)
    return rec


# ---- question 2: image quality ---------------------------------------------------------------


def parse_degradations(noise: list[float], project: list[int], shuffle: bool) -> list[tuple[str, float | int | None]]:
    return (
        [("noise", float(x)) for x in noise]
        + [("project", int(x)) for x in project]
        + ([("shuffle", None)] if shuffle else [])
    )


def image_quality_step(
    *,
    dataset: Path,
    samples_files: list[Path],
    text_files: Mapping[tuple[str, str], Path],
    image_files: Mapping[str, Path],
    base: str,
    degradations: list[tuple[str, float | int | None]],
    k: int,
    max_seeds: int | None,
    seed: int,
    out_dir: Path,
    run: RunInfo,
) -> FindingsRecord:
    """Question 2 on one config: every backbone of ``image_files`` plus the ``degradations``
    of the ``base`` backbone, on the same samples (the first ``max_seeds`` of each direction)."""
    if base not in image_files:
        raise InputError(
            f"findings image quality: base backbone {base!r} is not among the image files {sorted(image_files)}"
        )
    meta = read_meta(dataset)
    items = load_items(dataset)
    texts = load_texts(text_files)
    variants: dict[str, Lookup] = {name: load_image(p) for name, p in image_files.items()}
    base_index, base_emb = variants[base]
    for i, (kind, level) in enumerate(degradations):
        name = f"{base}:{iq.variant_name(kind, level)}"
        variants[name] = (base_index, iq.degrade(base_emb, kind, level, seed + i))
    scenes = None
    concept = None
    if meta.synthetic and (Path(dataset) / "scenes.jsonl").is_file():
        from ..data.synthetic import load_scenes

        scenes = load_scenes(dataset)
        concept = _concept_precisions(items, scenes, variants, k)
    samples = _samples(samples_files, max_seeds)
    per_enc, per_sample = iq.image_quality_metrics(iter_views(samples, items, texts), variants, k=k, scenes=scenes)
    order = [n for n in image_files] + [n for n in variants if n not in image_files]
    summary = iq.summarize_image_quality(per_enc, per_sample, k, concept, order=order)
    n = int(per_sample["n"].iloc[0])
    text = iq.answer(summary, base=base, dataset=meta.name, synthetic=meta.synthetic, k=k, n=n, n_encoders=len(texts))
    settings = dict(
        k=k,
        N=n,
        samples=len(samples),
        max_seeds_per_direction=max_seeds,
        seed=seed,
        encoders=sorted(texts),
        backbones=sorted(image_files),
        base=base,
        degradations=[iq.variant_name(kd, lv) for kd, lv in degradations],
    )
    numbers = {"per_variant": summary.set_index("variant").to_dict(orient="index")}
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: image quality vs BkR's agreement with XLR"
    iq.plot_image_quality(summary, Path(out_dir) / "figures" / "image_quality", fig_title)
    samples_df = per_enc.merge(per_sample, on=["variant", "direction", "seed"], how="left")
    return _write_outputs(Path(out_dir), "image_quality", text, run, summary, samples_df, numbers, settings)


def _concept_precisions(
    items: pd.DataFrame, scenes: Mapping[str, Mapping], variants: Mapping[str, Lookup], k: int
) -> dict[str, float]:
    """Same-concept precision@k of every variant over all images of the dataset (SYNTHETIC:
    concept = kind of the scene's main object)."""
    first = items.drop_duplicates("image_id")
    label_of = {img: iq.scene_main_kind(scenes[item]) for img, item in zip(first["image_id"], first["item_id"])}
    out = {}
    for name, (index, emb) in variants.items():
        ids = [i for i in sorted(index, key=lambda i: index[i]) if i in label_of]
        feats = emb[[index[i] for i in ids]]
        out[name] = iq.concept_precision(feats, np.array([label_of[i] for i in ids]), k)
    return out


# ---- question 3: sample size -------------------------------------------------------------


def sample_size_step(
    *,
    dataset: Path,
    text_files: Mapping[tuple[str, str], Path],
    image_file: Path,
    directions: list[str],
    n_grid: list[int],
    seeds: list[int],
    k: int,
    baseline: str | None,
    out_dir: Path,
    run: RunInfo,
    criterion: ss.Criterion | None = None,
) -> FindingsRecord:
    """Question 3 on one prepared dataset (the scaled SYNTHETIC one, or a real config's):
    N values above what the dataset allows (2N items with texts in both languages) are dropped
    with a warning."""
    criterion = criterion or ss.Criterion()
    meta = read_meta(dataset)
    items = load_items(dataset)
    texts = load_texts(text_files)
    image = load_image(image_file)
    if baseline is not None and baseline not in texts:
        raise InputError(f"findings sample size: baseline encoder {baseline!r} has no embeddings ({sorted(texts)})")
    max_n = min(_parallel_items(items, d) for d in directions) // 2
    grid = sorted(n for n in set(n_grid) if n <= max_n)
    dropped = sorted(n for n in set(n_grid) if n > max_n)
    if dropped:
        log.warning("sample size: N %s dropped: %s has at most %d items per side", dropped, meta.name, max_n)
    if len(grid) < 2:
        raise InputError(
            f"findings sample size: {meta.name} allows N <= {max_n}; fewer than 2 values of {sorted(n_grid)} remain"
        )
    per_enc = ss.sample_size_metrics(items, texts, image, directions, grid, seeds, k=k, parallel=meta.parallel)
    stab = ss.ranking_stability(per_enc, k, baseline=baseline, criterion=criterion)
    text = ss.answer(
        stab,
        dataset=meta.name,
        synthetic=meta.synthetic,
        k=k,
        n_encoders=len(texts),
        n_seeds=len(seeds),
        directions=list(directions),
        baseline=baseline,
        criterion=criterion,
    )
    numbers = {
        "smallest_stable_n": ss.smallest_reliable_n(stab, "stab_reliable_share", criterion),
        "smallest_valid_n": ss.smallest_reliable_n(stab, "valid_reliable_share", criterion),
        "criterion": criterion.text(),
        "per_n": stab.set_index("n").to_dict(orient="index"),
        "mean_bkr": per_enc.groupby(["n", "encoder"])["bkr_recall"].mean().unstack().to_dict(orient="index"),
    }
    settings = dict(
        k=k,
        n_grid=grid,
        n_dropped=dropped,
        seeds=list(seeds),
        directions=list(directions),
        encoders=sorted(texts),
        baseline=baseline,
        dataset=meta.name,
        items_per_side_max=max_n,
    )
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: BkR's encoder ranking vs N"
    ss.plot_sample_size(stab, per_enc, k, Path(out_dir) / "figures" / "sample_size", fig_title, criterion)
    means = per_enc.groupby(["n", "encoder"])[["xlr_r1", "xlr_recall", "bkr_recall"]].mean().reset_index()
    return _write_outputs(
        Path(out_dir),
        "sample_size",
        text,
        run,
        stab,
        per_enc,
        numbers,
        settings,
        extra_md="Mean metrics per N and encoder:\n\n" + markdown_table(means, 4),
    )


def _parallel_items(items: pd.DataFrame, direction: str) -> int:
    src, tgt = direction.split("-")
    return len(set(items.loc[items.lang == src, "item_id"]) & set(items.loc[items.lang == tgt, "item_id"]))


# ---- question 4: hubness -----------------------------------------------------------------


def hubness_step(
    *,
    dataset: Path,
    samples_files: list[Path],
    text_files: Mapping[tuple[str, str], Path],
    image_file: Path,
    retrievals: list[str],
    hub_fraction: float,
    hub_noise: float,
    k: int,
    max_seeds: int | None,
    seed: int,
    out_dir: Path,
    run: RunInfo,
) -> FindingsRecord:
    """Question 4 on one config's cached samples and embeddings."""
    meta = read_meta(dataset)
    items = load_items(dataset)
    texts = load_texts(text_files)
    image = load_image(image_file)
    samples = _samples(samples_files, max_seeds)
    df = hub_mod.hubness_metrics(
        iter_views(samples, items, texts),
        image,
        retrievals=retrievals,
        hub_fraction=hub_fraction,
        hub_noise=hub_noise,
        k=k,
        seed=seed,
    )
    per_enc, summary = hub_mod.summarize_hubness(df)
    n = int(df["n"].iloc[0])
    n_hubs = int(df.loc[df.condition == "hubs", "n_hubs"].max())
    text = hub_mod.answer(
        per_enc, summary, dataset=meta.name, synthetic=meta.synthetic, k=k, n=n, n_hubs=n_hubs, n_encoders=len(texts)
    )
    numbers = {
        "per_setting": {f"{r.condition}/{r.retrieval}": r._asdict() for r in summary.itertuples(index=False)},
        "per_encoder": {
            f"{r.condition}/{r.retrieval}/{r.encoder}": r._asdict() for r in per_enc.itertuples(index=False)
        },
    }
    settings = dict(
        k=k,
        N=n,
        samples=len(samples),
        max_seeds_per_direction=max_seeds,
        retrievals=list(retrievals),
        csls_k=CSLS_K,
        margin_k=MARGIN_K,
        hub_fraction=hub_fraction,
        n_hubs=n_hubs,
        hub_noise=hub_noise,
        occurrence_k=10,
        seed=seed,
        encoders=sorted(texts),
    )
    fig_title = f"{'SYNTHETIC — ' if meta.synthetic else ''}{meta.name}: hubness of BkR step 1"
    hub_mod.plot_hubness(per_enc, summary, Path(out_dir) / "figures" / "hubness", fig_title)
    return _write_outputs(
        Path(out_dir),
        "hubness",
        text,
        run,
        summary,
        df,
        numbers,
        settings,
        extra_md="Per encoder (means over samples):\n\n" + markdown_table(per_enc),
    )


# =============================================================================================
# end of the image-side, sample-size and hubness steps
# =============================================================================================


# ============================================================================================
# settings of every analysis of one config (the rules' params)
