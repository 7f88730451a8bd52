"""`backretrieval --help`: only the commands a user types; the pipeline steps under
`backretrieval step` (`backretrieval step --help`: grouped); every option of every command with
help text; one flag vocabulary across every command, user commands and steps alike."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from backretrieval.cli import COMMAND_GROUPS, STEP, STEP_GROUPS, build_parser, main
from backretrieval.cli._args import VOCABULARY, Deprecated
from snake import ROOT

USER_COMMANDS = [
    "evaluate",
    "compare",
    "rank",
    "verify",
    "validate-config",
    "validate-dataset",
    "versions",
    "models",
    "findings-figures",
]
#: every pipeline step, each run by a rule as `backretrieval step NAME`
STEPS = [
    "prepare",
    "check-dataset",
    "sample",
    "embed-text",
    "embed-images",
    "metrics",
    "metrics-gather",
    "report",
    "results-doc",
    "case-embed",
    "case-select",
    "case-train",
    "case-evaluate",
    "case-report",
    "human-sheets",
    "human-simulate",
    "human-tally",
    "findings",
    "findings-document",
]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def all_subcommands(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, the user commands by name and the steps as `step NAME`."""
    top = _subparsers(parser or build_parser())
    steps = _subparsers(top.pop(STEP))
    return {**top, **{f"{STEP} {name}": sp for name, sp in steps.items()}}


def test_every_option_of_every_command_has_help():
    parser = build_parser()
    missing = [f"backretrieval {a.dest}" for a in parser._actions if not (a.help or "").strip()]
    missing += [f"step {a.dest}" for a in _subparsers(parser)[STEP]._actions if not (a.help or "").strip()]
    for name, sp in _commands().items():
        missing += [f"{name} {a.option_strings or a.dest}" for a in sp._actions if not (a.help or "").strip()]
    assert not missing, missing


def _listed(out: str, commands) -> list[str]:
    """The commands a help text lists, in order of appearance."""
    return [line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()[0] in commands]


def test_help_lists_only_user_commands_and_the_step_namespace(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    commands = list(_subparsers(build_parser()))
    assert commands == [*USER_COMMANDS, STEP]
    assert _listed(out, commands) == commands  # every command once, in order
    assert not set(STEPS) & set(_listed(out, STEPS + USER_COMMANDS)) - set(USER_COMMANDS)
    titles = [t for t, _ in COMMAND_GROUPS]
    positions = [out.index(f"\n{t}:\n") for t in titles]
    assert positions == sorted(positions) and titles[0] == "user commands"
    assert "-v, --verbose" in out and "backretrieval step --help" in out


def test_step_help_lists_every_step_in_its_group(capsys):
    with pytest.raises(SystemExit):
        main([STEP, "--help"])
    out = capsys.readouterr().out
    steps = list(_subparsers(_subparsers(build_parser())[STEP]))
    assert steps == STEPS and _listed(out, steps) == steps
    positions = [out.index(f"\n{t}:\n") for t, _ in STEP_GROUPS]
    assert positions == sorted(positions)
    with pytest.raises(SystemExit):  # a step is not a top-level command
        main(["metrics", "--help"])
    assert "invalid choice: 'metrics'" in capsys.readouterr().err


def test_every_rule_runs_a_step_by_its_namespaced_name():
    """Every `backretrieval` call in the rules' commands is `backretrieval step NAME` with a
    step NAME (a user command only where a rule validates)."""
    text = "\n".join(p.read_text() for p in sorted((ROOT / "workflow/rules").glob("*.smk")))
    calls = re.findall(r"[\" ]backretrieval ([a-z-]+)(?: ([a-z-]+))?", text)
    assert calls, "no backretrieval command in the rules"
    bad = [c for c in calls if c[0] != STEP or c[1] not in STEPS]
    assert not bad, bad


# ------------------------------------------------------------------------------ one vocabulary
#
# Every command's parser is read and each flag checked against the vocabulary
# (backretrieval.cli._args.VOCABULARY: noun -> flag, meaning, input/output) and against the same
# flag in every other command. A clash is (command, flag, kind):
#   "retired"      an earlier spelling of a noun is a live flag (a deprecated alias is fine), or
#                  an output --out-<what> whose <what> is one (--out-repr for text embeddings)
#   "spelling"     a flag of embeddings (--<what>-emb, --out-<what>-emb) that is not a noun's:
#                  a second spelling of image or text embeddings
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
    noun_flags = {n.flag for n in VOCABULARY.values()}
    found: set[tuple[str, str, str]] = set()
    uses: dict[str, list[tuple[str, tuple]]] = {}
    for cmd, sp in commands.items():
        for flag, a in _flags(sp):
            out_shaped = flag == "--out" or flag.startswith("--out-")
            stem = "--" + flag[len("--out-") :] if flag.startswith("--out-") else flag  # what is read or written
            if stem in retired:
                found.add((cmd, flag, "retired"))
            if stem.endswith("-emb") and stem not in noun_flags:
                found.add((cmd, flag, "spelling"))
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
    for name, sp in all_subcommands().items():
        flags = {f: a for a in sp._actions for f in a.option_strings}
        assert not {"--k", "--n", "--ranks"} & set(flags), name
        if "--seeds" in flags:
            assert flags["--seeds"].nargs == "+" and flags["--seeds"].type is int, name
    assert "tally" not in _subparsers(build_parser()) and f"{STEP} tally" not in all_subcommands()


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser: the user commands, the steps (`step NAME`), and `step findings
    --analysis NAME` of each analysis (the flags after --analysis are the analysis's own parser's)."""
    from backretrieval.cli.findings import analysis_parser
    from backretrieval.findings.analysis import registry

    return {
        **all_subcommands(),
        **{f"{STEP} findings --analysis {name}": analysis_parser(cls) for name, cls in registry().items()},
    }


def test_every_command_speaks_the_vocabulary():
    """One flag per noun and one meaning per flag across every command (user commands, pipeline
    steps, each findings analysis), outputs spelled --out / --out-dir / --out-<what>."""
    commands = _commands()
    assert {f"{STEP} {s}" for s in STEPS} | set(USER_COMMANDS) <= set(commands)  # the steps are walked too
    assert clashes(commands) == set()


def test_the_nouns_of_the_issue_have_one_flag_each():
    """encoder / model, image embeddings, text embeddings / representations / fields: one flag
    each across every command (params.yaml's words: encoders, image_backbone); the report takes
    an output folder, not one flag per file."""
    commands = _commands()
    flags = {f for sp in commands.values() for f, _ in _flags(sp)}
    assert {"--encoder", "--encoders", "--image-emb", "--text-emb", "--image-backbone"} <= flags
    assert not {"--model", "--models", "--backbone-emb", "--repr", "--fields", "--out-repr", "--out-fields"} & flags
    report = {f for f, _ in _flags(commands[f"{STEP} report"]) if f.startswith("--out")}
    assert report == {"--out-dir", "--out-correlations"}


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
        "retired-noun": command(("--models", {"nargs": "+", "help": "the models"})),
        "retired-out": command(("--out-repr", {"nargs": "+", "metavar": "FILE", "help": "output: representations"})),
        "emb": command(("--backbone-emb", {"nargs": "+", "help": "embeddings of the backbones"})),
        "emb-2": command(("--word-emb", {"nargs": "+", "help": "word embeddings"})),
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
        ("retired-noun", "--models", "retired"),
        ("retired-out", "--out-repr", "retired"),
        ("emb", "--backbone-emb", "retired"),
        ("emb", "--backbone-emb", "spelling"),
        ("emb-2", "--word-emb", "spelling"),
    }


def test_deprecated_spellings_still_work_with_a_note(capsys):
    """The user commands' earlier spellings: --model, --data, comma-separated --directions,
    rank's --out (a folder); each parses as its new flag and prints one note; old and new together
    are refused."""
    parser = build_parser()
    args = parser.parse_args(["evaluate", "--model", "m", "--data", "d", "--directions", "en-de,de-en"])
    assert (args.encoder, args.dataset, args.directions) == ("m", "d", ["en-de", "de-en"])
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "backretrieval: note: --model is deprecated; use --encoder",
        "backretrieval: note: --data is deprecated; use --dataset",
        "backretrieval: note: comma-separated --directions is deprecated; separate the directions with spaces: "
        "--directions en-de de-en",
    ]
    args = parser.parse_args(["rank", "--encoders", "a", "b", "--dataset", "d", "--directions", "en-de"])
    assert args.out_dir is None and args.encoders == ["a", "b"] and capsys.readouterr().err == ""
    args = parser.parse_args(
        ["rank", "--model", "a", "--model", "b", "--dataset", "d", "--directions", "en-de", "de-en", "--out", "o"]
    )
    assert (args.encoders, args.out_dir, args.directions) == (["a", "b"], "o", ["en-de", "de-en"])
    assert capsys.readouterr().err.splitlines() == [
        "backretrieval: note: --model A --model B is deprecated; use --encoders A B",
        "backretrieval: note: --out is deprecated; use --out-dir",
    ]
    with pytest.raises(SystemExit):
        parser.parse_args(["evaluate", "--encoder", "m", "--data", "d", "--dataset", "d", "--directions", "en-de"])
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["evaluate", "--encoder", "m", "--directions", "en-de"])
    assert "--dataset is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["rank", "--encoders", "a", "--model", "b", "--dataset", "d", "--directions", "en-de"])
    assert "not allowed with argument" in capsys.readouterr().err
    for name in ("evaluate", "compare", "rank"):
        text = _subparsers(parser)[name].format_help()
        assert "--data " not in text and "--dataset" in text and "--model" not in text, name
    # every deprecated alias stores into a live flag of its command, under that flag's dest
    for name, sp in all_subcommands(parser).items():
        live = {a.dest: a for a in sp._actions if not isinstance(a, Deprecated)}
        for a in sp._actions:
            if isinstance(a, Deprecated):
                assert a.dest in live and a.canonical in live[a.dest].option_strings, (name, a.option_strings)


def test_evaluate_seed_count_and_values_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        main(
            [
                "evaluate",
                "--encoder",
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


def test_report_writes_its_files_under_out_dir_by_their_layout_names(tmp_path):
    """`step report --out-dir DIR`: every report file of the dataset's kind (parallel here:
    layout.REPORT_FILES; without parallel texts BKR_REPORT_FILES, by the same code path) under
    DIR by its fixed name, the correlations where --out-correlations says; nothing else in DIR."""
    from backretrieval.steps.layout import REPORT_FILES
    from test_findings_steps import NOISE, _make_run

    f = _make_run(tmp_path / "run", seeds=(0, 1, 2))
    settings = {
        "run_name": "r",
        "n_seeds": 3,
        "image_backbone": "bb",
        "text_field": "title",
        "figure_seed": 0,
        "bootstrap_B": 50,
        "bootstrap_seed": 0,
        "random_encoders": ["random"],
        "english_only": [],
        "family": [],
    }
    rep, corr = tmp_path / "reports", tmp_path / "artifacts" / "correlations.csv"
    argv = [STEP, "report", "--metrics", *f["metrics"], "--dataset", str(f["dataset"])]
    argv += ["--encoders", *sorted(NOISE), "--languages", "de", "en", "--text-emb", *f["text"]]
    argv += ["--settings", json.dumps(settings), "--samples", *f["samples"], "--out-dir", str(rep)]
    assert main([*argv, "--image-emb", str(f["image"]), "--out-correlations", str(corr)]) == 0
    written = {str(p.relative_to(rep)) for p in rep.rglob("*") if p.is_file()}
    assert written == set(REPORT_FILES.values()) and corr.is_file()
