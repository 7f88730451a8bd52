"""The one helper set every subcommand's parser is built with, the flag vocabulary they share,
and the argument parsers (JSON flags, file grids, ``NAME=PATH`` lists) the commands share.

Every flag goes through :func:`req` (required), :func:`opt` (optional, with its default
stated where one exists), :func:`switch` (on/off), :func:`noun` (a :data:`VOCABULARY` flag) or
one of the named flag sets below, so each flag has help text and one spelling across commands.

The vocabulary (:data:`VOCABULARY`, checked over every command by ``tests/test_cli_help.py``):

* one flag per noun, in params.yaml's words, in user commands and pipeline steps alike: the
  dataset is ``--dataset``, the translation directions ``--directions A B ...`` (a
  space-separated list; ``--direction`` where a command takes exactly one), the encoders
  ``--encoders A B ...`` (``--encoder`` where a command takes exactly one; params.yaml
  ``encoders``; never ``--model``), the image backbone ``--image-backbone`` (params.yaml
  ``image_backbone``), image embeddings ``--image-emb``, text embeddings (a field's or an
  evaluated representation's) ``--text-emb``, the metrics CSVs ``--metrics``, the bootstrap
  count ``--bootstrap``; seeds are ``--seeds SEED ...`` (values),
  ``--n-seeds S`` (the seeds 0..S-1), ``--max-seeds N`` (the first N seeds of a run's samples)
  and ``--seed`` (the seed of a command's own random draws);
* a plural flag takes a space-separated list, its singular exactly one value;
* outputs have one shape: ``--out FILE`` (a command's output file, or its list of output files
  in a stated order), ``--out-dir DIR`` (an output folder) and ``--out-<what> FILE`` (one of
  several named outputs; ``<what>`` is never another spelling of a noun: text embeddings written
  are ``--out-text-emb``); no input flag starts with ``--out``, so inputs and outputs never
  share a name;
* a renamed user-command flag stays as a hidden, deprecated alias (:class:`Deprecated`) that
  prints a one-line note; pipeline steps are renamed outright (the workflow is their one caller).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

#: the text fields a dataset item has (``--text-field``)
TEXT_FIELDS = ("title", "body", "title_body")
#: the fields of a case-study item embedded separately (``case-embed`` / ``case-train``)
CASE_FIELDS = ("title", "body")


# ------------------------------------------------------------------------------ vocabulary


@dataclass(frozen=True)
class Noun:
    """One noun of the command line: the one flag that names it in every command.

    ``term``: words the help of every use of the flag contains (:func:`noun` puts ``meaning``
    first where the given help lacks them), so a flag that means something else in one command
    shows. ``role``: input (a file or folder read), output (written) or setting. ``many``: True
    for a space-separated list (``nargs="+"``), False for one value, None where a command may
    take either (e.g. one samples file or one per direction). ``retired``: earlier spellings; a
    user command keeps them as :class:`Deprecated` aliases, nothing else may use them."""

    flag: str
    term: str
    meaning: str
    role: str
    many: bool | None = False
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    retired: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        return self.flag[2:].replace("-", "_")


#: noun (the flag's dest) -> its one flag, across every command (user commands, pipeline steps,
#: findings). A command that needs one of these nouns uses this flag with this meaning, and no
#: other flag for it (tests/test_cli_help.py reads every parser and fails on a clash).
VOCABULARY: dict[str, Noun] = {
    n.dest: n
    for n in (
        # --- what a command reads
        Noun(
            "--dataset",
            "dataset",
            "the dataset: a prepared dataset folder (dataset.json, items.csv, ...); evaluate, compare "
            "and rank also take a named dataset",
            "input",
            metavar="DIR",
            retired=("--data",),
        ),
        Noun(
            "--image-emb",
            "image embedding",
            "image embedding: the image-feature npz of the run's image backbone (a findings analysis that "
            "compares backbones: then NAME=FILE of each other one)",
            "input",
            many=None,
            metavar="FILE",
            retired=("--images", "--image", "--backbone-emb"),
        ),
        Noun(
            "--text-emb",
            "text embeddings",
            "text embeddings: npz files, per encoder and language (each command states their order; "
            "a case-study representation or title/body field is a text embedding too)",
            "input",
            many=True,
            metavar="FILE",
            retired=("--text", "--repr", "--reprs", "--fields", "--field-emb"),
        ),
        Noun(
            "--metrics",
            "metrics CSVs",
            "metrics CSVs of the run (tidy, one per direction or seed group; the per-query ranks npz beside each)",
            "input",
            many=True,
            metavar="FILE",
            retired=("--metrics-csv", "--parts"),
        ),
        Noun(
            "--samples",
            "samples",
            "samples JSON of `backretrieval step sample` (one per direction)",
            "input",
            many=None,
            metavar="FILE",
        ),
        # --- the protocol
        Noun("--direction", "direction", "one translation direction src-tgt, e.g. en-de", "setting", metavar="SRC-TGT"),
        Noun(
            "--directions",
            "directions",
            "translation directions src-tgt, space-separated, e.g. en-de de-en",
            "setting",
            many=True,
            metavar="SRC-TGT",
        ),
        Noun(
            "--encoder",
            "encoder",
            "one encoder: a key of params.yaml encoders (a user command: any encoder spec, see `backretrieval models`)",
            "setting",
            metavar="ENC",
            retired=("--model",),
        ),
        Noun(
            "--encoders",
            "encoder",
            "encoders, space-separated: keys of params.yaml encoders (a user command: encoder specs)",
            "setting",
            many=True,
            metavar="ENC",
            retired=("--models",),
        ),
        Noun(
            "--image-backbone",
            "image backbone",
            "the image backbone (a key of params.yaml backbones)",
            "setting",
            metavar="NAME",
            retired=("--backbone",),
        ),
        Noun("--sample-size", "sample size N", "sample size N (queries per seed)", "setting", type=int, metavar="N"),
        Noun("--recall-k", "k of Recall@k", "k of Recall@k (params.yaml recall_k)", "setting", type=int, metavar="K"),
        Noun(
            "--bootstrap",
            "bootstrap resamples",
            "bootstrap resamples B of the CIs and tests",
            "setting",
            type=int,
            metavar="B",
            retired=("--B",),
        ),
        # --- seeds: values, a count from 0, the first N of a run's, one random draw's
        Noun("--seeds", "seed values", "seed values, one sample each", "setting", many=True, type=int, metavar="SEED"),
        Noun(
            "--n-seeds",
            "number of seeds",
            "number of seeds S: the samples of seeds 0..S-1",
            "setting",
            type=int,
            metavar="S",
        ),
        Noun(
            "--max-seeds",
            "first seeds",
            "only the first seeds of each samples file (default: all)",
            "setting",
            type=int,
            metavar="N",
        ),
        Noun("--seed", "seed", "the seed of the command's own random draws (its help says which)", "setting", type=int),
        # --- what a command writes
        Noun(
            "--out",
            "output",
            "output: the command's output file, or its output files in a stated order",
            "output",
            many=None,
            metavar="FILE",
        ),
        Noun("--out-dir", "output folder", "output folder", "output", metavar="DIR"),
    )
}


class Deprecated(argparse.Action):
    """A retired spelling of a flag, hidden from ``--help``: stores into the flag's dest and
    prints a one-line note naming the flag to use instead. ``append``: the retired flag was
    given once per value (``--model A --model B``); each use adds its value to the new flag's
    list."""

    def __init__(self, option_strings, dest, canonical: str, append: bool = False, **kw) -> None:
        kw["help"] = argparse.SUPPRESS  # hidden whatever the caller gave
        super().__init__(option_strings, dest, **kw)
        self.canonical = canonical
        self.append = append

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        before = (getattr(namespace, self.dest, None) or []) if self.append else []
        if not before:  # one note, at the first use
            use = f"{option_string} A {option_string} B" if self.append else option_string
            new = f"{self.canonical} A B" if self.append else self.canonical
            print(f"backretrieval: note: {use} is deprecated; use {new}", file=sys.stderr)
        setattr(namespace, self.dest, [*before, values] if self.append else values)


class DirectionList(argparse.Action):
    """``--directions A B ...``; the earlier comma-separated form (``en-de,de-en``) is still
    split, with a one-line deprecation note."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        values = [values] if isinstance(values, str) else list(values)
        if any("," in v for v in values):
            values = [d for v in values for d in v.split(",") if d]
            print(
                f"backretrieval: note: comma-separated {option_string} is deprecated; separate the directions "
                f"with spaces: {option_string} {' '.join(values)}",
                file=sys.stderr,
            )
        setattr(namespace, self.dest, values)


def _with_term(name: str, help_: str | None) -> str:
    """``help_`` as given when it contains the noun's term, else the noun's meaning first."""
    n = VOCABULARY[name]
    if not help_:
        return n.meaning
    return help_ if n.term.lower() in help_.lower() else f"{n.meaning}; {help_}"


def noun(
    sp: argparse.ArgumentParser | argparse._ActionsContainer,
    name: str,
    help_: str | None = None,
    *,
    required: bool | None = None,
    many: bool | None = None,
    **kw,
) -> argparse.Action:
    """The :data:`VOCABULARY` flag of ``name``, with the noun's dest, type, list form and
    metavar; ``help_`` adds the command's detail. Required unless given a ``default`` or
    ``required=False``. ``many`` picks one value or a list where the noun allows either."""
    n = VOCABULARY[name]
    if required is None:
        required = "default" not in kw
    is_list = n.many if n.many is not None else bool(many)
    if is_list:
        kw.setdefault("nargs", "+")
    if n.type is not None:
        kw.setdefault("type", n.type)
    if n.metavar is not None:
        kw.setdefault("metavar", n.metavar)
    if name == "directions":
        kw.setdefault("action", DirectionList)
    help_ = _with_term(name, help_)
    if kw.get("default") not in (None, [], False):
        help_ = f"{help_} (default {kw['default']})"
    return sp.add_argument(n.flag, dest=n.dest, required=required, help=help_, **kw)


def noun_with_alias(
    sp: argparse.ArgumentParser,
    name: str,
    old: str,
    help_: str | None = None,
    *,
    required: bool,
    append: bool = False,
    **kw,
):
    """:func:`noun` of a user command plus its retired spelling ``old`` as a :class:`Deprecated`
    alias (the two are exclusive; a required flag is required as either spelling). ``append``:
    the retired flag took one value per use (``--model A --model B`` for ``--encoders A B``)."""
    group = sp.add_mutually_exclusive_group(required=required)
    action = noun(group, name, help_, required=False, **kw)
    group.add_argument(
        old,
        action=Deprecated,
        canonical=action.option_strings[0],
        append=append,
        dest=action.dest,
        nargs=None if append else action.nargs,
        type=action.type,
        metavar=action.metavar,
    )
    return action


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
    e.g. ``grid(f, "--text-emb", ("--encoders", es), ("--languages", ls))[e][lang]``."""
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
            raise InputError(f"--text-emb {spec!r}: expected ENCODER:LANG=PATH")
        out[(enc, lang)] = Path(path)
    return out


def optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


def outputs(args: argparse.Namespace, names) -> dict[str, Path]:
    """{name: path} of the named output flags ``--out-<name>`` (:func:`named_outputs`) given."""
    return {name: Path(getattr(args, out_dest(name))) for name in names}


def out_dest(name: str) -> str:
    """The dest of the named output flag ``--out-<name>``."""
    return "out_" + name


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


def out_flag(sp: argparse.ArgumentParser, name: str, help_: str, required: bool = True, **kw) -> None:
    """One named output ``--out-<name>`` (dest ``out_<name>``): ``help_`` says what is written."""
    kw.setdefault("metavar", "FILE")
    sp.add_argument(
        "--out-" + name.replace("_", "-"), dest=out_dest(name), required=required, help=f"output: {help_}", **kw
    )


def named_outputs(sp: argparse.ArgumentParser, names, what: str, required: bool = True) -> None:
    """One output flag per name (``--out-<name>``, dest ``out_<name>``)."""
    for name in names:
        out_flag(sp, name, f"{what} '{name}'", required=required)


def dataset(
    sp: argparse.ArgumentParser, help_: str = "a prepared dataset folder (dataset.json, items.csv, ...)"
) -> None:
    noun(sp, "dataset", help_)


def spec(sp: argparse.ArgumentParser, what: str) -> None:
    req(sp, "--spec", f"the {what}'s params.yaml entry as a JSON object", type=json_object, metavar="JSON")


def recall_k(sp: argparse.ArgumentParser, help_: str = "k of Recall@k (params.yaml recall_k)") -> None:
    noun(sp, "recall_k", help_)


def seeds(sp: argparse.ArgumentParser, help_: str, required: bool = True) -> None:
    """``--seeds SEED ...``: seed values (never a count; a count is ``--n-seeds``)."""
    noun(sp, "seeds", help_, required=required)


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
