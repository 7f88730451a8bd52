"""`backretrieval --help`: the user commands first, the pipeline steps grouped after them,
and every option of every command with help text; one flag vocabulary across commands."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from backretrieval.cli import COMMAND_GROUPS, build_parser, main
from snake import ROOT

USER_COMMANDS = ["evaluate", "compare", "rank", "verify", "validate-config", "validate-dataset", "versions"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_option_of_every_command_has_help():
    parser = build_parser()
    missing = [f"backretrieval {a.dest}" for a in parser._actions if not (a.help or "").strip()]
    for name, sp in _subparsers(parser).items():
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


def test_one_flag_vocabulary():
    """No command spells k, N or a seed count another way; --seeds is always a list of values."""
    for name, sp in _subparsers(build_parser()).items():
        flags = {f: a for a in sp._actions for f in a.option_strings}
        assert not {"--k", "--n", "--ranks"} & set(flags), name
        if "--seeds" in flags:
            assert flags["--seeds"].nargs == "+" and flags["--seeds"].type is int, name
    assert "tally" not in _subparsers(build_parser())


def test_evaluate_seed_count_and_values_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        main(
            ["evaluate", "--model", "m", "--data", "d", "--directions", "en-de", "--n-seeds", "2", "--seeds", "0", "1"]
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
