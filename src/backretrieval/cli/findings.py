"""The findings steps (when BkR works and how far to trust it): explicit input files, output
folder and settings, no config. Flag defaults are ``steps.settings.FINDINGS_DEFAULTS``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import ConfigError
from ..steps.layout import ranks_path
from ..steps.settings import FINDINGS_DEFAULTS
from ._args import dataset, files, named_files, opt, optional_path, recall_k, req, seeds, switch, text_files

D = FINDINGS_DEFAULTS

# ------------------------------------------------------------------------------ commands


def _run(args: argparse.Namespace, embeddings: bool):
    """The run's artifacts; with ``embeddings`` its samples, image and text embeddings, and the
    per-query ranks beside each metrics CSV."""
    from ..steps.findings import load_run

    metrics = [Path(p) for p in args.metrics]
    return load_run(
        dataset=Path(args.dataset),
        metrics_files=metrics,
        samples_files=[Path(p) for p in args.samples] if embeddings else [],
        ranks_files=[ranks_path(p) for p in metrics] if embeddings else [],
        image_file=Path(args.image_emb) if embeddings else None,
        text_files=[Path(p) for p in args.text_emb] if embeddings else [],
        k=args.recall_k,
    )


def _run_info(args: argparse.Namespace):
    """The run the analysis belongs to (its record's ``run``), from the run's metrics CSVs."""
    from ..steps.findings import load_run

    run = load_run(
        dataset=Path(args.run_dataset or args.dataset), metrics_files=[Path(p) for p in args.metrics], k=args.recall_k
    )
    return run.run_info(args.run_name, str(Path(args.out_dir).parent))


def cmd_findings_inference(args: argparse.Namespace) -> int:
    from ..steps.findings import inference_step

    inference_step(
        _run(args, embeddings=True),
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


def cmd_findings_calibration(args: argparse.Namespace) -> int:
    from ..steps.findings import calibration_step

    calibration_step(
        _run(args, embeddings=True),
        run_name=args.run_name,
        out_dir=Path(args.out_dir),
        soft_m=args.soft_m,
        n_seeds=args.n_seeds,
    )
    return 0


def cmd_findings_bli(args: argparse.Namespace) -> int:
    from ..steps.findings import bli_step

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
        _run(args, embeddings=False),
        run_name=args.run_name,
        out_dir=Path(args.out_dir),
        specs=specs,
        test_size=args.test_size,
        min_count=args.min_count,
        seed=args.seed,
        csls_k=args.csls_k,
    )
    return 0


def cmd_findings_agreement(args: argparse.Namespace) -> int:
    from ..steps.findings import agreement_step

    agreement_step(
        _run(args, embeddings=False),
        run_name=args.run_name,
        out_dir=Path(args.out_dir),
        points_file=Path(args.points),
        bli_file=optional_path(args.bli),
        soft_m=args.soft_m,
        B=args.B,
        boot_seed=args.bootstrap_seed,
    )
    return 0


def cmd_findings_image_quality(args: argparse.Namespace) -> int:
    from ..steps import findings as fs

    fs.image_quality_step(
        dataset=Path(args.dataset),
        samples_files=[Path(p) for p in args.samples],
        text_files=text_files(args.text),
        image_files=named_files(args.image, "--image"),
        base=args.base,
        degradations=fs.parse_degradations(args.noise, args.project, args.shuffle),
        k=args.recall_k,
        max_seeds=args.max_seeds,
        seed=args.seed,
        out_dir=Path(args.out_dir),
        run=_run_info(args),
    )
    return 0


def cmd_findings_sample_size(args: argparse.Namespace) -> int:
    from ..findings.sample_size import Criterion
    from ..steps import findings as fs

    fs.sample_size_step(
        dataset=Path(args.dataset),
        text_files=text_files(args.text),
        image_file=Path(args.image),
        directions=args.directions,
        n_grid=args.n_grid,
        seeds=args.seeds,
        k=args.recall_k,
        baseline=args.baseline,
        out_dir=Path(args.out_dir),
        run=_run_info(args),
        criterion=Criterion(agreement=args.min_agreement, share=args.min_share),
    )
    return 0


def cmd_findings_hubness(args: argparse.Namespace) -> int:
    from ..steps import findings as fs

    fs.hubness_step(
        dataset=Path(args.dataset),
        samples_files=[Path(p) for p in args.samples],
        text_files=text_files(args.text),
        image_file=Path(args.image),
        retrievals=args.retrievals,
        hub_fraction=args.hub_fraction,
        hub_noise=args.hub_noise,
        k=args.recall_k,
        max_seeds=args.max_seeds,
        seed=args.seed,
        out_dir=Path(args.out_dir),
        run=_run_info(args),
    )
    return 0


def cmd_findings_document(args: argparse.Namespace) -> int:
    from ..steps.findings import document_step

    document_step(
        [Path(p) for p in args.records],
        doc=Path(args.doc),
        summary_dir=Path(args.summary_dir),
        readme=optional_path(args.readme),
    )
    return 0


# ------------------------------------------------------------------------------ parsers


def _run_flags(sp: argparse.ArgumentParser) -> None:
    """The run an analysis reads: its dataset, metrics CSVs, Recall@k, name and output folder."""
    dataset(sp, "the run's prepared dataset folder (data/prepared/<name>)")
    files(sp, "--metrics", "the run's metrics CSVs of every direction")
    recall_k(sp, "k of Recall@k of the run (params.yaml recall_k)")
    req(sp, "--run-name", "run name written into the outputs")
    req(sp, "--out-dir", "output folder: <reports_dir>/findings", metavar="DIR")


def _embedding_flags(sp: argparse.ArgumentParser) -> None:
    """The run's samples and embeddings (the per-query ranks are read beside each --metrics CSV)."""
    files(sp, "--samples", "<direction>.json samples of every direction")
    req(sp, "--image-emb", "image embedding of the run's backbone", metavar="FILE")
    files(sp, "--text-emb", "text embeddings <encoder>/<lang>.<field>.npz")


def _analysis_flags(sp: argparse.ArgumentParser, samples: bool = True) -> None:
    """The flags of the analyses that re-evaluate embeddings (image quality, sample size, hubness)."""
    dataset(sp, "prepared dataset folder of the evaluated items")
    if samples:
        files(sp, "--samples", "samples JSON files (one per direction)")
    req(sp, "--text", "text embeddings", nargs="+", metavar="ENCODER:LANG=NPZ")
    recall_k(sp, "k of Recall@k of the run (params.yaml recall_k)")
    files(sp, "--metrics", "the run's metrics CSVs (every direction)")
    opt(sp, "--run-dataset", "the run's prepared dataset when --dataset is another one", metavar="DIR")
    req(sp, "--run-name", "run name written into the outputs")
    req(sp, "--out-dir", "output folder: <reports_dir>/findings", metavar="DIR")


def register(add) -> None:
    sp = add(
        "findings-inference", cmd_findings_inference, "findings: encoder x item bootstrap, order accuracy, sensitivity"
    )
    _run_flags(sp)
    _embedding_flags(sp)
    opt(sp, "--B", "bootstrap replicates", type=int, default=D["inference"]["B"])
    opt(sp, "--bootstrap-seed", "seed of the bootstrap", type=int, default=D["inference"]["bootstrap_seed"])
    opt(sp, "--n-seeds", "the first n seeds of each direction (default: all)", type=int, metavar="N")
    opt(
        sp,
        "--random-encoders",
        "chance-level encoders (left out in one sensitivity set)",
        nargs="*",
        default=["random"],
        metavar="ENC",
    )
    opt(
        sp,
        "--english-only",
        "English-only encoders (left out, with the random ones, in 'core')",
        nargs="*",
        default=[],
        metavar="ENC",
    )
    opt(sp, "--family", "encoders of one model family (a sensitivity set)", nargs="*", metavar="ENC")
    opt(sp, "--family-name", "name of the --family set", default="word-vector")

    sp = add("findings-calibration", cmd_findings_calibration, "findings: BkR -> XLR calibration, soft BkR")
    _run_flags(sp)
    _embedding_flags(sp)
    opt(sp, "--soft-m", "m of soft BkR (1 = BkR)", type=int, nargs="+", default=D["calibration"]["soft_m"])
    opt(sp, "--n-seeds", "the first n seeds of each direction (default: all)", type=int, metavar="N")

    sp = add("findings-bli", cmd_findings_bli, "findings: BLI of the word-vector family")
    _run_flags(sp)
    opt(sp, "--spec", "a wordvec encoder's params entry as JSON", action="append", metavar="ENCODER=JSON")
    opt(sp, "--test-size", "held-out dictionary pairs", type=int, default=D["bli"]["test_size"])
    opt(sp, "--min-count", "minimum word count of a dictionary pair", type=int, default=D["bli"]["min_count"])
    opt(sp, "--seed", "random seed (held-out dictionary split)", type=int, default=D["bli"]["seed"])
    opt(sp, "--csls-k", "neighbourhood size of CSLS", type=int, default=D["bli"]["csls_k"])

    sp = add("findings-agreement", cmd_findings_agreement, "findings: agreement matrix of every metric")
    _run_flags(sp)
    req(sp, "--points", "input: calibration_points.csv of the run", metavar="FILE")
    opt(sp, "--bli", "input: bli.csv of the run (optional)", metavar="FILE")
    opt(sp, "--soft-m", "m of the soft BkR in the matrix", type=int, default=D["agreement"]["soft_m"])
    opt(sp, "--B", "bootstrap replicates", type=int, default=D["agreement"]["B"])
    opt(sp, "--bootstrap-seed", "seed of the bootstrap", type=int, default=D["agreement"]["bootstrap_seed"])

    sp = add(
        "findings-image-quality", cmd_findings_image_quality, "findings: image quality vs BkR's agreement with XLR"
    )
    _analysis_flags(sp)
    req(sp, "--image", "image features per backbone", nargs="+", metavar="BACKBONE=NPZ")
    req(sp, "--base", "the backbone whose features are degraded")
    opt(sp, "--noise", "Gaussian noise levels (noise/signal norm)", nargs="*", type=float, default=[])
    opt(sp, "--project", "random projections to these dimensions", nargs="*", type=int, default=[])
    switch(sp, "--shuffle", "add shuffled features (the floor)")
    opt(sp, "--max-seeds", "the first seeds of each samples file (default: all)", type=int, metavar="N")
    opt(sp, "--seed", "seed of the degradations", type=int, default=D["image_quality"]["seed"])

    sp = add("findings-sample-size", cmd_findings_sample_size, "findings: BkR's ranking stability vs N")
    _analysis_flags(sp, samples=False)
    req(sp, "--image", "image features (npz)", metavar="FILE")
    req(sp, "--directions", "directions to sample, e.g. en-de de-en", nargs="+")
    req(sp, "--n-grid", "sample sizes N to evaluate", nargs="+", type=int, metavar="N")
    seeds(sp, "seed values of the samples at each N")
    opt(sp, "--baseline", "the random encoder (its BkR is compared with k/N)", metavar="ENC")
    opt(
        sp,
        "--min-agreement",
        "criterion: least share of encoder pairs ordered as at the largest N",
        type=float,
        default=D["sample_size"]["min_agreement"],
    )
    opt(
        sp,
        "--min-share",
        "criterion: least share of samples (direction x seed) meeting --min-agreement",
        type=float,
        default=D["sample_size"]["min_share"],
    )

    sp = add("findings-hubness", cmd_findings_hubness, "findings: hubness, CSLS / margin, injected hubs")
    _analysis_flags(sp)
    req(sp, "--image", "image features (npz)", metavar="FILE")
    retrievals = D["hubness"]["retrievals"]
    opt(sp, "--retrievals", "retrieval rules", nargs="+", default=list(retrievals), choices=list(retrievals))
    opt(sp, "--hub-fraction", "injected hubs per target", type=float, default=D["hubness"]["hub_fraction"])
    opt(sp, "--hub-noise", "noise of the injected hubs", type=float, default=D["hubness"]["hub_noise"])
    opt(sp, "--max-seeds", "the first seeds of each samples file (default: all)", type=int, metavar="N")
    opt(sp, "--seed", "seed of the injected hubs", type=int, default=D["hubness"]["seed"])

    sp = add("findings-document", cmd_findings_document, "docs/FINDINGS.md + overall verdict from every findings JSON")
    files(sp, "--records", "every configuration's <reports_dir>/findings/*.json")
    opt(sp, "--doc", "output: the findings document", default="docs/FINDINGS.md", metavar="FILE")
    opt(sp, "--summary-dir", "output: the cross-configuration summary", default="reports/findings_summary")
    opt(sp, "--readme", "README whose findings-verdict block is regenerated", metavar="FILE")
