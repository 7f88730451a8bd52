"""The shared leaf helpers (backretrieval._util): one device resolver, one set of hashes,
model fingerprints that stay what they were (they name the embedding-cache folders), and
atomic writes whose temporaries a killed writer leaves are removed by the next write."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backretrieval._util.device import resolve_device
from backretrieval._util.hashing import file_signature, fingerprint_from, folder_signature, json_sha256, sha256_file
from backretrieval._util.io import load_npz, save_npz
from backretrieval._util.tempfiles import HOST_TAG, claimed_temporary, remove_abandoned, temporaries_of
from backretrieval.encoders import build_text_encoder
from backretrieval.errors import ConfigError, DeviceUnavailableError
from backretrieval.images import build_image_backbone


def test_resolve_device_passes_explicit_devices_and_picks_auto():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("mps") == "mps"
    torch = pytest.importorskip("torch")
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == want
    assert resolve_device(None) == want


def test_resolve_device_refuses_missing_cuda_with_a_config_and_value_error():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(DeviceUnavailableError, match="TripletConfig.device: device 'cuda:1'.*no CUDA") as info:
        resolve_device("cuda:1", "TripletConfig.device")
    assert isinstance(info.value, ConfigError) and isinstance(info.value, ValueError)


def test_hashes(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"x" * (3 << 20) + b"tail")  # more than one read chunk
    assert sha256_file(f) == hashlib.sha256(f.read_bytes()).hexdigest()
    assert file_signature(f) == f"w.bin:{(3 << 20) + 4}"
    assert file_signature(tmp_path / "nope.pt") == "nope.pt:missing"
    assert json_sha256({"b": 1, "a": "ü"}) == hashlib.sha256('{"a": "ü", "b": 1}'.encode()).hexdigest()
    d = tmp_path / "model"
    (d / ".git").mkdir(parents=True)
    (d / "a.bin").write_bytes(b"12")
    before = folder_signature(d)
    (d / ".git" / "HEAD").write_text("ref")  # git metadata is not part of the weights
    assert folder_signature(d) == before
    (d / "b.bin").write_bytes(b"1")
    assert folder_signature(d) != before


def test_fingerprints_are_unchanged():
    """Values computed by the code before the restructure (flat modules): a change here moves
    every cached embedding of that model to a new cache folder."""
    assert (
        build_text_encoder("c", {"type": "char_ngram", "dim": 64, "n": [3]}).fingerprint()
        == "char_ngram-68670cf70e88d988b0783217"
    )
    assert (
        build_text_encoder("r", {"type": "random", "dim": 8, "seed": 1}).fingerprint()
        == "random-bc4afa73ac1a264b8e917771"
    )
    # non-ASCII parts: text encoders hash them as UTF-8, image backbones ASCII-escaped
    assert (
        build_text_encoder("f", {"type": "callable", "target": "json:dumps", "version": "ü"}).fingerprint()
        == "callable-2bf301dce6a0b6a572dd28be"
    )
    assert (
        build_image_backbone("p", {"type": "precomputed", "name": "résnet"}).fingerprint()
        == "precomputed-e915096506e9026bfb575462"
    )
    assert fingerprint_from({"x": 1}, "img") == f"img-{json_sha256({'x': 1})[:24]}"


def test_tree_sha256_reads_nothing_outside_the_folder(tmp_path):
    """A user's dataset folder is hashed at parse time: links that leave it (to a file, to a
    folder), a loop and ``images/up -> ..`` are not read, so editing a file outside never
    changes the hash; a link to a file inside counts with that file's content."""
    from backretrieval._util.hashing import tree_sha256

    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret")
    (outside / "dir" / "more.txt").write_text("more")
    root = tmp_path / "ds"
    (root / "images").mkdir(parents=True)
    (root / "items.csv").write_text("item_id\n1\n")
    (root / "images" / "a.jpg").write_bytes(b"img")
    plain = tree_sha256(root)
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "leakdir").symlink_to(outside / "dir", target_is_directory=True)
    (root / "loop").symlink_to(root / "loop")
    (root / "images" / "up").symlink_to("..", target_is_directory=True)
    assert tree_sha256(root) == plain
    (outside / "secret.txt").write_text("changed")
    (outside / "dir" / "more.txt").write_text("changed")
    assert tree_sha256(root) == plain
    (root / "alias.jpg").symlink_to(root / "images" / "a.jpg")
    with_alias = tree_sha256(root)
    assert with_alias != plain
    (root / "images" / "a.jpg").write_bytes(b"img2")
    assert tree_sha256(root) not in (plain, with_alias)


# ------------------------------------------------------------- temporaries of killed writers

_WRITER = """
import sys, time
from backretrieval._util.io import atomic_path
with atomic_path(sys.argv[1]) as tmp:
    tmp.write_bytes(b"half")
    print(tmp, flush=True)
    time.sleep(120)
"""


def _writer_in_flight(final):
    """A process inside ``atomic_path(final)`` (its temporary written, not yet renamed) and
    that temporary's path."""
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(final)], stdout=subprocess.PIPE, text=True)
    return proc, Path(proc.stdout.readline().strip())


@contextlib.contextmanager
def _held(path):
    """``path`` locked as a live writer holds its temporary."""
    with claimed_temporary(lambda: str(path)):
        yield


def test_a_killed_writers_temporary_is_removed_by_the_next_write_and_a_live_ones_is_left(tmp_path):
    """kill -9 cannot run a writer's clean-up: its temporary sibling stays beside the artifact
    until the next write of the same path removes it. A temporary whose writer still runs is
    never removed (the shared embedding cache has concurrent writers)."""
    final = tmp_path / "x.npz"
    proc, tmp = _writer_in_flight(final)
    try:
        assert tmp.parent == tmp_path and tmp.name.startswith(f".x.npz.{HOST_TAG}-") and tmp.is_file()
        save_npz(final, a=np.arange(3))
        assert tmp.is_file()  # its writer runs: left
    finally:
        proc.kill()  # SIGKILL: no clean-up in the writer
        proc.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["x.npz", tmp.name])
    save_npz(final, a=np.arange(4))
    assert [p.name for p in tmp_path.iterdir()] == ["x.npz"]
    assert load_npz(final)["a"].tolist() == [0, 1, 2, 3]


def test_only_this_hosts_unheld_temporaries_of_the_same_name_are_removed(tmp_path):
    """Names with glob characters match only themselves; another path's, another host's (its
    locks may be invisible here), a held one and a symbolic link (and what it points to) are
    left."""
    name = "a[1]*?.npz"
    mine = f".{name}.{HOST_TAG}-abcd_123.tmp.npz"
    left = [
        f".a1x.npz.{HOST_TAG}-abcd_123.tmp.npz",  # matched by the unescaped name
        f".{name}.bak.{HOST_TAG}-abcd_123.tmp.npz",  # another path's
        f".{name}.0123abcd-abcd_123.tmp.npz",  # another host's
        f".{name}.{HOST_TAG}-held_123.tmp.npz",  # a live writer's
        f".{name}.{HOST_TAG}-link_123.tmp.npz",  # a link
    ]
    for n in [mine, *left[:-1]]:
        (tmp_path / n).write_bytes(b"half")
    target = tmp_path / "target"
    target.write_text("kept")
    (tmp_path / left[-1]).symlink_to(target)
    with _held(tmp_path / left[3]):
        save_npz(tmp_path / name, a=np.arange(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "target", *left])
    assert target.read_text() == "kept"


def test_without_locks_a_write_succeeds_and_removes_nothing(tmp_path, monkeypatch):
    """On a file system without locks (flock fails with ENOLCK) no temporary can be told
    abandoned: all are left."""
    import fcntl

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    stale = tmp_path / f".x.npz.{HOST_TAG}-abcd_123.tmp.npz"
    stale.write_bytes(b"half")
    monkeypatch.setattr(fcntl, "flock", no_locks)
    save_npz(tmp_path / "x.npz", a=np.arange(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["x.npz", stale.name])
    assert remove_abandoned(tmp_path, temporaries_of("x.npz")) == []


def test_synthetic_generation_removes_a_killed_generators_folder_and_keeps_the_last_dataset(tmp_path, monkeypatch):
    from backretrieval.data.synthetic import dataset as syn

    dead = tmp_path / f".syn.{HOST_TAG}-abcd_123.tmp"
    live = tmp_path / f".syn.{HOST_TAG}-held_123.tmp"
    (dead / "images").mkdir(parents=True)
    live.mkdir()
    with _held(live):
        syn.generate(tmp_path / "syn", n_items=10, seed=0, image_size=32)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["syn", live.name])
    before = {p.name: p.read_bytes() for p in (tmp_path / "syn").iterdir() if p.is_file()}

    real_replace = os.replace

    def failing_final_rename(src, dst):  # the new dataset cannot be moved into place
        if Path(dst) == tmp_path / "syn" and Path(src).name.endswith(".tmp"):
            raise OSError(errno.EIO, "simulated failure")
        return real_replace(src, dst)

    monkeypatch.setattr(syn.os, "replace", failing_final_rename)
    with pytest.raises(OSError, match="simulated"):
        syn.generate(tmp_path / "syn", n_items=10, seed=1, image_size=32)
    assert {p.name: p.read_bytes() for p in (tmp_path / "syn").iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["syn", live.name])


def test_cache_compaction_removes_a_killed_writers_temporary_shard(tmp_path):
    from backretrieval._util.cache import EmbeddingCache

    cache = EmbeddingCache(tmp_path / "cache", "text", "fp")
    cache.add(["a"], np.ones((1, 2), np.float32))
    dead = cache.dir / f".shard-1-2-3.npz.{HOST_TAG}-abcd_123.tmp.npz"
    live = cache.dir / f".shard-4-5-6.npz.{HOST_TAG}-held_123.tmp.npz"
    dead.write_bytes(b"half")
    live.write_bytes(b"half")
    with _held(live):  # a live writer's temporary: neither the next write nor compaction removes it
        cache.add(["b"], np.ones((1, 2), np.float32))
        cache.compact()
    assert not dead.exists() and live.exists()
    assert sorted(cache.lookup(["a", "b"])) == ["a", "b"] and len(cache.shards()) == 1


def test_a_new_temporary_that_a_remover_holds_is_given_up_for_another(tmp_path):
    """A remover may lock a writer's new temporary before the writer does (and then remove
    it): the writer makes another."""
    taken, fresh = (tmp_path / f".t.{HOST_TAG}-{c * 8}.tmp" for c in "ab")
    taken.touch()
    made = iter([taken, fresh, taken])

    def make():
        path = next(made)
        path.touch()
        return str(path)

    with _held(taken), claimed_temporary(make) as got:
        assert got == fresh
