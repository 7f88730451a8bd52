"""The findings steps (when BkR works and how far to trust it): explicit input files, output
folder and settings, no config.

``backretrieval findings --analysis NAME``: one analysis of one run. Its flags come from the
analysis's class (:mod:`backretrieval.findings.analysis`): the run's files that its ``inputs``
name, one flag per setting (defaults: the analysis's) and ``--settings JSON`` (every setting at
once, as the workflow passes them; a flag overrides its entry). ``backretrieval findings
--analysis NAME --help`` lists them. ``findings-document``: docs/FINDINGS.md and the overall
verdict from every configuration's records.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..findings.analysis import Analysis, get, registry
from ._args import files, json_object, named_files, noun, opt, optional_path, req, text_files

# ------------------------------------------------------------------------------ commands


def cmd_findings(args: argparse.Namespace) -> int:
    """``backretrieval findings --analysis NAME FLAGS``: the flags after ``--analysis`` parsed
    by the analysis's own parser (:func:`analysis_parser`), then the one step."""
    from ..steps.findings import analysis_step

    if args.analysis is None:
        if args.help:
            print(overview())
            return 0
        raise InputError(f"findings: --analysis NAME is required, one of {list(registry())}")
    cls = get(args.analysis)
    parser = analysis_parser(cls)
    if args.help:
        parser.print_help()
        return 0
    ns = parser.parse_args(args.extra_args)
    given = {**(ns.settings or {}), **{s.name: getattr(ns, s.name) for s in cls.settings if hasattr(ns, s.name)}}
    settings = cls.settings_of(given)  # refused before any file is read
    analysis_step(cls.name, _artifacts(ns, cls, settings), settings, Path(ns.out_dir))
    return 0


def _artifacts(ns: argparse.Namespace, cls: type[Analysis], settings: dict[str, Any]) -> Any:
    """The run's artifacts named by the flags (the one loader,
    :func:`backretrieval.evaluation.run_artifacts.load_run`); the per-query ranks are read beside each
    metrics CSV when the analysis reads them. The image embedding is named by the setting
    ``base`` where the analysis has one (the backbone it degrades), else ``image``."""
    from ..evaluation.run_artifacts import load_run
    from ..steps.layout import ranks_path

    metrics = [Path(p) for p in ns.metrics]
    images = {settings.get("base") or "image": Path(ns.image_emb)} if getattr(ns, "image_emb", None) else {}
    for name, path in named_files(getattr(ns, "backbone_emb", None) or [], "--backbone-emb").items():
        if name in images:
            raise InputError(f"--backbone-emb {name}: the backbone of --image-emb (each name once)")
        images[name] = path
    return load_run(
        dataset=Path(ns.dataset),
        metrics_files=metrics,
        run_dataset=optional_path(ns.run_dataset),
        samples_files=[Path(p) for p in getattr(ns, "samples", None) or []],
        ranks_files=[ranks_path(p) for p in metrics] if "ranks" in cls.inputs else [],
        image_files=images,
        text_files=text_files(ns.text_emb) if getattr(ns, "text_emb", None) else {},
        findings_files=[Path(p) for p in getattr(ns, "findings_files", None) or []],
        run_name=ns.run_name,
        reports_dir=str(Path(ns.out_dir).parent),
    )


def cmd_findings_document(args: argparse.Namespace) -> int:
    from ..steps.findings import document_step

    document_step(
        [Path(p) for p in args.records],
        doc=Path(args.out_doc),
        summary_dir=Path(args.out_dir),
        readme=optional_path(args.readme),
    )
    return 0


def cmd_findings_figures(args: argparse.Namespace) -> int:
    """Redraw the figures of findings folders from their committed tables (no artifacts)."""
    from ..findings.replot import replot

    written = replot([Path(p) for p in args.folders])
    print(f"findings-figures: {len(written)} files written")
    return 0


# ------------------------------------------------------------------------------ parsers


def analysis_parser(cls: type[Analysis]) -> argparse.ArgumentParser:
    """The flags of ``backretrieval findings --analysis <cls.name>``: the run's files its
    ``inputs`` name, then its settings."""
    p = argparse.ArgumentParser(
        prog=f"backretrieval findings --analysis {cls.name}",
        description=f"{cls.question.title}: {cls.question.question}",
        allow_abbrev=False,
    )
    run = p.add_argument_group("the run")
    noun(run, "dataset", "the prepared dataset folder the analysis evaluates (data/prepared/<name>)")
    opt(run, "--run-dataset", "the run's prepared dataset when --dataset is another one", metavar="DIR")
    noun(run, "metrics", "the run's metrics CSVs of every direction")
    if "samples" in cls.inputs:
        noun(run, "samples", "the run's samples, one <direction>.json per direction", many=True)
    if "image" in cls.inputs:
        noun(run, "image_emb", "the image embedding of the run's image backbone (named by the setting base, if any)")
    if "backbones" in cls.inputs:
        opt(
            run, "--backbone-emb", "the image embedding of each other backbone compared", nargs="+", metavar="NAME=FILE"
        )
    if "text" in cls.inputs:
        noun(run, "text_emb", "text embeddings, one per encoder and language", metavar="ENCODER:LANG=FILE")
    if cls.reads:
        files(run, "--findings-files", f"files of the run's other analyses: {', '.join(cls.reads)}", required=False)
    req(run, "--run-name", "run name written into the outputs")
    noun(run, "out_dir", "output folder: <reports_dir>/findings")
    settings = p.add_argument_group("settings (a config's findings." + cls.name + " section sets them in the workflow)")
    opt(
        settings,
        "--settings",
        "every setting as a JSON object (what the workflow passes); a flag below overrides its entry",
        type=json_object,
        metavar="JSON",
    )
    for s in cls.settings:
        if s.command:
            s.add_to(settings)
    return p


def overview() -> str:
    """``backretrieval findings --help``: the analyses and how to see one's flags."""
    lines = [
        "usage: backretrieval findings --analysis NAME [FLAGS]",
        "",
        "One findings analysis of one run; `backretrieval findings --analysis NAME --help`: its flags.",
        "",
        "analyses:",
    ]
    reg = registry()
    width = max(map(len, reg)) + 2
    for name, cls in reg.items():
        lines.append(
            textwrap.fill(
                f"  {name:<{width}}{cls.question.question}",
                100,
                subsequent_indent=" " * (width + 2),
                break_on_hyphens=False,
            )
        )
    return "\n".join(lines)


def register(add) -> None:
    names = list(registry())
    sp = add(
        "findings",
        cmd_findings,
        "findings: one analysis of one run (--analysis NAME; `--analysis NAME --help`: its flags)",
        add_help=False,
        allow_abbrev=False,
    )
    sp.add_argument("--analysis", choices=names, metavar="NAME", help=f"the analysis: {', '.join(names)}")
    sp.add_argument("-h", "--help", action="store_true", help="the flags of --analysis NAME (without it: the analyses)")
    sp.set_defaults(extra_args=[])

    sp = add("findings-document", cmd_findings_document, "docs/FINDINGS.md + overall verdict from every findings JSON")
    files(sp, "--records", "every configuration's <reports_dir>/findings/*.json")
    opt(sp, "--out-doc", "output: the findings document", default="docs/FINDINGS.md", metavar="FILE")
    opt(
        sp,
        "--out-dir",
        "output folder: the cross-configuration summary",
        default="reports/findings_summary",
        metavar="DIR",
    )
    opt(sp, "--readme", "README whose findings-verdict block is regenerated", metavar="FILE")

    sp = add(
        "findings-figures",
        cmd_findings_figures,
        "redraw the findings figures of <reports_dir>/findings folders from their tables (no artifacts needed)",
    )
    sp.add_argument("folders", nargs="+", metavar="DIR", help="findings folders (<reports_dir>/findings)")
