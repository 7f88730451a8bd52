"""The Snakemake DAG declares every file: every rule runs in a minimal shadow
directory (an undeclared read fails), a bring-your-own dataset is copied and content-tracked
(an edit in place reruns what depends on it), the human tally reads the configured ratings,
and `recall_k` can be set from the command line."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from snake import ROOT, SNAKEFILE, run_snakemake
from worlds import make_prepared

TINY = ROOT / "tests" / "data" / "tiny.yaml"


def _smk(wd: Path, *args: str, snakefile: Path = SNAKEFILE, cores: int | None = None) -> subprocess.CompletedProcess:
    """Snakemake in ``wd``; the test checks the exit code itself."""
    return run_snakemake(wd, *args, snakefile=snakefile, cores=cores, check=False)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


# ------------------------------------------------------------------------- the sandbox


def _rule_blocks(text: str) -> dict[str, str]:
    """name -> text of every rule of a Snakefile; a rule made in a loop (``rule:`` with ``name:``)
    under its name's template, e.g. ``findings_{_name}``."""
    pattern = r'^\s*rule (\w+):|^\s*rule:\n\s*name:\n\s*f?"([\w{}]+)"'
    starts = [(m.start(), m.group(1) or m.group(2)) for m in re.finditer(pattern, text, re.M)]
    return {name: text[a:b] for (a, name), (b, _) in zip(starts, starts[1:] + [(len(text), "")])}


def test_every_rule_runs_in_a_minimal_shadow_directory():
    common = (ROOT / "workflow/rules/common.smk").read_text()
    assert re.search(r"^SHADOW = \"minimal\" if config.get\(\"sandbox\", True\) else None$", common, re.M)
    blocks = {}
    for smk in sorted((ROOT / "workflow/rules").glob("*.smk")):
        blocks.update(_rule_blocks(smk.read_text()))
    assert {
        "prepare_dataset",
        "check_dataset",
        "embed_text",
        "report",
        "case_train",
        "human_tally",
        "findings_{_name}",  # one rule per findings analysis, made in a loop
        "findings_document",
    } <= set(blocks)
    # target rules (inputs only: no output, no command) run nothing, so they need no shadow
    targets = {name for name, block in blocks.items() if not re.search(r"^\s+(output|shell):", block, re.M)}
    assert targets == {"findings"}, targets
    for name, block in blocks.items():
        if name not in targets:
            assert re.search(r"shadow:\s+SHADOW\b", block), f"rule {name} has no `shadow: SHADOW`"
        assert "--config" not in block, f"rule {name} hands a config file to its step"
    assert set(_rule_blocks((ROOT / "Snakefile").read_text())) == {"all"}  # no job, only the default target


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["processes", "threads"])
def test_an_undeclared_read_fails_in_the_sandbox(tmp_path, executor):
    """A copy of the workflow whose `sample` rule hands its step the dataset path as a param
    instead of a declared input: inside the shadow directory the read fails, whether the job
    runs in its own Snakemake process (the local executor's default for a shadow job) or in
    Snakemake's thread pool (``--force-use-threads``, as the tests' one-core runs do: see
    tests/snake.py); with the sandbox off, the same rule 'works' (the unchecked declaration the
    sandbox exists to catch)."""
    wf = tmp_path / "wf"
    wf.mkdir()
    shutil.copy(ROOT / "Snakefile", wf / "Snakefile")
    shutil.copytree(ROOT / "workflow", wf / "workflow")
    rules = wf / "workflow/rules/evaluate.smk"
    text = rules.read_text()
    sample = _rule_blocks(text)["sample"]
    undeclared = (
        sample.replace("        dataset=DATASET,\n", "", 1)
        .replace("    params:\n", "    params:\n        dataset=DATASET,\n", 1)
        .replace("--dataset {input.dataset:q}", "--dataset {params.dataset:q}")
    )
    assert undeclared.count("DATASET") == 1 and "{params.dataset:q}" in undeclared
    rules.write_text(text.replace(sample, undeclared))
    wd = tmp_path / "wd"
    target = "artifacts/tiny/samples/en-de.json"
    mode = ("--force-use-threads",) if executor == "threads" else ()
    # the dataset first (the rule no longer declares it, so nothing else would make it before)
    prepared = _smk(
        wd, "data/prepared/synthetic-tiny", "--cores", "1", "--configfile", str(TINY), snakefile=wf / "Snakefile"
    )
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    res = _smk(wd, target, "--cores", "1", *mode, "--configfile", str(TINY), snakefile=wf / "Snakefile")
    assert res.returncode != 0
    log = (wd / "logs/tiny/sample.log").read_text()
    assert "data/prepared/synthetic-tiny: no items.csv" in log, log[-2000:]
    assert (wd / "data/prepared/synthetic-tiny/dataset.json").is_file()  # it exists, outside the sandbox
    assert not (wd / target).exists()
    if executor == "threads":  # the other case shows the rule runs without the sandbox
        return
    res = _smk(
        wd, target, "--cores", "1", "--configfile", str(TINY), "--config", "sandbox=False", snakefile=wf / "Snakefile"
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert (wd / target).is_file()


# ------------------------------------------------------------------------- bring your own data


def _byo_config(path: Path) -> Path:
    cfg = yaml.safe_load(TINY.read_text())
    for key in ("case_study", "human_study"):
        cfg.pop(key)
    cfg.update(
        run_name="byo",
        sample_size=10,
        recall_k=3,
        reports_dir="reports/byo",
        directions=["en-de"],
        dataset={"name": "hand", "source": "prepared", "options": {"path": "data/raw/hand"}},
        image_backbone="fake",
        backbones={"fake": {"type": "precomputed", "name": "fake"}},
    )
    path.write_text(yaml.safe_dump(cfg))
    return path


def _jobs(dry_run_output: str) -> list[str]:
    return re.findall(r"^(?:local)?rule (\w+):", dry_run_output, re.M)


@pytest.mark.slow
def test_byo_dataset_is_copied_and_an_edit_in_place_reruns_what_depends_on_it(tmp_path):
    wd = tmp_path / "wd"
    make_prepared(wd / "data/raw/hand", splits=("test",))
    cfg = _byo_config(tmp_path / "byo.yaml")
    args = ("artifacts/byo/metrics/en-de.csv", "--configfile", str(cfg))
    res = _smk(wd, *args, cores=1)
    assert res.returncode == 0, res.stderr[-4000:]
    prepared = wd / "data/prepared/hand"
    assert prepared.is_dir() and not prepared.is_symlink()  # a copy, not a link
    text = wd / "artifacts/byo/text/char-ngram"
    before = {p.name: _sha(p) for p in text.iterdir()}
    metrics_before = _sha(wd / "artifacts/byo/metrics/en-de.csv")
    assert "Nothing to be done" in _smk(wd, *args, "-n", cores=1).stdout

    # rewrite one German title in place (same length: the file size does not change)
    items = wd / "data/raw/hand/items.csv"
    old = items.read_text()
    assert "de item 3 ababab" in old
    items.write_text(old.replace("de item 3 ababab", "de item 3 xyzxyz"))
    dry = _smk(wd, *args, "-n", cores=1)
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = _jobs(dry.stdout)
    assert "prepare_dataset" in jobs and jobs.count("embed_text") == 3 and jobs.count("metrics") == 1, jobs
    assert "Params have changed since last execution" in dry.stdout
    res = _smk(wd, *args, cores=1)
    assert res.returncode == 0, res.stderr[-4000:]
    assert "de item 3 xyzxyz" in (prepared / "items.csv").read_text()
    after = {p.name: _sha(p) for p in text.iterdir()}
    assert after["en.title.npz"] == before["en.title.npz"]  # recomputed, unchanged text
    assert after["de.title.npz"] != before["de.title.npz"]
    assert _sha(wd / "artifacts/byo/metrics/en-de.csv") != metrics_before

    # copying an older file back over it (its mtime goes back in time) is an edit too
    fixed = tmp_path / "fixed.csv"
    fixed.write_text(old)
    os.utime(fixed, (1_000_000_000, 1_000_000_000))
    shutil.copy2(fixed, items)
    assert items.stat().st_mtime < (wd / "artifacts/byo/metrics/en-de.csv").stat().st_mtime
    jobs = _jobs(_smk(wd, *args, "-n", cores=1).stdout)
    assert "prepare_dataset" in jobs and jobs.count("embed_text") == 3, jobs
    assert _smk(wd, *args, cores=1).returncode == 0
    assert {p.name: _sha(p) for p in text.iterdir()} == before
    assert _sha(wd / "artifacts/byo/metrics/en-de.csv") == metrics_before


@pytest.mark.slow
def test_a_changed_sample_size_reruns_the_sampling_and_what_follows_in_one_run(tmp_path):
    """sample_size, which the dataset check also reads: one `snakemake` call re-checks, re-draws
    the samples and recomputes the metrics and the report, and embeds nothing. (While the check
    was an ancient() input of the sampling and embedding jobs, Snakemake planned the check alone
    and called the run done: a job reached from a rerun job only through ancient inputs is not
    evaluated at all: https://github.com/snakemake/snakemake/issues/4166.)"""
    wd = tmp_path / "wd"
    make_prepared(wd / "data/raw/hand", splits=("test",))
    cfg = ("--configfile", str(_byo_config(tmp_path / "byo.yaml")))
    res = _smk(wd, *cfg, cores=1)
    assert res.returncode == 0, res.stderr[-4000:]
    samples = wd / "artifacts/byo/samples/en-de.json"
    assert json.loads(samples.read_text())["n"] == 10
    dry = _smk(wd, *cfg, "--config", "sample_size=8", "-n", cores=1)
    jobs = _jobs(dry.stdout)
    assert {"check_dataset", "sample", "metrics", "report"} <= set(jobs), jobs
    assert not {"prepare_dataset", "embed_text", "embed_images"} & set(jobs), jobs
    res = _smk(wd, *cfg, "--config", "sample_size=8", cores=1)
    assert res.returncode == 0, res.stderr[-4000:]
    assert json.loads(samples.read_text())["n"] == 8
    assert json.loads((wd / "artifacts/byo/checks/dataset.json").read_text())["fits"]["sample_size"] == 8
    assert "Nothing to be done" in _smk(wd, *cfg, "--config", "sample_size=8", "-n", cores=1).stdout


def test_an_edit_of_the_local_data_a_dataset_is_made_from_reruns_prepare(tmp_path, monkeypatch):
    """prepare's param `content` covers the local data a dataset's options name (a mirror, a
    features file), the paths DVC's data stage lists as its deps: an edit there that DVC sees
    reruns prepare, and all after it, in Snakemake too. A path not there counts as absent."""
    from backretrieval.config import load_config
    from backretrieval.steps.plan import Plan, source_paths

    cfg = load_config(ROOT / "config/multi30k.yaml")
    paths = source_paths(cfg["dataset"]["options"])
    assert "data/raw/multi30k" in paths and any(p.endswith(".npy") for p in paths), paths
    deps = yaml.safe_load((ROOT / "runs/dvc.yaml").read_text())["stages"]["multi30k-data"]["deps"]
    assert set(paths) <= set(deps)
    monkeypatch.chdir(tmp_path)
    plan = Plan(cfg, tmp_path)
    assert plan.source_content(cfg["dataset"]) == ""
    mirror = tmp_path / "data/raw/multi30k"
    mirror.mkdir(parents=True)
    (mirror / "train.de").write_text("ein Hund\n")
    first = plan.source_content(cfg["dataset"])
    assert first and plan.source_content(cfg["dataset"]) == first
    (mirror / "train.de").write_text("eine Katze\n")
    assert plan.source_content(cfg["dataset"]) not in ("", first)


def test_no_input_is_ancient():
    """ancient() would hide a producer's rerun from the jobs after it (see the test above)."""
    for smk in [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]:
        assert "ancient(" not in smk.read_text(), smk


# ------------------------------------------------------------------------- settings


def test_recall_k_can_be_set_on_the_command_line(tmp_path):
    res = _smk(tmp_path / "wd", "-n", "-p", "--configfile", str(TINY), "--config", "recall_k=3")
    assert res.returncode == 0, res.stderr[-3000:]
    assert re.search(r"backretrieval step metrics .*--recall-k 3 ", res.stdout)
    res = _smk(tmp_path / "wd", "-n", "--configfile", str(TINY), "--config", "k=3")
    assert res.returncode != 0  # Snakemake itself refuses one-letter keys: hence recall_k


def test_human_tally_reads_the_configured_ratings(tmp_path):
    wd = tmp_path / "wd"
    (wd / "data/raw").mkdir(parents=True)
    (wd / "data/raw/ratings.csv").write_text("suggestion_id,rating,key_sha256,rater\n")
    cfg = yaml.safe_load(TINY.read_text())
    cfg["human_study"]["ratings"] = "data/raw/ratings.csv"
    (tmp_path / "rated.yaml").write_text(yaml.safe_dump(cfg))
    res = _smk(wd, "-n", "-p", "--configfile", str(tmp_path / "rated.yaml"))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "backretrieval step human-tally --ratings data/raw/ratings.csv " in res.stdout
    assert "human_simulate" not in _jobs(res.stdout)
    res = _smk(wd, "-n", "-p", "--configfile", str(TINY))  # no ratings: the SIMULATED rater
    assert "backretrieval step human-tally --ratings artifacts/tiny/case/human/ratings.simulated.csv " in res.stdout
    assert "--simulated" in res.stdout and "human_simulate" in _jobs(res.stdout)


def test_layout_heads_are_the_case_study_heads():
    from backretrieval.steps import layout
    from backretrieval.study.case_study import HEADS

    assert layout.HEADS == HEADS


def test_findings_target_plans_every_analysis_of_the_config(tmp_path):
    """`snakemake findings` = every analysis of the current config, each a shadowed rule over
    the main pipeline's declared files, then the document."""
    res = _smk(tmp_path / "wd", "-n", "findings", "--configfile", str(TINY))
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = set(re.findall(r"^\s*(?:local)?rule (\w+):", res.stdout, re.M))
    analyses = {
        f"findings_{a}"
        for a in ("inference", "image_quality", "sample_size", "hubness", "calibration", "bli", "agreement", "document")
    }
    assert analyses <= jobs, sorted(analyses - jobs)
    assert {"metrics", "sample", "embed_text"} <= jobs  # the main pipeline's artifacts come first


def _rule_lengths() -> dict[str, int]:
    """Lines of every rule block of the workflow (`rule x:`, `use rule ... with:`, a loop's
    `rule:`), from its first line to its last, comments included, without what it shows in full
    on purpose: its command (`shell:`) and the config keys it reads (`params:`)."""
    lengths = {}
    for smk in [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]:
        lines = smk.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^(\s*)(?:rule (\w+):|rule:|use rule \w+ as (\w+) with:)\s*$", line)
            if not m:
                continue
            indent, end = len(m.group(1)), i + 1
            while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
                end += 1
            while not lines[end - 1].strip():
                end -= 1
            block, command, shell_indent = lines[i:end], 0, None
            for b in block:
                depth = len(b) - len(b.lstrip())
                if shell_indent is not None and b.strip() and depth <= shell_indent:
                    shell_indent = None
                if shell_indent is not None:
                    command += 1
                elif b.strip() in ("shell:", "params:"):
                    shell_indent = depth
            lengths[f"{smk.name}:{m.group(2) or m.group(3) or i + 1}"] = len(block) - command
    return lengths


def test_the_workflow_reads_like_a_catalog_workflow():
    """common.smk holds validation and input functions (<= 200 lines); every rule is short
    (<= 20 lines besides its command and params, which it shows; the paths are steps.plan's)."""
    assert len((ROOT / "workflow/rules/common.smk").read_text().splitlines()) <= 200
    lengths = _rule_lengths()
    assert len(lengths) >= 25, lengths
    over = {name: n for name, n in lengths.items() if n > 20}
    assert over == {}, over
