"""End-to-end: the real `snakemake` entry point on a reduced config (small N, 2 seeds).

Runs the whole DAG (generate synthetic data → embed → sample → metrics → report, case study)
in a temporary working directory, every job in its minimal shadow directory (only declared
inputs present: an undeclared read fails the run), then checks the outputs, their
determinism, and that the numbers make sense (a real multilingual encoder beats the random
baseline on XLR). DVC: tests/test_dvc.py.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from snake import ROOT, run_snakemake

pytestmark = pytest.mark.slow


def _snakemake(workdir: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_snakemake(workdir, *extra, cores=1, configfile=ROOT / "tests/data/e2e.yaml")


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("e2e")
    _snakemake(wd)
    return wd


def test_outputs_exist_and_are_sane(run_dir):
    rep = run_dir / "reports/e2e"
    for name in (
        "table1.md",
        "metrics.json",
        "significance.csv",
        "figures/fig2_scatter.png",
        "figures/fig2_scatter.svg",
        "figures/fig2_scatter.pdf",
        "plots/fig2_xlr_vs_bkr.csv",
    ):
        assert (rep / name).stat().st_size > 0, name
    table = (rep / "table1.md").read_text()
    assert "SYNTHETIC" in table and "en→de" in table and "BkR Pearson" in table
    mj = json.loads((rep / "metrics.json").read_text())
    assert mj["meta"]["synthetic"] is True
    enc = mj["encoders"]
    assert enc["e5-small"]["xlr_recall"] > enc["random"]["xlr_recall"] + 0.2
    # every log file exists (every rule logs)
    logs = list((run_dir / "logs" / "e2e").rglob("*.log"))
    assert len(logs) >= 1 + 4 + 1 + 3 + 3 + 1


def test_tidy_metrics_have_all_cells(run_dir):
    df = pd.concat(pd.read_csv(p) for p in (run_dir / "artifacts/e2e/metrics").glob("*.csv"))
    assert set(df.direction) == {"en-de", "de-en", "en-ru"}
    assert set(df.seed) == {0, 1}
    assert set(df.encoder) == {"e5-small", "char-ngram", "char-ngram-small", "random"}
    assert {"xlr_recall", "bkr_recall", "corr", "xlr_mrr", "bkr_mrr"} <= set(df.metric)
    assert df.value.between(-1, 1e9).all()
    assert (df[df.metric.str.endswith("recall")].value.between(0, 1)).all()


def test_rerun_is_bit_identical(run_dir, tmp_path):
    metrics_dir = run_dir / "artifacts/e2e/metrics"
    before = {p.name: _sha(p) for p in metrics_dir.glob("*.csv")}
    before_json = _sha(run_dir / "reports/e2e/metrics.json")
    _snakemake(run_dir, "--forcerun", "metrics", "report")
    after = {p.name: _sha(p) for p in metrics_dir.glob("*.csv")}
    assert before == after
    assert before_json == _sha(run_dir / "reports/e2e/metrics.json")


def test_nothing_to_do_on_second_run(run_dir):
    res = _snakemake(run_dir, "--dry-run")
    assert "Nothing to be done" in (res.stdout + res.stderr)


def test_lint_is_clean():
    res = run_snakemake(None, "--lint", cwd=ROOT, timeout=300)
    out = res.stdout + res.stderr
    assert "Lints for" not in out, out[-3000:]


def test_bad_config_fails_before_any_work(tmp_path):
    bad = tmp_path / "bad.yaml"
    txt = (ROOT / "tests/data/e2e.yaml").read_text().replace("sample_size: 40", "sample_size: -3")
    bad.write_text(txt)
    res = run_snakemake(tmp_path / "wd", cores=1, configfile=bad, timeout=300, check=False)
    assert res.returncode != 0
    assert "sample_size" in res.stdout + res.stderr
    assert not (tmp_path / "wd" / "data").exists()


def test_html_report_contains_tables_and_figures(run_dir):
    """`snakemake --report` (the report() directive) bundles tables, figures and the config."""
    out = run_dir / "report.html"
    _snakemake(run_dir, "--report", str(out))
    html = out.read_text(encoding="utf-8", errors="replace")
    for needle in ("table1.md", "fig2_scatter.png", "table2.md", "fig3_boxplot.png", "human_study.md"):
        assert needle in html, needle
