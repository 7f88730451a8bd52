"""`make pull` (scripts/dvc_pull.py) after a push whose remote lost one file and corrupted
another, both in a stage of a runs/dvc.yaml that runs in the repository root (`wdir: ..`): the
corrupted file is the first line, the missing one a single line, both by their workspace paths,
and only the corrupted file is withheld (its folder's intact files are checked out)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from snake import ROOT

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.skipif(shutil.which("dvc", path=str(BIN)) is None, reason="dvc not installed")
GOOD = {f"artifacts/r/d/f{i}.txt": f"intact {i}\n" for i in range(10)}
BAD, GONE = "artifacts/r/d/bad.txt", "artifacts/r/gone.txt"


def _ok(cmd: list[str], cwd: Path) -> str:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{cmd}: {res.stdout[-2000:]}{res.stderr[-2000:]}"
    return res.stdout


def _git(cwd: Path, *args: str) -> str:
    return _ok(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd)


def _md5(text: str) -> str:
    import hashlib

    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - DVC's content address


def test_one_line_each_worst_first_real_paths_and_only_the_bad_file_withheld(tmp_path):
    repo, remote = tmp_path / "c1", tmp_path / "remote"
    repo.mkdir()
    _git(repo, "init", "-q")
    _ok([str(BIN / "dvc"), "init", "-q"], repo)
    shutil.copy(ROOT / ".dvc/config", repo / ".dvc/config")
    files = {**GOOD, BAD: "will be corrupted\n", GONE: "will be lost\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "runs").mkdir()
    (repo / "runs/dvc.yaml").write_text(
        "stages:\n  r-step:\n    cmd: 'true'\n    wdir: ..\n    outs:\n    - artifacts/r/d\n    - artifacts/r/gone.txt\n"
    )
    (repo / ".gitignore").write_text("/artifacts/\n")
    _ok([str(BIN / "dvc"), "remote", "modify", "--local", "storage", "url", str(remote)], repo)
    _ok([str(BIN / "dvc"), "commit", "-f", "-q", "runs/dvc.yaml:r-step"], repo)
    _ok([str(BIN / "dvc"), "push", "-q"], repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "outputs")
    bad_obj = remote / "files/md5" / _md5(files[BAD])[:2] / _md5(files[BAD])[2:]
    bad_obj.chmod(0o644)
    bad_obj.write_text("corrupted bytes\n")
    (remote / "files/md5" / _md5(files[GONE])[:2] / _md5(files[GONE])[2:]).unlink()
    _git(tmp_path, "clone", "-q", str(repo), "c2")
    clone = tmp_path / "c2"
    _ok([str(BIN / "dvc"), "remote", "modify", "--local", "storage", "url", str(remote)], clone)
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts/dvc_pull.py")], cwd=clone, capture_output=True, text=True, timeout=300
    )
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert res.returncode == 1, lines
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"dvc_pull: error: {BAD}: the remote's copy is corrupted (md5 "), lines
    assert lines[1].startswith(f"dvc_pull: error: 1 file(s) missing from the remote: {GONE}: rerun `make run`"), lines
    assert "runs/artifacts" not in res.stdout + res.stderr
    assert not (clone / BAD).exists() and not (clone / GONE).exists()
    for rel, text in GOOD.items():  # the corrupted file's folder: every intact file checked out
        assert (clone / rel).read_text() == text, rel
