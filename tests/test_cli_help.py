"""`backretrieval --help`: the user commands first, the pipeline steps grouped after them,
and every option of every command with help text; one flag vocabulary across commands."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from backretrieval.cli import COMMAND_GROUPS, build_parser, main
from backretrieval.cli._args import VOCABULARY, Deprecated
from snake import ROOT

USER_COMMANDS = ["evaluate", "compare", "rank", "verify", "validate-config", "validate-dataset", "versions"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_option_of_every_command_has_help():
    parser = build_parser()
    missing = [f"backretrieval {a.dest}" for a in parser._actions if not (a.help or "").strip()]
    for name, sp in _commands().items():
        missing += [f"{name} {a.option_strings or a.dest}" for a in sp._actions if not (a.help or "").strip()]
    assert not missing, missing


def test_help_lists_user_commands_first_then_grouped_steps(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    commands = list(_subparsers(build_parser()))
    assert commands[: len(USER_COMMANDS)] == USER_COMMANDS
    # the listing in the help text, in order of appearance: every command once, user ones first
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()[0] in commands]
    assert listed == commands
    titles = [t for t, _ in COMMAND_GROUPS]
    positions = [out.index(f"\n{t}:\n") for t in titles]
    assert positions == sorted(positions) and titles[0] == "user commands"
    assert "-v, --verbose" in out and "one subcommand per pipeline step" not in out


# ------------------------------------------------------------------------------ one vocabulary
#
# Every command's parser is read and each flag checked against the vocabulary
# (backretrieval.cli._args.VOCABULARY: noun -> flag, meaning, input/output) and against the same
# flag in every other command. A clash is (command, flag, kind):
#   "retired"      an earlier spelling of a noun is a live flag (a deprecated alias is fine)
#   "other flag"   a flag other than the noun's stores into the noun's dest
#   "meaning"      a vocabulary flag whose help lacks the noun's term (it means something else)
#   "form"         a vocabulary flag with another dest, type or list form than the noun's
#   "role"         input vs output: the help says output but the flag is not an output flag,
#                  or the other way round
#   "output shape" an output flag that is not --out FILE, --out-dir DIR or --out-<what> FILE
#   "differs"      the same flag with another dest, type or role than in most other commands


def _flags(sp: argparse.ArgumentParser):
    """(flag, action) of every option of a command but --help and the deprecated aliases."""
    return [
        (flag, a)
        for a in sp._actions
        if not isinstance(a, (argparse._HelpAction, Deprecated))
        for flag in a.option_strings
    ]


def _says_output(a: argparse.Action) -> bool:
    return (a.help or "").lower().startswith("output")


def _is_list(a: argparse.Action) -> bool:
    return a.nargs in ("+", "*") or isinstance(a, argparse._AppendAction)


def clashes(commands: dict[str, argparse.ArgumentParser]) -> set[tuple[str, str, str]]:
    """Every (command, flag, kind) clash of ``commands`` (see the kinds above)."""
    retired = {old: n for n in VOCABULARY.values() for old in n.retired}
    found: set[tuple[str, str, str]] = set()
    uses: dict[str, list[tuple[str, tuple]]] = {}
    for cmd, sp in commands.items():
        for flag, a in _flags(sp):
            out_shaped = flag == "--out" or flag.startswith("--out-")
            if flag in retired:
                found.add((cmd, flag, "retired"))
            if flag.startswith("--out") and not out_shaped:
                found.add((cmd, flag, "output shape"))
            elif _says_output(a) and not out_shaped:
                found.add((cmd, flag, "output shape"))
            elif out_shaped and not _says_output(a):
                found.add((cmd, flag, "role"))
            elif out_shaped and (a.metavar == "DIR") != (flag == "--out-dir"):
                found.add((cmd, flag, "output shape"))
            noun = VOCABULARY.get(a.dest)
            if noun is not None and noun.flag != flag:
                found.add((cmd, flag, "other flag"))
            noun = next((n for n in VOCABULARY.values() if n.flag == flag), None)
            if noun is not None:
                if noun.term.lower() not in (a.help or "").lower():
                    found.add((cmd, flag, "meaning"))
                if (
                    a.dest != noun.dest
                    or a.type is not noun.type
                    or (noun.many is not None and _is_list(a) != noun.many)
                ):
                    found.add((cmd, flag, "form"))
                if (noun.role == "output") != _says_output(a):
                    found.add((cmd, flag, "role"))
            uses.setdefault(flag, []).append((cmd, (a.dest, a.type, _says_output(a))))
    for flag, where in uses.items():
        counts: dict[tuple, int] = {}
        for _, sig in where:
            counts[sig] = counts.get(sig, 0) + 1
        usual = max(counts, key=lambda sig: counts[sig])
        found |= {(cmd, flag, "differs") for cmd, sig in where if sig != usual}
    return found


def test_one_flag_vocabulary():
    """No command spells k, N or a seed count another way; --seeds is always a list of values."""
    for name, sp in _subparsers(build_parser()).items():
        flags = {f: a for a in sp._actions for f in a.option_strings}
        assert not {"--k", "--n", "--ranks"} & set(flags), name
        if "--seeds" in flags:
            assert flags["--seeds"].nargs == "+" and flags["--seeds"].type is int, name
    assert "tally" not in _subparsers(build_parser())


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser: the subcommands, and `findings --analysis NAME` of each analysis
    (the flags after --analysis are the analysis's own parser's)."""
    from backretrieval.cli.findings import analysis_parser
    from backretrieval.findings.analysis import registry

    return {
        **_subparsers(build_parser()),
        **{f"findings --analysis {name}": analysis_parser(cls) for name, cls in registry().items()},
    }


def test_every_command_speaks_the_vocabulary():
    """One flag per noun and one meaning per flag across every command (user commands, pipeline
    steps, each findings analysis), outputs spelled --out / --out-dir / --out-<what>."""
    assert clashes(_commands()) == set()


def test_the_clash_check_finds_each_kind_of_clash():
    """The check itself: a toy command per kind of clash, each found, and a clean one not."""

    def command(*flags: tuple[str, dict]) -> argparse.ArgumentParser:
        sp = argparse.ArgumentParser()
        for flag, kw in flags:
            sp.add_argument(flag, **kw)
        return sp

    clean = command(
        ("--dataset", {"help": "the dataset folder"}),
        ("--directions", {"nargs": "+", "help": "directions"}),
        ("--out", {"metavar": "FILE", "help": "output: a file"}),
        ("--out-dir", {"metavar": "DIR", "help": "output folder"}),
        ("--out-table", {"metavar": "FILE", "help": "output: the table"}),
        ("--spec", {"help": "a spec"}),
    )
    clean.add_argument("--data", action=Deprecated, canonical="--dataset", dest="dataset")
    toys = {
        "clean": clean,
        "retired": command(("--data", {"help": "the dataset"})),
        "other-flag": command(("--ds", {"dest": "dataset", "help": "the dataset"})),
        "meaning": command(("--n-seeds", {"type": int, "help": "the first n seeds of the run"})),
        "form": command(("--directions", {"help": "directions, comma-separated"})),
        "role": command(("--metrics", {"nargs": "+", "help": "output: metrics CSVs (JSON)"})),
        "shape": command(("--table-out", {"help": "output: the table"})),
        "input-out": command(("--out-other", {"metavar": "FILE", "help": "input: a table"})),
        "differs": command(("--spec", {"type": int, "help": "a spec"})),
    }
    toys["differs-2"] = toys["clean"]  # --spec as a string: twice, the usual meaning
    assert clashes(toys) == {
        ("retired", "--data", "retired"),
        ("other-flag", "--ds", "other flag"),
        ("meaning", "--n-seeds", "meaning"),
        ("form", "--directions", "form"),
        ("role", "--metrics", "role"),  # an input noun written to, and an output not spelled --out...
        ("role", "--metrics", "output shape"),
        ("shape", "--table-out", "output shape"),
        ("input-out", "--out-other", "role"),
        ("differs", "--spec", "differs"),
    }


def test_deprecated_spellings_still_work_with_a_note(capsys):
    """The user commands' earlier spellings: --data, comma-separated --directions, rank's --out
    (a folder); each parses as its new flag and prints one note; old and new together are refused."""
    parser = build_parser()
    args = parser.parse_args(["evaluate", "--model", "m", "--data", "d", "--directions", "en-de,de-en"])
    assert (args.dataset, args.directions) == ("d", ["en-de", "de-en"])
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "backretrieval: note: --data is deprecated; use --dataset",
        "backretrieval: note: comma-separated --directions is deprecated; separate the directions with spaces: "
        "--directions en-de de-en",
    ]
    args = parser.parse_args(["rank", "--model", "a", "--model", "b", "--dataset", "d", "--directions", "en-de"])
    assert args.out_dir is None and capsys.readouterr().err == ""
    args = parser.parse_args(
        ["rank", "--model", "a", "--model", "b", "--dataset", "d", "--directions", "en-de", "de-en", "--out", "o"]
    )
    assert (args.out_dir, args.directions) == ("o", ["en-de", "de-en"])
    assert capsys.readouterr().err == "backretrieval: note: --out is deprecated; use --out-dir\n"
    with pytest.raises(SystemExit):
        parser.parse_args(["evaluate", "--model", "m", "--data", "d", "--dataset", "d", "--directions", "en-de"])
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["evaluate", "--model", "m", "--directions", "en-de"])
    assert "--dataset is required" in capsys.readouterr().err
    for name in ("evaluate", "compare", "rank"):
        text = _subparsers(parser)[name].format_help()
        assert "--data " not in text and "--dataset" in text, name
    # every deprecated alias stores into a live flag of its command, under that flag's dest
    for name, sp in _subparsers(parser).items():
        live = {a.dest: a for a in sp._actions if not isinstance(a, Deprecated)}
        for a in sp._actions:
            if isinstance(a, Deprecated):
                assert a.dest in live and a.canonical in live[a.dest].option_strings, (name, a.option_strings)


def test_evaluate_seed_count_and_values_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        main(
            [
                "evaluate",
                "--model",
                "m",
                "--dataset",
                "d",
                "--directions",
                "en-de",
                "--n-seeds",
                "2",
                "--seeds",
                "0",
                "1",
            ]
        )
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_program_runs_main_through_run_and_exits_with_its_code(tmp_path):
    """The console script and ``python -m backretrieval`` are ``backretrieval.cli:run``
    (``main``, then ``gc.freeze()`` before exit): the exit code is main's, 0 on success and 2 with
    the one-line message for a user error."""
    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "backretrieval"]
    assert ep.value == "backretrieval.cli:run"
    cmd = [sys.executable, "-m", "backretrieval", "validate-config", "--config"]
    ok = subprocess.run([*cmd, str(ROOT / "params.yaml")], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr[-2000:]
    bad = subprocess.run([*cmd, str(tmp_path / "missing.yaml")], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip() == f"backretrieval: error: {tmp_path / 'missing.yaml'}: config file not found"
