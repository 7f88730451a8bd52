"""The findings steps (when BkR works and how far to trust it): explicit input files, output
folder and settings, no config. Flag defaults are ``steps.settings.FINDINGS_DEFAULTS``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigError
from ..steps.layout import ranks_path
from ..steps.settings import FINDINGS_DEFAULTS
from ._args import dataset, files, named_files, opt, optional_path, recall_k, req, seeds, switch, text_files

D = FINDINGS_DEFAULTS

# ------------------------------------------------------------------------------ commands


def _artifacts(args: argparse.Namespace):
    """The run's artifacts named by the command's flags (the one loader,
    :func:`backretrieval.steps.findings.load_run`); the per-query ranks are read beside each
    metrics CSV when the text embeddings come as ``--text-emb``."""
    from ..steps.findings import load_run, text_keys

    metrics = [Path(p) for p in args.metrics]
    text_emb = getattr(args, "text_emb", None)
    image = getattr(args, "image_emb", None) or getattr(args, "image", None)
    if isinstance(image, list):
        images = named_files(image, "--image")
    else:
        images = {"image": Path(image)} if image else {}
    if text_emb is not None:
        texts = text_keys([Path(p) for p in text_emb])
    else:
        texts = text_files(args.text) if getattr(args, "text", None) else {}
    return load_run(
        dataset=Path(args.dataset),
        metrics_files=metrics,
        k=args.recall_k,
        run_dataset=optional_path(getattr(args, "run_dataset", None)),
        samples_files=[Path(p) for p in getattr(args, "samples", None) or []],
        ranks_files=[ranks_path(p) for p in metrics] if text_emb is not None else [],
        image_files=images,
        text_files=texts,
        run_name=args.run_name,
        reports_dir=str(Path(args.out_dir).parent),
    )


def _bli_specs(settings: dict) -> None:
    specs = {}
    for item in settings["spec"] or []:
        enc, sep, raw = item.partition("=")
        try:
            spec = json.loads(raw) if sep else None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--spec {item!r}: the part after '=' is not JSON ({exc})") from exc
        if not isinstance(spec, dict):
            raise ConfigError(f"--spec {item!r}: expected ENCODER={{JSON object of its params entry}}")
        specs[enc] = spec
    settings["specs"] = specs


def _agreement_inputs(settings: dict) -> None:
    settings["bli"] = optional_path(settings["bli"])


def _command(analysis: str, prepare: Callable[[dict], None] | None = None) -> Callable[[argparse.Namespace], int]:
    """``backretrieval findings-<analysis>``: the registered analysis on the flags' run, its
    settings the flags (``prepare`` converts the ones that need it)."""

    def cmd(args: argparse.Namespace) -> int:
        from ..steps.findings import run_analysis

        settings = dict(vars(args))
        if prepare is not None:
            prepare(settings)
        run_analysis(analysis, _artifacts(args), settings, Path(args.out_dir))
        return 0

    return cmd


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
        "findings-inference", _command("inference"), "findings: encoder x item bootstrap, order accuracy, sensitivity"
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

    sp = add("findings-calibration", _command("calibration"), "findings: BkR -> XLR calibration, soft BkR")
    _run_flags(sp)
    _embedding_flags(sp)
    opt(sp, "--soft-m", "m of soft BkR (1 = BkR)", type=int, nargs="+", default=D["calibration"]["soft_m"])
    opt(sp, "--n-seeds", "the first n seeds of each direction (default: all)", type=int, metavar="N")

    sp = add("findings-bli", _command("bli", _bli_specs), "findings: BLI of the word-vector family")
    _run_flags(sp)
    opt(sp, "--spec", "a wordvec encoder's params entry as JSON", action="append", metavar="ENCODER=JSON")
    opt(sp, "--test-size", "held-out dictionary pairs", type=int, default=D["bli"]["test_size"])
    opt(sp, "--min-count", "minimum word count of a dictionary pair", type=int, default=D["bli"]["min_count"])
    opt(sp, "--seed", "random seed (held-out dictionary split)", type=int, default=D["bli"]["seed"])
    opt(sp, "--csls-k", "neighbourhood size of CSLS", type=int, default=D["bli"]["csls_k"])

    sp = add(
        "findings-agreement", _command("agreement", _agreement_inputs), "findings: agreement matrix of every metric"
    )
    _run_flags(sp)
    req(sp, "--points", "input: calibration_points.csv of the run", metavar="FILE")
    opt(sp, "--bli", "input: bli.csv of the run (optional)", metavar="FILE")
    opt(sp, "--soft-m", "m of the soft BkR in the matrix", type=int, default=D["agreement"]["soft_m"])
    opt(sp, "--B", "bootstrap replicates", type=int, default=D["agreement"]["B"])
    opt(sp, "--bootstrap-seed", "seed of the bootstrap", type=int, default=D["agreement"]["bootstrap_seed"])

    sp = add("findings-image-quality", _command("image_quality"), "findings: image quality vs BkR's agreement with XLR")
    _analysis_flags(sp)
    req(sp, "--image", "image features per backbone", nargs="+", metavar="BACKBONE=NPZ")
    req(sp, "--base", "the backbone whose features are degraded")
    opt(sp, "--noise", "Gaussian noise levels (noise/signal norm)", nargs="*", type=float, default=[])
    opt(sp, "--project", "random projections to these dimensions", nargs="*", type=int, default=[])
    switch(sp, "--shuffle", "add shuffled features (the floor)")
    opt(sp, "--max-seeds", "the first seeds of each samples file (default: all)", type=int, metavar="N")
    opt(sp, "--seed", "seed of the degradations", type=int, default=D["image_quality"]["seed"])

    sp = add("findings-sample-size", _command("sample_size"), "findings: BkR's ranking stability vs N")
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

    sp = add("findings-hubness", _command("hubness"), "findings: hubness, CSLS / margin, injected hubs")
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
