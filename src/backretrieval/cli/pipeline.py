"""The pipeline steps the Snakemake rules run: data, embedding, metrics, reports, case study,
human study. Each reads the files named by its input flags, writes the files named by its output
flags and takes its settings as flags (JSON for a config section); none derives a path from a
config (the artifact layout is ``backretrieval.steps.layout``)."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from ..errors import InputError
from ..steps.layout import CASE_REPORT_FILES, report_files
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
    noun,
    noun_with_alias,
    opt,
    optional_path,
    out_dest,
    out_flag,
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

    prepare_step(args.spec, args.languages, Path(args.out_dir), optional_path(args.source_dir))
    return 0


def cmd_check_dataset(args: argparse.Namespace) -> int:
    from ..steps.prepare import check_step

    check_step(args.requirements, Path(args.dataset), Path(args.out))
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from ..steps.sample import sample_step

    sample_step(Path(args.dataset), args.directions, args.sample_size, args.seeds, [Path(p) for p in args.out])
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
        args.image_backbone,
        args.spec,
        Path(args.out),
        optional_path(args.cache_dir),
        threads=args.threads,
    )
    return 0


# ------------------------------------------------------------------------------ metrics


def cmd_metrics(args: argparse.Namespace) -> int:
    from ..steps.metrics import metrics_step

    text = grid(args.text_emb, "--text-emb", ("--encoders", args.encoders), ("source/target", ["src", "tgt"]))
    t0 = time.perf_counter()
    metrics_step(
        dataset=Path(args.dataset),
        dataset_name=args.dataset_name,
        direction=args.direction,
        samples_file=Path(args.samples),
        image_file=Path(args.image_emb),
        backbone=args.image_backbone,
        text_files={e: (text[e]["src"], text[e]["tgt"]) for e in args.encoders},
        text_field=args.text_field,
        recall_k=args.recall_k,
        corr_max_pairs=args.corr_max_pairs,
        out=Path(args.out),
        seeds=args.seeds,
    )
    log.info("metrics %s: %.1fs", args.direction, time.perf_counter() - t0)
    return 0


def cmd_metrics_gather(args: argparse.Namespace) -> int:
    from ..steps.metrics import gather_metrics

    gather_metrics([Path(p) for p in args.metrics], Path(args.out))
    return 0


# ------------------------------------------------------------------------------ reports


def cmd_report(args: argparse.Namespace) -> int:
    """The report files under ``--out-dir`` by their fixed names (layout.REPORT_FILES with
    parallel texts, else layout.BKR_REPORT_FILES: the dataset's dataset.json says which)."""
    from ..data.prepared import read_meta
    from ..steps.report import build_report

    text = grid(args.text_emb, "--text-emb", ("--encoders", args.encoders), ("--languages", args.languages))
    files = report_files(read_meta(Path(args.dataset)).parallel)
    build_report(
        metrics_files=[Path(p) for p in args.metrics],
        dataset=Path(args.dataset),
        text_files={e: [text[e][lang] for lang in args.languages] for e in args.encoders},
        settings=args.settings,
        correlations_out=optional_path(args.out_correlations),
        out={name: Path(args.out_dir) / rel for name, rel in files.items()},
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
    from ..steps import case_embed

    c = case_section(args)
    langs = list(c["languages"])
    n_fields = len(langs) * len(CASE_FIELDS)
    if len(args.out_text_emb) != n_fields + len(langs):
        raise InputError(
            f"--out-text-emb: expected {n_fields + len(langs)} files (per case-study language its "
            f"{' then '.join(CASE_FIELDS)} npz, then per language its representation npz), got {len(args.out_text_emb)}"
        )
    fields = grid(
        args.out_text_emb[:n_fields],
        "--out-text-emb",
        ("case_study.languages", langs),
        ("fields", list(CASE_FIELDS)),
    )
    reprs = grid(args.out_text_emb[n_fields:], "--out-text-emb", ("case_study.languages", langs))
    case_embed.embed_step(
        Path(args.dataset), c, args.encoder, args.spec, optional_path(args.cache_dir), fields, reprs, args.threads
    )
    return 0


def cmd_case_select(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    c = case_section(args)
    reprs = grid(
        args.text_emb, "--text-emb", ("--encoders", args.encoders), ("case_study.languages", list(c["languages"]))
    )
    chosen = cs.select_step(
        Path(args.dataset), c, Path(args.image_emb), reprs, Path(args.out_chosen), Path(args.out_bkr)
    )
    log.info("case study: heads will be trained on %s", chosen)
    return 0


def cmd_case_train(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    c = case_section(args)
    fields = grid(
        args.text_emb,
        "--text-emb",
        ("--encoders", args.encoders),
        ("case_study.languages", list(c["languages"])),
        ("fields", list(CASE_FIELDS)),
    )
    reprs = grid(args.out_text_emb, "--out-text-emb", ("case_study.languages", list(c["languages"])))
    out = {name: Path(getattr(args, out_dest(name))) for name in ("head", "meta", "history", "curve")}
    cs.train_step(
        Path(args.dataset), c, args.head, args.training_seed, Path(args.chosen), fields, out, reprs, args.threads
    )
    return 0


def cmd_case_evaluate(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    c = case_section(args)
    reprs = grid(
        args.text_emb, "--text-emb", ("--encoders", args.encoders), ("case_study.languages", list(c["languages"]))
    )
    cs.evaluate_step(Path(args.dataset), c, Path(args.image_emb), reprs, Path(args.out_bkr), Path(args.out_hits))
    return 0


def cmd_case_report(args: argparse.Namespace) -> int:
    from ..steps import case_study as cs

    cs.report_step(
        Path(args.dataset),
        case_section(args),
        Path(args.chosen),
        Path(args.bkr),
        outputs(args, CASE_REPORT_FILES),
        args.threads,
        Path(args.hits) if args.hits else None,
    )
    return 0


# ------------------------------------------------------------------------------ human study


def cmd_human_sheets(args: argparse.Namespace) -> int:
    from ..steps import human_study as hs

    reprs = grid(args.text_emb, "--text-emb", ("--encoders", args.encoders), ("--languages", args.languages))
    out = {name: Path(getattr(args, out_dest(name))) for name in ("template", "html", "key", "page")}
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
        Path(args.out_tally_md),
        Path(args.out_tally_json),
    )
    return 0


# ------------------------------------------------------------------------------ parsers


def register_data(add) -> None:
    sp = add("prepare", cmd_prepare, "generate (synthetic), copy (source: prepared) or download + prepare a dataset")
    spec(sp, "dataset (or corpora.<name>, with its name)")
    req(sp, "--languages", "languages to prepare", nargs="+", metavar="LANG")
    # --out: the earlier spelling, still written by the findings workflow's own prepare rule
    noun_with_alias(sp, "out_dir", "--out", "output folder: the prepared dataset", required=True)
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
    noun(sp, "out", "output: a record of the passed check")

    sp = add("sample", cmd_sample, "draw the seeded samples of one or more directions")
    dataset(sp)
    noun(sp, "directions", "translation directions src-tgt, space-separated (one --out file each, in the same order)")
    noun(sp, "sample_size")
    seeds(sp, "seed values, one sample each")
    noun(sp, "out", "outputs: samples JSON per direction, in the order of --directions", many=True)


def register_embedding(add) -> None:
    sp = add("embed-text", cmd_embed_text, "embed the dataset's texts with one encoder, one file per language")
    dataset(sp)
    noun(sp, "encoder")
    spec(sp, "encoder")
    text_field(sp)
    req(sp, "--languages", "languages to embed", nargs="+", metavar="LANG")
    noun(sp, "out", "outputs: one npz per language, in the order of --languages", many=True)
    switch(sp, "--skip-unavailable", "write 'skipped' markers instead of failing when the model cannot be had")
    model_job(sp)

    sp = add("embed-images", cmd_embed_images, "image features of the dataset with one backbone")
    dataset(sp)
    noun(sp, "image_backbone")
    spec(sp, "backbone")
    noun(sp, "out", "output: the image-feature npz")
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
    noun(sp, "direction")
    noun(sp, "samples", "input: the samples JSON of the direction")
    noun(sp, "image_emb")
    noun(sp, "image_backbone", "the image backbone id (written into the CSV)")
    noun(sp, "encoders")
    noun(
        sp,
        "text_emb",
        "inputs: text embeddings, per encoder (order of --encoders) its source- then target-language npz",
    )
    text_field(sp, "title | body | title_body (written into the CSV)")
    recall_k(sp)
    opt(sp, "--corr-max-pairs", "CORR on a seeded subsample of N pairs (omit: all pairs)", type=int, metavar="N")
    seeds(
        sp,
        "seed values whose samples are read (one seed group; metrics-gather joins the groups); default: all",
        required=False,
    )
    noun(sp, "out", "output: tidy metrics CSV (the ranks npz is written beside it)")

    sp = add(
        "metrics-gather",
        cmd_metrics_gather,
        "join the metric files of one direction's seed groups into the direction's files",
    )
    noun(sp, "metrics", "inputs: the seed groups' metrics CSVs, in seed-group order (ranks npz beside each)")
    noun(sp, "out", "output: tidy metrics CSV (the ranks npz is written beside it)")


def register_reports(add) -> None:
    sp = add(
        "report",
        cmd_report,
        "correlations, significance, Table 1, Figure 2, metrics.json; on a dataset without parallel "
        "texts: BkR with CIs, ranking, pairwise tests, random baseline (no XLR)",
    )
    noun(sp, "metrics", "inputs: the tidy metrics CSVs of every direction (ranks npz beside each)")
    dataset(sp)
    noun(sp, "encoders")
    req(sp, "--languages", "languages", nargs="+", metavar="LANG")
    noun(
        sp, "text_emb", "inputs: text embeddings, per encoder the npz of every language (read to list skipped encoders)"
    )
    req(sp, "--settings", "report settings (steps.settings.report_settings) as JSON", type=json_object, metavar="JSON")
    noun(
        sp,
        "samples",
        "inputs (parallel data): the samples of every direction, for Table 1's per-query test (with --image-emb)",
        required=False,
        many=True,
    )
    noun(sp, "image_emb", "input (parallel data): image embedding, for CORR's per-query contributions", required=False)
    # which files are written depends on the dataset (parallel or not): its dataset.json says
    noun(
        sp,
        "out_dir",
        "output folder (the run's reports_dir): the report files under their fixed names "
        "(backretrieval.steps.layout.REPORT_FILES with parallel texts, else BKR_REPORT_FILES)",
    )
    out_flag(
        sp,
        "correlations",
        "(parallel data; an artifact, outside --out-dir) correlations CSV (per direction and seed)",
        required=False,
    )

    sp = add("results-doc", cmd_results_doc, "docs/RESULTS.md from the committed reports of every run configuration")
    files(
        sp,
        "--run-configs",
        "run configurations (params.yaml, config/*.yaml), each listed in --dvc-runs; only their run_name is read",
    )
    req(sp, "--reports", "the reports folder of each --run-configs entry, in the same order", nargs="+", metavar="DIR")
    req(sp, "--dvc-runs", "the run list (scripts/dvc_runs.yaml): DVC stages and why the others are not", metavar="FILE")
    noun(sp, "out", "output: the Markdown document")


def register_case_study(add) -> None:
    sp = add("case-embed", cmd_case_embed, "case study: title/body embeddings of one encoder")
    case(sp)
    noun(sp, "encoder")
    spec(sp, "encoder")
    out_flag(
        sp,
        "text_emb",
        f"text embeddings: per case-study language its {' then '.join(CASE_FIELDS)} npz, then per case-study "
        "language the evaluated representation npz",
        nargs="+",
    )
    model_job(sp)

    sp = add("case-select", cmd_case_select, "case study: choose the base encoder by BkR")
    case(sp)
    noun(sp, "image_emb")
    noun(sp, "encoders", "the base encoders (case_study.base_encoders)")
    noun(sp, "text_emb", "inputs: text embeddings, per base encoder (order of --encoders) its representation npz "
         "per case-study language")  # fmt: skip
    out_flag(sp, "chosen", "the chosen base encoder (JSON)")
    out_flag(sp, "bkr", "BkR of each base encoder (CSV)")

    sp = add("case-train", cmd_case_train, "case study: train a TRIPLET / TRIPLETXL head")
    case(sp)
    req(sp, "--head", "triplet | tripletxl", choices=["triplet", "tripletxl"])
    req(sp, "--training-seed", "the head's training seed (one of case_study.training_seeds)", type=int, metavar="SEED")
    req(sp, "--chosen", "input: the chosen base encoder (case-select)", metavar="FILE")
    noun(sp, "encoders", "the base encoders (case_study.base_encoders)")
    noun(sp, "text_emb", "inputs: text embeddings, per base encoder (order of --encoders), per case-study language, "
         "its title then body npz")  # fmt: skip
    out_flag(sp, "head", "head weights (.pt)")
    out_flag(sp, "meta", "head metadata (the .pt path with .json)")
    out_flag(sp, "history", "training history CSV")
    out_flag(sp, "curve", "loss curve PNG")
    out_flag(sp, "text_emb", "text embeddings: per case-study language the head's representation npz", nargs="+")
    threads(sp)

    sp = add("case-evaluate", cmd_case_evaluate, "case study: BkR of every encoder for every ordered language pair")
    case(sp)
    noun(sp, "image_emb")
    noun(sp, "encoders", "every case-study encoder: baseline, base encoders, each head as <head>@<training seed>")
    noun(sp, "text_emb", "inputs: text embeddings, per encoder (order of --encoders) its representation npz per "
         "case-study language")  # fmt: skip
    out_flag(sp, "bkr", "BkR per model, direction, seed (CSV)")
    out_flag(sp, "hits", "per-query hits npz")

    sp = add("case-report", cmd_case_report, "case study: Table 2, Figure 3")
    case(sp)
    req(sp, "--chosen", "input: the chosen base encoder", metavar="FILE")
    req(sp, "--bkr", "input: case-evaluate CSV", metavar="FILE")
    opt(
        sp,
        "--hits",
        "input: case-evaluate's per-query hits (bkr_hits.npz); Table 2's best-vs-other tests over the distinct "
        "query images need them (without: those rows are left out)",
        metavar="FILE",
    )
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
    noun(
        sp,
        "encoders",
        "case-study encoders whose representations are given (a head as <head>@<training seed>, one seed per head)",
    )
    req(sp, "--languages", "languages of the given representations", nargs="+", metavar="LANG")
    noun(sp, "text_emb", "inputs: text embeddings, per encoder (order of --encoders), per language its "
         "representation npz")  # fmt: skip
    out_flag(sp, "template", "ratings template CSV")
    out_flag(sp, "html", "rating page")
    out_flag(sp, "key", "sealed key JSON")
    out_flag(sp, "page", "the rating page beside the reports")

    sp = add("human-simulate", cmd_human_simulate, "human study: SIMULATED ratings from the synthetic ground truth")
    dataset(sp)
    req(sp, "--template", "input: ratings template CSV", metavar="FILE")
    req(sp, "--key", "input: sealed key JSON", metavar="FILE")
    noun(sp, "seed", "seed of the simulated rater (human_study.seed)")
    noun(sp, "out", "output: SIMULATED ratings CSV")

    sp = add("human-tally", cmd_human_tally, "human study: unblind and tally a ratings CSV against its sealed key")
    req(sp, "--ratings", "input: ratings CSV (human or SIMULATED)", metavar="FILE")
    req(sp, "--key", "input: sealed key JSON", metavar="FILE")
    switch(
        sp,
        "--allow-unverified-key",
        "tally even if the ratings file does not carry the key's sha256 on every row (a wrong sha256 is always refused)",
    )
    switch(sp, "--simulated", "label the tally SIMULATED (simulated rater)")
    out_flag(sp, "tally_md", "tally Markdown")
    out_flag(sp, "tally_json", "tally JSON")
