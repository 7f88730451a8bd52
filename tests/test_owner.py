"""A reports folder belongs to the run (run_name) that made it: another run naming it is
refused before any work, with the way out; a rerun of the same run (another config, a copy of
the checkout, a DVC stage) is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from backretrieval.cli import main
from backretrieval.errors import ConfigError
from backretrieval.steps.owner import check_reports_owner, claim_reports
from snake import ROOT, run_snakemake

TINY = ROOT / "tests/data/tiny.yaml"


def _tiny(**changes) -> dict:
    cfg = yaml.safe_load(TINY.read_text())
    cfg.update(changes)
    return cfg


def _finished_reports(root: Path, folder: str, run: str) -> None:
    (root / folder).mkdir(parents=True)
    (root / folder / "metrics.json").write_text(json.dumps({"meta": {"run_name": run}}))
    (root / folder / "table1.md").write_text(f"Table 1 of {run}\n")


def test_another_runs_reports_folder_is_refused(tmp_path, monkeypatch, capsys):
    _finished_reports(tmp_path, "reports/base", "base")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        ConfigError,
        match=r"c\.yaml: field 'reports_dir': 'reports/base' holds the reports of run 'base' \(recorded in "
        r"reports/base/metrics\.json\), not of this run 'tiny': set another reports_dir .* rm -rf reports/base "
        r"artifacts/\.owners/base\.json",
    ):
        check_reports_owner(_tiny(reports_dir="reports/base"), "c.yaml")
    with pytest.raises(ConfigError, match="holds the reports of run 'base'"):  # a folder inside it too
        check_reports_owner(_tiny(reports_dir="reports/base/sub"), "c.yaml")
    check_reports_owner(_tiny(reports_dir="reports/base", run_name="base", recall_k=4), "c.yaml")  # the same run
    check_reports_owner(_tiny(reports_dir="reports/tiny"), "c.yaml")
    # a run that has not finished yet owns its folder through artifacts/.owners/<run_name>.json
    claim_reports(_tiny(run_name="early", reports_dir="./reports/early/"))
    assert json.loads((tmp_path / "artifacts/.owners/early.json").read_text()) == {
        "run_name": "early",
        "reports_dir": "reports/early",
    }
    with pytest.raises(
        ConfigError,
        match=r"run 'early' \(recorded in artifacts/\.owners/early\.json\).*rm artifacts/\.owners/early\.json",
    ):
        check_reports_owner(_tiny(reports_dir="reports/early"), "c.yaml")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(_tiny(reports_dir="reports/base")))
    assert main(["validate-config", "--config", str(cfg)]) == 2
    assert "field 'reports_dir': 'reports/base' holds the reports of run 'base'" in capsys.readouterr().err


def test_snakemake_refuses_another_run_and_claims_its_own_folder(tmp_path):
    """The workflow refuses before any job (also a dry run); a run claims its folder before its
    first job, so a second run_name naming it is refused while a rerun of the same run is not."""
    _finished_reports(tmp_path, "reports/base", "base")
    r = run_snakemake(tmp_path, "-n", "--config", "reports_dir=reports/base", configfile=TINY, check=False, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "holds the reports of run 'base'" in out, out[-3000:]
    assert (tmp_path / "reports/base/table1.md").read_text() == "Table 1 of base\n"
    run_snakemake(tmp_path, "prepare_dataset", "--configfile", str(TINY), cores=1, timeout=300)
    assert json.loads((tmp_path / "artifacts/.owners/tiny.json").read_text())["reports_dir"] == "reports/tiny"
    r = run_snakemake(tmp_path, "-n", "--config", "run_name=other", configfile=TINY, check=False, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "recorded in artifacts/.owners/tiny.json" in out, out[-3000:]
    run_snakemake(tmp_path, "-n", "--config", "recall_k=4", configfile=TINY, timeout=300)  # the same run


# -- a rerun under another config removes the reports it no longer makes -----------------------

PARALLEL_ONLY = (
    "table1.md",
    "table1.tex",
    "correlations_ci.csv",
    "recall_ci.csv",
    "significance.csv",
    "figures/fig2_scatter.png",
    "figures/fig2_scatter.svg",
    "figures/fig2_scatter.pdf",
    "plots/fig2_xlr_vs_bkr.csv",
)
KEPT = ("metrics.json", "plots/encoder_means.csv", "notes.txt", "findings/inference.md")


def _plant(rep: Path, names) -> None:
    for name in names:
        (rep / name).parent.mkdir(parents=True, exist_ok=True)
        (rep / name).write_text(f"old {name}\n")


def test_rerun_on_nonparallel_data_removes_the_parallel_reports(tmp_path, synthetic_dataset):
    """Run 'tiny' made Table 1, Figure 2, the correlations and a case study (planted here as
    they were left); the same run_name on a dataset without parallel texts removes them before
    its first job, with a line naming them, and leaves every other file in the folder."""
    from test_nonparallel import LANGS, _cfg, make_nonparallel

    data = make_nonparallel(synthetic_dataset(60, list(LANGS), seed=0, image_size=64), tmp_path / "np")
    wd = tmp_path / "wd"
    rep = wd / "reports/tiny"
    _plant(rep, PARALLEL_ONLY + KEPT + ("case_study/table2.md", "case_study/figures/loss_triplet_seed0.png"))
    cfg = _cfg(data)
    cfg.update(run_name="tiny", reports_dir="reports/tiny")
    (wd / "np.yaml").write_text(yaml.safe_dump(cfg))
    r = run_snakemake(wd, "prepare_dataset", "--configfile", str(wd / "np.yaml"), cores=1, timeout=300)
    out = r.stdout + r.stderr
    assert "removed 11 report file(s) of an earlier config of run 'tiny'" in out, out[-3000:]
    assert "reports/tiny/table1.md" in out and "reports/tiny/case_study/table2.md" in out
    for name in PARALLEL_ONLY + ("case_study/table2.md", "case_study/figures/loss_triplet_seed0.png"):
        assert not (rep / name).exists(), name
    for name in KEPT:
        assert (rep / name).read_text() == f"old {name}\n", name


def test_parallel_rerun_removes_the_bkr_report_only_when_the_data_is_known(tmp_path, monkeypatch):
    from backretrieval.steps.cleanup import remove_stale_reports

    monkeypatch.chdir(tmp_path)
    rep = tmp_path / "reports/tiny"
    _plant(rep, ("bkr_report.md", "ranking.csv", "figures/bkr_per_encoder.png", *KEPT, "case_study/table2.md"))
    # a bring-your-own folder that is not there yet: parallel or not is unknown, nothing goes
    assert (
        remove_stale_reports(_tiny(dataset={"name": "x", "source": "prepared", "options": {"path": "nowhere"}})) == []
    )
    removed = remove_stale_reports(_tiny())  # SYNTHETIC: parallel, with a case study
    assert sorted(p.relative_to("reports/tiny").as_posix() for p in removed) == [
        "bkr_report.md",
        "figures/bkr_per_encoder.png",
        "ranking.csv",
    ]
    assert (rep / "case_study/table2.md").exists() and all((rep / n).exists() for n in KEPT)
