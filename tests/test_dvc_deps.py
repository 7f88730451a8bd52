"""DVC reruns only what changed (scripts/dvc_stages.py, "code deps"): each stage depends on the
files of the code its job runs, derived from the static import graph of its step and its
workflow files, not on the whole package; the stage command forces its one job only when DVC
runs the stage; and every plot dvc.yaml declares renders from a clone's git files alone.

The `dvc status` checks run in a fresh copy of this checkout (its files as a clone has them, no
outputs, no DVC cache): every stage is changed there (its outputs are missing), so each check
compares the status before and after one edit, stage by stage.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from snake import ROOT
from test_dvc import _fresh_copy, _ok, _run, needs_dvc

_spec = importlib.util.spec_from_file_location("dvc_stages", ROOT / "scripts" / "dvc_stages.py")
dvc_stages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dvc_stages)

PIPELINES = ("dvc.yaml", "runs/dvc.yaml")
KERNELS = "src/backretrieval/metrics/kernels.py"


def _stages() -> dict[str, dict]:
    """Every stage of the pipeline files, by the name `dvc status` gives it."""
    out = {}
    for path in PIPELINES:
        prefix = "" if path == "dvc.yaml" else f"{path}:"
        for name, stage in yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))["stages"].items():
            out[prefix + name] = stage
    return out


def _paths(entries) -> list[str]:
    return [e if isinstance(e, str) else next(iter(e)) for e in entries or []]


# ------------------------------------------------------------------ the import graph, on a fake package

FAKE = {
    # `import fakepkg` stays cheap: heavy loads on first use (a PEP 562 hook)
    "fakepkg/__init__.py": """
        def __getattr__(name):
            from . import heavy
            return getattr(heavy, name)
    """,
    "fakepkg/heavy.py": "THING = 1\n",
    "fakepkg/util.py": "VALUE = 1\n",
    "fakepkg/lazy.py": "",
    "fakepkg/typing_only.py": "",
    "fakepkg/parsing.py": "",
    "fakepkg/unrelated.py": "import fakepkg.heavy\n",
    "fakepkg/steps/__init__.py": "",
    "fakepkg/steps/a.py": """
        from typing import TYPE_CHECKING

        from ..util import VALUE

        if TYPE_CHECKING:
            from .. import typing_only


        def run():
            from .. import lazy

            return lazy, VALUE
    """,
    "fakepkg/steps/b.py": "from .. import unrelated\n",
    "fakepkg/steps/c.py": "",
    # the console package: a handler per command, each importing its step
    "fakepkg/cli/__init__.py": """
        from . import commands

        GROUPS = (commands.register,)


        def run():
            main()


        def main():
            for register in GROUPS:
                register(lambda *args: None)
    """,
    "fakepkg/cli/commands.py": """
        import importlib

        from .helpers import parse

        TABLE = {"x": "c"}


        def cmd_a(args):
            from ..steps.a import run

            parse(args)
            run()


        def cmd_b(args):
            from ..steps import b

            return b


        def cmd_dyn(args):
            return importlib.import_module(f".{TABLE[args]}", "fakepkg.steps")


        def register(add):
            add("a", cmd_a, "step a")
            add("b", cmd_b, "step b")
            add("dyn", cmd_dyn, "a step chosen by name")
    """,
    "fakepkg/cli/helpers.py": """
        def parse(args):
            from .. import parsing

            return parsing
    """,
}
CONSOLE = ("fakepkg.cli", "run")
EVERY_COMMAND = {"fakepkg", "fakepkg.cli", "fakepkg.cli.commands", "fakepkg.cli.helpers"}


@pytest.fixture
def fake_src(tmp_path: Path) -> Path:
    for rel, text in FAKE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return tmp_path


def test_a_steps_code_is_what_its_entry_point_imports(fake_src):
    graph = dvc_stages.ImportGraph(fake_src)
    # command a: its step, what the step imports at module level and in its functions, and the
    # helper its handler calls; not the other commands' steps, the hook's module (no name asked
    # of the package), nor what only type checkers import
    assert set(graph.closure(entry=CONSOLE, command="a")) == EVERY_COMMAND | {
        "fakepkg.steps",
        "fakepkg.steps.a",
        "fakepkg.util",
        "fakepkg.lazy",
        "fakepkg.parsing",
    }
    # command b: its step and what that imports (unrelated -> heavy); its handler calls no helper
    assert set(graph.closure(entry=CONSOLE, command="b")) == EVERY_COMMAND | {
        "fakepkg.steps",
        "fakepkg.steps.b",
        "fakepkg.unrelated",
        "fakepkg.heavy",
    }
    # a computed import_module name: the module's string constants that name a module
    assert "fakepkg.steps.c" in graph.closure(entry=CONSOLE, command="dyn")
    with pytest.raises(ValueError, match="'nope'"):
        graph.closure(entry=CONSOLE, command="nope")


def test_a_name_asked_of_a_lazy_package_runs_its_hook(fake_src):
    graph = dvc_stages.ImportGraph(fake_src)
    assert "fakepkg.heavy" not in graph.closure(code=[ast.parse("import fakepkg")])
    assert "fakepkg.heavy" in graph.closure(code=[ast.parse("from fakepkg import THING")])
    assert "fakepkg.heavy" in graph.closure(code=[ast.parse("import fakepkg\nfakepkg.THING")])


def test_a_workflow_files_imports_are_its_python_statements(fake_src, tmp_path):
    smk = tmp_path / "rules.smk"
    smk.write_text(
        textwrap.dedent(
            """
            from fakepkg.util import VALUE


            def helper(wildcards):
                from fakepkg import lazy

                return lazy


            rule a:
                input:
                    helper,
                output:
                    "out.txt",
                shell:
                    "fakepkg a > {output}"
            """
        ),
        encoding="utf-8",
    )
    modules = dvc_stages.ImportGraph(fake_src).closure(code=[dvc_stages.workflow_code(smk)])
    assert modules == ["fakepkg", "fakepkg.lazy", "fakepkg.util"]


def test_the_metrics_steps_deps_are_its_code_and_not_the_packages():
    job = {
        "rule": "metrics",
        "cmd": "OMP_NUM_THREADS=1 backretrieval metrics --dataset d --out o > log 2>&1",
        "rule_file": "workflow/rules/evaluate.smk",
        "workflow_files": ["Snakefile", "workflow/rules/common.smk"],
    }
    deps = dvc_stages.code_deps(job)
    assert deps[:3] == ["Snakefile", "workflow/rules/common.smk", "workflow/rules/evaluate.smk"]
    assert {
        "src/backretrieval/cli/pipeline.py",  # the handler
        "src/backretrieval/steps/metrics.py",  # the step it imports
        KERNELS,  # what the step runs
        "src/backretrieval/config.py",  # what the workflow files import (validation)
        "src/backretrieval/data/config.schema.yaml",  # package data
    } <= set(deps)
    assert "src/backretrieval/steps/embed.py" not in deps  # another command's step
    assert all(Path(ROOT / d).is_file() for d in deps)  # files, never a folder


# ------------------------------------------------------------------ the generated stages


def test_every_stage_forces_its_one_job_and_depends_on_its_code_files():
    for name, stage in _stages().items():
        words = shlex.split(stage["cmd"])
        if "findings" in words:  # a findings stage: `snakemake findings`, the whole workflow
            continue
        rule = words[words.index("--allowed-rules") + 1]
        assert words[words.index("--forcerun") + 1] == rule, name
        assert not {"--force", "-f", "--forceall", "-F"} & set(words), name
        assert len(words) == words.index("--") + 2, name  # one target: one job of the rule
        deps = stage["deps"]
        assert "src/backretrieval" not in deps and "workflow" not in deps, name
        assert deps[0] == "Snakefile" and any(d.startswith("src/backretrieval/cli/") for d in deps), name


@needs_dvc
def test_the_stage_command_runs_its_job_even_where_snakemake_finds_it_up_to_date(tmp_path):
    """DVC decides that a stage runs; Snakemake alone would answer "Nothing to be done" for a job
    whose outputs are present and newer than its inputs (a change only DVC tracks, outputs DVC
    checked out): the command forces that one job, and no other."""
    repo = _fresh_copy(tmp_path / "repo")
    cmd = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]["default-prepare_dataset"]["cmd"]
    words = shlex.split(cmd)
    out = repo / words[-1]
    out.mkdir(parents=True)
    (out / "items.jsonl").write_text("{}\n")
    dry = [w for w in words if w != "--quiet"]
    dry.insert(dry.index("--"), "--dry-run")
    forced = _ok(dry, repo)
    assert "Forced execution" in forced
    assert dict(re.findall(r"^(\w+)\s+(\d+)$", forced, re.M)) == {"prepare_dataset": "1", "total": "1"}, forced
    i = dry.index("--forcerun")
    unforced = _ok(dry[:i] + dry[i + 2 :], repo)
    assert "Nothing to be done" in unforced, unforced[-2000:]


# ------------------------------------------------------------------ dvc status in a fresh copy


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    return _fresh_copy(tmp_path_factory.mktemp("deps") / "repo")


def _status(repo: Path) -> dict:
    res = _run(["dvc", "status", "--json", *PIPELINES], repo, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(res.stdout)


def _edited(repo: Path, files: list[str]) -> dict:
    """The status with a comment appended to each of ``files``, which are then restored."""
    before = {f: (repo / f).read_bytes() for f in files}
    try:
        for f in files:
            (repo / f).write_bytes(before[f] + b"\n# a comment only\n")
        return _status(repo)
    finally:
        for f, data in before.items():
            (repo / f).write_bytes(data)


@needs_dvc
def test_an_edit_in_a_module_no_stage_runs_changes_no_stage(copy):
    stages = _stages()
    used = {d for stage in stages.values() for d in stage["deps"]}
    assert all("src/backretrieval" != d for d in used)  # no stage depends on the whole package
    tracked = subprocess.run(
        ["git", "ls-files", "src/backretrieval/*.py"], cwd=copy, capture_output=True, text=True, check=True
    ).stdout.split()
    unused = sorted(set(tracked) - used)
    assert unused, "every module is some stage's dep: nothing to edit"
    before = _status(copy)
    assert _edited(copy, unused) == before, unused


@needs_dvc
def test_an_edit_in_the_metric_kernels_changes_the_stages_that_run_them_and_nothing_upstream(copy):
    stages = _stages()
    before = _status(copy)
    after = _edited(copy, [KERNELS])
    changed = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    # a stage whose lock predates the kernels' current code (a real-data run's, until that run
    # is made again) already lists them as changed: the edit cannot change its status
    stale = {
        name
        for name, entries in before.items()
        if any(KERNELS in e.get("changed deps", {}) for e in entries if isinstance(e, dict))
    }
    # exactly the stages whose code includes the kernels, each naming the file
    assert changed == {name for name, stage in stages.items() if KERNELS in stage["deps"]} - stale
    for name in changed:
        assert any(KERNELS in e.get("changed deps", {}) for e in after[name] if isinstance(e, dict)), name
    # the metrics stages and the reports downstream of them; none of their upstream stages
    metrics = {n for n, stage in stages.items() if _rule(stage) in ("metrics", "metrics_part")}
    reports = {n for n, stage in stages.items() if _rule(stage) == "report"}
    assert "default-metrics-en-de" in metrics and "default-report" in reports
    assert "default-metrics-en-de" not in stale  # the default run's lock is this tree's
    assert (metrics | reports) - stale <= changed
    upstream = _upstream(stages, metrics)
    assert {"prepare_dataset", "embed_text", "embed_images", "sample"} <= {_rule(stages[n]) for n in upstream}
    assert not upstream & changed, sorted(upstream & changed)
    # nor the data side (check_dataset's record is an ancient() input: no DVC dep)
    data_side = {"prepare_dataset", "prepare_corpus", "check_dataset", "embed_text", "embed_images", "sample"}
    assert not {n for n in changed if _rule(stages[n]) in data_side}


def _rule(stage: dict) -> str | None:
    words = shlex.split(stage["cmd"])
    return words[words.index("--allowed-rules") + 1] if "--allowed-rules" in words else None


def _upstream(stages: dict[str, dict], names: set[str]) -> set[str]:
    """The stages whose outputs ``names`` read, directly or through others."""
    owner = {
        path: name
        for name, stage in stages.items()
        for key in ("outs", "metrics", "plots")
        for path in _paths(stage.get(key))
    }

    def producers(name: str) -> set[str]:
        data = [d for d in stages[name]["deps"] if not d.startswith(("src/", "workflow/", "Snakefile"))]
        return {
            other
            for dep in data
            for path, other in owner.items()
            if dep == path or dep.startswith(f"{path}/") or path.startswith(f"{dep}/")
        } - {name}

    seen: set[str] = set()
    todo = [p for n in names for p in producers(n)]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += producers(name)
    return seen


# ------------------------------------------------------------------ plots from git files


@needs_dvc
def test_every_plot_renders_from_a_clones_git_files(copy):
    """`dvc plots show` in a copy without the DVC cache: every declared plot has its data (the
    training curves' CSVs are git files: `cache: false` outs that .gitignore lets in)."""
    declared: set[str] = set()  # plot ids: a top-level plot's title, a stage plot's file
    read: set[str] = set()  # the files they read, relative to the repository root
    for path in PIPELINES:
        doc = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
        for plot in doc.get("plots") or []:
            ((title, spec),) = plot.items()
            declared.add(title)
            read.update(os.path.normpath(Path(path).parent / f) for f in spec["y"])
        for stage in doc["stages"].values():
            declared.update(_paths(stage.get("plots")))
            read.update(_paths(stage.get("plots")))
    assert len(declared) > 20 and any(p.endswith(" training loss") for p in declared)
    listed = subprocess.run(["git", "ls-files", "--", *sorted(read)], cwd=ROOT, capture_output=True, text=True)
    assert set(listed.stdout.split()) == read, "plot data not committed to git"
    assert not (copy / ".dvc" / "cache").exists()
    shown = json.loads(_ok(["dvc", "plots", "show", "--json"], copy))
    assert not shown.get("errors"), shown.get("errors")
    assert declared <= set(shown["data"])
    assert all(shown["data"][p] for p in declared), [p for p in declared if not shown["data"][p]]
