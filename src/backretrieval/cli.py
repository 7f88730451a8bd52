"""Command-line interface: one subcommand per pipeline step (thin wrapper over the library).

Every step is file-based: it reads the files named by its input flags, writes the files named
by its output flags, and takes its settings as flags (JSON for a config section), so the
Snakemake rules hand every file they declare to the step and no step derives a path from the
config (the artifact layout is ``backretrieval.steps.layout``). ``validate-config`` checks a
whole config (schema, cross-field relations, and the prepared dataset if there is one).
User-fixable problems print ``backretrieval: error: ...`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from . import __version__
from ._util import io
from .errors import BackretrievalError, InputError

log = logging.getLogger("backretrieval")

CASE_FIELDS = ("title", "body")


# -------------------------------------------------------------------------------------------
# argument helpers


def _json_object(text: str) -> dict:
    """argparse type of the JSON flags (a config section): a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _grid(files: list[str], flag: str, *axes: tuple[str, list[str]]) -> dict:
    """``files`` in row-major order over ``axes`` ((flag, values), ...) as nested dicts,
    e.g. ``_grid(f, "--repr", ("--models", ms), ("--languages", ls))[m][lang]``."""
    n = 1
    for _, values in axes:
        n *= len(values)
    if len(files) != n:
        shape = " x ".join(f"{len(v)} {name}" for name, v in axes)
        raise InputError(f"{flag}: expected {n} files ({shape}, in that order), got {len(files)}")
    paths = [Path(f) for f in files]

    def build(level: int, start: int, size: int):
        if level == len(axes):
            return paths[start]
        values = axes[level][1]
        step = size // len(values)
        return {v: build(level + 1, start + i * step, step) for i, v in enumerate(values)}

    return build(0, 0, n)


def _case(args) -> dict:
    """The resolved ``case_study`` section of ``--case``, with ``--train-corpus``."""
    cs = dict(args.case)
    cs["train_corpus"] = str(args.train_corpus) if args.train_corpus else None
    return cs


def _outputs(args, names) -> dict[str, Path]:
    return {name: Path(getattr(args, name)) for name in names}


# -------------------------------------------------------------------------------------------
# steps


def cmd_results_doc(args) -> int:
    from .steps.results_doc import write_results_doc

    write_results_doc(args.run_configs, args.reports, args.dvc_runs, args.out)
    return 0


def cmd_validate_config(args) -> int:
    from .config import code_notice, load_config
    from .steps import layout
    from .steps.prepare import check_dataset_fits

    cfg = load_config(args.config, args.set)
    root = layout.dataset_root(cfg)
    prepared = (root / "dataset.json").is_file()
    if prepared:
        check_dataset_fits(cfg, root)
    fits = (
        f"fits the prepared dataset {root}"
        if prepared
        else f"dataset {root} not prepared yet (its checks run in `check-dataset`, before any model)"
    )
    print(
        f"{args.config}: OK ({len(cfg['encoders'])} encoders, {len(cfg['directions'])} directions, "
        f"{len(cfg['seeds'])} seeds, N={cfg['sample_size']}); {fits}"
    )
    notice = code_notice(cfg)
    if notice:
        print(notice)
    return 0


def cmd_prepare(args) -> int:
    from .steps.prepare import prepare_step

    prepare_step(args.spec, args.languages, Path(args.out), Path(args.source_dir) if args.source_dir else None)
    return 0


def cmd_check_dataset(args) -> int:
    from .steps.prepare import check_step

    check_step(args.requirements, Path(args.dataset), Path(args.out))
    return 0


def cmd_embed_text(args) -> int:
    from .steps.embed import embed_text_step

    outs = _grid(args.out, "--out", ("--languages", args.languages))
    embed_text_step(
        Path(args.dataset),
        args.encoder,
        args.spec,
        args.text_field,
        outs,
        Path(args.cache_dir) if args.cache_dir else None,
        args.skip_unavailable,
        args.threads,
    )
    return 0


def cmd_embed_images(args) -> int:
    from .steps.embed import embed_dataset_images

    embed_dataset_images(
        Path(args.dataset),
        args.backbone,
        args.spec,
        Path(args.out),
        Path(args.cache_dir) if args.cache_dir else None,
        threads=args.threads,
    )
    return 0


def cmd_sample(args) -> int:
    from .steps.sample import sample_step

    sample_step(Path(args.dataset), args.direction, args.sample_size, args.seeds, [Path(p) for p in args.out])
    return 0


def cmd_metrics(args) -> int:
    from .steps.layout import ranks_path
    from .steps.metrics import metrics_step

    text = _grid(args.text, "--text", ("--encoders", args.encoders), ("source/target", ["src", "tgt"]))
    if Path(args.ranks) != ranks_path(Path(args.out)):
        raise InputError(
            f"--ranks: the per-query ranks are written beside --out as {ranks_path(Path(args.out))}, not {args.ranks}"
        )
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
        full_bkr_ranks=not args.hits_only,
        out=Path(args.out),
        seeds=args.seeds,
    )
    log.info("metrics %s: %.1fs", args.direction, time.perf_counter() - t0)
    return 0


def cmd_metrics_gather(args) -> int:
    from .steps.layout import ranks_path
    from .steps.metrics import gather_metrics

    if Path(args.ranks) != ranks_path(Path(args.out)):
        raise InputError(
            f"--ranks: the per-query ranks are written beside --out as {ranks_path(Path(args.out))}, not {args.ranks}"
        )
    gather_metrics([Path(p) for p in args.parts], Path(args.out))
    return 0


def cmd_report(args) -> int:
    from .steps.layout import BKR_REPORT_FILES, REPORT_FILES
    from .steps.report import build_report

    text = _grid(args.text, "--text", ("--encoders", args.encoders), ("--languages", args.languages))
    names = [n for n in {**REPORT_FILES, **BKR_REPORT_FILES} if getattr(args, n) is not None]
    build_report(
        metrics_files=[Path(p) for p in args.metrics_csv],
        dataset=Path(args.dataset),
        text_files={e: [text[e][lang] for lang in args.languages] for e in args.encoders},
        settings=args.settings,
        correlations_out=Path(args.correlations) if args.correlations else None,
        out=_outputs(args, names),
    )
    return 0


def cmd_case_embed(args) -> int:
    from .steps import case_study as cs

    c = _case(args)
    fields = _grid(
        args.fields, "--fields", ("case_study.languages", list(c["languages"])), ("fields", list(CASE_FIELDS))
    )
    reprs = _grid(args.repr, "--repr", ("case_study.languages", list(c["languages"])))
    cs.embed_step(
        Path(args.dataset),
        c,
        args.encoder,
        args.spec,
        Path(args.cache_dir) if args.cache_dir else None,
        fields,
        reprs,
        args.threads,
    )
    return 0


def cmd_case_select(args) -> int:
    from .steps import case_study as cs

    c = _case(args)
    reprs = _grid(args.repr, "--repr", ("--models", args.models), ("case_study.languages", list(c["languages"])))
    chosen = cs.select_step(Path(args.dataset), c, Path(args.images), reprs, Path(args.out_json), Path(args.out_csv))
    log.info("case study: heads will be trained on %s", chosen)
    return 0


def cmd_case_train(args) -> int:
    from .steps import case_study as cs

    c = _case(args)
    fields = _grid(
        args.fields,
        "--fields",
        ("--encoders", args.encoders),
        ("case_study.languages", list(c["languages"])),
        ("fields", list(CASE_FIELDS)),
    )
    reprs = _grid(args.repr, "--repr", ("case_study.languages", list(c["languages"])))
    out = {
        "head": Path(args.head_out),
        "meta": Path(args.meta_out),
        "history": Path(args.history_out),
        "curve": Path(args.curve_out),
    }
    cs.train_step(Path(args.dataset), c, args.head, Path(args.chosen), fields, out, reprs, args.threads)
    return 0


def cmd_case_evaluate(args) -> int:
    from .steps import case_study as cs

    c = _case(args)
    reprs = _grid(args.repr, "--repr", ("--models", args.models), ("case_study.languages", list(c["languages"])))
    cs.evaluate_step(Path(args.dataset), c, Path(args.images), reprs, Path(args.out_csv), Path(args.out_hits))
    return 0


def cmd_case_report(args) -> int:
    from .steps import case_study as cs
    from .steps.layout import CASE_REPORT_FILES

    cs.report_step(
        Path(args.dataset),
        _case(args),
        Path(args.chosen),
        Path(args.bkr),
        Path(args.hits),
        _outputs(args, CASE_REPORT_FILES),
    )
    return 0


def cmd_human_sheets(args) -> int:
    from .steps import human_study as hs

    reprs = _grid(args.repr, "--repr", ("--models", args.models), ("--languages", args.languages))
    out = {"template": Path(args.template), "html": Path(args.html), "key": Path(args.key), "page": Path(args.page)}
    hs.sheets_step(Path(args.dataset), _case(args), args.human, Path(args.chosen), reprs, out)
    return 0


def cmd_human_simulate(args) -> int:
    from .steps import human_study as hs

    print(hs.simulate_step(Path(args.dataset), Path(args.template), Path(args.key), args.seed, Path(args.out)))
    return 0


def cmd_human_tally(args) -> int:
    from .steps import human_study as hs

    hs.tally_step(
        Path(args.ratings),
        Path(args.key),
        args.allow_unverified_key,
        args.simulated,
        Path(args.out_md),
        Path(args.out_json),
    )
    return 0


def cmd_tally(args) -> int:
    """Tally any ratings file against its sealed key (no config needed)."""
    from .study.human_study import tally, tally_markdown

    res = tally(Path(args.ratings), Path(args.key), allow_unverified_key=args.allow_unverified_key)
    md = tally_markdown(res)
    if args.out:
        io.write_text(args.out, md)
    print(md)
    return 0


def cmd_validate_dataset(args) -> int:
    from .data.byo import validate_dataset

    problems = validate_dataset(Path(args.root))
    for p in problems:
        print(p)
    n_err = sum(1 for p in problems if getattr(p, "level", "error") == "error")
    print(f"{args.root}: {n_err} error(s), {len(problems) - n_err} warning(s)")
    return 1 if n_err else 0


def cmd_versions(args) -> int:
    from .reporting.versions import software_versions

    for k, v in software_versions().items():
        print(f"{k}: {v}")
    return 0


# -------------------------------------------------------------------------------------------
# evaluate your own encoder (no config): backretrieval.evaluation


def _eval_kwargs(args) -> dict:
    return dict(
        n=args.n,
        seeds=args.seeds,
        k=args.k,
        text_field=args.text_field,
        image_backbone=args.image_backbone,
        with_corr=not args.no_corr,
        cache_dir=None if args.no_cache else Path(args.cache_dir),
        prepared_dir=Path(args.prepared_dir),
        shared_dir=Path(args.shared_dir),
        batch_size=args.batch_size,
        progress=not args.quiet,
        allow_code=args.allow_code,
    )


def cmd_evaluate(args) -> int:
    """One model on one dataset: a table per direction and one result JSON."""
    from .errors import InputError
    from .evaluation import results as R
    from .evaluation.run import evaluate_model

    if args.out and Path(args.out).is_dir():
        raise InputError(f"--out {args.out}: is a folder; name the result JSON file")
    ev = evaluate_model(args.model, args.data, args.directions, name=args.name, **_eval_kwargs(args))
    res = R.result_dict(ev, B=args.bootstrap)
    out = Path(args.out) if args.out else R.default_result_path(res)
    R.write_result(out, res)
    print(R.format_table(res))
    print(f"\nresult: {out} ({ev.seconds:.1f} s)")
    return 0


def cmd_verify(args) -> int:
    """The run's reports vs the committed ones (git revision) or a reference folder."""
    from .reporting import verify as V

    if args.tolerances:
        print(V.tolerance_table())
        return 0
    ref = Path(args.reference) if args.reference else None
    report = V.verify(Path(args.reports), reference_dir=ref, rev=args.rev)
    print(report.summary())
    return 0 if report.ok else 1


def cmd_compare(args) -> int:
    """Two result JSONs, or two --model runs on the same samples: which has the higher BkR."""
    from .errors import InputError
    from .evaluation import results as R
    from .evaluation.compare import compare_results, format_comparison

    if args.results and args.model:
        raise InputError("compare: give two result JSONs or two --model, not both")
    if args.results:
        if len(args.results) != 2:
            raise InputError(f"compare: expected two result JSONs, got {len(args.results)}")
        a, b = (R.read_result(p) for p in args.results)
        labels = [a["model"]["name"], b["model"]["name"]]
        if labels[0] == labels[1]:
            labels = [str(p) for p in args.results]
    else:
        if not args.model or len(args.model) != 2 or not args.data or not args.directions:
            raise InputError("compare: pass two result JSONs, or --model A --model B with --data and --directions")
        from .evaluation.run import evaluate_models

        evs = evaluate_models(args.model, args.data, args.directions, **_eval_kwargs(args))
        a, b = (R.result_dict(ev, B=args.bootstrap) for ev in evs)
        labels = [ev.model["name"] for ev in evs]
    comps = compare_results(a, b, label_a=labels[0], label_b=labels[1], B=args.bootstrap)
    text = format_comparison(comps, a, b)
    if args.out:
        io.write_json(
            args.out,
            {"a": a["model"], "b": b["model"], "dataset": a["dataset"], "comparisons": [c.to_dict() for c in comps]},
        )
    print(text)
    return 0


# findings (issue 15): explicit files and settings, no config (findings-a: inference,
# calibration, bli, agreement, document)


def _findings_run(args):
    from .steps.findings import load_run

    return load_run(
        dataset=Path(args.dataset),
        metrics_files=[Path(p) for p in args.metrics],
        samples_files=[Path(p) for p in args.samples or []],
        ranks_files=[Path(p) for p in args.ranks or []],
        image_file=Path(args.image_emb) if args.image_emb else None,
        text_files=[Path(p) for p in args.text_emb or []],
        k=args.k,
    )


def cmd_findings_inference(args) -> int:
    from .steps.findings import inference_step

    inference_step(
        _findings_run(args),
        run_name=args.run_name,
        out_dir=Path(args.out_dir),
        B=args.B,
        boot_seed=args.bootstrap_seed,
        n_seeds=args.n_seeds,
        random_encoders=args.random_encoders,
        english_only=args.english_only,
        family=args.family or [],
        family_name=args.family_name,
    )
    return 0


def cmd_findings_calibration(args) -> int:
    from .steps.findings import calibration_step

    calibration_step(
        _findings_run(args),
        run_name=args.run_name,
        out_dir=Path(args.out_dir),
        soft_m=args.soft_m,
        n_seeds=args.n_seeds,
    )
    return 0


def cmd_findings_bli(args) -> int:
    import json

    from .errors import ConfigError
    from .steps.findings import bli_step

    specs = {}
    for item in args.spec or []:
        enc, sep, raw = item.partition("=")
        try:
            spec = json.loads(raw) if sep else None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--spec {item!r}: the part after '=' is not JSON ({exc})") from exc
        if not isinstance(spec, dict):
            raise ConfigError(f"--spec {item!r}: expected ENCODER={{JSON object of its params entry}}")
        specs[enc] = spec
    bli_step(
        _findings_run(args),
        run_name=args.run_name,
        out_dir=Path(args.out_dir),
        specs=specs,
        test_size=args.test_size,
        min_count=args.min_count,
        seed=args.seed,
        csls_k=args.csls_k,
    )
    return 0


def cmd_findings_agreement(args) -> int:
    from .steps.findings import agreement_step

    agreement_step(
        _findings_run(args),
        run_name=args.run_name,
        out_dir=Path(args.out_dir),
        points_file=Path(args.points),
        bli_file=Path(args.bli) if args.bli else None,
        soft_m=args.soft_m,
        B=args.B,
        boot_seed=args.bootstrap_seed,
    )
    return 0


def cmd_findings_document(args) -> int:
    from .steps.findings import document_step

    document_step(
        [Path(p) for p in args.records],
        doc=Path(args.doc),
        summary_dir=Path(args.summary_dir),
        readme=Path(args.readme) if args.readme else None,
    )
    return 0


def _add_findings_parsers(add) -> None:
    def run_inputs(sp, embeddings: bool) -> None:
        sp.add_argument("--dataset", required=True, help="prepared dataset folder (data/prepared/<name>)")
        sp.add_argument("--metrics", nargs="+", required=True, help="metrics CSVs of every direction")
        sp.add_argument("--k", type=int, required=True, help="Recall@k of the run")
        sp.add_argument("--run-name", required=True)
        sp.add_argument("--out-dir", required=True, help="<reports_dir>/findings")
        if embeddings:
            sp.add_argument("--ranks", nargs="+", required=True, help="<direction>.ranks.npz of every direction")
            sp.add_argument("--samples", nargs="+", required=True, help="<direction>.json samples of every direction")
            sp.add_argument("--image-emb", required=True, help="image embedding of the run's backbone")
            sp.add_argument("--text-emb", nargs="+", required=True, help="text embeddings <encoder>/<lang>.<field>.npz")
        else:
            sp.add_argument("--ranks", nargs="*")
            sp.add_argument("--samples", nargs="*")
            sp.add_argument("--image-emb")
            sp.add_argument("--text-emb", nargs="*")

    sp = add(
        "findings-inference",
        cmd_findings_inference,
        "findings 1: encoder x item bootstrap, order accuracy, sensitivity",
    )
    run_inputs(sp, True)
    sp.add_argument("--B", type=int, default=1000, help="bootstrap replicates")
    sp.add_argument("--bootstrap-seed", type=int, default=0)
    sp.add_argument("--n-seeds", type=int, default=None, help="the first n seeds of each direction (default: all)")
    sp.add_argument(
        "--random-encoders",
        nargs="*",
        default=["random"],
        help="chance-level encoders (left out in one sensitivity set)",
    )
    sp.add_argument(
        "--english-only",
        nargs="*",
        default=[],
        help="English-only encoders (left out, with the random ones, in 'core')",
    )
    sp.add_argument("--family", nargs="*", help="encoders of one model family (a sensitivity set)")
    sp.add_argument("--family-name", default="word-vector")
    sp = add("findings-calibration", cmd_findings_calibration, "findings 5: BkR -> XLR calibration, soft BkR")
    run_inputs(sp, True)
    sp.add_argument("--soft-m", type=int, nargs="+", default=[1, 3, 5, 10], help="m of soft BkR (1 = BkR)")
    sp.add_argument("--n-seeds", type=int, default=None, help="the first n seeds (default: all)")
    sp = add("findings-bli", cmd_findings_bli, "findings 6: BLI of the word-vector family")
    run_inputs(sp, False)
    sp.add_argument("--spec", action="append", metavar="ENCODER=JSON", help="a wordvec encoder's params entry as JSON")
    sp.add_argument("--test-size", type=int, default=2000)
    sp.add_argument("--min-count", type=int, default=5)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--csls-k", type=int, default=10)
    sp = add("findings-agreement", cmd_findings_agreement, "findings 6: agreement matrix of every metric")
    run_inputs(sp, False)
    sp.add_argument("--points", required=True, help="calibration_points.csv of the run")
    sp.add_argument("--bli", help="bli.csv of the run (optional)")
    sp.add_argument("--soft-m", type=int, default=5)
    sp.add_argument("--B", type=int, default=1000)
    sp.add_argument("--bootstrap-seed", type=int, default=0)
    sp = add("findings-document", cmd_findings_document, "docs/FINDINGS.md + overall verdict from every findings JSON")
    sp.add_argument("--records", nargs="+", required=True, help="every configuration's <reports_dir>/findings/*.json")
    sp.add_argument("--doc", default="docs/FINDINGS.md")
    sp.add_argument("--summary-dir", default="reports/findings_summary")
    sp.add_argument("--readme", help="README whose findings-verdict block is regenerated")


# findings-b: image quality, sample size, hubness (explicit inputs, outputs and settings)


def _text_files(specs: list[str]) -> dict[tuple[str, str], Path]:
    """``ENCODER:LANG=PATH`` flags → {(encoder, lang): path}."""
    from .errors import InputError

    out: dict[tuple[str, str], Path] = {}
    for spec in specs:
        key, sep, path = spec.partition("=")
        enc, sep2, lang = key.rpartition(":")
        if not sep or not sep2 or not enc or not lang or not path:
            raise InputError(f"--text {spec!r}: expected ENCODER:LANG=PATH")
        out[(enc, lang)] = Path(path)
    return out


def _named_files(specs: list[str], flag: str) -> dict[str, Path]:
    """``NAME=PATH`` flags → {name: path} (order kept)."""
    from .errors import InputError

    out: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise InputError(f"{flag} {spec!r}: expected NAME=PATH")
        out[name] = Path(path)
    return out


def _findings_b_run(args):
    """The run the analysis belongs to (its record's ``run``), from the run's metrics CSVs."""
    from .steps.findings import load_run

    run = load_run(
        dataset=Path(args.run_dataset or args.dataset), metrics_files=[Path(p) for p in args.metrics], k=args.k
    )
    return run.run_info(args.run_name, str(Path(args.out_dir).parent))


def cmd_findings_image_quality(args) -> int:
    from .steps import findings as fs

    fs.image_quality_step(
        dataset=Path(args.dataset),
        samples_files=[Path(p) for p in args.samples],
        text_files=_text_files(args.text),
        image_files=_named_files(args.image, "--image"),
        base=args.base,
        degradations=fs.parse_degradations(args.noise, args.project, args.shuffle),
        k=args.k,
        max_seeds=args.max_seeds,
        seed=args.seed,
        out_dir=Path(args.out_dir),
        run=_findings_b_run(args),
    )
    return 0


def cmd_findings_sample_size(args) -> int:
    from .findings.sample_size import Criterion
    from .steps import findings as fs

    fs.sample_size_step(
        dataset=Path(args.dataset),
        text_files=_text_files(args.text),
        image_file=Path(args.image),
        directions=args.directions,
        n_grid=args.n_grid,
        seeds=args.seeds,
        k=args.k,
        baseline=args.baseline,
        out_dir=Path(args.out_dir),
        run=_findings_b_run(args),
        criterion=Criterion(agreement=args.min_agreement, share=args.min_share),
    )
    return 0


def cmd_findings_hubness(args) -> int:
    from .steps import findings as fs

    fs.hubness_step(
        dataset=Path(args.dataset),
        samples_files=[Path(p) for p in args.samples],
        text_files=_text_files(args.text),
        image_file=Path(args.image),
        retrievals=args.retrievals,
        hub_fraction=args.hub_fraction,
        hub_noise=args.hub_noise,
        k=args.k,
        max_seeds=args.max_seeds,
        seed=args.seed,
        out_dir=Path(args.out_dir),
        run=_findings_b_run(args),
    )
    return 0


def _add_findings_b(add) -> None:
    def common(sp, samples: bool = True):
        sp.add_argument("--dataset", required=True, help="prepared dataset folder")
        if samples:
            sp.add_argument("--samples", nargs="+", required=True, help="samples JSON files (one per direction)")
        sp.add_argument("--text", nargs="+", required=True, metavar="ENCODER:LANG=NPZ", help="text embeddings")
        sp.add_argument("--k", type=int, default=10)
        sp.add_argument("--metrics", nargs="+", required=True, help="the run's metrics CSVs (every direction)")
        sp.add_argument("--run-dataset", help="the run's prepared dataset when --dataset is another one")
        sp.add_argument("--run-name", required=True, help="run name written into the outputs")
        sp.add_argument("--out-dir", required=True, help="<reports_dir>/findings")

    sp = add(
        "findings-image-quality", cmd_findings_image_quality, "findings: image quality vs BkR's agreement with XLR"
    )
    common(sp)
    sp.add_argument("--image", nargs="+", required=True, metavar="BACKBONE=NPZ", help="image features per backbone")
    sp.add_argument("--base", required=True, help="the backbone whose features are degraded")
    sp.add_argument("--noise", nargs="*", type=float, default=[], help="Gaussian noise levels (noise/signal norm)")
    sp.add_argument("--project", nargs="*", type=int, default=[], help="random projections to these dimensions")
    sp.add_argument("--shuffle", action="store_true", help="add shuffled features (the floor)")
    sp.add_argument("--max-seeds", type=int, default=None, help="first seeds of each samples file (default all)")
    sp.add_argument("--seed", type=int, default=0)

    sp = add("findings-sample-size", cmd_findings_sample_size, "findings: BkR's ranking stability vs N")
    common(sp, samples=False)
    sp.add_argument("--image", required=True, help="image features (npz)")
    sp.add_argument("--directions", nargs="+", required=True)
    sp.add_argument("--n-grid", nargs="+", type=int, required=True)
    sp.add_argument("--seeds", nargs="+", type=int, required=True)
    sp.add_argument("--baseline", help="the random encoder (its BkR is compared with k/N)")
    sp.add_argument("--min-agreement", type=float, default=0.9)
    sp.add_argument("--min-share", type=float, default=0.9)

    sp = add("findings-hubness", cmd_findings_hubness, "findings: hubness, CSLS / margin, injected hubs")
    common(sp)
    sp.add_argument("--image", required=True, help="image features (npz)")
    sp.add_argument(
        "--retrievals", nargs="+", default=["cosine", "csls", "margin"], choices=["cosine", "csls", "margin"]
    )
    sp.add_argument("--hub-fraction", type=float, default=0.02, help="injected hubs per target")
    sp.add_argument("--hub-noise", type=float, default=0.1)
    sp.add_argument("--max-seeds", type=int, default=None)
    sp.add_argument("--seed", type=int, default=0)


# -------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from .steps.layout import BKR_REPORT_FILES, CASE_REPORT_FILES, REPORT_FILES

    p = argparse.ArgumentParser(prog="backretrieval", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"backretrieval {__version__}")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)

    def add(name, fn, help_):
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=fn)
        return sp

    def req(sp, flag, help_, **kw):
        sp.add_argument(flag, required=True, help=help_, **kw)

    def dataset(sp):
        req(sp, "--dataset", "prepared dataset folder (dataset.json, items.csv, ...)", metavar="DIR")

    def spec(sp, what):
        req(sp, "--spec", f"the {what}'s params.yaml entry as a JSON object", type=_json_object, metavar="JSON")

    def model_job(sp):
        sp.add_argument(
            "--cache-dir",
            metavar="DIR",
            help="content-addressed embedding cache (a side store; results do not depend on it); omit for no cache",
        )
        sp.add_argument(
            "--threads",
            type=int,
            metavar="N",
            help="torch/BLAS threads (params.yaml model_threads); omit to leave the libraries' defaults",
        )

    def case(sp):
        dataset(sp)
        req(
            sp,
            "--case",
            "the resolved case_study section as a JSON object (without train_corpus)",
            type=_json_object,
            metavar="JSON",
        )
        sp.add_argument("--train-corpus", metavar="DIR", help="prepared training corpus (case_study.train_corpus)")

    def files(sp, flag, help_, required=True):
        sp.add_argument(flag, nargs="+", required=required, metavar="FILE", help=help_)

    def named_outputs(sp, names, what):
        for name in names:
            req(sp, "--" + name.replace("_", "-"), f"output: {what} '{name}'", dest=name, metavar="FILE")

    sp = add(
        "validate-config",
        cmd_validate_config,
        "validate a config: schema, cross-field relations, and the prepared dataset if it exists",
    )
    sp.add_argument("--config", default="params.yaml", help="params.yaml or a named config (default: params.yaml)")
    sp.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value (YAML), e.g. --set sample_size=200",
    )

    sp = add("results-doc", cmd_results_doc, "docs/RESULTS.md from the committed reports of every run configuration")
    files(
        sp,
        "--run-configs",
        "run configurations (params.yaml, config/*.yaml), each listed in --dvc-runs; only their run_name is read",
    )
    sp.add_argument(
        "--reports",
        nargs="+",
        required=True,
        metavar="DIR",
        help="the reports folder of each --run-configs entry, in the same order",
    )
    req(sp, "--dvc-runs", "the run list (scripts/dvc_runs.yaml): DVC stages and why the others are not", metavar="FILE")
    req(sp, "--out", "output: the Markdown document", metavar="FILE")

    sp = add("prepare", cmd_prepare, "generate (synthetic), copy (source: prepared) or download + prepare a dataset")
    spec(sp, "dataset (or corpora.<name>, with its name)")
    req(sp, "--languages", "languages to prepare", nargs="+", metavar="LANG")
    req(sp, "--out", "output: the prepared dataset folder", metavar="DIR")
    sp.add_argument("--source-dir", metavar="DIR", help="input for source 'prepared': the folder to validate and copy")

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
        type=_json_object,
        metavar="JSON",
    )
    req(sp, "--out", "output: a record of the passed check", metavar="FILE")

    sp = add("embed-text", cmd_embed_text, "embed the dataset's texts with one encoder, one file per language")
    dataset(sp)
    req(sp, "--encoder", "encoder id (a key of params.yaml encoders)")
    spec(sp, "encoder")
    req(sp, "--text-field", "title | body | title_body", choices=["title", "body", "title_body"])
    req(sp, "--languages", "languages to embed", nargs="+", metavar="LANG")
    files(sp, "--out", "outputs: one npz per language, in the order of --languages")
    sp.add_argument(
        "--skip-unavailable",
        action="store_true",
        help="write 'skipped' markers instead of failing when the model cannot be had",
    )
    model_job(sp)

    sp = add("embed-images", cmd_embed_images, "image features of the dataset with one backbone")
    dataset(sp)
    req(sp, "--backbone", "backbone id (a key of params.yaml backbones)")
    spec(sp, "backbone")
    req(sp, "--out", "output: the image-feature npz", metavar="FILE")
    model_job(sp)

    sp = add("sample", cmd_sample, "draw the seeded samples of one or more directions")
    dataset(sp)
    req(sp, "--direction", "src-tgt, e.g. en-de (several: one --out each, in the same order)", nargs="+")
    req(sp, "--sample-size", "N", type=int)
    req(sp, "--seeds", "seeds, one sample each", type=int, nargs="+")
    files(sp, "--out", "output: samples JSON per direction")

    sp = add("metrics", cmd_metrics, "XLR, BkR, CORR of every encoder for one direction and every seed")
    dataset(sp)
    req(sp, "--dataset-name", "dataset name written into the CSV (params.yaml dataset.name)")
    req(sp, "--direction", "src-tgt, e.g. en-de")
    req(sp, "--samples", "input: samples JSON of the direction", metavar="FILE")
    req(sp, "--images", "input: image-feature npz", metavar="FILE")
    req(sp, "--backbone", "image backbone id (written into the CSV)")
    req(sp, "--encoders", "encoder ids", nargs="+", metavar="ENC")
    files(sp, "--text", "inputs: per encoder (order of --encoders) its source- then target-language npz")
    req(sp, "--text-field", "title | body | title_body (written into the CSV)")
    req(sp, "--recall-k", "k of Recall@k", type=int)
    sp.add_argument("--corr-max-pairs", type=int, metavar="N", help="CORR on a seeded subsample of N pairs")
    sp.add_argument("--hits-only", action="store_true", help="store BkR 0/1 hits instead of full per-query ranks")
    sp.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        metavar="SEED",
        help="only these seeds' samples (one seed group; metrics-gather joins the groups)",
    )
    req(sp, "--out", "output: tidy metrics CSV", metavar="FILE")
    req(sp, "--ranks", "output: per-query ranks npz (<out stem>.ranks.npz)", metavar="FILE")

    sp = add(
        "metrics-gather",
        cmd_metrics_gather,
        "join the metric files of one direction's seed groups into the direction's files",
    )
    files(sp, "--parts", "inputs: the seed groups' metrics CSVs, in seed-group order (ranks npz beside each)")
    req(sp, "--out", "output: tidy metrics CSV", metavar="FILE")
    req(sp, "--ranks", "output: per-query ranks npz (<out stem>.ranks.npz)", metavar="FILE")

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
    req(sp, "--settings", "report settings (steps.settings.report_settings) as JSON", type=_json_object, metavar="JSON")
    # which outputs are needed depends on the dataset (parallel or not): the step checks them
    sp.add_argument(
        "--correlations", help="output (parallel data): correlations CSV (per direction and seed)", metavar="FILE"
    )
    for name in {**REPORT_FILES, **BKR_REPORT_FILES}:
        kind = (
            "parallel data"
            if name not in BKR_REPORT_FILES
            else "non-parallel data"
            if name not in REPORT_FILES
            else "both"
        )
        sp.add_argument(
            "--" + name.replace("_", "-"), help=f"output ({kind}): report file '{name}'", dest=name, metavar="FILE"
        )

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
    req(sp, "--chosen", "input: the chosen base encoder (case-select)", metavar="FILE")
    req(sp, "--encoders", "the base encoders", nargs="+", metavar="ENC")
    files(sp, "--fields", "inputs: per base encoder, per case-study language, its title then body npz")
    req(sp, "--head-out", "output: head weights (.pt)", metavar="FILE")
    req(sp, "--meta-out", "output: head metadata (the .pt path with .json)", metavar="FILE")
    req(sp, "--history-out", "output: training history CSV", metavar="FILE")
    req(sp, "--curve-out", "output: loss curve PNG", metavar="FILE")
    files(sp, "--repr", "outputs: per case-study language the head's representation npz")
    sp.add_argument("--threads", type=int, metavar="N", help="torch/BLAS threads (params.yaml model_threads)")

    sp = add("case-evaluate", cmd_case_evaluate, "case study: BkR of every model for every ordered language pair")
    case(sp)
    req(sp, "--images", "input: image-feature npz", metavar="FILE")
    req(sp, "--models", "every case-study model (baseline, base encoders, heads)", nargs="+", metavar="MODEL")
    files(sp, "--repr", "inputs: per model its representation per case-study language")
    req(sp, "--out-csv", "output: BkR per model, direction, seed", metavar="FILE")
    req(sp, "--out-hits", "output: per-query hits npz", metavar="FILE")

    sp = add("case-report", cmd_case_report, "case study: Table 2, Figure 3")
    case(sp)
    req(sp, "--chosen", "input: the chosen base encoder", metavar="FILE")
    req(sp, "--bkr", "input: case-evaluate CSV", metavar="FILE")
    req(sp, "--hits", "input: case-evaluate hits npz", metavar="FILE")
    named_outputs(sp, CASE_REPORT_FILES, "case report file")

    sp = add("human-sheets", cmd_human_sheets, "human study: blinded rating sheet (CSV + HTML) and sealed key")
    case(sp)
    req(sp, "--human", "the resolved human_study section as a JSON object", type=_json_object, metavar="JSON")
    req(sp, "--chosen", "input: the chosen base encoder", metavar="FILE")
    req(sp, "--models", "models whose representations are given", nargs="+", metavar="MODEL")
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

    sp = add("human-tally", cmd_human_tally, "human study: unblind and tally the ratings")
    req(sp, "--ratings", "input: ratings CSV (human or SIMULATED)", metavar="FILE")
    req(sp, "--key", "input: sealed key JSON", metavar="FILE")
    sp.add_argument(
        "--allow-unverified-key",
        action="store_true",
        help="tally even if the ratings file does not carry the key's sha256 on every row",
    )
    sp.add_argument("--simulated", action="store_true", help="label the tally SIMULATED (simulated rater)")
    req(sp, "--out-md", "output: tally Markdown", metavar="FILE")
    req(sp, "--out-json", "output: tally JSON", metavar="FILE")

    sp = add("tally", cmd_tally, "tally a ratings CSV against a sealed key")
    sp.add_argument("--ratings", required=True)
    sp.add_argument("--key", required=True)
    sp.add_argument("--out")
    sp.add_argument(
        "--allow-unverified-key",
        action="store_true",
        help="tally even if the ratings file does not carry the key's sha256 on every row "
        "(a wrong sha256 is always refused)",
    )
    sp = add("validate-dataset", cmd_validate_dataset, "check a prepared / bring-your-own dataset folder")
    sp.add_argument("root")
    add("versions", cmd_versions, "print software versions")
    _add_findings_parsers(add)
    _add_findings_b(add)

    def eval_opts(sp, required: bool) -> None:
        sp.add_argument(
            "--data",
            required=required,
            help="a prepared dataset folder, or a named dataset: synthetic, multi30k-test2016",
        )
        sp.add_argument("--directions", required=required, help="comma-separated <src>-<tgt>, e.g. en-de,de-en")
        sp.add_argument("--n", type=int, default=1000, help="sample size N (queries per seed; default 1000)")
        sp.add_argument("--seeds", type=int, default=25, help="number of seeds (samples 0..S-1; default 25)")
        sp.add_argument("--k", type=int, default=10, help="Recall@k (default 10)")
        sp.add_argument(
            "--image-backbone",
            help="effnet-lite0 (default for image files), effnet-lite2, resnet50, "
            "resnext101, or the name of the dataset's precomputed features",
        )
        sp.add_argument("--text-field", default="title", choices=["title", "body", "title_body"])
        sp.add_argument("--no-corr", action="store_true", help="skip the CORR baseline (N*N pairs per seed)")
        sp.add_argument("--batch-size", type=int, default=64, help="texts per encode call")
        sp.add_argument("--cache-dir", default=".cache/embeddings", help="embedding cache (default .cache/embeddings)")
        sp.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
        sp.add_argument("--prepared-dir", default="data/prepared", help="where named datasets are prepared")
        sp.add_argument(
            "--shared-dir", default="../shared/datasets", help="local mirror of real data (Multi30K texts and features)"
        )
        sp.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the CIs and tests")
        sp.add_argument("--quiet", action="store_true", help="no progress bars")
        sp.add_argument(
            "--allow-code",
            action="store_true",
            help="allow --model module:callable and {type: callable} specs, which import and run that code "
            "(see docs/SECURITY.md)",
        )

    sp = add("evaluate", cmd_evaluate, "evaluate one encoder on image-text data (no config): table + result JSON")
    sp.add_argument(
        "--model",
        required=True,
        help="sentence-transformers name or folder | module:callable | "
        "precomputed:<npy>,<ids.txt> | precomputed:<folder> | '{type: ..., ...}' (registry spec)",
    )
    sp.add_argument("--name", help="label of the model in the result (default: from --model)")
    sp.add_argument("--out", help="result JSON (default results/<model>/<dataset>.json)")
    eval_opts(sp, required=True)
    sp = add("compare", cmd_compare, "which of two encoders has the higher BkR (McNemar exact, paired bootstrap)")
    sp.add_argument("results", nargs="*", help="two result JSONs of `backretrieval evaluate`")
    sp.add_argument("--model", action="append", help="instead of JSONs: evaluate two models (give --model twice)")
    sp.add_argument("--out", help="write the comparison as JSON too")
    eval_opts(sp, required=False)
    sp = add("verify", cmd_verify, "compare a run's reports with the committed ones, within stated tolerances")
    sp.add_argument("reports", nargs="?", default="reports", help="the run's reports folder (default reports)")
    sp.add_argument("--reference", metavar="DIR", help="reference reports folder (default: the git revision's)")
    sp.add_argument("--rev", default="HEAD", help="git revision of the reference reports (default HEAD)")
    sp.add_argument("--tolerances", action="store_true", help="print the tolerance table and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.func(args) or 0)
    except BackretrievalError as exc:
        print(f"backretrieval: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk met outside backretrieval._util.io's writers
        if exc.errno not in io.NO_SPACE_ERRNOS:
            raise
        where = exc.filename or f"an output of `backretrieval {args.cmd}`"
        print(
            f"backretrieval: error: {where}: cannot be written: {exc.strerror} (errno {exc.errno}); "
            "free space on its filesystem and run again",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
