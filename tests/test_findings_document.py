"""The findings record (the contract between the analyses), docs/FINDINGS.md and the README's
verdict block: schema checks, deterministic generation, and that the committed files equal a
fresh generation from the committed records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backretrieval.errors import InputError
from backretrieval.evaluation import run_artifacts
from backretrieval.findings import document as doc
from backretrieval.findings import markdown, record
from backretrieval.findings.analysis import summary_names

ROOT = Path(__file__).resolve().parents[1]


def _run(name="default", synthetic=True, reports_dir="reports"):
    return run_artifacts.RunInfo(
        run_name=name,
        dataset=f"ds-{name}",
        synthetic=synthetic,
        reports_dir=reports_dir,
        sample_size=100,
        seeds=(0, 1),
        directions=("en-de", "de-en"),
        encoders=("a", "b", "c"),
        image_backbone="bb",
        k=10,
    )


def _rec(analysis="inference", run=None, **kw):
    base = dict(
        analysis=analysis,
        run=run if run is not None or analysis in summary_names() else _run(),
        settings={"B": 10},
        numbers={"x": 0.5, "nan": float("nan")},
        answer=f"answer of {analysis}",
        verdict=f"verdict of {analysis}",
        outputs=(f"{analysis}.md", f"figures/{analysis}.png"),
    )
    base.update(kw)
    return record.FindingsRecord(**base)


def test_record_round_trip_and_nan_is_null(tmp_path):
    r = _rec()
    record.write_record(tmp_path / "inference.json", r)
    raw = json.loads((tmp_path / "inference.json").read_text())
    assert raw["numbers"]["nan"] is None and raw["schema"] == record.SCHEMA_VERSION
    back = record.read_record(tmp_path / "inference.json")
    assert back.to_dict() == r.to_dict()
    assert back.run == r.run


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda d: d.pop("answer"), "missing field"),
        (lambda d: d.update(schema="other/9"), "field 'schema'"),
        (lambda d: d.update(analysis="nope"), "unknown analysis"),
        (lambda d: d.update(status="maybe"), "status"),
        (lambda d: d.update(outputs=["../escape.md"]), "relative"),
        (lambda d: d.update(run=None), "'run' must be null exactly"),
        (lambda d: d["run"].pop("k"), "field 'run'"),
        (lambda d: d.update(numbers=[1]), "field 'numbers'"),
    ],
)
def test_bad_records_are_named(tmp_path, mutate, match):
    d = _rec().to_dict()
    mutate(d)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(InputError, match=match) as exc:
        record.read_record(p)
    assert str(p) in str(exc.value)


def test_unreadable_record(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(InputError, match="not a valid JSON"):
        record.read_record(p)


def test_render_is_deterministic_and_complete():
    recs = [
        _rec("inference", run=_run()),
        _rec("calibration", run=_run()),
        _rec("inference", run=_run("multi30k", False, "reports/multi30k")),
        _rec("overall", run=None, outputs=("overall.md",)),
    ]
    a = doc.render_findings(recs)
    b = doc.render_findings(list(reversed(recs)))
    assert a == b
    assert a.index("**default (ds-default, SYNTHETIC)**") < a.index("**multi30k (ds-multi30k)**")  # default first
    assert "[inference.md](../reports/multi30k/findings/inference.md)" in a
    assert "[overall.md](../reports/findings_summary/overall.md)" in a
    assert "verdict of overall" in a.split("\n## 1.")[0]  # the overall verdict on top
    assert "_No results yet for: multi30k._" in a  # calibration only on default
    assert "### Hubness" in a and "_Not computed yet._" in a  # cross-config calibration missing
    with pytest.raises(InputError, match="two records"):
        doc.render_findings(recs + [_rec("inference", run=_run())])


def test_readme_block():
    recs = [_rec("overall", run=None)]
    text = f"intro\n{doc.README_START}\nold\n{doc.README_END}\nrest\n"
    new = doc.update_readme_block(text, recs)
    assert new.startswith("intro\n") and new.endswith("\nrest\n") and "verdict of overall" in new and "old" not in new
    assert doc.update_readme_block(new, recs) == new
    with pytest.raises(InputError, match="exactly once"):
        doc.update_readme_block("no markers", recs)
    with pytest.raises(InputError, match="before the start"):
        doc.update_readme_block(f"{doc.README_END}\n{doc.README_START}", recs)
    assert "No overall verdict yet" in doc.readme_block([])


def test_markdown_table():
    import pandas as pd

    t = markdown.markdown_table(pd.DataFrame({"a": [1.23456, float("nan")], "b": ["x|y", "z"]}), digits=2)
    assert t.splitlines() == ["| a | b |", "|---|---|", "| 1.23 | x\\|y |", "| n/a | z |"]


# ---------------------------------------------------------------------------- committed files


def _committed_records():
    return sorted(p for p in ROOT.glob("reports/**/findings/*.json"))


#: the relative difference two CPUs may leave in a regenerated summary's floats: measured 1e-15
#: (a BCa acceleration on an AVX2 Zen 3 against the AVX-512 machine that wrote the file: its
#: 18th digit); any change in the records moves them by far more (they carry 6 digits)
SUMMARY_REL_TOL = 1e-9


def _same_numbers(a, b) -> bool:
    """``a == b`` for two parsed JSON documents, floats within SUMMARY_REL_TOL of each other."""
    import math

    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_numbers(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_numbers(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, (int, float))
            and isinstance(b, (int, float))
            and math.isclose(a, b, rel_tol=SUMMARY_REL_TOL, abs_tol=1e-15)
        )
    return a == b


def test_a_summary_differing_in_its_last_digits_is_up_to_date_and_a_real_change_is_not():
    base = {"a": [1.0, -0.000942226345591649], "n": 3, "s": "x"}
    assert _same_numbers(base, {"a": [1.0, -0.000942226345591648], "n": 3, "s": "x"})
    assert not _same_numbers(base, {"a": [1.0, -0.000942], "n": 3, "s": "x"})
    assert not _same_numbers(base, {"a": [1.0, -0.000942226345591649], "n": 4, "s": "x"})


def test_committed_findings_document_is_up_to_date(tmp_path, monkeypatch):
    """docs/FINDINGS.md, reports/findings_summary/*.json and the README's verdict block equal a
    fresh generation from the committed per-configuration records."""
    from backretrieval.steps.findings import document_step

    monkeypatch.chdir(ROOT)
    files = [p.relative_to(ROOT) for p in _committed_records()]
    out_doc = tmp_path / "FINDINGS.md"
    summary = tmp_path / "summary"
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
    document_step(files, doc=out_doc, summary_dir=summary, readme=readme)
    for name in ("overall.json", "calibration_lodo.json"):
        committed = ROOT / "reports" / "findings_summary" / name
        assert committed.is_file(), f"{committed} is not committed; run `snakemake findings`"
        assert _same_numbers(json.loads(committed.read_text()), json.loads((summary / name).read_text())), (
            f"{name} is stale"
        )
    # links: the fresh document points into tmp_path; render the committed one's way
    recs = record.read_records(files) + record.read_records(
        [ROOT / "reports" / "findings_summary" / n for n in ("overall.json", "calibration_lodo.json")]
    )
    fresh = doc.render_findings(recs, doc_dir="docs", summary_dir="reports/findings_summary")
    assert (ROOT / "docs" / "FINDINGS.md").read_text(encoding="utf-8") == fresh, (
        "docs/FINDINGS.md is stale: run `backretrieval step findings-document` (rule findings_document)"
    )
    assert (ROOT / "README.md").read_text(encoding="utf-8") == readme.read_text(encoding="utf-8"), (
        "README.md's findings-verdict block is stale"
    )


# ---------------------------------------------------------------------------- the verdict's length


def _sentences(prose: str) -> list[str]:
    import re

    return [s for s in re.split(r"(?<=[.!?])\s+", prose.strip()) if s]


def _committed_readme_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text[text.index(doc.README_START) : text.index(doc.README_END) + len(doc.README_END)]


def test_readme_verdict_is_three_sentences_and_a_table():
    """The README's verdict: at most 600 characters of prose in at most three sentences (the
    conclusion and its scope first), then one table; the details live in docs/FINDINGS.md."""
    from backretrieval.findings.inference.verdict_text import VERDICT_MAX_CHARS

    block = _committed_readme_block()
    prose = doc.readme_prose(block)
    assert len(prose) <= VERDICT_MAX_CHARS == 600, (len(prose), prose)
    # "Overall verdict (details ...): " opens the first sentence
    assert len(_sentences(prose)) <= 3, _sentences(prose)
    table = [ln for ln in block.splitlines() if ln.startswith("|")]
    assert table[0].startswith("| configuration | encoders | BkR − CORR |") and len(table) >= 3
    assert f"docs/FINDINGS.md#{doc.VERDICT_ANCHOR}" in block
    # the rest is in the document: coverage per layout, z0, the method
    findings = (ROOT / "docs" / "FINDINGS.md").read_text(encoding="utf-8")
    section = findings[findings.index("### One verdict across datasets × directions") :]
    assert "| coverage | z0 |" in section and "Method:" in section


def _numbers_variant(kind: str) -> dict:
    """The committed overall numbers, changed into the layouts whose verdict is longest: every
    configuration SYNTHETIC; many configurations with long names, some descriptive; CORR ahead."""
    import copy

    base = json.loads((ROOT / "reports" / "findings_summary" / "overall.json").read_text())["numbers"]
    n = copy.deepcopy(base)
    if kind == "synthetic":
        for c in n["configurations"]:
            c["synthetic"] = True
    elif kind == "many":
        extra = []
        for i in range(12):
            c = copy.deepcopy(n["configurations"][i % len(n["configurations"])])
            c["run_name"] = f"a-rather-long-configuration-name-{i:02d}"
            c["dataset"] = f"own-dataset-{i}"
            extra.append(c)
        n["configurations"] += extra
    elif kind == "corr-ahead":
        for c in n["configurations"]:
            for set_name in ("all", "core"):
                for q in (c.get(set_name) or {}).get("pearson", {}).values():
                    if isinstance(q, dict) and "low" in q:
                        q["low"], q["high"] = -0.5, -0.1
    return n


@pytest.mark.parametrize("kind", ["committed", "synthetic", "many", "corr-ahead"])
def test_verdict_stays_within_600_characters(kind):
    from backretrieval.findings.inference.verdict_text import VERDICT_MAX_CHARS, overall_brief, verdict_rows

    numbers = _numbers_variant(kind) if kind != "committed" else _numbers_variant("none")
    rec = _rec("overall", run=None, verdict=overall_brief(numbers), numbers=numbers, outputs=())
    prose = doc.readme_prose(doc.readme_block([rec]))
    assert len(prose) <= VERDICT_MAX_CHARS, (len(prose), prose)
    assert len(_sentences(prose)) <= 3, _sentences(prose)
    # its table has one row per tested configuration × encoder set and pooled group
    rows = [ln for ln in doc.readme_block([rec]).splitlines() if ln.startswith("| ")][1:]
    assert len(rows) == sum(r.inferential for r in verdict_rows(numbers))
    if kind == "synthetic":
        assert prose.startswith("Overall verdict (details, coverage and method): On SYNTHETIC data only")
    if kind == "corr-ahead":
        assert "CORR is ahead in" in prose and "CORR is ahead in none" not in prose
