"""The report step: metric CSVs → correlations, significance, Table 1, Figure 2, metrics.json;
on data without parallel texts, BkR per encoder with CIs, a ranking with pairwise tests and the
random baseline instead (no XLR).

Reads only artifacts (no embeddings are computed), so "regenerate the paper's tables and
figures" is ``backretrieval step report`` on cached artifacts. Table 1 has a block of all encoders
and one of the core encoders (without the random and the English-only ones: the findings'
``core`` set, :func:`table1_sets`). Its significance marks need the per-query outcomes: the
ranks beside each metrics CSV, the samples, the image features and the text embeddings
(:func:`table1_outcomes`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import stats
from .._util import io
from ..data.prepared import DatasetMeta, load_items, read_meta
from ..errors import InputError
from ..evaluation.metric_tables import read_metrics
from ..reporting import figures, tables
from ..reporting.environment import ENVIRONMENT, environment_block
from ..reporting.ranking import RANDOM_BASELINE, rank_encoders, ranking_caption
from ..reporting.significance import significance_table, table1_marks
from ..stats.table1 import table1_tests
from . import layout
from .metrics import require_full_ranks
from .settings import WORDVEC_FAMILY

#: The settings of the report step (params.yaml keys; ``n_seeds`` = ``len(seeds)``). N and the
#: k of Recall@k are not among them: the report reads them from the metrics files (their ``n``
#: and ``k`` columns, :func:`~backretrieval.evaluation.metric_tables.metrics_protocol`).
REPORT_SETTINGS = (
    "run_name",
    "n_seeds",
    "image_backbone",
    "text_field",
    "figure_seed",
    "bootstrap_B",
    "bootstrap_seed",
    # Table 1's core block and its test's encoder families (steps.settings.encoder_roles)
    "random_encoders",
    "english_only",
    "family",
)
# optional: ``model_threads`` (recorded in metrics.json's environment block)


def figure_base(paths: dict[str, Path], prefix: str) -> Path:
    """The common stem of ``<prefix>_png/_svg/_pdf`` (a figure is written in all three formats)."""
    files = {ext: Path(paths[f"{prefix}_{ext}"]) for ext in ("png", "svg", "pdf")}
    bases = {p.with_suffix("") for p in files.values()}
    if len(bases) != 1 or any(p.suffix != f".{ext}" for ext, p in files.items()):
        raise InputError(
            f"{prefix}: the .png, .svg and .pdf outputs must share one name; got "
            + ", ".join(str(p) for p in files.values())
        )
    return bases.pop()


def build_report(
    *,
    metrics_files: list[Path],
    dataset: Path,
    text_files: dict[str, list[Path]],
    settings: dict,
    correlations_out: Path | None,
    out: dict[str, Path],
    samples_files: list[Path] | None = None,
    image_file: Path | None = None,
) -> None:
    """Every report file of ``out`` from the tidy metric CSVs, for the dataset's kind.

    Parallel data: correlations (``correlations_out``) and the files named in
    :data:`backretrieval.steps.layout.REPORT_FILES` (Table 1, Figure 2, ...). Data without
    parallel texts: :data:`~backretrieval.steps.layout.BKR_REPORT_FILES` (BkR only, see
    :func:`build_bkr_report`; no correlations: pass None).

    ``dataset``: the prepared dataset (its ``dataset.json`` names it and says whether it is
    SYNTHETIC and parallel); ``text_files``: encoder → its text embeddings, read only to list
    the encoders that were skipped (and, on parallel data, for CORR's per-query contributions);
    ``settings``: :func:`report_settings`. ``samples_files`` and ``image_file`` (parallel data):
    with the ranks beside each metrics CSV, the per-query outcomes of Table 1's test
    (:func:`~backretrieval.stats.table1.table1_tests`); without them Table 1 has no
    marks and its caption says so.
    """
    meta = read_meta(dataset)
    wanted = layout.report_files(meta.parallel)
    missing, extra = sorted(set(wanted) - set(out)), sorted(set(out) - set(wanted))
    if missing or extra:
        kind = "parallel" if meta.parallel else "not parallel (no XLR)"
        raise InputError(
            f"report: {Path(dataset) / 'dataset.json'} says the dataset is {kind}; its report needs the "
            f"outputs {sorted(wanted)}"
            + (f", missing {missing}" if missing else "")
            + (f", not made {extra}" if extra else "")
        )
    if meta.parallel and correlations_out is None:
        raise InputError("report: no output path for the correlations (--correlations)")
    if not meta.parallel and correlations_out is not None:
        raise InputError(
            f"report: {Path(dataset) / 'dataset.json'} says the dataset is not parallel: there are no "
            "correlations with XLR to write (drop --correlations)"
        )
    lacking = [k for k in REPORT_SETTINGS if k not in settings]
    if lacking:
        raise InputError(f"report settings: missing {lacking} (expected {list(REPORT_SETTINGS)})")
    s = settings
    if not meta.parallel:
        build_bkr_report(
            metrics_files=metrics_files,
            meta=meta,
            text_files=text_files,
            settings=s,
            out=out,
            dataset=Path(dataset),
            samples_files=samples_files,
        )
        return
    assert correlations_out is not None
    read = read_metrics(metrics_files)
    metrics, n, k = read.table, read.n, read.k
    correlations = stats.correlate(metrics)
    io.write_csv(correlations_out, correlations)

    B, bseed = int(s["bootstrap_B"]), int(s["bootstrap_seed"])
    encoders = [str(e) for e in metrics["encoder"].unique()]
    sets, labels, no_core = table1_sets(encoders, s)
    families = _families(encoders, s)
    tests = pd.DataFrame()
    if samples_files is not None and image_file is not None:
        outcomes = table1_outcomes(metrics_files, dataset, samples_files, image_file, text_files)
        tests = table1_tests(outcomes, B=B, seed=bseed, encoder_sets=sets, families=families)
    sig = significance_table(correlations, metrics)
    if len(sig):
        sig.insert(1, "set", "all")
    io.write_csv(out["significance"], pd.concat([tests, sig], ignore_index=True) if len(tests) else sig)
    marks = table1_marks(tests)
    blocks = [
        tables.Table1Block(name, labels[name], stats.correlate(metrics[metrics["encoder"].isin(members)]))
        for name, members in sets.items()
    ]

    label = "SYNTHETIC dataset — " if meta.synthetic else ""
    n_enc = len(encoders)
    caption = (
        f"{label}{meta.name}, image backbone {s['image_backbone']}, text field '{s['text_field']}', "
        f"N={n}, {s['n_seeds']} seeds, {n_enc} encoders. Correlation across encoders "
        f"between each metric and XLR (Recall@{k}). " + table1_marks_note(tests, B, labels, families)
    )
    if no_core:
        caption += " " + no_core
    caption += " " + SEEDS_NOTE
    io.write_text(out["table1"], tables.table1_markdown(blocks, f"Table 1 — {s['run_name']}", caption, marks))
    io.write_text(out["table1_tex"], tables.table1_latex(blocks, caption, marks=marks))
    io.write_csv(out["corr_ci"], tables.seed_cis(correlations, ["direction", "method", "stat"], "value", B, bseed))
    recall = metrics[metrics["metric"].isin(["xlr_recall", "bkr_recall", "corr"])]
    io.write_csv(out["recall_ci"], tables.seed_cis(recall, ["direction", "encoder", "metric"], "value", B, bseed))

    fig_seed = s["figure_seed"]
    figures.fig2_scatter(
        metrics,
        correlations,
        fig_seed,
        figure_base(out, "fig2"),
        f"{label}{meta.name}: XLR vs BkR per encoder (seed {fig_seed})",
        k=k,
    )
    io.write_csv(out["fig2_csv"], figures.fig2_frame(metrics, fig_seed))
    io.write_csv(out["means"], tables.encoder_means(metrics))

    skipped = _skipped(text_files)
    mj = tables.metrics_json(
        correlations,
        metrics,
        {
            "run_name": s["run_name"],
            "dataset": meta.name,
            "synthetic": meta.synthetic,
            "sample_size": n,
            "n_seeds": s["n_seeds"],
            "recall_k": k,
            "image_backbone": s["image_backbone"],
            "text_field": s["text_field"],
            "skipped_encoders": skipped,
        },
    )
    mj[ENVIRONMENT] = environment_block(s.get("model_threads"))
    io.write_json(out["metrics"], mj)
    io.write_json(out["headline"], tables.headline_json(mj))


#: the caption's sentence on the over-seeds tests
SEEDS_NOTE = (
    "The Wilcoxon and paired t-tests over seeds in significance.csv (unit: seeds, not independent: "
    "re-splits of the same items; all encoders) are kept for comparison only."
)


def table1_sets(encoders: list[str], settings: dict) -> tuple[dict[str, list[str]], dict[str, str], str]:
    """Table 1's encoder sets: ``all``, and ``core`` (without the random and the English-only
    encoders: :func:`backretrieval.stats.encoder_sets.encoder_sets`, the findings'
    definition, on the roles of :func:`backretrieval.steps.settings.encoder_roles`) where it
    differs from all and has >= 3 encoders; the block labels; and the caption's sentence on
    why there is no core block ('' where there is one)."""
    from ..stats.encoder_sets import encoder_sets

    random_, english = set(settings["random_encoders"]), set(settings["english_only"])
    found = encoder_sets(encoders, sorted(random_), settings["family"], sorted(english))
    removed_random = [e for e in encoders if e in random_]
    removed_english = [e for e in encoders if e in english and e not in random_]
    removed = removed_random + removed_english
    kinds = " and ".join(k for k, r in (("random", removed_random), ("English-only", removed_english)) if r)
    sets = {"all": found["all"]}
    labels = {"all": f"all {len(encoders)} encoders"}
    if "core" in found:
        sets["core"] = found["core"]
        labels["core"] = f"core: {len(found['core'])} encoders, without {kinds} ({', '.join(removed)})"
        return sets, labels, ""
    if not removed:
        return sets, labels, "No core block: the run has no random or English-only encoder (core = all encoders)."
    left = len(encoders) - len(removed)
    return (
        sets,
        labels,
        f"No core block: without the {kinds} encoders ({', '.join(removed)}) {left} encoder"
        f"{'' if left == 1 else 's'} {'is' if left == 1 else 'are'} left; a correlation across encoders needs >= 3.",
    )


def _families(encoders: list[str], settings: dict) -> dict[str, str]:
    """encoder → family, as the findings group them
    (:func:`backretrieval.stats.encoder_sets.encoder_families`)."""
    from ..stats.encoder_sets import encoder_families

    return encoder_families(encoders, settings["family"], WORDVEC_FAMILY)


def table1_marks_note(tests: pd.DataFrame, B: int, labels: dict[str, str], families: dict[str, str]) -> str:
    """The caption's sentences on Table 1's marks: what the test resamples, per block its
    families and degrees of freedom or why it has no marks (or that no test was run)."""
    if not len(tests):
        return "No significance marks: the per-query outcomes (ranks, samples, image features) were not given."
    members: dict[str, list[str]] = {}
    for e, f in families.items():
        members.setdefault(f, []).append(e)
    grouped = [f"the {len(m)} {f} encoders ({', '.join(m)})" for f, m in members.items() if len(m) > 1]
    if grouped:
        unit = f"{' and '.join(grouped)} {'are one family' if len(grouped) == 1 else 'one family each'}"
        unit += ", every other encoder its own"
    else:
        unit = "every encoder its own family"
    parts = [
        "Marks on the better cell: BkR − CORR (mean over seeds of the per-seed difference of the correlations with "
        "XLR) tested with the items and the encoder families as the units (a family: encoders built from the same "
        f"base vectors; here {unit}): the findings' encoders-random question, SE² = item bootstrap (B={B}, image "
        "ids resampled, shared by every seed) + leave-one-family-out jackknife over the block's families; two-sided "
        "t test (t = estimate / SE, Welch–Satterthwaite degrees of freedom of the two parts), Holm-adjusted across directions within each block (* p<.05, ** p<.01, "
        "*** p<.001)."
    ]
    for name, label in labels.items():
        g = tests[tests["set"] == name]
        if not len(g):
            continue
        n_fam = int(g["n_families"].iloc[0])
        bad = g[g["why"] != ""]
        whys = list(dict.fromkeys(bad["why"]))
        if len(bad) == len(g):
            parts.append(f"{label[0].upper()}{label[1:]}: no marks ({'; '.join(whys)}).")
            continue
        text = f"{label[0].upper()}{label[1:]}: {n_fam} families"
        for why in whys:
            where = ", ".join(f"{r.direction} {r.stat}" for r in bad[bad["why"] == why].itertuples())
            text += f"; no mark for {where}: {why}"
        parts.append(text + ".")
    return " ".join(parts)


def table1_outcomes(
    metrics_files: list[Path],
    dataset: Path,
    samples_files: list[Path],
    image_file: Path,
    text_files: dict[str, list[Path]],
) -> dict[str, tuple]:
    """``{direction: (seed outcomes, item keys, encoders)}`` for :func:`table1_tests`: the
    findings' own reader (:func:`~backretrieval.evaluation.outcomes.inference_outcomes`)
    on the run's artifacts: XLR and BkR hits from the ranks beside each metrics CSV and CORR's
    per-query contributions, checked against the metrics CSV."""
    from ..evaluation.outcomes import inference_outcomes
    from ..evaluation.run_artifacts import load_run, text_keys

    art = load_run(
        dataset=Path(dataset),
        metrics_files=[Path(p) for p in metrics_files],
        samples_files=[Path(p) for p in samples_files],
        ranks_files=[layout.ranks_path(Path(p)) for p in metrics_files],
        image_files={"image": Path(image_file)},
        text_files=text_keys([Path(p) for paths in text_files.values() for p in paths]),
    )
    return {d: inference_outcomes(art, d, None, with_corr=True) for d in art.directions}


def _skipped(text_files: dict[str, list[Path]]) -> list[dict[str, str]]:
    """The encoders whose text embeddings were skipped (``skip_unavailable``), with the reason."""
    skipped = []
    for enc, paths in text_files.items():
        for p in paths:
            reason = layout.skipped_reason(p) if Path(p).exists() else None
            if reason:
                skipped.append({"encoder": enc, "reason": reason})
                break
    return skipped


def read_bkr_ranks(metrics_files: list[Path]) -> tuple[dict[str, dict[str, dict[str, np.ndarray]]], dict[str, list]]:
    """``({encoder: {direction: {"bkr": per-query BkR ranks, seeds concatenated in seed
    order}}}, {direction: [seeds in that order]})`` from the per-query ranks beside each metrics
    CSV (``<stem>.ranks.npz``, keys ``<encoder>/<seed>/bkr``;
    :func:`~backretrieval.steps.metrics.require_full_ranks`)."""
    out: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    order: dict[str, list] = {}
    for f in metrics_files:
        frame = pd.read_csv(f)
        require_full_ranks(frame, f)
        ranks = io.load_npz(layout.ranks_path(Path(f)))
        for d, sub in frame.groupby("direction", sort=False):
            seeds = sorted(set(int(x) for x in sub["seed"]))
            order[str(d)] = seeds
            for enc in sorted(set(sub["encoder"])):
                arrays = []
                for seed in seeds:
                    key = f"{enc}/{seed}/bkr"
                    if key not in ranks:
                        raise InputError(f"{layout.ranks_path(Path(f))}: no per-query BkR ranks '{key}'")
                    arrays.append(np.asarray(ranks[key]))
                out.setdefault(enc, {})[str(d)] = {"bkr": np.concatenate(arrays)}
    return out, order


def query_units(dataset: Path, samples_files: list[Path], seeds: dict[str, list]) -> dict[str, np.ndarray]:
    """Per direction, the image id of every query of the samples of ``seeds[direction]`` (in
    that order, as :func:`read_bkr_ranks` concatenates the ranks): the unit of the tests."""
    from ..data.sampling import read_samples
    from ..evaluation.core import image_of_items

    image_of = image_of_items(load_items(dataset))
    by_direction = {}
    for f in samples_files:
        samples = read_samples(Path(f))
        if samples:
            by_direction[f"{samples[0].src_lang}-{samples[0].tgt_lang}"] = {s.seed: s for s in samples}
    out = {}
    for d, want in seeds.items():
        if d not in by_direction:
            raise InputError(f"report: no samples file for direction {d} (given: {[str(p) for p in samples_files]})")
        src = d.split("-")[0]
        missing = [s for s in want if s not in by_direction[d]]
        if missing:
            raise InputError(f"report: the samples of {d} have no seed(s) {missing}")
        out[d] = np.asarray([image_of[src][i] for s in want for i in by_direction[d][s].queries], dtype=object)
    return out


def target_duplicates(dataset: Path, samples_files: list[Path], text_field: str) -> dict[str, dict[str, list[int]]]:
    """Per direction (the samples files' order), :func:`~backretrieval.evaluation.core.duplicate_targets`
    of its samples: the targets whose text (``text_field``, as embedded) repeats another's."""
    from ..data.prepared import texts_for
    from ..data.sampling import read_samples
    from ..evaluation.core import duplicate_targets

    items = load_items(dataset)
    out = {}
    for f in samples_files:
        samples = read_samples(Path(f))
        if samples:
            ids, texts = texts_for(items, samples[0].tgt_lang, text_field)
            out[f"{samples[0].src_lang}-{samples[0].tgt_lang}"] = duplicate_targets(
                samples, dict(zip(ids.tolist(), texts))
            )
    return out


def read_bkr_hits(metrics_files: list[Path], k: int) -> dict[str, dict[str, np.ndarray]]:
    """``{encoder: {direction: per-query BkR hits, seeds concatenated in seed order}}`` from the
    per-query BkR ranks beside each metrics CSV (``<stem>.ranks.npz``, keys
    ``<encoder>/<seed>/bkr``; :func:`~backretrieval.steps.metrics.require_full_ranks`)."""
    hits: dict[str, dict[str, np.ndarray]] = {}
    for f in metrics_files:
        frame = pd.read_csv(f)
        require_full_ranks(frame, f)
        ranks = io.load_npz(layout.ranks_path(Path(f)))
        for d, sub in frame.groupby("direction", sort=False):
            seeds = sorted(set(int(x) for x in sub["seed"]))
            for enc in sorted(set(sub["encoder"])):
                arrays = []
                for seed in seeds:
                    key = f"{enc}/{seed}/bkr"
                    if key not in ranks:
                        raise InputError(f"{layout.ranks_path(Path(f))}: no per-query BkR ranks '{key}'")
                    r = np.asarray(ranks[key])
                    arrays.append(r <= k)
                hits.setdefault(enc, {})[str(d)] = np.concatenate(arrays)
    return hits


def build_bkr_report(
    *,
    metrics_files: list[Path],
    meta: DatasetMeta,
    text_files: dict[str, list[Path]],
    settings: dict,
    out: dict[str, Path],
    dataset: Path | None = None,
    samples_files: list[Path] | None = None,
) -> None:
    """The report of a dataset without parallel texts (the method's main use; no XLR): the
    files of :data:`~backretrieval.steps.layout.BKR_REPORT_FILES`.

    ``bkr_ci``, ``ranking``, ``pairwise`` and ``bkr_report``: the tables and the Markdown of
    :func:`~backretrieval.reporting.ranking.rank_encoders` (as ``backretrieval rank`` writes
    them): BkR per direction and encoder with CIs over seeds beside the random baseline, the
    ranking, every pair (a paired permutation test over distinct items, Holm-adjusted), the
    reason there is no XLR; the figure; ``metrics``: the DVC metrics file; ``means``.
    ``dataset`` and ``samples_files``: the items of every query (the unit of the tests and
    intervals); without them the report has no tests and no intervals and says why.
    """
    s = settings
    B, bseed = int(s["bootstrap_B"]), int(s["bootstrap_seed"])
    read = read_metrics(metrics_files)
    metrics, n, k = read.table, read.n, read.k
    if "xlr_recall" in set(metrics["metric"]):
        raise InputError(
            f"report: the metrics files {[str(p) for p in metrics_files]} hold XLR, but the dataset "
            f"{meta.name} is not parallel: recompute the metrics"
        )
    ranks, seed_order = read_bkr_ranks(list(metrics_files))
    units = (
        query_units(Path(dataset), [Path(p) for p in samples_files], seed_order)
        if dataset is not None and samples_files
        else None
    )
    duplicates = (
        target_duplicates(Path(dataset), [Path(p) for p in samples_files], str(s["text_field"]))
        if dataset is not None and samples_files
        else None
    )
    r = rank_encoders(
        metrics, ranks, units, k=k, sample_size=n, n_seeds=int(s["n_seeds"]), B=B, seed=bseed, duplicates=duplicates
    )
    cis, ranking, baseline = r.cis, r.ranking, r.baseline
    io.write_csv(out["bkr_ci"], cis)
    io.write_csv(out["ranking"], ranking)
    io.write_csv(out["pairwise"], r.pairwise)
    caption = ranking_caption(
        dataset=meta.name,
        synthetic=meta.synthetic,
        parallel=False,
        image_backbone=s["image_backbone"],
        text_field=s["text_field"],
        sample_size=n,
        n_seeds=s["n_seeds"],
        n_encoders=len(ranking),
    )
    io.write_text(out["bkr_report"], r.markdown(title=f"BkR — {s['run_name']}", caption=caption))
    label = "SYNTHETIC dataset — " if meta.synthetic else ""
    figures.bkr_bars(
        cis,
        [*ranking["encoder"], RANDOM_BASELINE],
        RANDOM_BASELINE,
        k,
        figure_base(out, "bkr"),
        f"{label}{meta.name}: BkR Recall@{k} per encoder (mean over {s['n_seeds']} seeds, 95% CI)",
    )
    io.write_csv(out["means"], tables.encoder_means(metrics))
    mj = tables.bkr_metrics_json(
        metrics,
        ranking,
        baseline,
        {
            "run_name": s["run_name"],
            "dataset": meta.name,
            "synthetic": meta.synthetic,
            "parallel": False,
            "sample_size": n,
            "n_seeds": s["n_seeds"],
            "recall_k": k,
            "image_backbone": s["image_backbone"],
            "text_field": s["text_field"],
            "skipped_encoders": _skipped(text_files),
        },
    )
    mj[ENVIRONMENT] = environment_block(s.get("model_threads"))
    io.write_json(out["metrics"], mj)
    io.write_json(out["headline"], tables.headline_json(mj))
