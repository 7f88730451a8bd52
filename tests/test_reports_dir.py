"""A run writes only inside its own folder under the checkout's reports/: `reports_dir` is
checked with every symlink on its way resolved (at validation, and again by the io helpers each
time a job writes a file), `reports` itself (every run's folder) is refused, and no message
advises removing a folder that holds other runs' reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from backretrieval._util import io
from backretrieval.config import validate_config
from backretrieval.errors import ConfigError, OutputError
from backretrieval.steps.owner import check_reports_owner
from snake import ROOT, run_snakemake

TINY = ROOT / "tests/data/tiny.yaml"


def _tiny(**changes) -> dict:
    cfg = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    cfg.update(changes)
    return cfg


@pytest.fixture
def linked(tmp_path, monkeypatch) -> Path:
    """A checkout root (the working directory) whose reports/link is a symlink to a folder
    outside it, and reports/alias one to reports/real; returns the outside folder."""
    root, outside = tmp_path / "checkout", tmp_path / "outside"
    (root / "reports/real").mkdir(parents=True)
    outside.mkdir()
    (root / "reports/link").symlink_to(outside, target_is_directory=True)
    (root / "reports/alias").symlink_to(root / "reports/real", target_is_directory=True)
    monkeypatch.chdir(root)
    return outside


@pytest.mark.parametrize("value", ["reports/link", "reports/link/sub", "./reports/link/"])
def test_a_reports_dir_through_a_symlink_leading_outside_is_refused(linked, value):
    with pytest.raises(
        ConfigError, match=r"^c\.yaml: field 'reports_dir': .* resolves to .*outside the checkout's 'reports/'"
    ):
        validate_config(_tiny(reports_dir=value), "c.yaml")


def test_a_symlink_that_stays_inside_reports_is_fine(linked):
    validate_config(_tiny(reports_dir="reports/alias/tiny"), "c.yaml")


def test_a_job_does_not_write_through_a_symlink_leading_outside(linked):
    """The io helpers check again when a job writes (a link made after validation)."""
    with pytest.raises(OutputError, match=r"^reports/link/table1\.md: not written: its folder resolves to .*outside"):
        io.write_text("reports/link/table1.md", "Table 1\n")
    with pytest.raises(OutputError, match="outside the checkout's reports/"):
        io.write_json("reports/link/sub/metrics.json", {})
    assert list(linked.iterdir()) == []  # nothing written outside, no folder made there
    io.write_text("reports/alias/table1.md", "Table 1\n")  # a link inside reports/: written
    assert Path("reports/real/table1.md").read_text() == "Table 1\n"


@pytest.mark.parametrize("value", ["reports", "./reports/", "reports/."])
def test_reports_itself_is_refused(value):
    with pytest.raises(
        ConfigError,
        match=r"^c\.yaml: field 'reports_dir': .* is the folder of every run's files; a run's go in a folder "
        r"of its own under it, e.g. 'reports/<run_name>'",
    ):
        validate_config(_tiny(reports_dir=value), "c.yaml")


def test_the_way_out_never_removes_a_folder_of_other_runs(tmp_path, monkeypatch):
    """Reports an older run left loose in reports/ (when `reports: reports` was accepted), or a
    run whose folder holds another run's: the message names the owner without `rm -rf` of it."""
    monkeypatch.chdir(tmp_path)
    Path("reports/default").mkdir(parents=True)
    Path("reports/metrics.json").write_text(json.dumps({"meta": {"run_name": "old"}}))
    Path("reports/default/metrics.json").write_text(json.dumps({"meta": {"run_name": "default"}}))
    with pytest.raises(ConfigError) as exc:
        check_reports_owner(_tiny(reports_dir="reports/tiny"), "c.yaml")
    msg = str(exc.value)
    assert "holds the reports of run 'old'" in msg and "rm -rf" not in msg, msg
    assert "move that run's own files out of reports/ (it holds other runs' reports too)" in msg, msg
    # a run's own folder with another run's folder inside it
    Path("reports/metrics.json").unlink()
    Path("reports/a/b").mkdir(parents=True)
    Path("reports/a/metrics.json").write_text(json.dumps({"meta": {"run_name": "a"}}))
    Path("reports/a/b/metrics.json").write_text(json.dumps({"meta": {"run_name": "b"}}))
    with pytest.raises(ConfigError, match="holds the reports of run 'a'") as exc:
        check_reports_owner(_tiny(reports_dir="reports/a/c"), "c.yaml")
    assert "rm -rf" not in str(exc.value)
    # a folder holding that run's reports only: removing it is the way out, as before
    Path("reports/solo").mkdir()
    Path("reports/solo/metrics.json").write_text(json.dumps({"meta": {"run_name": "solo"}}))
    with pytest.raises(ConfigError, match=r"rm -rf reports/solo artifacts/\.owners/solo\.json"):
        check_reports_owner(_tiny(reports_dir="reports/solo"), "c.yaml")


def test_the_workflow_refuses_a_linked_reports_dir_before_any_job(tmp_path):
    wd, outside = tmp_path / "wd", tmp_path / "outside"
    (wd / "reports").mkdir(parents=True)
    outside.mkdir()
    (wd / "reports/link").symlink_to(outside, target_is_directory=True)
    r = run_snakemake(wd, "-n", "--config", "reports_dir=reports/link", configfile=TINY, check=False, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "field 'reports_dir'" in out and "resolves to" in out, out[-3000:]
    assert list(outside.iterdir()) == [] and not (wd / "artifacts").exists()
