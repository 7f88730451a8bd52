"""Safe extraction of zip and tar(.gz/.bz2/.xz) archives.

Every member is checked *before* anything is written:

* no absolute paths (``/x``, ``C:\\x``, ``\\\\server``), no ``..`` components, no empty names, no
  name twice;
* every link is resolved against the archive's other links, as the extracted tree would
  resolve it (so ``x -> a/up/../..`` with ``a/up -> ..`` is seen to leave the destination):
  symbolic links must resolve inside the destination, hard links must name a regular file
  member, and no member may lie below a symbolic link (nothing is written through a link);
* no device files / FIFOs;
* per-member and total uncompressed size below the limits (zip bombs). Sizes are taken
  from the headers for the check and enforced again while streaming, so a zip whose
  header under-states the size is stopped as well.

Tar members are then written by :mod:`tarfile` with its ``"data"`` extraction filter (a
second, independent check of every path and link against the files already on disk); zip
members by this module, streaming with the size limits. Before the result is moved into
place, every symbolic link in it is resolved once more on disk.

Extraction goes into a temporary sibling folder that is renamed onto ``dest`` at the
end; a refused or failing archive leaves no ``dest``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from zlib import error as zlib_error

from .._util.io import naming_written_path, raise_if_no_space
from ..errors import InputError

DEFAULT_MAX_TOTAL_BYTES = 32 * 1024**3  # COCO val2014.zip is ~6.2 GiB
DEFAULT_MAX_MEMBER_BYTES = 8 * 1024**3
DEFAULT_MAX_MEMBERS = 2_000_000
_CHUNK = 1 << 20


@dataclass(frozen=True)
class _Member:
    name: str  # normalised relative posix path
    kind: str  # "file" | "dir" | "symlink" | "hardlink"
    size: int
    link: str = ""  # symlink target (as stored) or hardlink target (archive path)
    mode: int = 0o644


def _normalise(archive: Path, raw: str) -> str:
    name = raw.replace("\\", "/")
    if not name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise InputError(f"{archive}: refused member {raw!r}: absolute path")
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if ".." in parts:
        raise InputError(f"{archive}: refused member {raw!r}: '..' path component")
    if not parts:
        raise InputError(f"{archive}: refused member {raw!r}: empty path")
    return "/".join(parts)


def _inside(rel: str) -> bool:
    """Whether a relative posix path (possibly with '..') stays inside the root."""
    depth = 0
    for part in PurePosixPath(rel).parts:
        if part in ("", "."):
            continue
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        else:
            depth += 1
    return True


def _check_symlink(archive: Path, m_name: str, target: str) -> None:
    t = target.replace("\\", "/")
    if t.startswith("/") or (len(t) > 1 and t[1] == ":"):
        raise InputError(f"{archive}: refused symlink {m_name!r} -> {target!r}: absolute target")
    parent = str(PurePosixPath(m_name).parent)
    if not _inside(f"{parent}/{t}" if parent != "." else t):
        raise InputError(f"{archive}: refused symlink {m_name!r} -> {target!r}: points outside the destination")


_MAX_LINK_HOPS = 40  # as the Linux kernel's limit on symlinks followed in one lookup


def _resolve(links: dict[str, str], rel: str, hops: list[int]) -> list[str] | None:
    """Components of ``rel`` (relative to the root) with every archive symlink followed, as the
    extracted tree would resolve it; None when the path leaves the root."""
    out: list[str] = []
    for part in rel.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                return None
            out.pop()
            continue
        out.append(part)
        cur = "/".join(out)
        if cur in links:
            hops[0] += 1
            if hops[0] > _MAX_LINK_HOPS:
                raise RecursionError(cur)
            parent = "/".join(out[:-1])
            target = links[cur].replace("\\", "/")
            if target.startswith("/") or (len(target) > 1 and target[1] == ":"):
                return None
            res = _resolve(links, f"{parent}/{target}" if parent else target, hops)
            if res is None:
                return None
            out = res
    return out


def _check_links(archive: Path, members: list[_Member]) -> None:
    """Refuse duplicate names, members below a symlink, symlinks resolving outside the root
    (following the archive's other symlinks) and hard links to anything but a regular file."""
    kinds: dict[str, str] = {}
    for m in members:
        if m.name in kinds and not (m.kind == "dir" and kinds[m.name] == "dir"):
            raise InputError(f"{archive}: refused member {m.name!r}: the name occurs twice")
        kinds[m.name] = m.kind
    links = {m.name: m.link for m in members if m.kind == "symlink"}
    for m in members:
        parts = m.name.split("/")
        for i in range(1, len(parts)):
            above = "/".join(parts[:i])
            if above in links:
                raise InputError(f"{archive}: refused member {m.name!r}: it lies below the symlink {above!r}")
        if m.kind == "symlink":
            try:
                res = _resolve(links, m.name, [0])
            except RecursionError:
                raise InputError(f"{archive}: refused symlink {m.name!r} -> {m.link!r}: link loop") from None
            if res is None:
                raise InputError(
                    f"{archive}: refused symlink {m.name!r} -> {m.link!r}: resolves outside the destination "
                    "through the archive's other links"
                )
        elif m.kind == "hardlink" and kinds.get(m.link) != "file":
            raise InputError(
                f"{archive}: refused hard link {m.name!r} -> {m.link!r}: target is not a regular file member"
            )


def _check_tree(archive: Path, root: Path) -> None:
    """After extraction: every symlink under ``root`` resolves (on disk) inside ``root``."""
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                real = os.path.realpath(p)
                if os.path.commonpath([real_root, real]) != real_root:
                    rel = os.path.relpath(p, root)
                    raise InputError(
                        f"{archive}: refused symlink {rel!r} -> {os.readlink(p)!r}: resolves outside the destination"
                    )


def _tar_members(archive: Path, tf: tarfile.TarFile) -> list[_Member]:
    out = []
    for ti in tf.getmembers():
        name = _normalise(archive, ti.name)
        if ti.isdir():
            out.append(_Member(name, "dir", 0))
        elif ti.isreg():
            out.append(_Member(name, "file", ti.size, mode=ti.mode & 0o777))
        elif ti.issym():
            _check_symlink(archive, name, ti.linkname)
            out.append(_Member(name, "symlink", 0, ti.linkname))
        elif ti.islnk():
            t = ti.linkname.replace("\\", "/")
            if t.startswith("/") or not _inside(t):
                raise InputError(
                    f"{archive}: refused hard link {name!r} -> {ti.linkname!r}: points outside the destination"
                )
            out.append(_Member(name, "hardlink", 0, _normalise(archive, t)))
        else:
            raise InputError(f"{archive}: refused member {ti.name!r}: device file or FIFO")
    return out


def _zip_members(archive: Path, zf: zipfile.ZipFile) -> list[_Member]:
    out = []
    for zi in zf.infolist():
        name = _normalise(archive, zi.filename)
        mode = (zi.external_attr >> 16) & 0xFFFF
        if zi.is_dir():
            out.append(_Member(name, "dir", 0))
        elif stat.S_ISLNK(mode):
            target = zf.read(zi)[:4096].decode("utf-8", "replace")
            _check_symlink(archive, name, target)
            out.append(_Member(name, "symlink", 0, target))
        else:
            out.append(_Member(name, "file", zi.file_size, mode=(mode & 0o777) or 0o644))
    return out


def _check_limits(archive: Path, members: list[_Member], max_total: int, max_member: int, max_members: int) -> None:
    if len(members) > max_members:
        raise InputError(f"{archive}: {len(members)} members exceed the limit of {max_members}")
    total = 0
    for m in members:
        if m.size > max_member:
            raise InputError(
                f"{archive}: member {m.name!r} is {m.size} bytes uncompressed, over the per-member "
                f"limit of {max_member} bytes (possible zip bomb; raise max_member_bytes if expected)"
            )
        total += m.size
    if total > max_total:
        raise InputError(
            f"{archive}: {total} bytes uncompressed in total, over the limit of {max_total} bytes "
            "(possible zip bomb; raise max_total_bytes if expected)"
        )


def _copy_limited(archive: Path, name: str, src, dst: Path, limit: int, budget: list[int]) -> None:
    written = 0
    with open(dst, "wb") as fh:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                break
            written += len(chunk)
            budget[0] -= len(chunk)
            if written > limit or budget[0] < 0:
                raise InputError(
                    f"{archive}: member {name!r} expands beyond its declared size / the total "
                    "size limit (possible zip bomb)"
                )
            fh.write(chunk)


def _safe_target(root: Path, rel: str) -> Path:
    p = root.joinpath(*rel.split("/"))
    # parents created so far must not be symlinks leaving root
    real_root = root.resolve()
    real_parent = p.parent.resolve()
    if real_parent != real_root and real_root not in real_parent.parents:
        raise InputError(f"member {rel!r} would be written outside the destination (through a symlink)")
    return p


def archive_kind(path: str | os.PathLike[str]) -> str:
    """'zip' or 'tar' (by content, not by name); InputError otherwise."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: archive not found")
    if zipfile.is_zipfile(path):
        return "zip"
    if tarfile.is_tarfile(path):
        return "tar"
    raise InputError(f"{path}: not a zip or tar archive")


def safe_extract(
    archive: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES,
    max_members: int = DEFAULT_MAX_MEMBERS,
    overwrite: bool = False,
) -> Path:
    """Extract ``archive`` into the folder ``dest`` (created; must not exist unless ``overwrite``).

    Returns ``dest``. Raises :class:`InputError` (and leaves no ``dest``) for unsafe members.
    """
    archive, dest = Path(archive), Path(dest)
    kind = archive_kind(archive)
    if dest.exists() and not overwrite:
        raise InputError(f"{dest}: already exists (pass overwrite=True to replace it)")
    with naming_written_path(dest):
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".extract", dir=dest.parent))
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                members = _zip_members(archive, zf)
                _check_limits(archive, members, max_total_bytes, max_member_bytes, max_members)
                _check_links(archive, members)
                by_zname = {_norm_quiet(zi.filename): zi for zi in zf.infolist()}
                _extract(archive, tmp, members, lambda n: zf.open(by_zname[n]), max_member_bytes, max_total_bytes)
        else:
            with tarfile.open(archive) as tf:
                members = _tar_members(archive, tf)
                _check_limits(archive, members, max_total_bytes, max_member_bytes, max_members)
                _check_links(archive, members)
                if hasattr(tarfile, "data_filter"):
                    # tar headers state sizes exactly (tarfile copies `size` bytes), so the header
                    # check above bounds what is written
                    try:
                        tf.extractall(tmp, filter="data")
                    except tarfile.FilterError as exc:
                        raise InputError(f"{archive}: refused by tarfile's data filter ({exc})") from exc
                else:  # pragma: no cover - Python without extraction filters (< 3.10.12 / 3.11.4)
                    by_name = {_normalise(archive, ti.name): ti for ti in tf.getmembers()}
                    _extract(
                        archive, tmp, members, lambda n: tf.extractfile(by_name[n]), max_member_bytes, max_total_bytes
                    )
        _check_tree(archive, tmp)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib_error) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"{archive}: corrupt archive ({type(exc).__name__}: {exc})") from exc
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise_if_no_space(exc, dest)
        raise
    return dest


def _norm_quiet(raw: str) -> str:
    return "/".join(p for p in PurePosixPath(raw.replace("\\", "/")).parts if p not in ("", "."))


def _extract(archive: Path, root: Path, members: list[_Member], opener, max_member: int, max_total: int) -> None:
    budget = [max_total]
    done_files: dict[str, Path] = {}
    # directories and regular files first; links last so no write can pass through a link
    for m in members:
        if m.kind == "dir":
            _safe_target(root, m.name).mkdir(parents=True, exist_ok=True)
        elif m.kind == "file":
            target = root.joinpath(*m.name.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target = _safe_target(root, m.name)
            src = opener(m.name)
            if src is None:  # pragma: no cover - tarfile returns None only for non-files
                raise InputError(f"{archive}: cannot read member {m.name!r}")
            with contextlib.closing(src):
                _copy_limited(archive, m.name, src, target, max_member, budget)
            os.chmod(target, (m.mode & 0o755) | 0o600)
            done_files[m.name] = target
    for m in members:
        if m.kind == "hardlink":
            if m.link not in done_files:
                raise InputError(f"{archive}: hard link {m.name!r} -> {m.link!r}: target is not a regular file member")
            target = _safe_target(root, m.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(done_files[m.link], target)
        elif m.kind == "symlink":
            target = _safe_target(root, m.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists() or target.is_symlink():
                raise InputError(f"{archive}: symlink {m.name!r} would replace an existing member")
            os.symlink(m.link, target)
