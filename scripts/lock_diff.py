#!/usr/bin/env python
"""What changed in dvc.lock and runs/dvc.lock between a git revision and the working tree, by
kind: the code deps (files under src/, workflow/, scripts/ and the Snakefile), the other deps
(data, configs), the outs, the params and the commands of each stage.

A change of the code that must change no result (a redesign, a rename) shows as code deps
alone: `--code-only` exits 1, naming what else changed, when anything does.

  python scripts/lock_diff.py                  HEAD against the working tree
  python scripts/lock_diff.py 9e468d1          a revision against the working tree
  python scripts/lock_diff.py --code-only REV  exit 1 unless only code deps changed
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LOCKS = ("dvc.lock", "runs/dvc.lock")
CODE = ("src/", "workflow/", "scripts/", "Snakefile")


def _entries(stage: dict, kind: str) -> dict[str, str | None]:
    return {d["path"]: d.get("md5") for d in stage.get(kind, [])}


def lock_changes(old: dict, new: dict) -> dict[str, list[str]]:
    """Per kind (``code deps``, ``other deps``, ``outs``, ``params``, ``cmd``, ``stages``), the
    sorted ``stage: path`` (or stage) entries whose value differs between two parsed lock files."""
    out: dict[str, set[str]] = {k: set() for k in ("code deps", "other deps", "outs", "params", "cmd", "stages")}
    old_stages, new_stages = old.get("stages", {}), new.get("stages", {})
    for name in set(old_stages) ^ set(new_stages):
        out["stages"].add(f"{name} ({'removed' if name in old_stages else 'added'})")
    for name in set(old_stages) & set(new_stages):
        o, n = old_stages[name], new_stages[name]
        for key in ("cmd", "params"):
            if o.get(key) != n.get(key):
                out[key].add(name)
        od, nd = _entries(o, "deps"), _entries(n, "deps")
        for path in set(od) | set(nd):
            if od.get(path) != nd.get(path):
                out["code deps" if path.startswith(CODE) else "other deps"].add(path)
        oo, no = _entries(o, "outs"), _entries(n, "outs")
        out["outs"].update(f"{name}: {p}" for p in set(oo) | set(no) if oo.get(p) != no.get(p))
    return {k: sorted(v) for k, v in out.items()}


def _at(rev: str, lock: str) -> dict:
    res = subprocess.run(["git", "show", f"{rev}:{lock}"], cwd=ROOT, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"lock_diff: {lock} at {rev}: {res.stderr.strip()}")
    return yaml.safe_load(res.stdout) or {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", nargs="?", default="HEAD", help="the git revision to compare with (default HEAD)")
    ap.add_argument("--code-only", action="store_true", help="exit 1 when anything but code deps changed")
    args = ap.parse_args(argv)
    beyond = []
    for lock in LOCKS:
        changes = lock_changes(_at(args.rev, lock), yaml.safe_load((ROOT / lock).read_text()) or {})
        print(f"{lock} ({args.rev} -> working tree):")
        for kind, entries in changes.items():
            print(
                f"  {kind}: {len(entries)}"
                + (f" ({', '.join(entries[:12])}{', ...' if len(entries) > 12 else ''})" if entries else "")
            )
            if kind != "code deps" and entries:
                beyond.append(f"{lock}: {kind}")
    if args.code_only and beyond:
        print(f"lock_diff: more than code deps changed: {'; '.join(beyond)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
