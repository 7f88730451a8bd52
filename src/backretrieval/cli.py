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


def cmd_findings_image_quality(args) -> int:
    from .steps import findings as fs

    fs.image_quality_step(
        dataset=Path(args.dataset), samples_files=[Path(p) for p in args.samples],
        text_files=_text_files(args.text), image_files=_named_files(args.image, "--image"), base=args.base,
        degradations=fs.parse_degradations(args.noise, args.project, args.shuffle), k=args.k,
        max_seeds=args.max_seeds, seed=args.seed, out_dir=Path(args.out_dir), config_name=args.config_name,
    )
    return 0


def cmd_findings_sample_size(args) -> int:
    from .findings.sample_size import Criterion
    from .steps import findings as fs

    fs.sample_size_step(
        dataset=Path(args.dataset), text_files=_text_files(args.text), image_file=Path(args.image),
        directions=args.directions, n_grid=args.n_grid, seeds=args.seeds, k=args.k, baseline=args.baseline,
        out_dir=Path(args.out_dir), config_name=args.config_name,
        criterion=Criterion(agreement=args.min_agreement, share=args.min_share),
    )
    return 0


def cmd_findings_hubness(args) -> int:
    from .steps import findings as fs

    fs.hubness_step(
        dataset=Path(args.dataset), samples_files=[Path(p) for p in args.samples], text_files=_text_files(args.text),
        image_file=Path(args.image), retrievals=args.retrievals, hub_fraction=args.hub_fraction,
        hub_noise=args.hub_noise, k=args.k, max_seeds=args.max_seeds, seed=args.seed,
        out_dir=Path(args.out_dir), config_name=args.config_name,
    )
    return 0


def cmd_findings_synthetic(args) -> int:
    from .steps.findings import synthetic_dataset_step

    synthetic_dataset_step(Path(args.out), args.n_items, args.languages, args.seed, args.image_size)
    return 0


def cmd_findings_embed(args) -> int:
    """Embeddings of a prepared dataset with a model given by its spec (explicit paths)."""
    import json

    from .errors import InputError
    from .steps.embed import embed_dataset_images, embed_dataset_text

    try:
        spec = json.loads(args.spec)
    except json.JSONDecodeError as exc:
        raise InputError(f"--spec: not valid JSON ({exc})") from exc
    if not isinstance(spec, dict):
        raise InputError("--spec: expected a JSON object, e.g. '{\"type\": \"char_ngram\"}'")
    cache = Path(args.cache_dir) if args.cache_dir else None
    if args.cmd == "findings-embed-text":
        embed_dataset_text(Path(args.dataset), args.model, spec, args.lang, args.field, Path(args.out), cache)
    else:
        embed_dataset_images(Path(args.dataset), args.model, spec, Path(args.out), cache)
    return 0


def _add_findings_b(sub, add) -> None:
    def common(sp, samples: bool = True):
        sp.add_argument("--dataset", required=True, help="prepared dataset folder")
        if samples:
            sp.add_argument("--samples", nargs="+", required=True, help="samples JSON files (one per direction)")
        sp.add_argument("--text", nargs="+", required=True, metavar="ENCODER:LANG=NPZ", help="text embeddings")
        sp.add_argument("--k", type=int, default=10)
        sp.add_argument("--config-name", required=True, help="run name written into the outputs")
        sp.add_argument("--out-dir", required=True, help="e.g. reports/findings")

    sp = add("findings-image-quality", cmd_findings_image_quality,
             "findings: image quality vs BkR's agreement with XLR", config=False)
    common(sp)
    sp.add_argument("--image", nargs="+", required=True, metavar="BACKBONE=NPZ", help="image features per backbone")
    sp.add_argument("--base", required=True, help="the backbone whose features are degraded")
    sp.add_argument("--noise", nargs="*", type=float, default=[], help="Gaussian noise levels (noise/signal norm)")
    sp.add_argument("--project", nargs="*", type=int, default=[], help="random projections to these dimensions")
    sp.add_argument("--shuffle", action="store_true", help="add shuffled features (the floor)")
    sp.add_argument("--max-seeds", type=int, default=None, help="first seeds of each samples file (default all)")
    sp.add_argument("--seed", type=int, default=0)

    sp = add("findings-sample-size", cmd_findings_sample_size, "findings: BkR's ranking stability vs N", config=False)
    common(sp, samples=False)
    sp.add_argument("--image", required=True, help="image features (npz)")
    sp.add_argument("--directions", nargs="+", required=True)
    sp.add_argument("--n-grid", nargs="+", type=int, required=True)
    sp.add_argument("--seeds", nargs="+", type=int, required=True)
    sp.add_argument("--baseline", help="the random encoder (its BkR is compared with k/N)")
    sp.add_argument("--min-agreement", type=float, default=0.9)
    sp.add_argument("--min-share", type=float, default=0.9)

    sp = add("findings-hubness", cmd_findings_hubness, "findings: hubness, CSLS / margin, injected hubs", config=False)
    common(sp)
    sp.add_argument("--image", required=True, help="image features (npz)")
    sp.add_argument("--retrievals", nargs="+", default=["cosine", "csls", "margin"], choices=["cosine", "csls", "margin"])
    sp.add_argument("--hub-fraction", type=float, default=0.02, help="injected hubs per target")
    sp.add_argument("--hub-noise", type=float, default=0.1)
    sp.add_argument("--max-seeds", type=int, default=None)
    sp.add_argument("--seed", type=int, default=0)

    sp = add("findings-synthetic", cmd_findings_synthetic, "findings: the scaled SYNTHETIC dataset", config=False)
    sp.add_argument("--out", required=True)
    sp.add_argument("--n-items", type=int, required=True)
    sp.add_argument("--languages", nargs="+", required=True)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--image-size", type=int, default=160)

    for name, what in (("findings-embed-text", "texts of one language"), ("findings-embed-images", "images")):
        sp = add(name, cmd_findings_embed, f"findings: embed the {what} of a prepared dataset", config=False)
        sp.add_argument("--dataset", required=True)
        sp.add_argument("--model", required=True, help="encoder / backbone id")
        sp.add_argument("--spec", required=True, help="its params.yaml entry as JSON")
        sp.add_argument("--cache-dir")
        sp.add_argument("--out", required=True)
        if name == "findings-embed-text":
            sp.add_argument("--lang", required=True)
            sp.add_argument("--field", default="title")


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
    _add_findings_b(sub, add)
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

