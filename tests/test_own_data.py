"""A user's own data survives every documented command: it lives in data/own/, which no command
writes (every document says so), and the commands that replace a DVC output whole (`make
raw-data`: `dvc update`/`dvc pull` of data.dvc; `make pull`: scripts/dvc_pull.py) refuse first,
in one line naming the paths, when the output's folder holds something DVC does not track.

Each test builds a small project in a temporary folder (the Makefile, scripts/dvc_pull.py,
data.dvc and .dvc/config of this checkout, git- and DVC-initialised) with a local DVC remote
there: offline, and nothing of this checkout is touched."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from snake import ROOT

BIN = Path(sys.executable).parent
SHARED = ROOT.parent / "shared" / "datasets"
needs_dvc = pytest.mark.skipif(shutil.which("dvc", path=str(BIN)) is None, reason="dvc not installed")
needs_mirror = pytest.mark.skipif(not SHARED.is_dir(), reason=f"the local mirror {SHARED} is absent")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return env


def _ok(cmd: list[str], cwd: Path) -> str:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 0, f"{' '.join(cmd)} in {cwd}:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res.stdout


def _git(cwd: Path, *args: str) -> str:
    return _ok(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd)


def _make(cwd: Path, target: str) -> subprocess.CompletedProcess:
    """``make target`` in ``cwd`` without its ``setup`` prerequisite (the tree's .venv is a stub
    that puts this interpreter's folder first on PATH)."""
    return subprocess.run(
        ["make", "-s", "--no-print-directory", "-o", "setup", target],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )


def _project(repo: Path, remote: Path) -> Path:
    """The files of this checkout that `make raw-data` and `make pull` use, in a new git + DVC
    project whose default remote is the folder ``remote``."""
    (repo / "scripts").mkdir(parents=True)
    for rel in ("Makefile", "scripts/dvc_pull.py", "data.dvc"):
        shutil.copy(ROOT / rel, repo / rel)
    _git(repo, "init", "-q")
    _ok(["dvc", "init", "-q"], repo)
    shutil.copy(ROOT / ".dvc/config", repo / ".dvc/config")
    (repo / ".gitignore").write_text("/data/raw/\n/.venv/\n")
    (repo / ".venv/bin").mkdir(parents=True)
    (repo / ".venv/bin/activate").write_text(f'export PATH="{BIN}:$PATH"\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "project")
    _ok(["dvc", "remote", "modify", "--local", "storage", "url", str(remote)], repo)
    return repo


def _own_data(repo: Path) -> dict[Path, bytes]:
    """A user's own folder where the old docs put it (data/raw/<folder>), and a file of theirs
    inside a tracked folder; their bytes."""
    own = {
        repo / "data/raw/shapes/items.csv": b"item_id,lang,image_id,title,body\nr1,en,i1,A shape,\n",
        repo / "data/raw/shapes/dataset.json": b'{"name": "shapes"}\n',
        repo / "data/raw/multi30k/my-notes.txt": b"mine\n",
    }
    for path, data in own.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return own


def _refused(res: subprocess.CompletedProcess, what: str, repo: Path) -> None:
    """Exit != 0 with one line that names the user's folder and file (relative to ``repo``) and
    where own data goes."""
    assert res.returncode != 0, res.stdout + res.stderr
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("dvc_pull:")]
    assert line.startswith(f"dvc_pull: refused: {what} would remove or replace 2 path(s)"), line
    assert "data/raw/shapes/ (not tracked by DVC)" in line and "data/raw/multi30k/my-notes.txt" in line, line
    assert "data/own/" in line and "Nothing was changed" in line, line
    assert str(repo) not in line, line


def _survives(own: dict[Path, bytes]) -> None:
    for path, data in own.items():
        assert path.read_bytes() == data, path


@needs_dvc
@needs_mirror
def test_make_raw_data_from_the_mirror_refuses_while_data_raw_holds_own_data(tmp_path):
    (tmp_path / "shared").symlink_to(SHARED.parent)  # ../shared/datasets of the project
    repo = _project(tmp_path / "c1", tmp_path / "remote")
    res = _make(repo, "raw-data")
    assert res.returncode == 0, res.stderr
    assert (repo / "data/raw/multi30k").is_dir()
    own = _own_data(repo)
    _refused(_make(repo, "raw-data"), "updating data.dvc", repo)
    _survives(own)
    # a tracked file edited in place (its new bytes in no cache) is the user's too
    readme = repo / "data/raw/README.md"
    readme.write_bytes(readme.read_bytes() + b"my note\n")
    shutil.rmtree(repo / "data/raw/shapes")
    (repo / "data/raw/multi30k/my-notes.txt").unlink()
    res = _make(repo, "raw-data")
    assert res.returncode != 0
    assert "data/raw/README.md (changed since DVC recorded it" in res.stderr, res.stderr
    assert readme.read_bytes().endswith(b"my note\n")


@needs_dvc
@needs_mirror
def test_without_the_mirror_make_raw_data_and_make_pull_refuse_while_data_raw_holds_own_data(tmp_path):
    """A collaborator's clone (no mirror, an empty cache): DVC's listing of data/raw comes from
    the remote; both doors refuse before fetching anything, and pull once the folder is moved."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a/shared").symlink_to(SHARED.parent)
    remote = tmp_path / "remote"
    c1 = _project(tmp_path / "a/c1", remote)
    assert _make(c1, "raw-data").returncode == 0
    _ok(["dvc", "push", "-q", "data.dvc"], c1)
    (tmp_path / "b").mkdir()
    _git(tmp_path / "b", "clone", "-q", str(c1), "c2")
    c2 = tmp_path / "b/c2"
    _ok(["dvc", "remote", "modify", "--local", "storage", "url", str(remote)], c2)
    (c2 / ".venv/bin").mkdir(parents=True)
    shutil.copy(c1 / ".venv/bin/activate", c2 / ".venv/bin/activate")
    own = _own_data(c2)
    _refused(_make(c2, "raw-data"), "updating data.dvc", c2)
    _survives(own)
    _refused(_make(c2, "pull"), "pulling", c2)
    _survives(own)
    assert not any((c2 / ".dvc/cache").rglob("*.dir"))  # refused before any download
    shutil.move(c2 / "data/raw", tmp_path / "mine")  # moved out of the way: both doors work again
    res = _make(c2, "pull")
    assert res.returncode == 0, res.stderr
    assert (c2 / "data/raw/multi30k").is_dir()


def test_docs_and_examples_put_own_data_in_data_own():
    """No document, example or config tells a user to keep their data in data/raw/ (the output
    of data.dvc, which `make raw-data` replaces); the bring-your-own example uses data/own/."""
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "config").glob("*.yaml"))]
    for path in texts:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"data/raw/(my[-_]|<folder>|human_ratings)", text), path
    datasets = (ROOT / "docs/DATASETS.md").read_text(encoding="utf-8")
    assert "options: {path: data/own/my-products}" in datasets
    assert "options: {path: data/own/<folder>}" in datasets
