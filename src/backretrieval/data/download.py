"""Verified, resumable downloads with retries and mirrors (standard library only).

:func:`fetch` downloads one file:

* ``http(s)://`` URLs, ``file://`` URLs and plain local paths (a local mirror);
* resumable: bytes go to ``<dest>.part``; a later call continues it with an HTTP
  ``Range`` request. A server that ignores ``Range`` (answers ``200`` with the whole
  file) is handled by restarting the ``.part`` from zero;
* retries network errors, truncated bodies, HTTP 5xx and 429 with exponential backoff
  (``backoff * 2**attempt`` seconds); other HTTP errors (404, 403) fail at once;
* sha256 verified after the download; a mismatch removes the ``.part`` and raises
  :class:`~backretrieval.errors.InputError` naming the file and both hashes;
* the verified file is renamed onto ``dest`` atomically (no partial ``dest`` ever).

``sha256=None`` means *unpinned*: the file is downloaded, its hash is computed and
reported through an :class:`UnpinnedDownloadWarning` so that the pin can be added to the
dataset module (see docs/DATASETS.md).

:func:`resolve_url` implements the ``mirror`` setting: a mirror (local folder,
``file://`` or ``http(s)://`` base) replaces the upstream base URL, and the file's
relative path is kept.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from pathlib import Path

from .._util.hashing import sha256_file
from .._util.io import naming_written_path, raise_if_no_space
from ..errors import InputError

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
USER_AGENT = "backretrieval-downloader/0.1 (+https://github.com/; research software)"


class DownloadError(InputError):
    """A file could not be downloaded (after retries) or failed verification."""


class UnpinnedDownloadWarning(UserWarning):
    """A file was downloaded without a pinned sha256 (the computed hash is in the message)."""


def resolve_url(upstream_base: str, rel_path: str, mirror: str | os.PathLike[str] | None) -> str:
    """URL (or local path) of ``rel_path``: under ``mirror`` when given, else under upstream.

    ``mirror`` may be a local folder, a ``file://`` URL or an ``http(s)://`` base URL; it
    replaces ``upstream_base`` entirely, so a mirror must have the upstream layout below
    its root (e.g. ``<mirror>/data/task1/raw/train.en.gz`` for Multi30K).
    """
    rel = rel_path.lstrip("/")
    if rel.startswith("./"):
        rel = rel[2:]
    base = upstream_base if mirror is None else str(mirror)
    if not base:
        raise InputError("mirror: empty string; give a folder, file:// or http(s):// URL")
    scheme = urllib.parse.urlsplit(base).scheme.lower()
    if scheme in ("http", "https", "file"):
        return base.rstrip("/") + "/" + urllib.parse.quote(rel)
    # a plain local folder
    return str(Path(base).expanduser() / rel)


def _local_source(url: str) -> Path | None:
    """Path for ``file://`` URLs and plain paths; None for http(s)."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "file":
        return Path(urllib.request.url2pathname(parts.path))
    if scheme in ("http", "https"):
        return None
    if scheme and len(scheme) > 1:  # 'C:' style drive letters have a 1-char "scheme"
        raise InputError(f"unsupported URL scheme {scheme!r} in {url!r}; use http(s)://, file:// or a path")
    return Path(url).expanduser()


def _verify_and_publish(part: Path, dest: Path, sha256: str | None, url: str) -> Path:
    actual = sha256_file(part)
    if sha256 is None:
        msg = (
            f"unpinned download: {dest.name} from {url} has sha256 {actual}; "
            "pin it (add the hash to the dataset module) to make downloads verifiable"
        )
        warnings.warn(msg, UnpinnedDownloadWarning, stacklevel=3)
        print(f"backretrieval: warning: {msg}", file=sys.stderr)
    elif actual.lower() != sha256.lower():
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
        raise DownloadError(
            f"{dest}: sha256 mismatch for {url}: expected {sha256.lower()}, got {actual} "
            "(the partial file was removed; check the mirror or the pinned hash)"
        )
    os.replace(part, dest)
    return dest


def _copy_local(src: Path, part: Path) -> None:
    if not src.is_file():
        raise DownloadError(f"{src}: no such file (local source / mirror)")
    with open(src, "rb") as fin, open(part, "wb") as fout:
        shutil.copyfileobj(fin, fout, _CHUNK)


def _retryable_http(code: int) -> bool:
    return code >= 500 or code in (408, 429)


def _http_attempt(url: str, part: Path, *, timeout: float, resume: bool) -> bool:
    """One HTTP attempt; appends to ``part`` when the server honours Range.

    Raises on network errors / short bodies (the caller retries); returns whether earlier
    bytes of ``part`` were reused (a resumed download) once the complete body is written.
    """
    offset = part.stat().st_size if (resume and part.exists()) else 0
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    req = urllib.request.Request(url, headers=headers)
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 (scheme checked)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            # Range not satisfiable: the .part is probably already complete (or longer than
            # the file). Let verification decide; a bad part is removed there and retried.
            exc.close()
            return True
        raise
    with resp:
        status = getattr(resp, "status", 200)
        mode = "wb"
        start = 0
        if offset and status == 206:
            crange = resp.headers.get("Content-Range", "")
            # "bytes <start>-<end>/<total>"
            try:
                start = int(crange.split()[1].split("-")[0])
            except (IndexError, ValueError):
                start = -1
            if start != offset:
                raise ConnectionError(f"server returned Content-Range {crange!r} for offset {offset}")
            mode = "ab"
        elif offset:
            log.info("%s: server ignored the Range request; restarting from byte 0", url)
        length = resp.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        got = 0
        with open(part, mode) as fh:
            while True:
                chunk = resp.read(_CHUNK)
                if not chunk:
                    break
                fh.write(chunk)
                got += len(chunk)
        if expected is not None and got < expected:
            raise http.client.IncompleteRead(b"", expected - got)
    return mode == "ab"


def fetch(
    url: str,
    dest: str | os.PathLike[str],
    sha256: str | None,
    *,
    retries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60,
    resume: bool = True,
) -> Path:
    """Download ``url`` to ``dest`` (verified, atomic). Returns ``dest``.

    An existing ``dest`` whose sha256 matches is kept (no network access). ``retries`` is
    the number of *extra* attempts after the first one for transient failures.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_file():
        if sha256 is None:
            log.info("%s exists (unpinned; kept)", dest)
            return dest
        if sha256_file(dest).lower() == sha256.lower():
            return dest
        log.warning("%s exists but its sha256 differs from the pin; downloading again", dest)
    part = dest.with_name(dest.name + ".part")

    local = _local_source(url)
    if local is not None:
        with naming_written_path(part):
            _copy_local(local, part)
        return _verify_and_publish(part, dest, sha256, url)

    last_exc: BaseException | None = None
    for attempt in range(retries + 1):
        if not resume:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
        try:
            resumed = _http_attempt(url, part, timeout=timeout, resume=resume)
        except urllib.error.HTTPError as exc:
            if not _retryable_http(exc.code):
                raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason} (not retried)") from exc
            last_exc = exc
        except (TimeoutError, urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise_if_no_space(exc, part)  # a full disk is not transient: no retry
            last_exc = exc
        else:
            try:
                return _verify_and_publish(part, dest, sha256, url)
            except DownloadError:
                # a corrupt resumed .part was removed by _verify_and_publish; one fresh
                # full download is worth trying before giving up, but only if we resumed
                if attempt < retries and resumed:
                    last_exc = None
                    resume = False
                    log.warning("%s: verification failed after resume; retrying from scratch", url)
                    continue
                raise
        if attempt < retries:
            delay = backoff * (2**attempt)
            log.warning("%s: attempt %d failed (%s); retrying in %.2fs", url, attempt + 1, last_exc, delay)
            time.sleep(delay)
    raise DownloadError(
        f"{url}: download failed after {retries + 1} attempts ({last_exc}); "
        f"partial data kept in {part} for a later resume; a mirror can be set instead"
    )
