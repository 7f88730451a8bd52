"""A new user's first commands in a fresh clone: `make figures` / `make report` find the
environment (the active interpreter when it imports backretrieval, else .venv, else they say to
run `make setup`) and say in one line what to run when the run's artifacts are missing; `make
pull` says in one line that a default remote folder which does not exist has nothing to pull."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from snake import ROOT

FAKE_SNAKEMAKE = """import sys
print("Building DAG of jobs...")
print('MissingInputException in rule report in file "Snakefile", line 1:')
print("Missing input files for rule report:")
print("    output: reports/default/table1.md")
print("    affected files:")
for p in ("artifacts/default/correlations.csv", "artifacts/default/metrics/en-de.csv", "artifacts/default/b.npz"):
    print("        " + p)
sys.exit(1)
"""


def _tree(tmp_path: Path) -> Path:
    """The Makefile and its helper in a folder without .venv; a fake snakemake that names missing inputs."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")  # `make report` reads its reports_dir
    shutil.copy(ROOT / "scripts/snakemake_hint.py", tmp_path / "scripts/snakemake_hint.py")
    (tmp_path / "fake_snakemake.py").write_text(FAKE_SNAKEMAKE)
    return tmp_path


def _make(cwd: Path, target: str, python_dir: str) -> subprocess.CompletedProcess:
    """``make target`` with only ``python_dir`` (holding a ``python``) before the system's PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "CONDA_PREFIX", "MAKEFLAGS")}
    env["PATH"] = f"{python_dir}:/usr/local/bin:/usr/bin:/bin"
    return subprocess.run(
        ["make", "--no-print-directory", target, "SNAKEMAKE=python fake_snakemake.py"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _bare_python(tmp_path: Path) -> str:
    """A folder whose ``python`` cannot import backretrieval (the base interpreter of the venv)."""
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    (bare / "python").symlink_to(getattr(sys, "_base_executable", None) or shutil.which("python3"))
    res = subprocess.run([bare / "python", "-c", "import backretrieval"], capture_output=True, env={})
    if res.returncode == 0:
        pytest.skip("the base interpreter imports backretrieval")
    return str(bare)


@pytest.mark.parametrize("target", ["figures", "report"])
def test_missing_artifacts_are_one_line_saying_what_to_run(tmp_path, target):
    """The active interpreter (this test's, which imports backretrieval) is used without .venv."""
    tree = _tree(tmp_path)
    res = _make(tree, target, str(Path(sys.executable).parent))
    assert res.returncode != 0
    assert ".venv/bin/activate" not in res.stderr and "affected files" not in res.stdout + res.stderr
    (line,) = [x for x in res.stderr.splitlines() if "missing" in x]
    assert line == (
        f"make {target}: 3 of the run's artifacts are missing (artifacts/default/b.npz and 2 more): run "
        "`make run` to compute them, or `make pull` (`dvc pull`) to fetch them from your team's DVC remote"
    )


def test_without_an_environment_make_says_to_run_setup(tmp_path):
    tree = _tree(tmp_path)
    res = _make(tree, "figures", _bare_python(tmp_path))
    assert res.returncode != 0
    assert "No such file or directory" not in res.stderr
    assert "make figures: no environment with backretrieval (none active, no .venv): run `make setup`" in res.stderr


def test_dot_venv_is_used_when_the_active_python_lacks_backretrieval(tmp_path):
    tree = _tree(tmp_path)
    (tree / ".venv/bin").mkdir(parents=True)
    (tree / ".venv/bin/activate").write_text(f'export PATH="{Path(sys.executable).parent}:$PATH"\n')
    res = _make(tree, "figures", _bare_python(tmp_path))
    assert "make figures: 3 of the run's artifacts are missing" in res.stderr, res.stderr


def test_make_pull_with_a_default_remote_folder_that_does_not_exist_says_so(tmp_path):
    """A fresh clone's default remote (a sibling folder only a machine that pushed has)."""
    if shutil.which("dvc", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("dvc not installed")
    repo = tmp_path / "clone"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    bindir = Path(sys.executable).parent
    subprocess.run([bindir / "dvc", "init", "-q"], cwd=repo, check=True)
    subprocess.run([bindir / "dvc", "remote", "add", "-d", "storage", "../no-such-storage"], cwd=repo, check=True)
    res = subprocess.run(
        [sys.executable, ROOT / "scripts/dvc_pull.py"], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 1
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("dvc_pull: the DVC remote 'storage' is a folder that does not exist (")
    assert str(tmp_path / "no-such-storage") in lines[0]
    assert "`make run`" in lines[0] and "dvc remote modify --local storage url <url>" in lines[0]


def test_a_venv_named_on_the_command_line_is_used(tmp_path):
    tree = _tree(tmp_path)
    res = subprocess.run(
        ["make", "--no-print-directory", "-n", "figures", "VENV=/some/env/bin"],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    assert res.stdout.startswith("source /some/env/bin/activate && ")
    assert "python scripts/snakemake_hint.py figures -- " in res.stdout


def test_readme_opens_with_the_purpose_and_the_two_commands():
    """The generated verdict block (rewritten wherever its markers are) comes after the commands."""
    from backretrieval.findings import document as doc

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = text.splitlines()[:25]
    assert (
        "## The two commands" in head
        and "make run     # set up (.venv, CPU torch, models), then run the default pipeline offline" in head
    )
    assert text.index("make test    #") < text.index(doc.README_START)


def _items_doc() -> tuple[dict[str, str], str]:
    """docs/DATASETS.md's items.csv table ({column: required cell}) and its example CSV."""
    text = (ROOT / "docs/DATASETS.md").read_text(encoding="utf-8")
    section = text[text.index("### The prepared format") :]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([^|]+) \|", section, re.M)
    example = section[section.index("```csv\n") + 7 :]
    return {name: required.strip() for name, _type, required in rows}, example[: example.index("```")]


def test_items_csv_format_is_documented_as_the_reader_checks_it(tmp_path):
    from backretrieval.data.prepared import REQUIRED_ITEM_COLUMNS, load_items
    from backretrieval.errors import InputError

    table, example = _items_doc()
    assert [c for c, req in table.items() if req.startswith("yes")] == list(REQUIRED_ITEM_COLUMNS)
    assert [c for c, req in table.items() if req.startswith("no")] == ["split"]
    (tmp_path / "items.csv").write_text(example, encoding="utf-8")
    items = load_items(tmp_path)  # the documented example is valid; split defaults to eval
    assert set(items["split"]) == {"eval"} and list(items["body"])[-1] == ""
    for column in REQUIRED_ITEM_COLUMNS:
        lines = example.splitlines()
        header = lines[0].split(",")
        keep = [i for i, c in enumerate(header) if c != column]
        (tmp_path / "items.csv").write_text(
            "\n".join(",".join(line.split(",")[i] for i in keep) for line in lines) + "\n", encoding="utf-8"
        )
        with pytest.raises(InputError, match="missing column"):
            load_items(tmp_path)


def test_snakemakes_missing_metadata_warnings_are_one_note(tmp_path):
    """`make report` after a DVC checkout: Snakemake warns once per output without metadata;
    the helper passes every other line through and says the count once."""
    fake = tmp_path / "fake.py"
    fake.write_text(
        "for i in range(250):\n"
        "    print(f'Missing metadata for file out{i}.csv. Maybe metadata was deleted or it was created using an "
        "older version of Snakemake. This is a non critical warning.')\n"
        "print('Report created: report.html.')\n"
    )
    res = subprocess.run(
        [sys.executable, ROOT / "scripts/snakemake_hint.py", "report", "--", sys.executable, fake],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0
    assert res.stdout == "Report created: report.html.\n"
    (note,) = res.stderr.splitlines()
    assert note.startswith("note: 250 outputs carry no Snakemake metadata")
