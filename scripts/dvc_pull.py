"""`dvc pull` that checks what it pulled (`make pull`): every object the project's lock files
(dvc.lock, runs/dvc.lock, *.dvc) name is hashed after the fetch, and an object whose bytes do
not have its md5 is named by its workspace path, removed from the cache and never checked out.

Why: `dvc pull` does not re-hash what it downloads unless the remote says `verify = true` (the
default remote in .dvc/config does; a remote added later does not, unless
`dvc remote modify <name> verify true`), so a corrupted object in the remote was checked out
with exit code 0. With `verify = true` DVC drops the object but only says the file is missing.
Here, either way, the file is named with what to do::

    artifacts/x.npz: the remote's copy is corrupted (md5 1f..., expected 6f...): rerun `make run`
    and `dvc push` from a machine that has it

Usage: python scripts/dvc_pull.py [-r REMOTE]. Exit 0 when every object checks out, 1 when one
is corrupted or missing (the others are still checked out), or when the remote is a folder that
does not exist (a fresh clone's default remote): then one line says so, and nothing is fetched.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import yaml

CHUNK = 1 << 20
FIX = "rerun `make run` and `dvc push` from a machine that has it"


def _md5_stream(read) -> str:
    h = hashlib.md5()  # noqa: S324 - DVC's content address, not a security hash
    while chunk := read(CHUNK):
        h.update(chunk)
    return h.hexdigest()


def _lock_files(repo: Path) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "dvc.lock", "*/dvc.lock", "*.dvc"], cwd=repo, capture_output=True, check=True
    ).stdout.split(b"\0")
    return [repo / f.decode() for f in listed if f]


def _outs(repo: Path, lock: Path) -> Iterator[tuple[str, str]]:
    """(workspace path relative to ``repo``, md5) of each DVC 3 output a lock file records."""
    data = yaml.safe_load(lock.read_text(encoding="utf-8")) or {}
    if lock.name == "dvc.lock":
        outs = [o for st in (data.get("stages") or {}).values() for o in st.get("outs") or []]
    else:
        outs = data.get("outs") or []
    for out in outs:
        md5 = out.get("md5")
        if md5 and out.get("hash") == "md5":  # DVC 3 objects (files/md5); older ones are not checked
            yield str((lock.parent / out["path"]).relative_to(repo)), md5


def check(repo: Path, remote: str | None) -> list[str]:
    """The problems of the objects the lock files name (one line each); bad cached copies are removed."""
    from dvc.repo import Repo

    dvc = Repo(str(repo))
    cache = dvc.cache.local
    odb = dvc.cloud.get_remote_odb(remote)
    problems: list[str] = []
    seen: set[str] = set()

    def remote_md5(oid: str) -> str | None:
        path = odb.oid_to_path(oid)
        if not odb.fs.exists(path):
            return None
        with odb.fs.open(path, "rb") as f:
            return _md5_stream(f.read)

    def verified(path: str, oid: str) -> bool:
        """Whether the cache holds ``oid`` with its bytes; names the file in ``problems`` if not."""
        want = oid.removesuffix(".dir")  # a folder's listing object: the md5 of its bytes + .dir
        cached = Path(cache.oid_to_path(oid))
        if cached.is_file():
            with open(cached, "rb") as f:
                got = _md5_stream(f.read)
            if got == want:
                return True
            cached.chmod(0o644)
            cached.unlink()  # never checked out
            problems.append(f"{path}: the remote's copy is corrupted (md5 {got}, expected {oid}): {FIX}")
            return False
        got = remote_md5(oid)
        if got is None:
            problems.append(f"{path}: missing from the remote (md5 {oid}): {FIX}")
        elif got != want:
            problems.append(f"{path}: the remote's copy is corrupted (md5 {got}, expected {oid}): {FIX}")
        else:
            problems.append(f"{path}: not fetched (md5 {oid}); run `make pull` again")
        return False

    for lock in _lock_files(repo):
        for path, oid in _outs(repo, lock):
            if (path, oid) in seen:
                continue
            seen.add((path, oid))
            if not verified(path, oid) or not oid.endswith(".dir"):
                continue
            with open(cache.oid_to_path(oid), encoding="utf-8") as f:
                entries = json.load(f)
            for entry in entries:
                sub = f"{path}/{entry['relpath']}"
                if (sub, entry["md5"]) not in seen:
                    seen.add((sub, entry["md5"]))
                    verified(sub, entry["md5"])
    return problems


def missing_folder_remote(repo: Path, remote: str | None) -> str | None:
    """What to say when ``remote`` (default: the project's default) is a folder that does not exist
    (a fresh clone's default remote, a sibling folder that only a machine which ran `make push`
    has): `dvc fetch` would list every object as missing (thousands of lines) and exit 1."""
    from dvc.repo import Repo
    from dvc_objects.fs.local import LocalFileSystem

    rem = Repo(str(repo)).cloud.get_remote(remote)
    if not isinstance(rem.fs, LocalFileSystem) or rem.fs.exists(rem.path):
        return None
    return (
        f"the DVC remote '{rem.name}' is a folder that does not exist ({rem.path}): nothing was pulled. "
        "Compute the outputs with `make run`, or point the remote at your team's storage: "
        f"dvc remote modify --local {rem.name} url <url>"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-r", "--remote", help="the DVC remote (default: the project's default remote)")
    args = ap.parse_args(argv)
    repo = Path.cwd()
    if no_remote := missing_folder_remote(repo, args.remote):
        print(f"dvc_pull: {no_remote}", file=sys.stderr)
        return 1
    remote = ["-r", args.remote] if args.remote else []
    subprocess.run(["dvc", "fetch", *remote], cwd=repo, check=False)  # missing objects are named below
    problems = check(repo, args.remote)
    subprocess.run(["dvc", "checkout", "--quiet"], cwd=repo, check=False, capture_output=bool(problems))
    for line in problems:
        print(f"dvc_pull: error: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
