"""download.fetch / resolve_url against a loopback HTTP server, and archive.safe_extract.

The HTTP server (http.server in a thread, 127.0.0.1, ephemeral port) serves the real
Multi30K files from ../shared/datasets/multi30k (tests skip where that folder is absent);
the archive tests build their (malicious) archives in tmp_path.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import os
import stat
import tarfile
import threading
import warnings
import zipfile
from pathlib import Path

import pytest

from backretrieval.data import archive, download
from backretrieval.data.download import DownloadError, UnpinnedDownloadWarning, fetch, resolve_url
from backretrieval.errors import InputError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
M30K = SHARED / "multi30k"
_skip_no_shared = pytest.mark.skipif(not M30K.is_dir(), reason=f"real data folder {M30K} absent")


def needs_shared(f):
    """Marks a test as using ../shared/datasets (marker ``shared_data``) and skips it there absent."""
    return pytest.mark.shared_data(_skip_no_shared(f))


REL = "data/task1/raw/test_2016_flickr.en.gz"


def _pins() -> dict[str, str]:
    from backretrieval.data.sources.multi30k import load_checksums

    return load_checksums()


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves files under ``root``; behaviour knobs live on the server object."""

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802
        srv = self.server
        srv.requests.append(dict(self.headers))
        if srv.fail_first > 0:
            srv.fail_first -= 1
            self.send_error(503, "try later")
            return
        path = srv.root / self.path.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        rng = self.headers.get("Range")
        if rng and srv.honour_range:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                self.send_error(416)
                return
            body = data[start:]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if srv.truncate_once:
            srv.truncate_once = False
            self.wfile.write(body[: len(body) // 3])
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


@pytest.fixture()
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.root = M30K
    srv.requests = []
    srv.fail_first = 0
    srv.honour_range = True
    srv.truncate_once = False
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield srv, f"http://127.0.0.1:{srv.server_address[1]}/"
    finally:
        srv.shutdown()
        srv.server_close()


# ----------------------------------------------------------------------------- resolve_url


def test_resolve_url_mirror_replaces_upstream_base(tmp_path):
    up = "https://github.com/multi30k/dataset/raw/a3d2e0d/"
    assert resolve_url(up, REL, None) == up + REL
    assert resolve_url(up, REL, "http://mirror.example/m30k") == "http://mirror.example/m30k/" + REL
    assert resolve_url(up, "./" + REL, "file:///srv/m/") == "file:///srv/m/" + REL
    assert resolve_url(up, REL, str(tmp_path)) == str(tmp_path / REL)
    # spaces etc. are quoted in URLs, not in local paths
    assert resolve_url(up, "a b.txt", None).endswith("/a%20b.txt")
    assert resolve_url(up, "a b.txt", str(tmp_path)) == str(tmp_path / "a b.txt")


# ----------------------------------------------------------------------------- http


@needs_shared
def test_fetch_http_verifies_checksum(server, tmp_path):
    srv, base = server
    dest = tmp_path / "dl" / "en.gz"
    out = fetch(base + REL, dest, _pins()[REL], backoff=0.01)
    assert out == dest and dest.read_bytes() == (M30K / REL).read_bytes()
    assert not dest.with_name("en.gz.part").exists()
    # second call: pinned file already there -> no request at all
    n = len(srv.requests)
    fetch(base + REL, dest, _pins()[REL], backoff=0.01)
    assert len(srv.requests) == n


@needs_shared
def test_fetch_resumes_partial_file_with_range(server, tmp_path):
    srv, base = server
    data = (M30K / REL).read_bytes()
    dest = tmp_path / "en.gz"
    part = tmp_path / "en.gz.part"
    part.write_bytes(data[:5000])  # an interrupted earlier download
    fetch(base + REL, dest, _pins()[REL], backoff=0.01)
    assert dest.read_bytes() == data
    assert srv.requests[-1].get("Range") == "bytes=5000-"


@needs_shared
def test_fetch_restarts_when_server_ignores_range(server, tmp_path):
    srv, base = server
    srv.honour_range = False
    data = (M30K / REL).read_bytes()
    dest = tmp_path / "en.gz"
    (tmp_path / "en.gz.part").write_bytes(b"garbage that must not be kept" * 10)
    fetch(base + REL, dest, _pins()[REL], backoff=0.01)
    assert dest.read_bytes() == data
    assert "Range" in srv.requests[0]


@needs_shared
def test_fetch_resumes_after_truncated_body(server, tmp_path):
    srv, base = server
    srv.truncate_once = True
    dest = tmp_path / "en.gz"
    fetch(base + REL, dest, _pins()[REL], backoff=0.01)
    assert dest.read_bytes() == (M30K / REL).read_bytes()
    assert len(srv.requests) == 2
    assert srv.requests[1].get("Range", "").startswith("bytes=")  # second request resumed


@needs_shared
def test_fetch_retries_503_then_succeeds(server, tmp_path):
    srv, base = server
    srv.fail_first = 2
    dest = tmp_path / "en.gz"
    fetch(base + REL, dest, _pins()[REL], retries=3, backoff=0.01)
    assert dest.read_bytes() == (M30K / REL).read_bytes()
    assert len(srv.requests) == 3


@needs_shared
def test_fetch_gives_up_after_retries(server, tmp_path):
    srv, base = server
    srv.fail_first = 10
    with pytest.raises(DownloadError, match="after 3 attempts"):
        fetch(base + REL, tmp_path / "en.gz", _pins()[REL], retries=2, backoff=0.01)
    assert len(srv.requests) == 3
    assert not (tmp_path / "en.gz").exists()


@needs_shared
def test_fetch_404_is_not_retried(server, tmp_path):
    srv, base = server
    with pytest.raises(DownloadError, match="HTTP 404"):
        fetch(base + "data/nope.gz", tmp_path / "x", None, retries=3, backoff=0.01)
    assert len(srv.requests) == 1


@needs_shared
def test_fetch_checksum_mismatch_leaves_nothing(server, tmp_path):
    _, base = server
    dest = tmp_path / "en.gz"
    wrong = "0" * 64
    with pytest.raises(InputError) as ei:
        fetch(base + REL, dest, wrong, backoff=0.01)
    msg = str(ei.value)
    assert str(dest) in msg and wrong in msg and _pins()[REL] in msg
    assert not dest.exists() and not (tmp_path / "en.gz.part").exists()


@needs_shared
def test_fetch_unpinned_warns_with_hash(server, tmp_path):
    _, base = server
    with pytest.warns(UnpinnedDownloadWarning, match=_pins()[REL]):
        fetch(base + REL, tmp_path / "en.gz", None, backoff=0.01)


# ----------------------------------------------------------------------------- local / file://


def test_fetch_local_path_and_file_url(tmp_path):
    src = tmp_path / "src" / "f.bin"
    src.parent.mkdir()
    payload = os.urandom(3000)
    src.write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    a = fetch(str(src), tmp_path / "a.bin", digest)
    b = fetch(src.as_uri(), tmp_path / "b.bin", digest)
    assert a.read_bytes() == b.read_bytes() == payload
    with pytest.raises(DownloadError, match="no such file"):
        fetch(str(tmp_path / "missing"), tmp_path / "c.bin", None)
    with pytest.raises(InputError, match="sha256 mismatch"):
        fetch(str(src), tmp_path / "d.bin", "f" * 64)
    assert not (tmp_path / "d.bin").exists() and not (tmp_path / "d.bin.part").exists()


def test_fetch_rejects_unknown_scheme(tmp_path):
    with pytest.raises(InputError, match="unsupported URL scheme"):
        fetch("ftp://example.org/x", tmp_path / "x", None)


# ----------------------------------------------------------------------------- archives


def _zip(path: Path, entries: list[tuple[str, bytes]], symlinks: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            zi = zipfile.ZipInfo(name)
            zi.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(zi, target)
    return path


def _tar(path: Path, build) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        build(tf)
    return path


def _add_file(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    tf.addfile(ti, io.BytesIO(data))


def _add_link(tf: tarfile.TarFile, name: str, target: str, kind=tarfile.SYMTYPE) -> None:
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.linkname = target
    tf.addfile(ti)


def test_safe_extract_good_zip_and_tar(tmp_path):
    z = _zip(tmp_path / "ok.zip", [("top/a.txt", b"alpha"), ("top/sub/b.txt", b"beta")], {"top/l": "a.txt"})
    out = archive.safe_extract(z, tmp_path / "z")
    assert (out / "top/a.txt").read_bytes() == b"alpha"
    assert (out / "top/sub/b.txt").read_bytes() == b"beta"
    assert os.readlink(out / "top/l") == "a.txt"

    def build(tf):
        _add_file(tf, "r/x.txt", b"x" * 10)
        _add_link(tf, "r/sub/up", "../x.txt")  # inside: r/x.txt
        _add_link(tf, "r/hard", "r/x.txt", tarfile.LNKTYPE)

    t = _tar(tmp_path / "ok.tar.gz", build)
    out = archive.safe_extract(t, tmp_path / "t")
    assert (out / "r/sub/up").read_bytes() == b"x" * 10
    assert (out / "r/hard").read_bytes() == b"x" * 10
    with pytest.raises(InputError, match="already exists"):
        archive.safe_extract(t, tmp_path / "t")
    archive.safe_extract(t, tmp_path / "t", overwrite=True)


@pytest.mark.parametrize(
    "name, reason",
    [("/etc/evil", "absolute"), ("../evil", r"'\.\.'"), ("a/../../evil", r"'\.\.'"), ("C:\\evil", "absolute")],
)
def test_safe_extract_refuses_bad_names(tmp_path, name, reason):
    z = _zip(tmp_path / "bad.zip", [("fine.txt", b"ok"), (name, b"pwned")])
    with pytest.raises(InputError, match=reason):
        archive.safe_extract(z, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "evil").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.zip"]  # no temp folder left

    t = _tar(tmp_path / "bad.tgz", lambda tf: _add_file(tf, name, b"pwned"))
    with pytest.raises(InputError, match=reason):
        archive.safe_extract(t, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "link, target, kind",
    [
        ("d/l", "../../outside", tarfile.SYMTYPE),
        ("l", "/etc/passwd", tarfile.SYMTYPE),
        ("h", "../outside", tarfile.LNKTYPE),
        ("h2", "/etc/passwd", tarfile.LNKTYPE),
    ],
)
def test_safe_extract_refuses_links_outside(tmp_path, link, target, kind):
    t = _tar(tmp_path / "l.tgz", lambda tf: _add_link(tf, link, target, kind))
    with pytest.raises(InputError, match="outside|absolute"):
        archive.safe_extract(t, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_safe_extract_refuses_zip_symlink_outside(tmp_path):
    z = _zip(tmp_path / "s.zip", [("a.txt", b"a")], {"x/l": "../../etc"})
    with pytest.raises(InputError, match="outside"):
        archive.safe_extract(z, tmp_path / "out")


def test_safe_extract_refuses_write_through_symlink(tmp_path):
    # a symlink 'd' -> '.', then a file 'd/f': all links are made last, so the file
    # creates a real folder 'd' and the later symlink collides -> refused, nothing left
    def build(tf):
        _add_link(tf, "d", ".")
        _add_file(tf, "d/f", b"x")

    t = _tar(tmp_path / "w.tgz", build)
    with pytest.raises(InputError):
        archive.safe_extract(t, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_safe_extract_refuses_zip_bomb(tmp_path):
    z = _zip(tmp_path / "bomb.zip", [("zeros.bin", b"\0" * 5_000_000)])
    assert z.stat().st_size < 50_000  # highly compressed
    with pytest.raises(InputError, match="per-member limit"):
        archive.safe_extract(z, tmp_path / "out", max_member_bytes=1_000_000)
    z2 = _zip(tmp_path / "many.zip", [(f"f{i}", b"\0" * 400_000) for i in range(5)])
    with pytest.raises(InputError, match="in total"):
        archive.safe_extract(z2, tmp_path / "out", max_total_bytes=1_000_000)
    assert not (tmp_path / "out").exists()
    # within limits it extracts
    archive.safe_extract(z2, tmp_path / "out", max_total_bytes=3_000_000)
    assert (tmp_path / "out/f4").stat().st_size == 400_000


def test_safe_extract_enforces_size_while_streaming(tmp_path):
    """A zip whose header under-states the uncompressed size never expands past the header:
    zipfile stops at the declared size and the CRC check fails -> InputError, nothing left."""
    z = tmp_path / "liar.zip"
    _zip(z, [("big.bin", b"\0" * 2_000_000)])
    raw = bytearray(z.read_bytes())
    # patch the declared uncompressed size (local header offset 22, central dir +24) to 10
    with zipfile.ZipFile(z) as zf:
        zi = zf.infolist()[0]
    lh = zi.header_offset
    raw[lh + 22 : lh + 26] = (10).to_bytes(4, "little")
    cd = raw.rfind(b"PK\x01\x02")
    raw[cd + 24 : cd + 28] = (10).to_bytes(4, "little")
    z.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="corrupt archive|possible zip bomb"):
        archive.safe_extract(z, tmp_path / "out", max_member_bytes=1000)
    assert not (tmp_path / "out").exists()


def test_safe_extract_not_an_archive(tmp_path):
    p = tmp_path / "x.gz"
    p.write_bytes(gzip.compress(b"just text"))
    with pytest.raises(InputError, match="not a zip or tar"):
        archive.safe_extract(p, tmp_path / "out")


def test_unpinned_warning_for_local_copy(tmp_path):
    src = tmp_path / "s"
    src.write_bytes(b"abc")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fetch(str(src), tmp_path / "d", None)
    msgs = [str(w.message) for w in rec if issubclass(w.category, UnpinnedDownloadWarning)]
    assert msgs and hashlib.sha256(b"abc").hexdigest() in msgs[0] and "unpinned" in msgs[0]
    assert download.sha256_file(tmp_path / "d") == hashlib.sha256(b"abc").hexdigest()
