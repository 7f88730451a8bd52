"""Temporaries that a killed writer leaves, and their removal.

Every artifact is written to a temporary sibling and renamed into place
(:func:`backretrieval._util.io.atomic_path`; the synthetic dataset's folder likewise). A writer
killed outright (``kill -9``, a lost cluster job) cannot remove its temporary. So each writer
holds an exclusive ``flock`` on its temporary while it exists (the kernel releases it when the
process ends, however it ends), and the next writer of the same path removes the temporaries
that no process holds (:func:`remove_abandoned`).

A temporary's name carries a tag of the host that made it (``.NAME.HOST-XXXXXXXX.tmp...``) and
only this host's are removed: some shared file systems (NFS with ``local_lock``, BeeGFS,
Lustre with ``localflock``) keep locks per node, so another node's live writer would look
abandoned. Where a file system offers no locks at all, nothing is removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import hashlib
import os
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

#: This host's tag in the names of the temporaries it makes.
HOST_TAG = hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]
_RANDOM = "?" * 8  # the random part tempfile.mkstemp / mkdtemp put between prefix and suffix
_CLAIM_TRIES = 100


def temp_prefix(final: Path) -> str:
    """The ``prefix`` for ``tempfile.mkstemp`` / ``mkdtemp`` of a temporary of ``final``."""
    return f".{final.name}.{HOST_TAG}-"


def temporaries_of(name_glob: str) -> str:
    """The glob of this host's temporaries of the paths whose names match ``name_glob`` (a
    glob: pass a literal name through ``glob.escape``)."""
    return f".{name_glob}.{HOST_TAG}-{_RANDOM}.tmp*"


def remove_abandoned_of(final: Path) -> list[Path]:
    """:func:`remove_abandoned` of the temporaries of the one path ``final``."""
    return remove_abandoned(final.parent, temporaries_of(glob.escape(final.name)))


def _lock(fd: int) -> bool | None:
    """Take an exclusive lock on ``fd`` without waiting: True if taken, False if another
    process holds one, None where the file system has no locks."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not removed or replaced)."""
    try:
        st, now = os.fstat(fd), os.lstat(path)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)


def _open(path: Path) -> int:
    # read-write for a file: NFS grants an exclusive lock only on a descriptor open for writing
    return os.open(path, (os.O_RDONLY if path.is_dir() else os.O_RDWR) | os.O_NOFOLLOW)


@contextlib.contextmanager
def claimed_temporary(make: Callable[[], str]) -> Iterator[Path]:
    """A new temporary (``make()`` creates it and returns its path: ``mkstemp``'s or
    ``mkdtemp``'s, with :func:`temp_prefix`), locked for the block so that
    :func:`remove_abandoned` leaves it. A remover that took the new temporary before its lock
    removes it; then another one is made."""
    for _ in range(_CLAIM_TRIES):
        path = Path(make())
        try:
            fd = _open(path)
        except FileNotFoundError:
            continue
        got = _lock(fd)
        if got is None or (got and _same_file(fd, path)):
            break
        os.close(fd)
    else:
        raise OSError(errno.EAGAIN, f"no temporary could be claimed after {_CLAIM_TRIES} tries", str(path))
    try:
        yield path
    finally:
        os.close(fd)


def remove_abandoned(folder: str | os.PathLike[str], pattern: str) -> list[Path]:
    """Remove the entries of ``folder`` matching ``pattern`` (:func:`temporaries_of`) that no
    process holds: temporaries whose writer was killed. An entry whose lock cannot be taken
    (a live writer's, or on a file system without locks) and a symbolic link are left; a
    failed removal is skipped (the caller's own write has succeeded). Returns what was
    removed."""
    removed = []
    for entry in sorted(Path(folder).glob(pattern)):
        try:
            fd = _open(entry)
        except OSError:
            continue  # gone meanwhile, a link, or not ours to open
        try:
            if _lock(fd) and _same_file(fd, entry):
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed.append(entry)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed
