"""docs/RESULTS.md is generated from the committed reports (and stays so)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from backretrieval.cli import main
from backretrieval.errors import InputError
from backretrieval.reporting.results_doc import render_results
from backretrieval.steps.results_doc import listed_configs, run_sources

ROOT = Path(__file__).resolve().parents[1]
DVC_RUNS = "scripts/dvc_runs.yaml"


def _runs():
    configs = listed_configs(ROOT / DVC_RUNS)
    reports = [yaml.safe_load((ROOT / c).read_text())["reports_dir"] for c in configs]
    return configs, reports


def test_committed_results_doc_is_up_to_date(monkeypatch):
    monkeypatch.chdir(ROOT)
    configs, reports = _runs()
    fresh = render_results(run_sources(configs, reports, DVC_RUNS), "docs/RESULTS.md")
    committed = (ROOT / "docs/RESULTS.md").read_text(encoding="utf-8")
    assert committed == fresh, "docs/RESULTS.md is out of date: run `make results-doc`"


def test_results_doc_labels_synthetic_and_simulated(monkeypatch):
    monkeypatch.chdir(ROOT)
    doc = (ROOT / "docs/RESULTS.md").read_text(encoding="utf-8")
    default = doc.split("\n## ")[1]
    assert default.startswith("default") and "**SYNTHETIC data**" in default
    assert "**SIMULATED ratings**" in default
    assert "`snakemake --cores all --configfile config/multi30k.yaml`" in doc
    # the versioned way to run each listed configuration is a real command (there is no stage
    # named after a run: its stages are one per Snakemake job)
    assert "(or `make run CONFIG=config/multi30k.yaml`, which versions it with DVC)" in doc
    assert "(or `make run`, which versions it with DVC)" in default and "dvc repro" not in doc


@pytest.fixture
def tiny_reports(tmp_path):
    """A copy of the default run's reports and a run list naming params.yaml."""
    shutil.copytree(ROOT / "reports", tmp_path / "reports", ignore=shutil.ignore_patterns("multi30k*"))
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "runs.yaml").write_text("stages: [params.yaml]\nnot_stages: {other.yaml: needs data}\n")
    (tmp_path / "other.yaml").write_text("run_name: other\nreports_dir: reports/other\n")
    return tmp_path


def test_cli_writes_doc_and_marks_configs_not_run(tiny_reports, monkeypatch):
    monkeypatch.chdir(tiny_reports)
    rc = main(
        [
            "step",
            "results-doc",
            "--run-configs",
            "params.yaml",
            "other.yaml",
            "--reports",
            "reports/default",
            "reports/other",
            "--dvc-runs",
            "runs.yaml",
            "--out",
            "docs/RESULTS.md",
        ]
    )
    assert rc == 0
    doc = (tiny_reports / "docs/RESULTS.md").read_text()
    assert "## other\n" in doc and "Not run here, no committed reports: needs data." in doc
    assert "(../reports/default/figures/fig2_scatter.png)" in doc


def test_reports_of_another_run_are_refused(tiny_reports, monkeypatch, capsys):
    monkeypatch.chdir(tiny_reports)
    meta = json.loads((tiny_reports / "reports/default/metrics.json").read_text())
    meta["meta"]["run_name"] = "someone-else"
    (tiny_reports / "reports/default/metrics.json").write_text(json.dumps(meta))
    rc = main(
        [
            "step",
            "results-doc",
            "--run-configs",
            "params.yaml",
            "--reports",
            "reports/default",
            "--dvc-runs",
            "runs.yaml",
            "--out",
            "out.md",
        ]
    )
    assert rc == 2
    assert "written by run 'someone-else'" in capsys.readouterr().err
    assert not (tiny_reports / "out.md").exists()


def test_a_stage_without_reports_and_unlisted_configs_fail(tiny_reports, monkeypatch):
    monkeypatch.chdir(tiny_reports)
    with pytest.raises(InputError, match="is a DVC stage, run it first"):
        run_sources(["params.yaml"], ["reports/missing"], "runs.yaml")
    with pytest.raises(InputError, match="not listed in runs.yaml"):
        run_sources(["unlisted.yaml"], ["reports"], "runs.yaml")
    with pytest.raises(InputError, match="1 --run-configs but 2 --reports"):
        run_sources(["params.yaml"], ["reports", "x"], "runs.yaml")


def test_readme_is_short_and_carries_no_hand_copied_results():
    """Results live in docs/RESULTS.md (generated); the README keeps only the generated
    findings block, so no decimal result or timing may appear outside it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    start, end = "<!-- findings-verdict:start", "<!-- findings-verdict:end -->"
    if start in text:
        text = text[: text.index(start)] + text[text.index(end) + len(end) :]
    assert re.findall(r"\d+\.\d{2,}|\d+m\d+s|\d+(?:\.\d+)? ?(?:s|min|h)\b(?! *\|)", text) == []
    # no configuration is called the paper's protocol (only the sentence saying none is)
    assert re.findall(r"paper's[^.|]*protocol", text.replace("is the paper's exact protocol", "")) == []
