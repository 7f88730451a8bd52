"""scripts/lock_diff.py: what changed between two DVC lock files, by kind; --code-only fails on
anything but code deps."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from lock_diff import lock_changes  # noqa: E402


def _stage(code: str, data: str, out: str, k: int = 10, cmd: str = "snakemake x") -> dict:
    return {
        "cmd": cmd,
        "deps": [{"path": "src/backretrieval/steps/plan.py", "md5": code}, {"path": "data/prepared/x", "md5": data}],
        "params": {"params.yaml": {"recall_k": k}},
        "outs": [{"path": "artifacts/default/metrics/en-de.csv", "md5": out}],
    }


def test_lock_changes_sorts_each_difference_by_kind():
    old = {"stages": {"a": _stage("c1", "d1", "o1"), "gone": _stage("c1", "d1", "o1")}}
    assert lock_changes(old, old) == {k: [] for k in ("code deps", "other deps", "outs", "params", "cmd", "stages")}
    only_code = {"stages": {"a": _stage("c2", "d1", "o1"), "gone": _stage("c2", "d1", "o1")}}
    got = lock_changes(old, only_code)
    assert got["code deps"] == ["src/backretrieval/steps/plan.py"] and not any(
        v for k, v in got.items() if k != "code deps"
    )
    new = {"stages": {"a": _stage("c1", "d2", "o2", k=5, cmd="snakemake y"), "new": _stage("c1", "d1", "o1")}}
    got = lock_changes(old, new)
    assert got["other deps"] == ["data/prepared/x"]
    assert got["outs"] == ["a: artifacts/default/metrics/en-de.csv"]
    assert got["params"] == ["a"] and got["cmd"] == ["a"]
    assert got["stages"] == ["gone (removed)", "new (added)"] and got["code deps"] == []


def test_code_only_exits_1_naming_what_else_changed(tmp_path, monkeypatch, capsys):
    import lock_diff

    old = {"stages": {"a": _stage("c1", "d1", "o1")}}
    (tmp_path / "runs").mkdir()
    monkeypatch.setattr(lock_diff, "ROOT", tmp_path)
    monkeypatch.setattr(lock_diff, "_at", lambda rev, lock: old)
    for lock in lock_diff.LOCKS:
        (tmp_path / lock).write_text(yaml.safe_dump({"stages": {"a": _stage("c2", "d1", "o1")}}))
    assert lock_diff.main(["--code-only", "REV"]) == 0
    assert "code deps: 1 (src/backretrieval/steps/plan.py)" in capsys.readouterr().out
    (tmp_path / "runs/dvc.lock").write_text(yaml.safe_dump({"stages": {"a": _stage("c2", "d1", "o2")}}))
    assert lock_diff.main(["REV"]) == 0  # without --code-only it only reports
    assert lock_diff.main(["--code-only", "REV"]) == 1
    assert "more than code deps changed: runs/dvc.lock: outs" in capsys.readouterr().err
