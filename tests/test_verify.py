"""`backretrieval verify`: a run's reports against reference reports, field by field, within the
tolerances of backretrieval.reporting.verify.TOLERANCES (README, "Reproducing the results").

Fast tests on edited copies of small report files; one slow test verifies the reports of a run
of tests/data/tiny.yaml (the session's shared run) against the committed reference
(tests/data/tiny_reports/), then changes recall_k and shows the verifier naming the fields."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from backretrieval.cli import main
from backretrieval.reporting import verify as V
from snake import ROOT, run_snakemake

REFERENCE = ROOT / "tests" / "data" / "tiny_reports"

METRICS = {
    "correlation_with_xlr": {"bkr_pearson": {"de-en": 0.994895}, "bkr_spearman": {"de-en": 0.9}},
    "encoders": {"minilm-en": {"bkr_recall": 0.03568, "corr": 0.006902859362, "bkr_mean_rank": 434.6}},
    "meta": {"k": 10, "sample_size": 1000, "n_seeds": 25, "dataset": "synthetic-scenes"},
}
RECALL = "direction,encoder,metric,mean,ci_low,ci_high,n_seeds\nde-en,minilm-en,bkr_recall,0.03568,0.031,0.04,25\n"


def _reports(root: Path, metrics: dict = METRICS, recall: str = RECALL, table: str = "| a |\n") -> Path:
    root.mkdir(parents=True)
    (root / "metrics.json").write_text(json.dumps(metrics, indent=2))
    (root / "recall_ci.csv").write_text(recall)
    (root / "table1.md").write_text(table)
    return root


def _edited(**changes) -> dict:
    m = json.loads(json.dumps(METRICS))
    for path, value in changes.items():
        *parents, leaf = path.split("/")
        node = m
        for p in parents:
            node = node[p]
        node[leaf] = value
    return m


def test_identical_reports_pass(tmp_path):
    rep = V.verify(_reports(tmp_path / "run"), reference_dir=_reports(tmp_path / "ref"))
    assert rep.ok and rep.identical == rep.files == 3


def test_the_measured_cross_cpu_noise_is_within_tolerance(tmp_path):
    """The issue's AVX2-vs-AVX-512 differences (MiniLM): CORR in the 8th digit, one flip in 25,000."""
    run = _reports(
        tmp_path / "run",
        _edited(**{"encoders/minilm-en/corr": 0.00690284618, "encoders/minilm-en/bkr_recall": 0.03572}),
        RECALL.replace("0.03568", "0.03572"),
        table="| b |\n",
    )
    rep = V.verify(run, reference_dir=_reports(tmp_path / "ref"))
    assert rep.ok, rep.summary()
    assert len(rep.within) == 3
    assert rep.notes == ["table1.md: differs (rendered from the compared data; not compared itself)"]


def test_exactly_the_flip_budget_is_within(tmp_path):
    """Two flips of 1/N (N = 20) as decimal text: 0.45 - 0.35 is 0.10000000000000003 in floats."""
    ref = _edited(**{"meta/sample_size": 20, "encoders/minilm-en/bkr_recall": 0.45})
    run = _edited(**{"meta/sample_size": 20, "encoders/minilm-en/bkr_recall": 0.35})
    rep = V.verify(_reports(tmp_path / "run", run), reference_dir=_reports(tmp_path / "ref", ref))
    assert rep.ok, rep.summary()
    assert rep.within and "recall and MRR" in rep.within[0]
    run["encoders"]["minilm-en"]["bkr_recall"] = 0.3  # three flips
    assert not V.verify(_reports(tmp_path / "run3", run), reference_dir=tmp_path / "ref").ok


@pytest.mark.parametrize(
    ("path", "value", "kind"),
    [
        ("encoders/minilm-en/bkr_recall", 0.03568 + 3 / 1000, "recall and MRR"),  # 3 flips > 2/N
        ("encoders/minilm-en/corr", 0.0070, "CORR"),
        ("encoders/minilm-en/bkr_mean_rank", 437.0, "mean rank"),
        ("correlation_with_xlr/bkr_spearman/de-en", 0.91, "correlations across encoders"),
        ("meta/k", 5, "counts and settings"),
    ],
)
def test_a_field_outside_its_tolerance_fails_and_is_named(tmp_path, path, value, kind):
    rep = V.verify(_reports(tmp_path / "run", _edited(**{path: value})), reference_dir=_reports(tmp_path / "ref"))
    assert not rep.ok
    assert len(rep.failures) == 1 and rep.failures[0].startswith(f"metrics.json: {path}: ") and kind in rep.failures[0]


def test_missing_extra_files_rows_and_text_cells_fail(tmp_path):
    ref = _reports(tmp_path / "ref")
    run = _reports(tmp_path / "run", recall=RECALL.replace("minilm-en", "e5-small"))
    (run / "table1.md").unlink()
    (run / "new.csv").write_text("a\n1\n")
    fails = V.verify(run, reference_dir=ref).failures
    assert "table1.md: missing from the run (in the reference)" in fails
    assert "new.csv: not in the reference (new in the run)" in fails
    assert any(f.startswith("recall_ci.csv: direction=de-en encoder=e5-small") for f in fails)
    assert any(f.startswith("recall_ci.csv: direction=de-en encoder=minilm-en") for f in fails)


def test_cli_exit_codes_and_the_git_reference(tmp_path, capsys):
    repo = tmp_path / "repo"
    _reports(repo / "reports")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "reports"], cwd=repo, check=True)
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        assert main(["verify"]) == 0
        (repo / "reports" / "metrics.json").write_text(json.dumps(_edited(**{"encoders/minilm-en/corr": 0.5})))
        assert main(["verify"]) == 1
        out = capsys.readouterr().out
        assert "FAIL  metrics.json: encoders/minilm-en/corr: 0.5 vs reference 0.006902859362" in out
        assert "verify: FAIL" in out
        assert main(["verify", "reports", "--reference", str(tmp_path / "nowhere")]) == 2
    finally:
        os.chdir(cwd)


def test_every_tolerance_states_its_reason():
    table = V.tolerance_table()
    assert all(t.why and t.name in table for t in V.TOLERANCES)


# ---------------------------------------------------------------------------------- slow


@pytest.mark.slow
def test_tiny_run_matches_the_committed_reference_reports_and_a_real_change_fails(tiny_reference, tmp_path):
    """Regenerate the reference after an intended change: snakemake --configfile tests/data/tiny.yaml,
    then copy reports/tiny/ to tests/data/tiny_reports/. The run is the session's shared one
    (``tiny_reference``); the changed run works in a copy of it."""
    rep = V.verify(tiny_reference / "reports" / "tiny", reference_dir=REFERENCE)
    assert rep.ok, rep.summary()

    # a real change: recall@5 -> recall@4 (the same run otherwise)
    wd = tmp_path / "wd"
    shutil.copytree(tiny_reference, wd, symlinks=True)
    cfg = yaml.safe_load((ROOT / "tests/data/tiny.yaml").read_text())
    cfg["recall_k"] = 4
    (tmp_path / "changed.yaml").write_text(yaml.safe_dump(cfg))
    run_snakemake(wd, "--config", "sandbox=False", cores=2, configfile=tmp_path / "changed.yaml")
    rep = V.verify(wd / "reports" / "tiny", reference_dir=REFERENCE)
    assert not rep.ok
    assert "metrics.json: meta/k: 4 vs reference 5 (|diff| 1 > 0, counts and settings)" in rep.failures
    assert any("recall_ci.csv:" in f and "xlr_recall" in f for f in rep.failures)
