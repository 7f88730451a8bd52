"""Atomic artifact writing: write to a temporary sibling, then rename.

A crash or a validation error never leaves a partial artifact at the final path; a full disk
fails with :class:`~backretrieval.errors.OutputError` naming the artifact (not a bare
``OSError: [Errno 28]``). The temporary a writer killed outright leaves (``kill -9``, a lost
cluster job) is removed by the next write of the same path (:mod:`.tempfiles`), so a
recovered run's folders hold the same files as an uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import struct
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OutputError
from .tempfiles import claimed_temporary, remove_abandoned_of, temp_prefix

#: errnos meaning "this filesystem has no room for the file": disk full, quota exceeded.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def raise_if_no_space(exc: BaseException, path: str | os.PathLike[str]) -> None:
    """Raise :class:`OutputError` naming ``path`` if ``exc`` is a disk-full / quota OSError.

    The OSError of a failed ``write()`` names no file; this names the artifact being written.
    """
    if isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS:
        raise OutputError(
            f"{path}: cannot be written: {os.strerror(exc.errno)} (errno {exc.errno}); free space on "
            "its filesystem (or point cache_dir / reports_dir elsewhere) and run again"
        ) from exc


@contextlib.contextmanager
def naming_written_path(path: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, a disk-full / quota OSError becomes an OutputError naming ``path``."""
    try:
        yield
    except OSError as exc:
        raise_if_no_space(exc, path)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


#: The checkout's folders the workflow writes a config's reports and artifacts to: a config's
#: ``reports_dir`` is a folder under the first (``reports/<run_name>`` by default), its
#: artifacts ``artifacts/<run_name>``.
REPORTS_ROOT = "reports"
ARTIFACTS_ROOT = "artifacts"
#: a relative path under one of them is written only where it still lies under it once resolved
CONTAINED_ROOTS = (REPORTS_ROOT, ARTIFACTS_ROOT)


def check_contained(path: str | os.PathLike[str]) -> None:
    """OutputError if ``path`` is relative, under ``reports/`` or ``artifacts/``, and its folder
    resolves outside that folder (a symlink on the way, e.g. made after the config was
    validated): the run writes nowhere else. Other paths (absolute, a test's) are not checked."""
    final = Path(path)
    if final.is_absolute() or len(final.parts) < 2 or final.parts[0] not in CONTAINED_ROOTS:
        return
    root = Path(final.parts[0]).resolve()
    real = final.parent.resolve()
    if real != root and root not in real.parents:
        raise OutputError(
            f"{final}: not written: its folder resolves to {str(real)!r}, outside the checkout's "
            f"{final.parts[0]}/ ({str(root)!r}); a symlink on its way leads elsewhere: remove it"
        )


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    The temporary file keeps the final suffix (``suffix`` overrides) so that libraries
    that infer the format from the extension (savefig, to_parquet) behave. It is locked while
    it exists; after the rename, the temporaries of the same path that no process holds (a
    killed writer's) are removed (:mod:`backretrieval._util.tempfiles`).
    """
    final = Path(path)
    check_contained(final)
    sfx = suffix if suffix is not None else "".join(final.suffixes[-1:])

    def make() -> str:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(final), suffix=f".tmp{sfx}", dir=final.parent)
        os.close(fd)
        return tmp

    with contextlib.ExitStack() as claim:
        with naming_written_path(final):
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp_path = claim.enter_context(claimed_temporary(make))
        try:
            yield tmp_path
            if tmp_path.exists():  # mkstemp creates 0600; give the artifact normal permissions
                os.chmod(tmp_path, 0o666 & ~_UMASK)
            os.replace(tmp_path, final)
        except BaseException as exc:
            with contextlib.suppress(FileNotFoundError):
                tmp_path.unlink()
            raise_if_no_space(exc, final)
            raise
    remove_abandoned_of(final)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Deterministic JSON (sorted keys, fixed indent, trailing newline)."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def save_npz(path: str | os.PathLike[str], **arrays: np.ndarray) -> None:
    """np.savez (uncompressed; no pickled objects) written atomically."""
    with atomic_path(path, suffix=".npz") as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def load_npz(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def load_npz_mapped(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """:func:`load_npz` with every stored (uncompressed) member memory-mapped read-only.

    ``np.load`` maps ``.npy`` files but reads ``.npz`` members through ``zipfile`` (CRC and
    two copies: about 7 s for the 1.3 GB of text vectors a metrics job of the paper-scale
    protocol loads, benchmarks/README.md). :func:`save_npz` stores members uncompressed, so
    each one is a ``.npy`` at a fixed offset of the file and can be mapped as it stands; only
    the rows a job gathers are then read. Compressed members, and headers this does not know,
    are read as :func:`load_npz` reads them. Same values, same dtypes and shapes.
    """
    out: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        for info in zf.infolist():
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            mapped = _mapped_member(path, fh, info) if info.compress_type == zipfile.ZIP_STORED else None
            if mapped is None:
                with zf.open(info) as member:
                    mapped = np.lib.format.read_array(member, allow_pickle=False)
            out[key] = mapped
    return out


def load_embedding(path: str | os.PathLike[str], mapped: bool = False) -> tuple[dict[str, int], np.ndarray] | None:
    """(id → row, matrix) of an embedding artifact (``emb`` and ``ids``); None if the model was
    skipped (the artifact holds ``skipped``: the reason). ``mapped``: the matrix memory-mapped
    read-only (:func:`load_npz_mapped`), for a step that gathers rows of many large artifacts."""
    z = load_npz_mapped(path) if mapped else load_npz(path)
    if "skipped" in z:
        return None
    ids = [str(x) for x in z["ids"]]
    return {x: i for i, x in enumerate(ids)}, z["emb"]


def skipped_reason(path: str | os.PathLike[str]) -> str | None:
    """Why the model of an embedding artifact was skipped; None if it was not."""
    z = load_npz(path)
    return str(z["skipped"]) if "skipped" in z else None


def _mapped_member(path: str | os.PathLike[str], fh: Any, info: zipfile.ZipInfo) -> np.ndarray | None:
    """The ``.npy`` stored as ``info`` mapped read-only; None where it cannot be mapped."""
    fh.seek(info.header_offset)
    local = fh.read(30)  # the local file header: its name and extra-field lengths
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        return None
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    fh.seek(info.header_offset + 30 + name_len + extra_len)
    fmt = np.lib.format
    version = fmt.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = fmt.read_array_header_2_0(fh)
    else:
        return None
    if dtype.hasobject or math.prod(shape) == 0:
        return None
    mm = np.memmap(path, dtype=dtype, mode="r", offset=fh.tell(), shape=shape, order="F" if fortran else "C")
    return mm.view(np.ndarray)  # a plain read-only array; its base keeps the mapping open


def write_csv(path: str | os.PathLike[str], df: Any, **kwargs: Any) -> None:
    """pandas DataFrame → CSV atomically, with a fixed float format for bit-identical reruns."""
    kwargs.setdefault("index", False)
    kwargs.setdefault("float_format", "%.10g")
    kwargs.setdefault("lineterminator", "\n")
    with atomic_path(path) as tmp:
        df.to_csv(tmp, **kwargs)


def ranks_path(metrics_csv: str | Path) -> Path:
    """Per-query ranks beside a metrics CSV (``<direction>.ranks.npz``): a path convention every
    layer uses (the metrics step writes them, the readers and the layout name them)."""
    return Path(metrics_csv).with_suffix(".ranks.npz")
