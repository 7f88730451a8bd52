"""The ``backretrieval`` command line: evaluate and compare encoders, verify and validate, and
the file-based pipeline steps the Snakemake workflow runs.

``backretrieval --help`` lists the user commands (evaluate, compare, rank, verify,
validate-config, validate-dataset, versions, models, findings-figures; :mod:`.evaluate`,
:mod:`.findings`); the pipeline steps are one level down, ``backretrieval step NAME``
(``backretrieval step --help``: data, embedding, metrics, reports, case study, human study in
:mod:`.pipeline`, the findings steps in :mod:`.findings`). Every parser is built with the helper
set of :mod:`._args` (one flag per noun across user commands and steps). A pipeline step reads the files named by its input flags, writes
the files named by its output flags and takes its settings as flags (JSON for a config section),
so the Snakemake rules hand every file they declare to the step and no step derives a path from
the config (the artifact layout is ``backretrieval.steps.layout``). User-fixable problems print
``backretrieval: error: ...`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn

from .. import __version__
from .._util import io
from ..errors import BackretrievalError
from . import evaluate, findings, pipeline
from ._args import switch

__all__ = ["COMMAND_GROUPS", "STEP", "STEP_GROUPS", "build_parser", "main", "run"]

#: the groups of ``backretrieval --help``: the commands a user types
COMMAND_GROUPS: tuple[tuple[str, Callable], ...] = (
    ("user commands", evaluate.register),
    ("findings", findings.register_user),
)

#: the groups of ``backretrieval step --help``, in order: (title, function adding its steps);
#: the pipeline steps the Snakemake rules run as ``backretrieval step NAME ...``
STEP_GROUPS: tuple[tuple[str, Callable], ...] = (
    ("data", pipeline.register_data),
    ("embedding", pipeline.register_embedding),
    ("metrics", pipeline.register_metrics),
    ("reports", pipeline.register_reports),
    ("case study", pipeline.register_case_study),
    ("human study", pipeline.register_human_study),
    ("findings", findings.register),
)

#: the command that holds the pipeline steps: ``backretrieval step NAME``
STEP = "step"

_SUMMARY = (
    "Backretrieval: evaluate cross-lingual text encoders with image-caption data, without parallel "
    "texts. The pipeline steps the Snakemake workflow runs (`snakemake --cores N`, see the README) "
    "are under `backretrieval step` (`backretrieval step --help`)."
)
_STEP_SUMMARY = (
    "The pipeline steps the Snakemake rules run (`backretrieval step NAME ...`). Each reads the files "
    "named by its input flags, writes the files named by its output flags and takes its settings as "
    "flags; a user seldom types one."
)


def _listing(summary: str, groups: list[tuple[str, list[tuple[str, str]]]]) -> str:
    """``summary``, then each group's title and its commands with their one-line help."""
    width = max(len(name) for _, cmds in groups for name, _ in cmds) + 2
    pad = " " * (width + 2)
    listing = "\n\n".join(
        f"{title}:\n"
        + "\n".join(
            textwrap.fill(f"  {name:<{width}}{help_}", 100, subsequent_indent=pad, break_on_hyphens=False)
            for name, help_ in cmds
        )
        for title, cmds in groups
    )
    return f"{textwrap.fill(summary, 100)}\n\n{listing}"


def _subcommands(
    p: argparse.ArgumentParser, dest: str, prefix: str, register_groups, groups: list
) -> argparse._SubParsersAction:
    """Add the commands of ``register_groups`` ((title, register), ...) to ``p``; ``groups``
    collects (title, [(name, help), ...]) for the description."""
    sub = p.add_subparsers(
        dest=dest,
        required=True,
        metavar="COMMAND" if not prefix else "STEP",
        title="commands" if not prefix else "steps",
        help=f"`backretrieval {prefix}{'COMMAND' if not prefix else 'STEP'} --help`: its options",
    )

    def add(name: str, fn: Callable, help_: str, **parser_kw: Any) -> argparse.ArgumentParser:
        groups[-1][1].append((name, help_))
        sp = sub.add_parser(name, description=help_, prog=f"backretrieval {prefix}{name}", **parser_kw)
        sp.set_defaults(func=fn, command=f"{prefix}{name}")  # no help=: listed by group in the description
        return sp

    for title, register in register_groups:
        groups.append((title, []))
        register(add)
    return sub


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="backretrieval", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"backretrieval {__version__}")
    switch(p, "--verbose", "log at DEBUG level (default INFO), on stderr", short="-v")
    groups: list[tuple[str, list[tuple[str, str]]]] = []
    sub = _subcommands(p, "cmd", "", COMMAND_GROUPS, groups)
    help_ = "the pipeline steps the Snakemake workflow runs (`backretrieval step --help`: the steps)"
    groups.append(("pipeline steps", [(STEP, help_)]))
    sp = sub.add_parser(STEP, description=help_, formatter_class=argparse.RawDescriptionHelpFormatter)
    step_groups: list[tuple[str, list[tuple[str, str]]]] = []
    _subcommands(sp, "step", f"{STEP} ", STEP_GROUPS, step_groups)
    sp.description = _listing(_STEP_SUMMARY, step_groups)
    p.description = _listing(_SUMMARY, groups)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # only a command that parses its own flags (``extra_args``) takes them
        if not hasattr(args, "extra_args"):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.extra_args = extra
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
        where = exc.filename or f"an output of `backretrieval {args.command}`"
        print(
            f"backretrieval: error: {where}: cannot be written: {exc.strerror} (errno {exc.errno}); "
            "free space on its filesystem and run again",
            file=sys.stderr,
        )
        return 2


def run() -> NoReturn:
    """The ``backretrieval`` program (the console script and ``python -m backretrieval``):
    :func:`main` on ``sys.argv``, then exit with its code.

    Before the interpreter exits, every remaining object is frozen (``gc.freeze``): the
    interpreter's final garbage collections would otherwise walk every object of the libraries a
    step imported (torch, scipy, matplotlib), all alive until then, at a large share of a short
    step's CPU time (``benchmarks/bench_startup.py``). The step's files are closed by then.
    ``main`` itself leaves the collector alone: tests call it in their own process."""
    code = main()
    gc.freeze()
    sys.exit(code)
