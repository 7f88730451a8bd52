"""The user commands: evaluate, compare and rank encoders (no config), verify a run's reports,
validate a config or a dataset folder, print software versions."""

from __future__ import annotations

import argparse
from pathlib import Path

from .._util import io
from ..errors import InputError
from ..evaluation import defaults as D
from ._args import noun, noun_with_alias, opt, positional, switch, text_field

# ------------------------------------------------------------------------------ commands


def _eval_kwargs(args: argparse.Namespace) -> dict:
    """The keywords of :func:`~backretrieval.evaluation.run.evaluate_models`: one protocol
    (checked once, when it is made) and the run's options."""
    from ..evaluation.protocol import Protocol

    return dict(
        protocol=Protocol(
            sample_size=args.sample_size,
            seeds=args.seeds if args.seeds is not None else args.n_seeds,
            recall_k=args.recall_k,
            text_field=args.text_field,
            image_backbone=args.image_backbone,
            with_corr=not args.no_corr,
        ),
        cache_dir=None if args.no_cache else Path(args.cache_dir),
        prepared_dir=Path(args.prepared_dir),
        shared_dir=Path(args.shared_dir),
        batch_size=args.batch_size,
        progress=not args.quiet,
        allow_code=args.allow_code,
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    """One model on one dataset: a table per direction and one result JSON."""
    from ..evaluation import results as R
    from ..evaluation.run import evaluate_model

    if args.out and Path(args.out).is_dir():
        raise InputError(f"--out {args.out}: is a folder; name the result JSON file")
    ev = evaluate_model(args.encoder, args.dataset, args.directions, name=args.name, **_eval_kwargs(args))
    res = R.result_dict(ev, B=args.bootstrap)
    out = R.write_result(args.out, res) if args.out else R.write_result_to_cache(res)
    print(R.format_table(res))
    print(f"\nresult: {out} ({ev.seconds:.1f} s)")
    return 0


def short_labels(paths: list[str]) -> list[str]:
    """The shortest trailing parts of the paths that tell them apart (``out/run1/r.json`` and
    ``out/run2/r.json`` -> ``run1/r.json`` and ``run2/r.json``): compare's labels when both
    results name the same model."""
    parts = [Path(p).parts for p in paths]
    for n in range(1, max(len(p) for p in parts) + 1):
        tails = ["/".join(p[-n:]) for p in parts]
        if len(set(tails)) == len(tails):
            return tails
    return list(paths)


def cmd_compare(args: argparse.Namespace) -> int:
    """Two result JSONs, or two --encoders runs on the same samples: which has the higher BkR."""
    from ..evaluation import results as R
    from ..evaluation.compare import compare_results, format_comparison
    from ..evaluation.run import evaluate_models

    if args.results and args.encoders:
        raise InputError("compare: give two result JSONs or --encoders A B, not both")
    if args.results:
        if len(args.results) != 2:
            raise InputError(f"compare: expected two result JSONs, got {len(args.results)}")
        a, b = (R.read_result(p) for p in args.results)
        labels = [a["model"]["name"], b["model"]["name"]]
        if labels[0] == labels[1]:
            labels = short_labels([str(p) for p in args.results])
    else:
        if not args.encoders or len(args.encoders) != 2 or not args.dataset or not args.directions:
            raise InputError("compare: pass two result JSONs, or --encoders A B with --dataset and --directions")
        evs = evaluate_models(args.encoders, args.dataset, args.directions, **_eval_kwargs(args))
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


#: the files ``backretrieval rank`` writes into its --out-dir folder
RANK_FILES = (
    "ranking.md",
    "ranking.json",
    "ranking.csv",
    "pairwise.csv",
    "bkr_ci.csv",
    "bkr_per_encoder.png",
    "bkr_per_encoder.svg",
    "bkr_per_encoder.pdf",
)


def cmd_rank(args: argparse.Namespace) -> int:
    """Two or more --encoders on the same samples: ranked by BkR with CIs, every pair tested, the
    random baseline (and XLR on parallel data); the tables of the pipeline's bkr_report."""
    from ..evaluation.results import task_name
    from ..evaluation.run import evaluate_models
    from ..reporting.figures import bkr_bars
    from ..reporting.ranking import RANDOM_BASELINE, rank_encoders, ranking_caption

    models = args.encoders or []
    if len(models) < 2:
        raise InputError(f"rank: expected at least two --encoders (the encoders to rank), got {len(models)}")
    if args.out_dir and Path(args.out_dir).exists() and not Path(args.out_dir).is_dir():
        raise InputError(
            f"--out-dir {args.out_dir}: is a file; name the folder for the ranking's files ({', '.join(RANK_FILES)})"
        )
    evs = evaluate_models(models, args.dataset, args.directions, **_eval_kwargs(args))
    import numpy as np
    import pandas as pd

    first = evs[0]
    prot, dataset = first.protocol, {key: v for key, v in first.dataset.items() if key != "path"}
    n, k, n_seeds, B = int(prot["sample_size"]), int(prot["recall_k"]), len(prot["seeds"]), int(args.bootstrap)
    metrics = pd.concat([ev.scores for ev in evs], ignore_index=True)
    ranks = {
        ev.model["name"]: {
            d: {kind: np.concatenate([by_seed[s][kind] for s in sorted(by_seed)]) for kind in by_seed[min(by_seed)]}
            for d, by_seed in ev.ranks.items()
        }
        for ev in evs
    }
    ranking = rank_encoders(
        metrics, ranks, first.units(), k=k, sample_size=n, n_seeds=n_seeds, B=B, seed=0,
        duplicates=first.duplicate_targets,
    )  # fmt: skip
    caption = ranking_caption(
        dataset=str(dataset["name"]),
        synthetic=bool(dataset.get("synthetic")),
        parallel=bool(dataset.get("parallel")),
        image_backbone=str(first.image_backbone["id"]),
        text_field=str(prot["text_field"]),
        sample_size=n,
        n_seeds=n_seeds,
        n_encoders=len(evs),
    )
    text = ranking.markdown(title=f"BkR ranking — {dataset['name']}", caption=caption)
    out = Path(args.out_dir) if args.out_dir else Path("results") / "rankings" / task_name(str(dataset["name"]))
    io.write_text(out / "ranking.md", text)
    io.write_json(
        out / "ranking.json",
        {
            "format": "backretrieval-ranking",
            "format_version": 1,
            "dataset": dataset,
            "image_backbone": dict(first.image_backbone),
            "protocol": {**prot, "bootstrap": {"B": B, "seed": 0}},
            "models": [dict(ev.model) for ev in evs],
            **ranking.to_dict(),
        },
    )
    io.write_csv(out / "ranking.csv", ranking.ranking)
    io.write_csv(out / "pairwise.csv", ranking.pairwise)
    io.write_csv(out / "bkr_ci.csv", ranking.cis)
    label = "SYNTHETIC dataset — " if dataset.get("synthetic") else ""
    bkr_bars(  # the figure the pipeline's bkr_report draws
        ranking.cis,
        [*ranking.ranking["encoder"], RANDOM_BASELINE],
        RANDOM_BASELINE,
        k,
        out / "bkr_per_encoder",
        f"{label}{dataset['name']}: BkR Recall@{k} per encoder (mean over {n_seeds} seeds, 95% CI)",
    )
    print(text)
    print(f"ranking: {out}/ ({', '.join(RANK_FILES)}; {first.seconds:.1f} s)")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """The run's reports vs the committed ones (git revision) or a reference folder."""
    from ..reporting import tolerances as T
    from ..reporting import verify as V

    if args.tolerances:
        print(T.tolerance_table())
        return 0
    from ..reporting.environment import environment_cause, environment_diff

    ref = Path(args.reference) if args.reference else None
    run, reference = V.sources(Path(args.reports), reference_dir=ref, rev=args.rev)
    report = V.compare(run, reference)
    for line in environment_diff(run, reference):  # where each side was made (never compared)
        print(line)
    print(report.summary())
    if not report.ok:
        print(environment_cause(run, reference))
    return 0 if report.ok else 1


def cmd_validate_config(args: argparse.Namespace) -> int:
    from ..config import BASE_CONFIG, code_notice, load_config
    from ..steps import layout
    from ..steps.owner import check_reports_owner
    from ..steps.prepare import check_dataset_fits

    cfg = load_config(args.config, args.set, base=BASE_CONFIG)  # laid over ./params.yaml, as Snakemake does
    check_reports_owner(cfg, str(args.config))  # another run's reports folder is refused
    root = layout.dataset_root(cfg)
    prepared = (root / "dataset.json").is_file()
    if prepared:
        check_dataset_fits(cfg, root)
    fits = (
        f"fits the prepared dataset {root}"
        if prepared
        else f"dataset {root} not prepared yet (its checks run in `backretrieval step check-dataset`, before any model)"
    )
    print(
        f"{args.config}: OK ({len(cfg['encoders'])} encoders, {len(cfg['directions'])} directions, "
        f"{len(cfg['seeds'])} seeds, N={cfg['sample_size']}); {fits}"
    )
    notice = code_notice(cfg)
    if notice:
        print(notice)
    return 0


def cmd_validate_dataset(args: argparse.Namespace) -> int:
    from ..data.byo import validate_dataset

    problems = validate_dataset(Path(args.root), text_field=args.text_field)
    for p in problems:
        print(p)
    n_err = sum(1 for p in problems if getattr(p, "level", "error") == "error")
    print(f"{args.root}: {n_err} error(s), {len(problems) - n_err} warning(s)")
    return 1 if n_err else 0


def cmd_versions(args: argparse.Namespace) -> int:
    from .._util.versions import software_versions

    for k, v in software_versions().items():
        print(f"{k}: {v}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from ..encoders import ENCODER_TYPES
    from ..encoders.catalog import catalog

    rows = catalog()
    width = max(len(e.model) for e in rows) + 2
    print(f"{'--encoder':<{width}}{'offline':<9}weights")
    for e in rows:
        print(f"{e.model:<{width}}{'yes' if e.offline else 'no':<9}{e.weights}")
    listed = {e.model.split()[-1].rstrip("}") for e in rows if e.model.startswith("{")}
    others = [t for t in ENCODER_TYPES if t not in listed and t != "sentence-transformers"]
    print(
        "\nAlso: any sentence-transformers model by Hub name or folder (--encoder org/name, --encoder /path), "
        "your own vectors (--encoder precomputed:<npy>,<ids.txt>), and the registry types that take a model "
        f"or files of yours ('{{type: ..., ...}}'): {', '.join(others)}"
    )
    return 0


# ------------------------------------------------------------------------------ parsers


def _eval_opts(sp: argparse.ArgumentParser, required: bool) -> None:
    """The protocol and run options evaluate, compare and rank share (``--data`` and the
    comma-separated ``--directions`` of earlier versions still work, with a deprecation note)."""
    noun_with_alias(
        sp,
        "dataset",
        "--data",
        "a prepared dataset folder, or a named dataset: synthetic, multi30k-test2016",
        required=required,
        metavar="DIR|NAME",
    )
    noun(sp, "directions", required=required)
    noun(sp, "sample_size", default=D.DEFAULT_N)
    seed_flags = sp.add_mutually_exclusive_group()
    noun(seed_flags, "n_seeds", required=False, default=D.DEFAULT_SEEDS)
    noun(seed_flags, "seeds", "these seed values instead of 0..S-1 (one sample each)", required=False)
    noun(sp, "recall_k", "k of Recall@k", default=D.DEFAULT_K)
    noun(
        sp,
        "image_backbone",
        "the image backbone: effnet-lite0 (default for image files), effnet-lite2, resnet50, resnext101, "
        "or the name of the dataset's precomputed features",
        required=False,
    )
    text_field(sp, "the item text that is embedded", default=D.DEFAULT_TEXT_FIELD)
    switch(sp, "--no-corr", "skip the CORR baseline (N*N pairs per seed)")
    opt(sp, "--batch-size", "texts per encode call", type=int, default=D.DEFAULT_BATCH_SIZE)
    opt(sp, "--cache-dir", "embedding cache", default=str(D.DEFAULT_CACHE_DIR), metavar="DIR")
    switch(sp, "--no-cache", "do not read or write the embedding cache")
    opt(sp, "--prepared-dir", "where named datasets are prepared", default=str(D.DEFAULT_PREPARED_DIR), metavar="DIR")
    opt(
        sp,
        "--shared-dir",
        "local mirror of real data (Multi30K texts and features)",
        default=str(D.DEFAULT_SHARED_DIR),
        metavar="DIR",
    )
    noun(sp, "bootstrap", default=D.DEFAULT_BOOTSTRAP)
    switch(sp, "--quiet", "no progress bars")
    switch(
        sp,
        "--allow-code",
        "allow --encoder module:callable and {type: callable} specs, which import and run that code "
        "(see docs/SECURITY.md)",
    )


def register(add) -> None:
    """Add the user commands (``add(name, fn, help)`` returns the subparser)."""
    sp = add("evaluate", cmd_evaluate, "evaluate one encoder on image-text data (no config): table + result JSON")
    noun_with_alias(
        sp,
        "encoder",
        "--model",
        "the encoder: sentence-transformers name or folder | module:callable | "
        "precomputed:<npy>,<ids.txt> | precomputed:<folder> | '{type: ..., ...}' (registry spec)",
        required=True,
    )
    opt(sp, "--name", "label of the encoder in the result (default: from --encoder)")
    noun(
        sp,
        "out",
        "output: the result JSON (default results/<model>/<revision>/Backretrieval-<dataset>.json, "
        "mteb's cache layout)",
        required=False,
    )
    _eval_opts(sp, required=True)

    sp = add(
        "compare",
        cmd_compare,
        "which of two encoders has the higher BkR (paired permutation test and bootstrap over distinct items)",
    )
    positional(sp, "results", "two result JSONs of `backretrieval evaluate`", nargs="*")
    noun_with_alias(
        sp, "encoders", "--model", "instead of JSONs: evaluate two encoders (as evaluate's --encoder)", required=False,
        append=True,
    )  # fmt: skip
    noun(sp, "out", "output: the comparison as JSON too (optional)", required=False)
    _eval_opts(sp, required=False)

    sp = add(
        "rank",
        cmd_rank,
        "rank two or more encoders by BkR on the same samples: item-bootstrap CIs, every pair tested (Holm), random baseline",
    )
    noun_with_alias(
        sp,
        "encoders",
        "--model",
        "the encoders to rank, at least two, each as evaluate's --encoder "
        "('{type: ..., name: label}' sets a spec's label)",
        required=True,
        append=True,
    )
    noun_with_alias(
        sp,
        "out_dir",
        "--out",
        "output folder for ranking.md, ranking.json and the CSVs ranking, pairwise, bkr_ci "
        "(default results/rankings/Backretrieval-<dataset>)",
        required=False,
    )
    _eval_opts(sp, required=True)

    sp = add("verify", cmd_verify, "compare a run's reports with the committed ones, within stated tolerances")
    positional(sp, "reports", "the run's reports folder (default reports)", nargs="?", default="reports")
    opt(sp, "--reference", "reference reports folder (default: the git revision's)", metavar="DIR")
    opt(sp, "--rev", "git revision of the reference reports", default="HEAD")
    switch(sp, "--tolerances", "print the tolerance table and exit")

    sp = add(
        "validate-config",
        cmd_validate_config,
        "validate a config: schema, cross-field relations, and the prepared dataset if it exists",
    )
    opt(
        sp,
        "--config",
        "params.yaml, or a config file laid over ./params.yaml as snakemake --configfile lays it",
        default="params.yaml",
        metavar="FILE",
    )
    opt(
        sp,
        "--set",
        "override a config value (YAML), e.g. --set sample_size=200",
        action="append",
        default=[],
        metavar="KEY=VALUE",
    )

    sp = add("validate-dataset", cmd_validate_dataset, "check a prepared / bring-your-own dataset folder")
    positional(sp, "root", "the dataset folder (dataset.json, items.csv, ...)")
    text_field(sp, "the item text the evaluation embeds (its duplicates are reported)", default=D.DEFAULT_TEXT_FIELD)

    add("versions", cmd_versions, "print software versions")
    add(
        "models",
        cmd_models,
        "list the encoders --encoder names without a path: where their weights live, offline or not",
    )
