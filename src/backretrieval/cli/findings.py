"""The findings steps (when BkR works and how far to trust it): explicit input files, output
folder and settings, no config.

``backretrieval step findings --analysis NAME``: one analysis of one run. Its flags come from
the analysis's class (:mod:`backretrieval.findings.analysis`): the run's files that its
``inputs`` name, one flag per setting (defaults: the analysis's) and ``--settings JSON`` (every
setting at once, as the workflow passes them; a flag overrides its entry). ``backretrieval step
findings --help`` lists the analyses and the flags of each (``--analysis NAME --help``: one
analysis's, with their help). ``step findings-document``: docs/FINDINGS.md and the overall
verdict from every configuration's records. ``findings-figures`` (a user command): redraw the
figures from the committed tables.
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
    """``backretrieval step findings --analysis NAME FLAGS``: the flags after ``--analysis`` parsed
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
    metrics CSV when the analysis reads them. ``--image-emb``: the run's backbone's file (named by
    the setting ``base`` where the analysis has one, the backbone it degrades, else ``image``),
    then ``NAME=FILE`` of each other backbone compared."""
    from ..evaluation.run_artifacts import load_run
    from ..steps.layout import ranks_path

    metrics = [Path(p) for p in ns.metrics]
    given = getattr(ns, "image_emb", None) or []
    given = [given] if isinstance(given, str) else list(given)
    own = [p for p in given if "=" not in p]
    if len(own) > 1:
        raise InputError(f"--image-emb: one file of the run's backbone (the others as NAME=FILE), got {own}")
    images = {settings.get("base") or "image": Path(own[0])} if own else {}
    for name, path in named_files([p for p in given if "=" in p], "--image-emb").items():
        if name in images:
            raise InputError(f"--image-emb {name}=...: the run's backbone is the file without a name (each name once)")
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
    """The flags of ``backretrieval step findings --analysis <cls.name>``: the run's files its
    ``inputs`` name, then its settings."""
    p = argparse.ArgumentParser(
        prog=f"backretrieval step findings --analysis {cls.name}",
        description=f"{cls.question.title}: {cls.question.question}",
        allow_abbrev=False,
    )
    run = p.add_argument_group("the run")
    noun(run, "dataset", "the prepared dataset folder the analysis evaluates (data/prepared/<name>)")
    opt(run, "--run-dataset", "the run's prepared dataset when --dataset is another one", metavar="DIR")
    noun(run, "metrics", "the run's metrics CSVs of every direction")
    if "samples" in cls.inputs:
        noun(run, "samples", "the run's samples, one <direction>.json per direction", many=True)
    if "backbones" in cls.inputs:
        noun(
            run,
            "image_emb",
            "the image embedding of the run's image backbone (FILE; named by the setting base, if any), then "
            "NAME=FILE of each other backbone compared",
            many=True,
            metavar="FILE|NAME=FILE",
        )
    elif "image" in cls.inputs:
        noun(run, "image_emb", "the image embedding of the run's image backbone (named by the setting base, if any)")
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


def _usage_flags(parser: argparse.ArgumentParser, skip: set[str] = frozenset()) -> list[str]:
    """Each option of ``parser`` as the usage line shows it (``--flag METAVAR``, ``[...]``
    when optional), but ``--help`` and the flags in ``skip``."""
    out = []
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction) or not a.option_strings or a.option_strings[0] in skip:
            continue
        fmt = argparse.HelpFormatter(parser.prog)._format_args(a, a.metavar or a.dest.upper()) if a.nargs != 0 else ""
        text = f"{a.option_strings[0]} {fmt}".strip()
        out.append(text if a.required else f"[{text}]")
    return out


_NO_BREAK: dict[str, Any] = {"break_on_hyphens": False, "break_long_words": False}


def overview() -> str:
    """``backretrieval step findings --help``: the analyses, the flags they share and each
    analysis's own flags (``--analysis NAME --help``: one analysis's flags with their help)."""
    prog = "backretrieval step findings"
    reg = registry()
    parsers = {name: analysis_parser(cls) for name, cls in reg.items()}
    flag_sets = [{a.option_strings[0] for a in p._actions if a.option_strings} for p in parsers.values()]
    shared = set.intersection(*flag_sets) - {"-h"}
    first = next(iter(parsers.values()))
    lines = [
        f"usage: {prog} --analysis NAME [FLAGS]",
        "",
        f"One findings analysis of one run; `{prog} --analysis NAME --help`: its flags with their help.",
        "",
        "flags of every analysis:",
        textwrap.fill(
            " ".join(f for f in _usage_flags(first) if f.strip("[").split()[0].rstrip("]") in shared),
            100,
            initial_indent="  ",
            subsequent_indent="    ",
            **_NO_BREAK,
        ),
        "",
        "analyses (the question each answers, then its own flags):",
    ]
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
        own = " ".join(_usage_flags(parsers[name], skip=shared))
        if own:
            pad = " " * (width + 2)
            lines.append(textwrap.fill(own, 100, initial_indent=pad, subsequent_indent=pad + "  ", **_NO_BREAK))
    return "\n".join(lines)


def register(add) -> None:
    """The findings steps: ``findings --analysis NAME`` and ``findings-document``."""
    names = list(registry())
    sp = add(
        "findings",
        cmd_findings,
        "findings: one analysis of one run (--analysis NAME; --help: the analyses and their flags)",
        add_help=False,
        allow_abbrev=False,
    )
    sp.add_argument("--analysis", choices=names, metavar="NAME", help=f"the analysis: {', '.join(names)}")
    sp.add_argument(
        "-h", "--help", action="store_true", help="the analyses and their flags (with --analysis NAME: its flags' help)"
    )
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


def register_user(add) -> None:
    """The findings command a user types: ``findings-figures``."""
    sp = add(
        "findings-figures",
        cmd_findings_figures,
        "redraw the findings figures of <reports_dir>/findings folders from their tables (no artifacts needed)",
    )
    sp.add_argument("folders", nargs="+", metavar="DIR", help="findings folders (<reports_dir>/findings)")
