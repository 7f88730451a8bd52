"""Every kind of findings analysis is one module and nothing else: example analyses written
here into a folder added to the findings package's path (no file of the project changes) —
one with a summary across configurations (``tally``) and one with its own dataset and
embeddings, intermediate artifacts the workflow makes first (``scaled``) — appear in the
registry, the cross-configuration step, docs/FINDINGS.md's questions and the workflow's plan:
their rules, inputs and commands (``snakemake -n findings`` on tests/data/tiny.yaml). The plain
kind (a module that reads the run's artifacts): tests/test_findings_steps.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from snake import ROOT, command, env

TINY = ROOT / "tests" / "data" / "tiny.yaml"

TALLY = '''"""An analysis with a summary: each run's encoders counted, and summed across configurations."""

from backretrieval.findings.analysis import Analysis, Question
from backretrieval.findings.result import Result


class Tally(Analysis):
    """tally.json, tally_counts.csv; its summary: tally_total.{json,md}."""

    name = "tally"
    question = Question(9, "A tally", "How many encoders does a run have?")
    summaries = (Question(9, "Tallies across configurations", "How many in all?", analysis="tally_total"),)
    summary_reads = ("tally_counts.csv",)
    files = ("tally_counts.csv",)

    def run(self, art, settings):
        info = art.info()
        n = len(info.encoders)
        return Result(run=info, settings={}, numbers={"n": n}, answer=f"{n} encoders.",
                      files={"tally_counts.csv": f"n\\n{n}\\n"})

    @classmethod
    def summarize(cls, records, summary_dir):
        from backretrieval._util import io
        from backretrieval.findings.record import FindingsRecord

        counts = [int((p.parent / "tally_counts.csv").read_text().split()[1]) for p, r in records
                  if r.analysis == "tally"]
        io.write_text(summary_dir / "tally_total.md", f"{sum(counts)}\\n")
        return [FindingsRecord(analysis="tally_total", run=None, settings={}, numbers={"total": sum(counts)},
                               answer=f"{sum(counts)} encoders in all.", verdict="", outputs=("tally_total.md",))]
'''

SCALED = '''"""An analysis with intermediate artifacts: a larger SYNTHETIC set, prepared and embedded for it."""

from backretrieval.findings.analysis import Analysis, OwnData, Question, Setting


class Scaled(Analysis):
    """scaled.md: the run's measures on a SYNTHETIC set of ``n_items`` items."""

    name = "scaled"
    question = Question(10, "Scaled up", "Does BkR order the encoders alike on a larger set?")
    inputs = ("image", "text")
    settings = (Setting("n_items", 300, "items of the larger set", type=int),)
    files = ("scaled.md",)

    @classmethod
    def own_data(cls, cfg, settings):
        spec = {"name": f"synthetic-scaled-{settings['n_items']}", "source": "synthetic", "options": {},
                "synthetic": {"n_items": settings["n_items"], "seed": 1, "image_size": 64}}
        encoders = {"random": cfg["encoders"]["random"], "tiny-ngram": {"type": "char_ngram", "dim": 16, "n": [2]}}
        return OwnData(encoders, ("de", "en"), spec, ("en", "de"))

    def run(self, art, settings):
        raise NotImplementedError  # planned here, not run
'''

#: a module the interpreter imports at startup (found on PYTHONPATH): the folder of example
#: analyses joins the findings package's path, as a module dropped into it would
SITECUSTOMIZE = """import backretrieval.findings as _package

_package.__path__.append({folder!r})
"""


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """The example analyses in ``tmp_path/plugins``, on the findings package's path (here and,
    through ``tmp_path/site``'s sitecustomize, in a Snakemake process); gone after the test."""
    import backretrieval.findings as package
    from backretrieval.findings import analysis

    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "tally.py").write_text(TALLY, encoding="utf-8")
    (folder / "scaled.py").write_text(SCALED, encoding="utf-8")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(folder=str(folder)), encoding="utf-8")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    monkeypatch.setattr(analysis, "_CLASSES", dict(analysis._CLASSES))
    for mod in ("tally", "scaled"):  # the registry imports them; they leave sys.modules with the test
        monkeypatch.setitem(sys.modules, f"backretrieval.findings.{mod}", None)
        del sys.modules[f"backretrieval.findings.{mod}"]
    return folder, site


def _plan():
    from backretrieval.config import load_config
    from backretrieval.steps.findings_plan import FindingsPlan
    from backretrieval.steps.plan import Plan

    return FindingsPlan(Plan(load_config(TINY), ROOT))


def test_a_summary_is_declared_by_its_analysis(plugins, tmp_path):
    """`tally`'s summary: its question among docs/FINDINGS.md's, its record made by the
    cross-configuration step from every configuration's records and the files beside them
    (`summary_reads`: inputs of the workflow's findings_document, this config's and the other
    configurations'), and its record left out of the per-run records the document reads."""
    from backretrieval.evaluation.run_artifacts import RunInfo
    from backretrieval.findings.analysis import questions, registry, summary_names
    from backretrieval.findings.record import read_record
    from backretrieval.findings.result import Result
    from backretrieval.findings.writer import write_result
    from backretrieval.steps.findings import document_step, summary_records

    assert "tally" in registry() and "tally_total" in summary_names()
    assert [q.analysis for q in questions() if q.section == 9] == ["tally", "tally_total"]

    records = []
    for run, n in (("a", 3), ("b", 4)):
        info = RunInfo(run, run, True, f"reports/{run}", 30, (0,), ("en-de",), tuple("xyz"[:n] + "w" * (n - 3)), "i", 5)
        files = {"tally_counts.csv": f"n\n{n}\n"}
        write_result(tmp_path / run / "findings", "tally", Result(info, {}, {"n": n}, "", files=files))
        records.append(tmp_path / run / "findings" / "tally.json")
    summary = tmp_path / "summary"
    made = {r.analysis: r for r in summary_records(records, summary)}
    assert made["tally_total"].numbers == {"total": 7} and (summary / "tally_total.md").read_text() == "7\n"
    assert read_record(summary / "tally_total.json") == made["tally_total"]
    doc = tmp_path / "FINDINGS.md"
    document_step([*records, summary / "tally_total.json"], doc=doc, summary_dir=summary)  # its own record: left out
    assert "Tallies across configurations" in doc.read_text() and "7 encoders in all." in doc.read_text()

    fp = _plan()
    inputs = fp.document_inputs()
    assert fp.file("tally_counts.csv") in inputs["summary_reads"]
    assert [Path(p).name for p in inputs["summary_reads"]] == sorted(Path(p).name for p in inputs["summary_reads"])


def test_intermediate_artifacts_are_declared_by_their_analysis(plugins):
    """`scaled`'s own data: the plan names its dataset, text and image features (under
    artifacts/<run>.findings/scaled/), and its step reads them, the run's dataset beside."""
    fp = _plan()
    assert fp.intermediates("scaled") == ("dataset", "embed_text", "embed_images")
    assert fp.own_dataset("scaled") == "data/prepared/synthetic-scaled-300"
    assert fp.own_texts("scaled") == [
        "artifacts/tiny.findings/scaled/text/{encoder}/de.title.npz",
        "artifacts/tiny.findings/scaled/text/{encoder}/en.title.npz",
    ]
    files, flags = fp.run("scaled")
    assert files["dataset"] == "data/prepared/synthetic-scaled-300" and files["run_dataset"] == fp.plan.dataset
    assert files["image"] == "artifacts/tiny.findings/scaled/image/effnet-lite0.npz"
    assert "artifacts/tiny.findings/scaled/text/tiny-ngram/en.title.npz" in files["text"]
    assert flags[flags.index("--run-dataset") + 1] == fp.plan.dataset
    assert fp.intermediates("tally") == () and fp.intermediates("inference") == ()


def test_the_workflow_plans_the_example_analyses(plugins, tmp_path):
    """`snakemake -n findings` with the example analyses on the findings package's path: the
    rules findings_tally and findings_scaled, scaled's intermediate rules (its dataset, the
    text of each of its encoders, the image features) with their commands, and tally's
    summary file among the document's inputs."""
    folder, site = plugins
    cmd = command(tmp_path / "wd", "-n", "-p", "findings", configfile=TINY)
    # the snakemake program itself (a new interpreter runs sitecustomize; the tests' fork server does not)
    res = subprocess.run(cmd, env=env(PYTHONPATH=f"{site}{os.pathsep}{ROOT / 'src'}"), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = re.findall(r"^\s*(?:local)?rule (\w+):", res.stdout, re.M)
    for rule in ("findings_tally", "findings_scaled", "findings_scaled_dataset", "findings_scaled_embed_images"):
        assert rule in jobs, (rule, sorted(set(jobs)))
    assert jobs.count("findings_scaled_embed_text") == 2  # one job per encoder
    out = res.stdout
    assert 'backretrieval step prepare --spec \'{"name": "synthetic-scaled-300"' in out
    assert "--languages en de --out-dir data/prepared/synthetic-scaled-300" in out
    assert re.search(
        r"backretrieval step embed-text --dataset data/prepared/synthetic-scaled-300 --encoder tiny-ngram .*--languages de en"
        r" --out artifacts/tiny.findings/scaled/text/tiny-ngram/de.title.npz artifacts/tiny.findings/scaled/text/"
        r"tiny-ngram/en.title.npz",
        out,
    )
    assert "--out artifacts/tiny.findings/scaled/image/effnet-lite0.npz" in out
    assert re.search(
        r"backretrieval step findings --analysis scaled --dataset data/prepared/synthetic-scaled-300 .*"
        r"--run-dataset data/prepared/synthetic-tiny --image-emb artifacts/tiny.findings/scaled/image/effnet-lite0.npz",
        out,
    )
    (document,) = re.findall(r"rule findings_document:\n\s+input: ([^\n]+)", out)
    assert "reports/tiny/findings/tally_counts.csv" in document.split(", ")
