"""A config file with YTE templating (Snakemake runs its `__definitions__` and `?` expressions as
Python while it loads the file) is refused by the project's doors before anything reads it as a
template: `backretrieval validate-config` and `load_config`, the Makefile's targets that hand a
config to Snakemake (scripts/plain_config.py runs first), `make dvc-yaml`'s generator, and the
Snakefile (no job runs). Plain `snakemake --configfile FILE` is the exception docs/SECURITY.md
states: Snakemake's command line runs the template before the Snakefile can look at it."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backretrieval.cli import main
from backretrieval.config import load_config
from backretrieval.errors import ConfigError
from snake import ROOT, run_snakemake

BIN = Path(sys.executable).parent
TINY = ROOT / "tests/data/tiny.yaml"

#: each form writes a canary file (named after the form) when a YTE engine processes the file
FORMS = {
    "definitions": '__use_yte__: true\n__definitions__:\n  - import pathlib\n  - pathlib.Path("CANARY-definitions").touch()\n',
    "expression": "__use_yte__: true\nrecall_k: ?f\"{__import__('pathlib').Path('CANARY-expression').touch() or 4}\"\n",
}
REFUSAL = r"uses YTE templating \(its top-level key '__use_yte__'\), which runs Python when Snakemake loads the file"


def _templated(folder: Path, form: str) -> Path:
    """tests/data/tiny.yaml with the form's template lines after it (a key given twice: the last wins)."""
    path = folder / f"{form}.yaml"
    path.write_text(TINY.read_text(encoding="utf-8") + FORMS[form], encoding="utf-8")
    return path


def _canary(folder: Path, form: str) -> Path:
    return folder / f"CANARY-{form}"


@pytest.mark.parametrize("form", FORMS)
def test_validate_config_and_load_config_refuse_a_template_without_running_it(tmp_path, monkeypatch, capsys, form):
    monkeypatch.chdir(tmp_path)
    cfg = _templated(tmp_path, form)
    assert main(["validate-config", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(cfg) in err[0], err
    with pytest.raises(ConfigError, match=REFUSAL):
        load_config(cfg)
    assert not _canary(tmp_path, form).exists()


@pytest.mark.parametrize("form", FORMS)
def test_a_question_mark_expression_or_definitions_alone_are_refused(tmp_path, form):
    """Without `__use_yte__` Snakemake does not run them; refused all the same (no config value
    starts with '?' or has such a key)."""
    text = FORMS[form].replace("__use_yte__: true\n", "")
    path = tmp_path / "c.yaml"
    path.write_text(TINY.read_text(encoding="utf-8") + text, encoding="utf-8")
    where = "its top-level key '__definitions__'" if form == "definitions" else "recall_k: '?f"
    with pytest.raises(ConfigError, match=r"uses YTE templating \(" + re.escape(where)):
        load_config(path)


def _tree(tmp_path: Path) -> Path:
    """The Makefile and its helpers; a stub .venv that puts a fake `snakemake` (it records that
    it ran) before this interpreter's folder on PATH."""
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", tree / "Makefile")
    for name in ("plain_config.py", "snakemake_hint.py"):
        shutil.copy(ROOT / "scripts" / name, tree / "scripts" / name)
    fake = tree / "fakebin"
    fake.mkdir()
    for prog in ("snakemake", "backretrieval"):
        (fake / prog).write_text(f"#!/bin/sh\ntouch {tree}/RAN-{prog}\n")
        (fake / prog).chmod(0o755)
    (tree / ".venv/bin").mkdir(parents=True)
    (tree / ".venv/bin/activate").write_text(f'export PATH="{fake}:{BIN}:$PATH"\n')
    return tree


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("target", ["run", "figures", "verify"])
def test_make_targets_refuse_a_template_before_snakemake(tmp_path, target, form):
    tree = _tree(tmp_path)
    cfg = _templated(tree, form)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    env["PATH"] = f"{tree / 'fakebin'}:{BIN}:{env.get('PATH', '')}"
    res = subprocess.run(
        ["make", "-s", "--no-print-directory", "-o", "setup", target, f"CONFIG={cfg.name}", "VENV=.venv/bin"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode != 0
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith(f"error: {cfg.name}: uses YTE templating"), line
    assert not list(tree.glob("RAN-*")) and not _canary(tree, form).exists()


@pytest.mark.parametrize("form", FORMS)
def test_the_dvc_yaml_generator_refuses_a_template_before_snakemake(tmp_path, monkeypatch, form):
    spec = importlib.util.spec_from_file_location("dvc_stages_under_test", ROOT / "scripts/dvc_stages.py")
    stages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stages)
    monkeypatch.chdir(tmp_path)
    cfg = _templated(tmp_path, form)
    with pytest.raises(SystemExit, match=rf"^dvc_stages: {cfg}: {REFUSAL}"):
        stages.dag(str(cfg))
    assert not _canary(tmp_path, form).exists()


@pytest.mark.parametrize("form", FORMS)
def test_the_snakefile_refuses_a_template_but_snakemake_ran_it_first(tmp_path, form):
    """The workflow refuses the file and runs no job; Snakemake's command line has already run
    the template (the canary exists): the one door docs/SECURITY.md names as not safe."""
    wd = tmp_path / "wd"
    wd.mkdir()
    cfg = _templated(tmp_path, form)
    res = run_snakemake(wd, "-n", configfile=cfg, cwd=wd, check=False, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "uses YTE templating" in out, out[-3000:]
    assert not (wd / "artifacts").exists() and not (wd / "data").exists()
    assert _canary(wd, form).exists(), "Snakemake no longer runs YTE before the workflow: update docs/SECURITY.md"
