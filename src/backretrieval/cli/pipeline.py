"""The pipeline steps the Snakemake rules run: data, embedding, metrics, reports, case study,
human study. Each reads the files named by its input flags, writes the files named by its output
flags and takes its settings as flags (JSON for a config section); none derives a path from a
config (the artifact layout is ``backretrieval.steps.layout``)."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from ..steps.layout import BKR_REPORT_FILES, CASE_REPORT_FILES, REPORT_FILES
from ._args import (
    CASE_FIELDS,
    case,
    case_section,
    dataset,
    files,
    grid,
    json_object,
    model_job,
    named_outputs,
    opt,
    optional_path,
    outputs,
    recall_k,
    req,
    seeds,
    spec,
    switch,
    text_field,
    threads,
)

log = logging.getLogger("backretrieval")

# ------------------------------------------------------------------------------ data


def cmd_prepare(args: argparse.Namespace) -> int:
    from ..steps.prepare import prepare_step

    prepare_step(args.spec, args.languages, Path(args.out), optional_path(args.source_dir))
    return 0


def cmd_check_dataset(args: argparse.Namespace) -> int:
    from ..steps.prepare import check_step

    check_step(args.requirements, Path(args.dataset), Path(args.out))
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from ..steps.sample import sample_step

    sample_step(Path(args.dataset), args.direction, args.sample_size, args.seeds, [Path(p) for p in args.out])
    return 0


# ------------------------------------------------------------------------------ embedding


def cmd_embed_text(args: argparse.Namespace) -> int:
    from ..steps.embed import embed_text_step

    outs = grid(args.out, "--out", ("--languages", args.languages))
    embed_text_step(
        Path(args.dataset),
        args.encoder,
        args.spec,
        args.text_field,
        outs,
        optional_path(args.cache_dir),
        args.skip_unavailable,
        args.threads,
    )
    return 0


def cmd_embed_images(args: argparse.Namespace) -> int:
    from ..steps.embed import embed_dataset_images

    embed_dataset_images(
        Path(args.dataset),
        args.backbone,
        args.spec,
        Path(args.out),
        optional_path(args.cache_dir),
        threads=args.threads,
    )
    return 0


# ------------------------------------------------------------------------------ metrics


def cmd_metrics(args: argparse.Namespace) -> int:
    from ..steps.metrics import metrics_step

    text = grid(args.text, "--text", ("--encoders", args.encoders), ("source/target", ["src", "tgt"]))
    t0 = time.perf_counter()
    metrics_step(
        dataset=Path(args.dataset),
        dataset_name=args.dataset_name,
        direction=args.direction,
        samples_file=Path(args.samples),
        image_file=Path(args.images),
        backbone=args.backbone,
        text_files={e: (text[e]["src"], text[e]["tgt"]) for e in args.encoders},
        text_field=args.text_field,
        k=args.recall_k,
        corr_max_pairs=args.corr_max_pairs,
        out=Path(args.out),
        seeds=args.seeds,
    )
    log.info("metrics %s: %.1fs", args.direction, time.perf_counter() - t0)
    return 0


def cmd_metrics_gather(args: argparse.Namespace) -> int:
    from ..steps.metrics import gather_metrics

    gather_metrics([Path(p) for p in args.parts], Path(args.out))
    return 0


# ------------------------------------------------------------------------------ reports


def cmd_report(args: argparse.Namespace) -> int:
    from ..steps.report import build_report

    text = grid(args.text, "--text", ("--encoders", args.encoders), ("--languages", args.languages))
    names = [n for n in {**REPORT_FILES, **BKR_REPORT_FILES} if getattr(args, n) is not None]
    build_report(
        metrics_files=[Path(p) for p in args.metrics_csv],
        dataset=Path(args.dataset),
        text_files={e: [text[e][lang] for lang in args.languages] for e in args.encoders},
        settings=args.settings,
        correlations_out=optional_path(args.correlations),
        out=outputs(args, names),
        samples_files=[Path(p) for p in args.samples] if args.samples else None,
        image_file=optional_path(args.image_emb),
    )
    return 0


def cmd_results_doc(args: argparse.Namespace) -> int:
    from ..steps.results_doc import write_results_doc

    write_results_doc(args.run_configs, args.reports, args.dvc_runs, args.out)
    return 0


# ------------------------------------------------------------------------------ case study


def cmd_case_embed(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    c = case_section(args)
    fields = grid(
        args.fields, "--fields", ("case_study.languages", list(c["languages"])), ("fields", list(CASE_FIELDS))
    )
    reprs = grid(args.repr, "--repr", ("case_study.languages", list(c["languages"])))
    cs.embed_step(
        Path(args.dataset), c, args.encoder, args.spec, optional_path(args.cache_dir), fields, reprs, args.threads
    )
    return 0


def cmd_case_select(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    c = case_section(args)
    reprs = grid(args.repr, "--repr", ("--models", args.models), ("case_study.languages", list(c["languages"])))
    chosen = cs.select_step(Path(args.dataset), c, Path(args.images), reprs, Path(args.out_json), Path(args.out_csv))
    log.info("case study: heads will be trained on %s", chosen)
    return 0


def cmd_case_train(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    c = case_section(args)
    fields = grid(
        args.fields,
        "--fields",
        ("--encoders", args.encoders),
        ("case_study.languages", list(c["languages"])),
        ("fields", list(CASE_FIELDS)),
    )
    reprs = grid(args.repr, "--repr", ("case_study.languages", list(c["languages"])))
    out = {
        "head": Path(args.head_out),
        "meta": Path(args.meta_out),
        "history": Path(args.history_out),
        "curve": Path(args.curve_out),
    }
    cs.train_step(
        Path(args.dataset), c, args.head, args.training_seed, Path(args.chosen), fields, out, reprs, args.threads
    )
    return 0


def cmd_case_evaluate(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    c = case_section(args)
    reprs = grid(args.repr, "--repr", ("--models", args.models), ("case_study.languages", list(c["languages"])))
    cs.evaluate_step(Path(args.dataset), c, Path(args.images), reprs, Path(args.out_csv), Path(args.out_hits))
    return 0


def cmd_case_report(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    cs.report_step(
        Path(args.dataset),
        case_section(args),
        Path(args.chosen),
        Path(args.bkr),
        Path(args.hits),
        outputs(args, CASE_REPORT_FILES),
        args.threads,
    )
    return 0


# ------------------------------------------------------------------------------ human study


def cmd_human_sheets(args: argparse.Namespace) -> int:
    from ..steps import human_study as hs

    reprs = grid(args.repr, "--repr", ("--models", args.models), ("--languages", args.languages))
    out = {"template": Path(args.template), "html": Path(args.html), "key": Path(args.key), "page": Path(args.page)}
    hs.sheets_step(Path(args.dataset), case_section(args), args.human, Path(args.chosen), reprs, out)
    return 0


def cmd_human_simulate(args: argparse.Namespace) -> int:
    from ..steps import human_study as hs

    print(hs.simulate_step(Path(args.dataset), Path(args.template), Path(args.key), args.seed, Path(args.out)))
    return 0


def cmd_human_tally(args: argparse.Namespace) -> int:
    from ..steps import human_study as hs

    hs.tally_step(
        Path(args.ratings),
        Path(args.key),
        args.allow_unverified_key,
        args.simulated,
        Path(args.out_md),
        Path(args.out_json),
    )
    return 0


# ------------------------------------------------------------------------------ parsers


def register_data(add) -> None:
    sp = add("prepare", cmd_prepare, "generate (synthetic), copy (source: prepared) or download + prepare a dataset")
    spec(sp, "dataset (or corpora.<name>, with its name)")
    req(sp, "--languages", "languages to prepare", nargs="+", metavar="LANG")
    req(sp, "--out", "output: the prepared dataset folder", metavar="DIR")
    opt(sp, "--source-dir", "input for source 'prepared': the folder to validate and copy", metavar="DIR")

    sp = add(
        "check-dataset",
        cmd_check_dataset,
        "check that a prepared dataset fits the config (item counts per direction, images, case study)",
    )
    dataset(sp)
    req(
        sp,
        "--requirements",
        "what to check (steps.settings.fit_requirements of the config) as JSON",
        type=json_object,
        metavar="JSON",
    )
    req(sp, "--out", "output: a record of the passed check", metavar="FILE")

    sp = add("sample", cmd_sample, "draw the seeded samples of one or more directions")
    dataset(sp)
    req(sp, "--direction", "src-tgt, e.g. en-de (several: one --out each, in the same order)", nargs="+")
    req(sp, "--sample-size", "sample size N (queries per seed)", type=int, metavar="N")
    seeds(sp, "seed values, one sample each")
    files(sp, "--out", "output: samples JSON per direction")


def register_embedding(add) -> None:
    sp = add("embed-text", cmd_embed_text, "embed the dataset's texts with one encoder, one file per language")
    dataset(sp)
    req(sp, "--encoder", "encoder id (a key of params.yaml encoders)")
    spec(sp, "encoder")
    text_field(sp)
    req(sp, "--languages", "languages to embed", nargs="+", metavar="LANG")
    files(sp, "--out", "outputs: one npz per language, in the order of --languages")
    switch(sp, "--skip-unavailable", "write 'skipped' markers instead of failing when the model cannot be had")
    model_job(sp)

    sp = add("embed-images", cmd_embed_images, "image features of the dataset with one backbone")
    dataset(sp)
    req(sp, "--backbone", "backbone id (a key of params.yaml backbones)")
    spec(sp, "backbone")
    req(sp, "--out", "output: the image-feature npz", metavar="FILE")
    model_job(sp)


def register_metrics(add) -> None:
    sp = add(
        "metrics",
        cmd_metrics,
        "XLR, BkR, CORR of every encoder for one direction and every seed "
        "(per-query ranks beside --out as <out stem>.ranks.npz)",
    )
    dataset(sp)
    req(sp, "--dataset-name", "dataset name written into the CSV (params.yaml dataset.name)")
    req(sp, "--direction", "src-tgt, e.g. en-de")
    req(sp, "--samples", "input: samples JSON of the direction", metavar="FILE")
    req(sp, "--images", "input: image-feature npz", metavar="FILE")
    req(sp, "--backbone", "image backbone id (written into the CSV)")
    req(sp, "--encoders", "encoder ids", nargs="+", metavar="ENC")
    files(sp, "--text", "inputs: per encoder (order of --encoders) its source- then target-language npz")
    text_field(sp, "title | body | title_body (written into the CSV)")
    recall_k(sp)
    opt(sp, "--corr-max-pairs", "CORR on a seeded subsample of N pairs (omit: all pairs)", type=int, metavar="N")
    seeds(sp, "only these seeds' samples (one seed group; metrics-gather joins the groups)", required=False)
    req(sp, "--out", "output: tidy metrics CSV (the ranks npz is written beside it)", metavar="FILE")

    sp = add(
        "metrics-gather",
        cmd_metrics_gather,
        "join the metric files of one direction's seed groups into the direction's files",
    )
    files(sp, "--parts", "inputs: the seed groups' metrics CSVs, in seed-group order (ranks npz beside each)")
    req(sp, "--out", "output: tidy metrics CSV (the ranks npz is written beside it)", metavar="FILE")


def register_reports(add) -> None:
    sp = add(
        "report",
        cmd_report,
        "correlations, significance, Table 1, Figure 2, metrics.json; on a dataset without parallel "
        "texts: BkR with CIs, ranking, pairwise tests, random baseline (no XLR)",
    )
    files(sp, "--metrics-csv", "inputs: the tidy metrics CSVs of every direction (ranks npz beside each)")
    dataset(sp)
    req(sp, "--encoders", "encoder ids", nargs="+", metavar="ENC")
    req(sp, "--languages", "languages", nargs="+", metavar="LANG")
    files(sp, "--text", "inputs: per encoder the text npz of every language (read to list skipped encoders)")
    req(sp, "--settings", "report settings (steps.settings.report_settings) as JSON", type=json_object, metavar="JSON")
    files(
        sp,
        "--samples",
        "inputs (parallel data): the samples of every direction, for Table 1's per-query test (with --image-emb)",
        required=False,
    )
    opt(
        sp,
        "--image-emb",
        "input (parallel data): the image features, for CORR's per-query contributions",
        metavar="FILE",
    )
    # which outputs are needed depends on the dataset (parallel or not): the step checks them
    opt(sp, "--correlations", "output (parallel data): correlations CSV (per direction and seed)", metavar="FILE")
    for name in {**REPORT_FILES, **BKR_REPORT_FILES}:
        kind = (
            "parallel data"
            if name not in BKR_REPORT_FILES
            else "non-parallel data"
            if name not in REPORT_FILES
            else "both"
        )
        opt(sp, "--" + name.replace("_", "-"), f"output ({kind}): report file '{name}'", dest=name, metavar="FILE")

    sp = add("results-doc", cmd_results_doc, "docs/RESULTS.md from the committed reports of every run configuration")
    files(
        sp,
        "--run-configs",
        "run configurations (params.yaml, config/*.yaml), each listed in --dvc-runs; only their run_name is read",
    )
    req(sp, "--reports", "the reports folder of each --run-configs entry, in the same order", nargs="+", metavar="DIR")
    req(sp, "--dvc-runs", "the run list (scripts/dvc_runs.yaml): DVC stages and why the others are not", metavar="FILE")
    req(sp, "--out", "output: the Markdown document", metavar="FILE")


def register_case_study(add) -> None:
    sp = add("case-embed", cmd_case_embed, "case study: title/body embeddings of one encoder")
    case(sp)
    req(sp, "--encoder", "encoder id")
    spec(sp, "encoder")
    files(sp, "--fields", "outputs: per case-study language its title then body npz")
    files(sp, "--repr", "outputs: per case-study language the evaluated representation npz")
    model_job(sp)

    sp = add("case-select", cmd_case_select, "case study: choose the base encoder by BkR")
    case(sp)
    req(sp, "--images", "input: image-feature npz", metavar="FILE")
    req(sp, "--models", "the base encoders", nargs="+", metavar="ENC")
    files(sp, "--repr", "inputs: per model (order of --models) its representation per case-study language")
    req(sp, "--out-json", "output: the chosen base encoder", metavar="FILE")
    req(sp, "--out-csv", "output: BkR of each base encoder", metavar="FILE")

    sp = add("case-train", cmd_case_train, "case study: train a TRIPLET / TRIPLETXL head")
    case(sp)
    req(sp, "--head", "triplet | tripletxl", choices=["triplet", "tripletxl"])
    req(sp, "--training-seed", "the head's training seed (one of case_study.training_seeds)", type=int, metavar="SEED")
    req(sp, "--chosen", "input: the chosen base encoder (case-select)", metavar="FILE")
    req(sp, "--encoders", "the base encoders", nargs="+", metavar="ENC")
    files(sp, "--fields", "inputs: per base encoder, per case-study language, its title then body npz")
    req(sp, "--head-out", "output: head weights (.pt)", metavar="FILE")
    req(sp, "--meta-out", "output: head metadata (the .pt path with .json)", metavar="FILE")
    req(sp, "--history-out", "output: training history CSV", metavar="FILE")
    req(sp, "--curve-out", "output: loss curve PNG", metavar="FILE")
    files(sp, "--repr", "outputs: per case-study language the head's representation npz")
    threads(sp)

    sp = add("case-evaluate", cmd_case_evaluate, "case study: BkR of every model for every ordered language pair")
    case(sp)
    req(sp, "--images", "input: image-feature npz", metavar="FILE")
    req(
        sp,
        "--models",
        "every case-study run (baseline, base encoders, each head as <head>@<training seed>)",
        nargs="+",
        metavar="RUN",
    )
    files(sp, "--repr", "inputs: per model its representation per case-study language")
    req(sp, "--out-csv", "output: BkR per model, direction, seed", metavar="FILE")
    req(sp, "--out-hits", "output: per-query hits npz", metavar="FILE")

    sp = add("case-report", cmd_case_report, "case study: Table 2, Figure 3")
    case(sp)
    req(sp, "--chosen", "input: the chosen base encoder", metavar="FILE")
    req(sp, "--bkr", "input: case-evaluate CSV", metavar="FILE")
    req(sp, "--hits", "input: case-evaluate hits npz", metavar="FILE")
    named_outputs(sp, CASE_REPORT_FILES, "case report file")
    opt(
        sp,
        "--threads",
        "the model jobs' torch/BLAS threads (params.yaml model_threads), recorded in metrics.json's environment block",
        type=int,
        metavar="N",
    )


def register_human_study(add) -> None:
    sp = add("human-sheets", cmd_human_sheets, "human study: blinded rating sheet (CSV + HTML) and sealed key")
    case(sp)
    req(sp, "--human", "the resolved human_study section as a JSON object", type=json_object, metavar="JSON")
    req(sp, "--chosen", "input: the chosen base encoder", metavar="FILE")
    req(
        sp,
        "--models",
        "models whose representations are given (a head as <head>@<training seed>, one seed per head)",
        nargs="+",
        metavar="RUN",
    )
    req(sp, "--languages", "languages of the given representations", nargs="+", metavar="LANG")
    files(sp, "--repr", "inputs: per model, per language its representation npz")
    req(sp, "--template", "output: ratings template CSV", metavar="FILE")
    req(sp, "--html", "output: rating page", metavar="FILE")
    req(sp, "--key", "output: sealed key JSON", metavar="FILE")
    req(sp, "--page", "output: the rating page beside the reports", metavar="FILE")

    sp = add("human-simulate", cmd_human_simulate, "human study: SIMULATED ratings from the synthetic ground truth")
    dataset(sp)
    req(sp, "--template", "input: ratings template CSV", metavar="FILE")
    req(sp, "--key", "input: sealed key JSON", metavar="FILE")
    req(sp, "--seed", "rater seed (human_study.seed)", type=int)
    req(sp, "--out", "output: SIMULATED ratings CSV", metavar="FILE")

    sp = add("human-tally", cmd_human_tally, "human study: unblind and tally a ratings CSV against its sealed key")
    req(sp, "--ratings", "input: ratings CSV (human or SIMULATED)", metavar="FILE")
    req(sp, "--key", "input: sealed key JSON", metavar="FILE")
    switch(
        sp,
        "--allow-unverified-key",
        "tally even if the ratings file does not carry the key's sha256 on every row (a wrong sha256 is always refused)",
    )
    switch(sp, "--simulated", "label the tally SIMULATED (simulated rater)")
    req(sp, "--out-md", "output: tally Markdown", metavar="FILE")
    req(sp, "--out-json", "output: tally JSON", metavar="FILE")
