"""Snakemake reruns a job when the code of its step changes, and only then
(backretrieval._util.code_version: every rule's param `code`; DVC reads the same versions from
workflow/code_versions.yaml). A comment or a docstring changes no version; a real change in the
metric kernels changes the steps that run them and no data, sampling or embedding step; the
committed versions file is this tree's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import snake
from backretrieval._util.code_version import VERSIONS_FILE, closure, step_versions, versions_text
from snake import ROOT, run_snakemake

KERNELS = Path("backretrieval/metrics/kernels.py")
TINY = ROOT / "tests" / "data" / "tiny.yaml"


def _versions(src: Path, cwd: Path) -> dict[str, str]:
    """The step versions of the source tree ``src`` (a fresh process, its own cache in ``cwd``)."""
    code = "import json; from backretrieval._util.code_version import step_versions; print(json.dumps(step_versions()))"
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=snake.env(src), capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    out = tmp_path / "src"
    shutil.copytree(ROOT / "src", out, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return out


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_committed_versions_are_this_trees():
    assert (ROOT / VERSIONS_FILE).read_text(encoding="utf-8") == versions_text(step_versions()), (
        f"{VERSIONS_FILE} is stale: run `snakemake -n` (or make dvc-yaml) and commit it"
    )


def test_a_comment_a_docstring_or_moved_lines_change_no_version(src, tmp_path):
    before = _versions(src, tmp_path)
    kernels = src / KERNELS
    text = kernels.read_text(encoding="utf-8")
    doc = re.search(r'"""(.+?)"""', text, re.S)
    assert doc
    kernels.write_text(
        "# a comment\n\n" + text.replace(doc.group(1), doc.group(1) + " Reworded.", 1) + "\n# the end\n",
        encoding="utf-8",
    )
    assert _versions(src, tmp_path) == before


def test_a_real_change_in_the_kernels_changes_the_steps_that_run_them_only(src, tmp_path):
    before = _versions(src, tmp_path)
    (src / KERNELS).write_text((src / KERNELS).read_text(encoding="utf-8") + "\n_CHANGED = 1\n", encoding="utf-8")
    after = _versions(src, tmp_path)
    changed = {step for step in before if before[step] != after[step]}
    assert {"metrics", "report", "case_study"} <= changed
    # the human study's sheets and tally run no retrieval kernel, and the case study's embedding
    # step is its own
    assert not changed & {"prepare", "embed", "sample", "case_embed", "human_study", "results_doc"}, changed


def test_the_closure_follows_imports_in_function_bodies_but_not_lazy_package_hooks():
    # backretrieval/__init__.py offers the metrics lazily (__getattr__): importing the package
    # does not run them, so the sampling step's code is not the metrics'
    assert "backretrieval.metrics.kernels" not in closure("backretrieval.steps.sample")
    assert "backretrieval.metrics.kernels" not in closure("backretrieval.steps.embed")
    # an import inside a function body runs with it: the case study's embedding step builds encoders
    assert "backretrieval.encoders.base" in closure("backretrieval.steps.case_embed")
    assert "backretrieval.metrics.kernels" not in closure("backretrieval.steps.case_embed")


def _planned(wd: Path, src: Path, configfile: Path = TINY) -> set[str]:
    res = run_snakemake(wd, "-n", configfile=configfile, environ=snake.env(src), cwd=wd)
    table = re.search(r"^job\s+count\n[-\s]+\n(.*?)^total", res.stdout, re.S | re.M)
    return set() if table is None else {line.split()[0] for line in table.group(1).splitlines() if line.strip()}


@pytest.mark.slow
def test_snakemake_reruns_exactly_what_a_change_reaches(tiny_reference, src, tmp_path):
    """On a finished run: nothing to do; after a comment-only edit nothing; after a real change
    in the kernels the metrics, report and case-study jobs and no data, sampling or embedding
    job; after a change of case_study.training_seeds the training and what follows it."""
    wd = tmp_path / "run"
    shutil.copytree(tiny_reference, wd, symlinks=True)
    assert _planned(wd, src) == set()
    _edit(src / KERNELS, '"""', '"""Reworded. ')
    (src / KERNELS).write_text("# a comment\n" + (src / KERNELS).read_text(encoding="utf-8"), encoding="utf-8")
    assert _planned(wd, src) == set()
    (src / KERNELS).write_text((src / KERNELS).read_text(encoding="utf-8") + "\n_CHANGED = 1\n", encoding="utf-8")
    jobs = _planned(wd, src)
    assert {"metrics", "report", "case_select", "case_evaluate", "case_report"} <= jobs, jobs
    assert not jobs & {"prepare_dataset", "check_dataset", "sample", "embed_text", "embed_images", "case_embed"}, jobs
    shutil.copy2(ROOT / "src" / KERNELS, src / KERNELS)
    cfg = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    cfg["case_study"]["training_seeds"] = [0, 1, 2]
    (tmp_path / "seeds.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    jobs = _planned(wd, src, tmp_path / "seeds.yaml")
    assert "case_train" in jobs and {"case_evaluate", "case_report"} <= jobs, jobs
    assert not jobs & {"prepare_dataset", "embed_text", "embed_images", "case_embed", "sample", "metrics"}, jobs


def test_an_analysis_the_registry_imports_by_name_counts_for_the_findings_step(src, tmp_path):
    # backretrieval.findings.analysis.registry imports every analysis module with importlib: no
    # import statement names image_quality, yet a change in it must rerun the findings jobs
    before = _versions(src, tmp_path)
    module = src / "backretrieval/findings/image_quality.py"
    module.write_text(module.read_text(encoding="utf-8") + "\n_CHANGED = 1\n", encoding="utf-8")
    after = _versions(src, tmp_path)
    assert {step for step in before if before[step] != after[step]} == {"findings"}
