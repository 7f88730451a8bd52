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
# evaluate your own encoder (no config): backretrieval.evaluation


def _eval_kwargs(args) -> dict:
    return dict(n=args.n, seeds=args.seeds, k=args.k, text_field=args.text_field, image_backbone=args.image_backbone,
                with_corr=not args.no_corr, cache_dir=None if args.no_cache else Path(args.cache_dir),
                prepared_dir=Path(args.prepared_dir), shared_dir=Path(args.shared_dir), batch_size=args.batch_size,
                progress=not args.quiet)


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
        io.write_json(args.out, {"a": a["model"], "b": b["model"], "dataset": a["dataset"],
                                 "comparisons": [c.to_dict() for c in comps]})
    print(text)
    return 0


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

    def eval_opts(sp, required: bool) -> None:
        sp.add_argument("--data", required=required,
                        help="a prepared dataset folder, or a named dataset: synthetic, multi30k-test2016")
        sp.add_argument("--directions", required=required, help="comma-separated <src>-<tgt>, e.g. en-de,de-en")
        sp.add_argument("--n", type=int, default=1000, help="sample size N (queries per seed; default 1000)")
        sp.add_argument("--seeds", type=int, default=25, help="number of seeds (samples 0..S-1; default 25)")
        sp.add_argument("--k", type=int, default=10, help="Recall@k (default 10)")
        sp.add_argument("--image-backbone", help="effnet-lite0 (default for image files), effnet-lite2, resnet50, "
                        "resnext101, or the name of the dataset's precomputed features")
        sp.add_argument("--text-field", default="title", choices=["title", "body", "title_body"])
        sp.add_argument("--no-corr", action="store_true", help="skip the CORR baseline (N*N pairs per seed)")
        sp.add_argument("--batch-size", type=int, default=64, help="texts per encode call")
        sp.add_argument("--cache-dir", default=".cache/embeddings", help="embedding cache (default .cache/embeddings)")
        sp.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
        sp.add_argument("--prepared-dir", default="data/prepared", help="where named datasets are prepared")
        sp.add_argument("--shared-dir", default="../shared/datasets",
                        help="local mirror of real data (Multi30K texts and features)")
        sp.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the CIs and tests")
        sp.add_argument("--quiet", action="store_true", help="no progress bars")

    sp = add("evaluate", cmd_evaluate, "evaluate one encoder on image-text data (no config): table + result JSON",
             config=False)
    sp.add_argument("--model", required=True, help="sentence-transformers name or folder | module:callable | "
                    "precomputed:<npy>,<ids.txt> | precomputed:<folder> | '{type: ..., ...}' (registry spec)")
    sp.add_argument("--name", help="label of the model in the result (default: from --model)")
    sp.add_argument("--out", help="result JSON (default results/<model>/<dataset>.json)")
    eval_opts(sp, required=True)
    sp = add("compare", cmd_compare, "which of two encoders has the higher BkR (McNemar exact, paired bootstrap)",
             config=False)
    sp.add_argument("results", nargs="*", help="two result JSONs of `backretrieval evaluate`")
    sp.add_argument("--model", action="append", help="instead of JSONs: evaluate two models (give --model twice)")
    sp.add_argument("--out", help="write the comparison as JSON too")
    eval_opts(sp, required=False)
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

