"""The one helper set every subcommand's parser is built with, and the argument parsers
(JSON flags, file grids, ``NAME=PATH`` lists) the commands share.

Every flag goes through :func:`req` (required), :func:`opt` (optional, with its default
stated where one exists), :func:`switch` (on/off) or one of the named flag sets below, so each
flag has help text and one spelling across commands: ``--recall-k`` (k of Recall@k),
``--sample-size`` (N), ``--seeds SEED ...`` (seed values) and ``--n-seeds S`` (a count).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import InputError

#: the text fields a dataset item has (``--text-field``)
TEXT_FIELDS = ("title", "body", "title_body")
#: the fields of a case-study item embedded separately (``case-embed`` / ``case-train``)
CASE_FIELDS = ("title", "body")


# ------------------------------------------------------------------------------ argument types


def json_object(text: str) -> dict:
    """argparse type of the JSON flags (a config section): a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def grid(files: list[str], flag: str, *axes: tuple[str, list[str]]) -> Any:
    """``files`` in row-major order over ``axes`` ((flag, values), ...) as nested dicts,
    e.g. ``grid(f, "--repr", ("--models", ms), ("--languages", ls))[m][lang]``."""
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


def named_files(specs: list[str], flag: str) -> dict[str, Path]:
    """``NAME=PATH`` flags → {name: path} (order kept)."""
    out: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise InputError(f"{flag} {spec!r}: expected NAME=PATH")
        out[name] = Path(path)
    return out


def text_files(specs: list[str]) -> dict[tuple[str, str], Path]:
    """``ENCODER:LANG=PATH`` flags → {(encoder, lang): path}."""
    out: dict[tuple[str, str], Path] = {}
    for spec in specs:
        key, sep, path = spec.partition("=")
        enc, sep2, lang = key.rpartition(":")
        if not sep or not sep2 or not enc or not lang or not path:
            raise InputError(f"--text {spec!r}: expected ENCODER:LANG=PATH")
        out[(enc, lang)] = Path(path)
    return out


def optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


def outputs(args: argparse.Namespace, names) -> dict[str, Path]:
    """{name: Path(args.<name>)} of the named output flags."""
    return {name: Path(getattr(args, name)) for name in names}


# ------------------------------------------------------------------------------ flags


def req(sp: argparse.ArgumentParser, flag: str, help_: str, **kw) -> None:
    """A required flag."""
    sp.add_argument(flag, required=True, help=help_, **kw)


def opt(sp: argparse.ArgumentParser, flag: str, help_: str, **kw) -> None:
    """An optional flag; a default given in ``kw`` is added to the help text."""
    if kw.get("default") not in (None, [], False):
        d = kw["default"]
        help_ = f"{help_} (default {' '.join(map(str, d)) if isinstance(d, (list, tuple)) else d})"
    sp.add_argument(flag, help=help_, **kw)


def switch(sp: argparse.ArgumentParser, flag: str, help_: str, short: str | None = None) -> None:
    """An on/off flag (off by default), optionally with a one-letter ``short`` spelling."""
    sp.add_argument(*([short] if short else []), flag, action="store_true", help=help_)


def positional(sp: argparse.ArgumentParser, name: str, help_: str, **kw) -> None:
    sp.add_argument(name, help=help_, **kw)


def files(sp: argparse.ArgumentParser, flag: str, help_: str, required: bool = True) -> None:
    """One or more files."""
    sp.add_argument(flag, nargs="+", required=required, metavar="FILE", help=help_)


def named_outputs(sp: argparse.ArgumentParser, names, what: str) -> None:
    """One required output flag per name (``--<name>``, dest ``name``)."""
    for name in names:
        req(sp, "--" + name.replace("_", "-"), f"output: {what} '{name}'", dest=name, metavar="FILE")


def dataset(sp: argparse.ArgumentParser, help_: str = "prepared dataset folder (dataset.json, items.csv, ...)") -> None:
    req(sp, "--dataset", help_, metavar="DIR")


def spec(sp: argparse.ArgumentParser, what: str) -> None:
    req(sp, "--spec", f"the {what}'s params.yaml entry as a JSON object", type=json_object, metavar="JSON")


def recall_k(sp: argparse.ArgumentParser, help_: str = "k of Recall@k (params.yaml recall_k)") -> None:
    req(sp, "--recall-k", help_, type=int, metavar="K")


def seeds(sp: argparse.ArgumentParser, help_: str, required: bool = True) -> None:
    """``--seeds SEED ...``: seed values (never a count; a count is ``--n-seeds``)."""
    sp.add_argument("--seeds", type=int, nargs="+", required=required, metavar="SEED", help=help_)


def text_field(sp: argparse.ArgumentParser, help_: str = "title | body | title_body", **kw) -> None:
    if "default" in kw:
        opt(sp, "--text-field", help_, choices=list(TEXT_FIELDS), **kw)
    else:
        req(sp, "--text-field", help_, choices=list(TEXT_FIELDS))


def model_job(sp: argparse.ArgumentParser) -> None:
    """The flags of a step that runs a model: embedding cache and thread count."""
    opt(
        sp,
        "--cache-dir",
        "content-addressed embedding cache (a side store; results do not depend on it); omit for no cache",
        metavar="DIR",
    )
    threads(sp)


def threads(sp: argparse.ArgumentParser) -> None:
    opt(
        sp,
        "--threads",
        "torch/BLAS threads (params.yaml model_threads); omit to leave the libraries' defaults",
        type=int,
        metavar="N",
    )


def case(sp: argparse.ArgumentParser) -> None:
    """The case-study flags: the dataset, the resolved section and its training corpus."""
    dataset(sp)
    req(
        sp,
        "--case",
        "the resolved case_study section as a JSON object (without train_corpus)",
        type=json_object,
        metavar="JSON",
    )
    opt(sp, "--train-corpus", "prepared training corpus (case_study.train_corpus)", metavar="DIR")


def case_section(args: argparse.Namespace) -> dict:
    """The resolved ``case_study`` section of ``--case``, with ``--train-corpus``."""
    cs = dict(args.case)
    cs["train_corpus"] = str(args.train_corpus) if args.train_corpus else None
    return cs
