"""Command-line interface: one subcommand per pipeline step (thin wrapper over the library).

Every step takes ``--config`` (params.yaml or a named config) and derives its input/output
paths from it (backretrieval.steps.layout), so Snakemake rules and DVC stages only name the step.
User-fixable problems print ``backretrieval: error: ...`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path


from . import __version__
from ._util import io
from .config import load_config
from .errors import BackretrievalError
from .steps import layout

log = logging.getLogger("backretrieval")


def _cfg(args) -> dict:
    return load_config(args.config, args.set)


def _cfg_fitting_dataset(args) -> dict:
    """The config, checked against the prepared dataset (when there is one) before any work."""
    from .steps.prepare import check_dataset_fits

    cfg = _cfg(args)
    root = layout.dataset_root(cfg)
    if (root / "dataset.json").is_file():
        check_dataset_fits(cfg, root)
    return cfg


# -------------------------------------------------------------------------------------------
# steps


def cmd_validate_config(args) -> int:
    cfg = _cfg_fitting_dataset(args)
    root = layout.dataset_root(cfg)
    fits = (f"fits the prepared dataset {root}" if (root / "dataset.json").is_file()
            else f"dataset {root} not prepared yet (its checks run at the end of `prepare`)")
    print(f"{args.config}: OK ({len(cfg['encoders'])} encoders, {len(cfg['directions'])} directions, "
          f"{len(cfg['seeds'])} seeds, N={cfg['sample_size']}); {fits}")
    return 0


def cmd_prepare(args) -> int:
    cfg = _cfg(args)
    from .steps.prepare import prepare_step

    prepare_step(cfg, args.corpus)
    return 0


def cmd_embed_text(args) -> int:
    cfg = _cfg_fitting_dataset(args)
    from .steps.embed import embed_text_step

    embed_text_step(cfg, args.encoder, args.langs)
    return 0


def cmd_embed_images(args) -> int:
    cfg = _cfg_fitting_dataset(args)
    from .steps.embed import embed_dataset_images

    bb = args.backbone or cfg["image_backbone"]
    embed_dataset_images(layout.dataset_root(cfg), bb, dict(cfg["backbones"][bb]),
                         layout.image_emb_path(cfg, bb), Path(cfg["cache_dir"]))
    return 0


def cmd_sample(args) -> int:
    cfg = _cfg(args)
    from .steps.sample import sample_step

    for d in args.direction or cfg["directions"]:
        sample_step(layout.dataset_root(cfg), d, cfg["sample_size"], cfg["seeds"], layout.samples_path(cfg, d))
    return 0


def cmd_metrics(args) -> int:
    cfg = _cfg(args)
    from .steps.metrics import metrics_step

    for d in args.direction or cfg["directions"]:
        src, tgt = d.split("-")
        t0 = time.perf_counter()
        metrics_step(
            dataset=layout.dataset_root(cfg),
            dataset_name=cfg["dataset"]["name"],
            direction=d,
            samples_file=layout.samples_path(cfg, d),
            image_file=layout.image_emb_path(cfg),
            backbone=cfg["image_backbone"],
            text_files={e: (layout.text_emb_path(cfg, e, src), layout.text_emb_path(cfg, e, tgt)) for e in cfg["encoders"]},
            text_field=cfg["text_field"],
            k=cfg["k"],
            corr_max_pairs=cfg.get("corr_max_pairs"),
            full_bkr_ranks=cfg.get("full_bkr_ranks", True),
            out=layout.metrics_path(cfg, d),
        )
        log.info("metrics %s: %.1fs", d, time.perf_counter() - t0)
    return 0


def cmd_report(args) -> int:
    cfg = _cfg(args)
    from .steps.report import build_report

    build_report(cfg)
    return 0


def cmd_case(args) -> int:
    """Case-study steps (Section 3.2): embed, select, train, evaluate, report."""
    cfg = _cfg_fitting_dataset(args) if args.cmd == "case-embed" else _cfg(args)
    from .steps import case_study as cs
    from .steps import human_study as hs

    ds = layout.dataset_root(cfg)
    if args.cmd == "case-embed":
        cs.embed_step(cfg, ds, args.encoder)
    elif args.cmd == "case-select":
        chosen = cs.select_step(cfg, ds, layout.case_root(cfg) / "chosen_base.json")
        log.info("case study: heads will be trained on %s", chosen)
    elif args.cmd == "case-train":
        cs.train_step(cfg, ds, args.head, layout.case_root(cfg) / "chosen_base.json")
    elif args.cmd == "case-evaluate":
        cs.evaluate_step(cfg, ds)
    elif args.cmd == "case-report":
        cs.report_step(cfg, ds)
    elif args.cmd == "human-sheets":
        hs.sheets_step(cfg, ds)
    elif args.cmd == "human-simulate":
        print(hs.simulate_step(cfg, ds))
    elif args.cmd == "human-tally":
        hs.tally_step(cfg)
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
# findings (issue 15): explicit files and settings, no config (findings-a: inference,
# calibration, bli, agreement, document)


def _findings_run(args):
    from .steps.findings import load_run

    return load_run(
        dataset=Path(args.dataset), metrics_files=[Path(p) for p in args.metrics],
        samples_files=[Path(p) for p in args.samples or []], ranks_files=[Path(p) for p in args.ranks or []],
        image_file=Path(args.image_emb) if args.image_emb else None,
        text_files=[Path(p) for p in args.text_emb or []], k=args.k,
    )


def cmd_findings_inference(args) -> int:
    from .steps.findings import inference_step

    inference_step(_findings_run(args), run_name=args.run_name, out_dir=Path(args.out_dir), B=args.B,
                   boot_seed=args.bootstrap_seed, n_seeds=args.n_seeds, max_pairs=args.corr_max_pairs or None,
                   random_encoders=args.random_encoders, family=args.family or [], family_name=args.family_name)
    return 0


def cmd_findings_calibration(args) -> int:
    from .steps.findings import calibration_step

    calibration_step(_findings_run(args), run_name=args.run_name, out_dir=Path(args.out_dir), soft_m=args.soft_m,
                     n_seeds=args.n_seeds)
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
    if args.specs_from:
        cfg = load_config(args.specs_from, [])
        specs.update({e: s for e, s in cfg["encoders"].items() if s.get("type") == "wordvec" and e not in specs})
    bli_step(_findings_run(args), run_name=args.run_name, out_dir=Path(args.out_dir), specs=specs,
             test_size=args.test_size, min_count=args.min_count, seed=args.seed, csls_k=args.csls_k)
    return 0


def cmd_findings_agreement(args) -> int:
    from .steps.findings import agreement_step

    agreement_step(_findings_run(args), run_name=args.run_name, out_dir=Path(args.out_dir), points_file=Path(args.points),
                   bli_file=Path(args.bli) if args.bli else None, soft_m=args.soft_m, B=args.B, boot_seed=args.bootstrap_seed)
    return 0


def cmd_findings_document(args) -> int:
    from .steps.findings import document_step

    document_step([Path(p) for p in args.records], doc=Path(args.doc), summary_dir=Path(args.summary_dir),
                  readme=Path(args.readme) if args.readme else None)
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

    sp = add("findings-inference", cmd_findings_inference, "findings 1: encoder x item bootstrap, order accuracy, sensitivity", config=False)
    run_inputs(sp, True)
    sp.add_argument("--B", type=int, default=200, help="bootstrap replicates")
    sp.add_argument("--bootstrap-seed", type=int, default=0)
    sp.add_argument("--n-seeds", type=int, default=3, help="the first n seeds of each direction are used")
    sp.add_argument("--corr-max-pairs", type=int, default=20000,
                    help="CORR per replicate on this many sampled pairs (0 = all pairs)")
    sp.add_argument("--random-encoders", nargs="*", default=["random"], help="chance-level encoders (left out in one sensitivity set)")
    sp.add_argument("--family", nargs="*", help="encoders of one model family (a sensitivity set)")
    sp.add_argument("--family-name", default="word-vector")
    sp = add("findings-calibration", cmd_findings_calibration, "findings 5: BkR -> XLR calibration, soft BkR", config=False)
    run_inputs(sp, True)
    sp.add_argument("--soft-m", type=int, nargs="+", default=[1, 3, 5, 10], help="m of soft BkR (1 = BkR)")
    sp.add_argument("--n-seeds", type=int, default=None, help="the first n seeds (default: all)")
    sp = add("findings-bli", cmd_findings_bli, "findings 6: BLI of the word-vector family", config=False)
    run_inputs(sp, False)
    sp.add_argument("--spec", action="append", metavar="ENCODER=JSON", help="a wordvec encoder's params entry as JSON")
    sp.add_argument("--specs-from", metavar="CONFIG", help="also every wordvec encoder of this config's `encoders`")
    sp.add_argument("--test-size", type=int, default=2000)
    sp.add_argument("--min-count", type=int, default=5)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--csls-k", type=int, default=10)
    sp = add("findings-agreement", cmd_findings_agreement, "findings 6: agreement matrix of every metric", config=False)
    run_inputs(sp, False)
    sp.add_argument("--points", required=True, help="calibration_points.csv of the run")
    sp.add_argument("--bli", help="bli.csv of the run (optional)")
    sp.add_argument("--soft-m", type=int, default=5)
    sp.add_argument("--B", type=int, default=1000)
    sp.add_argument("--bootstrap-seed", type=int, default=0)
    sp = add("findings-document", cmd_findings_document, "docs/FINDINGS.md + overall verdict from every findings JSON", config=False)
    sp.add_argument("--records", nargs="+", required=True, help="every configuration's <reports_dir>/findings/*.json")
    sp.add_argument("--doc", default="docs/FINDINGS.md")
    sp.add_argument("--summary-dir", default="reports/findings_summary")
    sp.add_argument("--readme", help="README whose findings-verdict block is regenerated")


# -------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="backretrieval", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"backretrieval {__version__}")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)

    def add(name, fn, help_, config=True):
        sp = sub.add_parser(name, help=help_)
        if config:
            sp.add_argument("--config", default="params.yaml", help="params.yaml or a named config")
            sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="override a config value (YAML), e.g. --set sample_size=200")
        sp.set_defaults(func=fn)
        return sp

    add("validate-config", cmd_validate_config, "validate the config against the schema")
    sp = add("prepare", cmd_prepare, "generate (synthetic) or prepare the configured dataset")
    sp.add_argument("--corpus", help="prepare one of the configured text-only `corpora` instead")
    sp = add("embed-text", cmd_embed_text, "embed the dataset's texts with one encoder")
    sp.add_argument("--encoder", required=True)
    sp.add_argument("--langs", nargs="*")
    sp = add("embed-images", cmd_embed_images, "image features with the configured backbone")
    sp.add_argument("--backbone")
    sp = add("sample", cmd_sample, "draw the seeded samples for each direction")
    sp.add_argument("--direction", action="append")
    sp = add("metrics", cmd_metrics, "XLR, BkR, CORR of every encoder per direction and seed")
    sp.add_argument("--direction", action="append")
    add("report", cmd_report, "correlations, tables, figures, metrics.json")
    sp = add("case-embed", cmd_case, "case study: title/body embeddings of one base encoder")
    sp.add_argument("--encoder", required=True)
    add("case-select", cmd_case, "case study: choose the base encoder by BkR")
    sp = add("case-train", cmd_case, "case study: train a TRIPLET / TRIPLETXL head")
    sp.add_argument("--head", required=True, choices=["triplet", "tripletxl"])
    add("case-evaluate", cmd_case, "case study: BkR of every model for every ordered language pair")
    add("case-report", cmd_case, "case study: Table 2, Figure 3")
    add("human-sheets", cmd_case, "human study: blinded rating sheet (CSV + HTML) and sealed key")
    add("human-simulate", cmd_case, "human study: SIMULATED ratings from the synthetic ground truth")
    add("human-tally", cmd_case, "human study: unblind and tally the configured ratings")
    sp = add("tally", cmd_tally, "tally a ratings CSV against a sealed key", config=False)
    sp.add_argument("--ratings", required=True)
    sp.add_argument("--key", required=True)
    sp.add_argument("--out")
    sp.add_argument("--allow-unverified-key", action="store_true",
                    help="tally even if the ratings file does not carry the key's sha256 on every row "
                         "(a wrong sha256 is always refused)")
    sp = add("validate-dataset", cmd_validate_dataset, "check a prepared / bring-your-own dataset folder", config=False)
    sp.add_argument("root")
    add("versions", cmd_versions, "print software versions", config=False)
    _add_findings_parsers(add)
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
        print(f"backretrieval: error: {where}: cannot be written: {exc.strerror} (errno {exc.errno}); "
              "free space on its filesystem and run again", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

