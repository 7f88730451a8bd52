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

Worst first: each corrupted file on a line of its own, then one line for the files missing from
the remote (a few named, the rest counted); paths are the workspace's (a stage's ``wdir`` is
honoured). Only a bad file is withheld: the intact files of its folder are put in place (`dvc
checkout` withholds the whole folder).

Before any download it refuses, in one line naming them, while an output's folder holds files
DVC does not track (or tracked files changed in place whose bytes are in no cache), which the
checkout would remove or replace: a user's own data belongs in data/own/. `--check-untracked
FILE...` does only that check, for the outputs of those .dvc/dvc.lock files (`make raw-data`).

Usage: python scripts/dvc_pull.py [-r REMOTE]. Exit 0 when every object checks out, 1 when one
is corrupted or missing (the others are still checked out), when the workspace holds what DVC
does not track (nothing fetched), or when the remote is a folder that does not exist (a fresh
clone's default remote): then one line says so, and nothing is fetched.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
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


def _wdirs(lock: Path) -> dict[str, str]:
    """``{stage: wdir}`` of the dvc.yaml beside a dvc.lock: a stage's output paths are relative to
    its ``wdir`` (runs/dvc.yaml's stages run in the repository root, ``wdir: ..``)."""
    spec = lock.with_name("dvc.yaml")
    if lock.name != "dvc.lock" or not spec.is_file():
        return {}
    stages = (yaml.safe_load(spec.read_text(encoding="utf-8")) or {}).get("stages") or {}
    return {name: st.get("wdir", ".") for name, st in stages.items() if isinstance(st, dict)}


def _outs(repo: Path, lock: Path) -> Iterator[tuple[str, str, Path | None]]:
    """(workspace path relative to ``repo``, md5, the local folder it is a copy of or None) of
    each DVC 3 output a lock file records; the folder: a ``dvc import-url`` of a local folder
    (data.dvc: the mirror) with the same md5, whose listing is the output's."""
    data = yaml.safe_load(lock.read_text(encoding="utf-8")) or {}
    if lock.name == "dvc.lock":
        wdirs = _wdirs(lock)
        outs = [
            (wdirs.get(name, "."), o, None)
            for name, st in (data.get("stages") or {}).items()
            for o in st.get("outs") or []
        ]
    else:
        deps = data.get("deps") or []
        outs = []
        for o in data.get("outs") or []:
            same = [d for d in deps if d.get("md5") == o.get("md5") and "://" not in str(d.get("path", ""))]
            outs.append((".", o, (lock.parent / same[0]["path"]) if same else None))
    for wdir, out, origin in outs:
        md5 = out.get("md5")
        if md5 and out.get("hash") == "md5":  # DVC 3 objects (files/md5); older ones are not checked
            path = Path(os.path.normpath(lock.parent / wdir / out["path"]))
            yield path.relative_to(repo).as_posix(), md5, origin


def _listing(dvc, oid: str, remote: str | None, origin: Path | None) -> dict[str, str] | None:
    """``{relpath: md5}`` of a folder output (its ``.dir`` object, from the cache, else the
    remote, else the local folder it was imported from); None when none of them has it."""
    want = oid.removesuffix(".dir")
    cached = Path(dvc.cache.local.oid_to_path(oid))
    raw = cached.read_bytes() if cached.is_file() else None
    if raw is None:
        try:
            odb = dvc.cloud.get_remote_odb(remote)
            with odb.fs.open(odb.oid_to_path(oid), "rb") as f:
                raw = f.read()
        except Exception:  # noqa: BLE001 - no remote, an unreachable one, no object: ask the next source
            raw = None
    if raw is not None and hashlib.md5(raw).hexdigest() == want:  # noqa: S324 - DVC's address
        return {e["relpath"]: e["md5"] for e in json.loads(raw)}
    if origin is not None and origin.is_dir():
        return {p.relative_to(origin).as_posix(): "" for p in origin.rglob("*") if p.is_file()}
    return None


def _file_md5(path: Path) -> str:
    with open(path, "rb") as f:
        return _md5_stream(f.read)


def untracked(repo: Path, remote: str | None = None, locks: list[Path] | None = None) -> list[str]:
    """What a checkout of the outputs of ``locks`` (default: every lock file) would remove or
    replace although DVC cannot restore it: inside a folder output, every file or folder its
    listing does not name (a folder named once, with a trailing /); a file whose bytes differ
    from the recorded ones and are not in DVC's cache; a folder where a file output belongs.
    One entry per path, as ``<path> (<why>)``; empty when nothing would be lost."""
    from dvc.repo import Repo

    dvc = Repo(str(repo))
    cache = dvc.cache.local

    def lost(path: Path, md5: str) -> bool:
        """``path`` differs from ``md5`` and its bytes are not in the cache."""
        if not md5:  # a mirror's listing: the file will be replaced by the mirror's
            return False
        got = _file_md5(path)
        return got != md5 and not Path(cache.oid_to_path(got)).is_file()

    found: list[str] = []
    for lock in locks if locks is not None else _lock_files(repo):
        for rel, oid, origin in _outs(repo, lock):
            ws = repo / rel
            if not ws.exists() and not ws.is_symlink():
                continue
            if not oid.endswith(".dir"):
                if ws.is_dir() and not ws.is_symlink():
                    found.append(f"{rel}/ (a folder where DVC tracks a file)")
                elif ws.is_file() and lost(ws, oid):
                    found.append(f"{rel} (changed since DVC recorded it, and not in DVC's cache)")
                continue
            if not ws.is_dir():
                found.append(f"{rel} (a file where DVC tracks a folder)")
                continue
            listing = _listing(dvc, oid, remote, origin)
            if listing is None:
                found.append(f"{rel}/ (DVC's listing of it, {oid}, is in neither the cache nor the remote)")
                continue
            folders = {str(Path(r).parent.as_posix()) for r in listing} | {
                p.as_posix() for r in listing for p in Path(r).parents
            }
            for root, dirnames, filenames in os.walk(ws):
                here = Path(root).relative_to(ws).as_posix()
                for d in sorted(dirnames):
                    sub = d if here == "." else f"{here}/{d}"
                    if sub not in folders:
                        found.append(f"{rel}/{sub}/ (not tracked by DVC)")
                dirnames[:] = sorted(d for d in dirnames if (d if here == "." else f"{here}/{d}") in folders)
                for name in sorted(filenames):
                    sub = name if here == "." else f"{here}/{name}"
                    if sub not in listing:
                        found.append(f"{rel}/{sub} (not tracked by DVC)")
                    elif lost(Path(root) / name, listing[sub]):
                        found.append(f"{rel}/{sub} (changed since DVC recorded it, and not in DVC's cache)")
    return found


def refusal(found: list[str], what: str, shown: int = 10) -> str:
    """One line refusing ``what`` because of ``found`` (:func:`untracked`)."""
    more = f" and {len(found) - shown} more" if len(found) > shown else ""
    return (
        f"refused: {what} would remove or replace {len(found)} path(s) that DVC cannot restore: "
        f"{'; '.join(found[:shown])}{more}. Nothing was changed: move them out of the way (your own "
        "data belongs in data/own/, which no command writes) and run it again"
    )


class Checked:
    """What :func:`check` found: ``corrupted``, ``missing`` and ``unfetched`` lines (one per
    file), and per folder output whose listing checked out but not every file of it, the files
    that did (``partial``: workspace folder -> [(relpath, md5)]), which :func:`restore_intact`
    puts in place (`dvc checkout` withholds such a folder whole)."""

    def __init__(self) -> None:
        self.corrupted: list[str] = []
        self.missing: list[str] = []
        self.unfetched: list[str] = []
        self.partial: dict[str, list[tuple[str, str]]] = {}

    def lines(self, shown: int = 5) -> list[str]:
        """The report, worst first: each corrupted file on a line of its own, then the missing and
        the unfetched files one line each (the first few named, the rest counted)."""
        out = list(self.corrupted)
        for what, paths, fix in (
            ("missing from the remote", self.missing, FIX),
            ("not fetched", self.unfetched, "run `make pull` again"),
        ):
            if paths:
                more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
                out.append(f"{len(paths)} file(s) {what}: {', '.join(paths[:shown])}{more}: {fix}")
        return out


def check(repo: Path, remote: str | None) -> Checked:
    """The problems of the objects the lock files name; bad cached copies are removed."""
    from dvc.repo import Repo

    dvc = Repo(str(repo))
    cache = dvc.cache.local
    odb = dvc.cloud.get_remote_odb(remote)
    found = Checked()
    seen: set[tuple[str, str]] = set()

    def remote_md5(oid: str) -> str | None:
        path = odb.oid_to_path(oid)
        if not odb.fs.exists(path):
            return None
        with odb.fs.open(path, "rb") as f:
            return _md5_stream(f.read)

    def verified(path: str, oid: str) -> bool:
        """Whether the cache holds ``oid`` with its bytes; names the file in ``found`` if not."""
        want = oid.removesuffix(".dir")  # a folder's listing object: the md5 of its bytes + .dir
        cached = Path(cache.oid_to_path(oid))
        if cached.is_file():
            with open(cached, "rb") as f:
                got = _md5_stream(f.read)
            if got == want:
                return True
            cached.chmod(0o644)
            cached.unlink()  # never checked out
            found.corrupted.append(f"{path}: the remote's copy is corrupted (md5 {got}, expected {oid}): {FIX}")
            return False
        got = remote_md5(oid)
        if got is None:
            found.missing.append(path)
        elif got != want:
            found.corrupted.append(f"{path}: the remote's copy is corrupted (md5 {got}, expected {oid}): {FIX}")
        else:
            found.unfetched.append(path)
        return False

    for lock in _lock_files(repo):
        for path, oid, _ in _outs(repo, lock):
            if (path, oid) in seen:
                continue
            seen.add((path, oid))
            if not verified(path, oid) or not oid.endswith(".dir"):
                continue
            with open(cache.oid_to_path(oid), encoding="utf-8") as f:
                entries = json.load(f)
            intact, bad = [], 0
            for entry in entries:
                sub = f"{path}/{entry['relpath']}"
                if (sub, entry["md5"]) in seen:
                    continue
                seen.add((sub, entry["md5"]))
                if verified(sub, entry["md5"]):
                    intact.append((entry["relpath"], entry["md5"]))
                else:
                    bad += 1
            if bad:
                found.partial[path] = intact
    return found


def restore_intact(repo: Path, partial: dict[str, list[tuple[str, str]]]) -> None:
    """Copy each verified file of a folder output that `dvc checkout` withheld whole (one of its
    files is corrupted or missing) from the cache into the workspace, where no file is yet:
    only the bad files stay out."""
    import shutil

    from dvc.repo import Repo

    cache = Repo(str(repo)).cache.local
    for folder, files in partial.items():
        for rel, md5 in files:
            dst = repo / folder / rel
            if not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(cache.oid_to_path(md5), dst)


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
    ap.add_argument(
        "--check-untracked",
        nargs="+",
        metavar="FILE",
        help="only check that the outputs of these .dvc/dvc.lock files hold nothing DVC does not track "
        "(exit 1 naming it; `make raw-data` runs this before `dvc update`/`dvc pull`)",
    )
    args = ap.parse_args(argv)
    repo = Path.cwd()
    if args.check_untracked:
        if found := untracked(repo, args.remote, [repo / f for f in args.check_untracked]):
            print(f"dvc_pull: {refusal(found, 'updating ' + ' '.join(args.check_untracked))}", file=sys.stderr)
            return 1
        return 0
    if no_remote := missing_folder_remote(repo, args.remote):
        print(f"dvc_pull: {no_remote}", file=sys.stderr)
        return 1
    if found := untracked(repo, args.remote):
        print(f"dvc_pull: {refusal(found, 'pulling')}", file=sys.stderr)
        return 1
    remote = ["-r", args.remote] if args.remote else []
    # DVC's own report (a line per missing object, in the stage's wdir-less paths) is replaced by
    # the check's, which names the workspace paths, worst first
    subprocess.run(["dvc", "fetch", "--quiet", *remote], cwd=repo, check=False, capture_output=True)
    found = check(repo, args.remote)
    problems = found.lines()
    subprocess.run(["dvc", "checkout", "--quiet"], cwd=repo, check=False, capture_output=bool(problems))
    restore_intact(repo, found.partial)
    for line in problems:
        print(f"dvc_pull: error: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
