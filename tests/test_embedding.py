"""Embedding cache: only misses are encoded, results independent of order/batching, concurrent
writers, compaction, corrupt shards, and the dataset-level functions."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import numpy as np
import pytest

import backretrieval._util.cache as cache_mod
from backretrieval._util.cache import EmbeddingCache, text_key
from backretrieval._util.io import load_npz
from backretrieval.encoders.embed import embed_texts
from backretrieval.errors import InputError
from backretrieval.images.embed import embed_images
from backretrieval.steps.embed import embed_dataset_images, embed_dataset_text


class CountingEncoder:
    """Deterministic fake: row = first 8 bytes of sha256(salt + text) scaled to [0, 1)."""

    def __init__(self, enc_id: str = "fake", salt: str = "") -> None:
        self.id = enc_id
        self.salt = salt
        self.seen: list[str] = []
        self.calls = 0

    def fingerprint(self) -> str:
        return f"fake-{self.salt}"

    def vec(self, t: str) -> np.ndarray:
        return np.frombuffer(hashlib.sha256((self.salt + t).encode()).digest()[:8], np.uint8) / 256.0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.seen.extend(texts)
        return np.stack([self.vec(t) for t in texts]).astype(np.float32)


class LangEncoder(CountingEncoder):
    uses_lang = True

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        self.calls += 1
        self.seen.extend(f"{lang}:{t}" for t in texts)
        return np.stack([self.vec(f"{lang}:{t}") for t in texts]).astype(np.float32)


def _expected(enc: CountingEncoder, texts: list[str]) -> np.ndarray:
    return np.stack([enc.vec(t) for t in texts]).astype(np.float32)


TEXTS = ["a dog", "ein Hund", "a much longer sentence about a dog", "a dog", "x", "ein Auto"]


def test_rerun_encodes_nothing_and_subset_only_new(tmp_path: Path) -> None:
    enc = CountingEncoder()
    out = embed_texts(enc, TEXTS, tmp_path, batch_size=2, progress=False)
    np.testing.assert_array_equal(out, _expected(enc, TEXTS))
    assert sorted(enc.seen) == sorted(set(TEXTS))  # duplicates encoded once
    enc.seen.clear()
    again = embed_texts(enc, TEXTS, tmp_path, progress=False)
    assert enc.seen == []
    np.testing.assert_array_equal(again, out)
    more = ["ein Hund", "new text", "another new one", "x"]
    np.testing.assert_array_equal(embed_texts(enc, more, tmp_path, progress=False), _expected(enc, more))
    assert sorted(enc.seen) == ["another new one", "new text"]


def test_second_encoder_embeds_only_for_itself(tmp_path: Path) -> None:
    a, b = CountingEncoder("a", "A"), CountingEncoder("b", "B")
    embed_texts(a, TEXTS, tmp_path, progress=False)
    out_b = embed_texts(b, TEXTS, tmp_path, progress=False)
    assert sorted(b.seen) == sorted(set(TEXTS))
    np.testing.assert_array_equal(out_b, _expected(b, TEXTS))
    a.seen.clear()
    embed_texts(a, TEXTS, tmp_path, progress=False)
    assert a.seen == []
    dirs = sorted(p.name for p in (tmp_path / "text").iterdir())
    assert len(dirs) == 2
    meta = json.loads((tmp_path / "text" / dirs[0] / "fingerprint.json").read_text())
    assert meta["fingerprint"] in {"fake-A", "fake-B"}


def test_order_and_batching_do_not_matter(tmp_path: Path) -> None:
    enc = CountingEncoder()
    rng = np.random.default_rng(0)
    texts = [f"text {i} " + "w" * int(rng.integers(0, 30)) for i in range(50)]
    ref = _expected(enc, texts)
    for bs in (1, 7, 64):
        perm = rng.permutation(len(texts))
        out = embed_texts(enc, [texts[i] for i in perm], None, batch_size=bs, progress=False)
        np.testing.assert_array_equal(out, ref[perm])
    # misses are sent longest first
    enc.seen.clear()
    embed_texts(enc, texts, None, batch_size=64, progress=False)
    lens = [len(t) for t in enc.seen]
    assert lens == sorted(lens, reverse=True)


def test_lang_dependent_encoder_keys_include_lang(tmp_path: Path) -> None:
    enc = LangEncoder()
    de = embed_texts(enc, ["Gift"], tmp_path, lang="de", progress=False)
    en = embed_texts(enc, ["Gift"], tmp_path, lang="en", progress=False)
    assert enc.seen == ["de:Gift", "en:Gift"]
    assert not np.array_equal(de, en)
    enc.seen.clear()
    embed_texts(enc, ["Gift"], tmp_path, lang="de", progress=False)
    assert enc.seen == []
    # a language-agnostic encoder shares its cache across languages
    plain = CountingEncoder()
    embed_texts(plain, ["Gift"], tmp_path, lang="de", progress=False)
    embed_texts(plain, ["Gift"], tmp_path, lang="en", progress=False)
    assert plain.seen == ["Gift"]
    assert text_key("Gift", "de") != text_key("Gift", "en") != text_key("Gift")


def test_bad_encoder_output_is_reported(tmp_path: Path) -> None:
    class Bad(CountingEncoder):
        def encode(self, texts):  # type: ignore[override]
            return np.zeros((len(texts) + 1, 3))

    with pytest.raises(InputError, match="returned shape"):
        embed_texts(Bad(), ["a", "b"], tmp_path, progress=False)
    assert not list(tmp_path.rglob("shard-*.npz"))


def test_concurrent_writers_and_compaction(tmp_path: Path, monkeypatch) -> None:
    encs = [CountingEncoder() for _ in range(4)]
    chunks = [[f"t{j}-{i}" for i in range(20)] + ["shared"] for j in range(4)]
    threads = [
        threading.Thread(target=embed_texts, args=(e, c, tmp_path), kwargs={"batch_size": 5, "progress": False})
        for e, c in zip(encs, chunks)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cache = EmbeddingCache(tmp_path, "text", "fake-")
    assert len(cache.shards()) == 4
    allt = [t for c in chunks for t in c]
    probe = CountingEncoder()
    np.testing.assert_array_equal(embed_texts(probe, allt, tmp_path, progress=False), _expected(probe, allt))
    assert probe.seen == []
    monkeypatch.setattr(cache_mod, "COMPACT_AT", 4)
    embed_texts(probe, ["one more"], tmp_path, progress=False)  # 5th shard triggers compaction
    assert len(cache.shards()) == 1
    np.testing.assert_array_equal(
        embed_texts(probe, allt + ["one more"], tmp_path, progress=False), _expected(probe, allt + ["one more"])
    )
    assert probe.seen == ["one more"]


def test_corrupt_shard_is_named_and_recomputed(tmp_path: Path, caplog) -> None:
    enc = CountingEncoder()
    embed_texts(enc, ["a"], tmp_path, progress=False)
    shard = next(tmp_path.rglob("shard-*.npz"))
    shard.write_bytes(b"not a zip")
    enc.seen.clear()
    out = embed_texts(enc, ["a"], tmp_path, progress=False)
    np.testing.assert_array_equal(out, _expected(enc, ["a"]))
    assert enc.seen == ["a"] and not shard.exists()
    assert shard.name in caplog.text and "recomputed" in caplog.text


# ------------------------------------------------------------------ images


class FakeBackbone:
    id = "fakebb"
    dim = 4

    def __init__(self) -> None:
        self.seen: list[Path] = []

    def fingerprint(self) -> str:
        return "fakebb-1"

    def encode_images(self, paths):
        self.seen.extend(paths)
        return np.stack(
            [np.frombuffer(hashlib.sha256(Path(p).read_bytes()).digest()[:4], np.uint8) for p in paths]
        ).astype(np.float32)


def test_embed_images_by_content(tmp_path: Path) -> None:
    for name, data in (("a.png", b"AAA"), ("b.png", b"BBB"), ("a_copy.png", b"AAA")):
        (tmp_path / name).write_bytes(data)
    paths = [tmp_path / "a.png", tmp_path / "b.png", tmp_path / "a_copy.png"]
    bb = FakeBackbone()
    out = embed_images(bb, paths, tmp_path / "cache", batch_size=1, progress=False)
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out[0], out[2])
    assert len(bb.seen) == 2
    bb.seen.clear()
    (tmp_path / "c.png").write_bytes(b"CCC")
    embed_images(bb, paths + [tmp_path / "c.png"], tmp_path / "cache", progress=False)
    assert bb.seen == [tmp_path / "c.png"]
    with pytest.raises(InputError, match="missing.png"):
        embed_images(bb, [tmp_path / "missing.png"], tmp_path / "cache", progress=False)


# ------------------------------------------------------------------ datasets


def _dataset(root: Path) -> Path:
    root.mkdir()
    (root / "dataset.json").write_text(
        json.dumps({"name": "tiny", "synthetic": True, "parallel": True, "languages": ["en", "de"]})
    )
    rows = [
        "item_id,lang,image_id,title,body",
        "i1,en,img1,a dog,runs fast",
        "i1,de,img1,ein Hund,rennt schnell",
        "i2,en,img2,a car,is red",
        "i2,de,img2,ein Auto,ist rot",
    ]
    (root / "items.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (root / "imgs").mkdir()
    (root / "imgs" / "1.png").write_bytes(b"one")
    (root / "imgs" / "2.png").write_bytes(b"two")
    (root / "images.csv").write_text("image_id,path\nimg1,imgs/1.png\nimg2,imgs/2.png\n")
    return root


def test_embed_dataset_text(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds")
    spec = {"type": "char_ngram", "dim": 64}
    out = tmp_path / "art" / "de.title_body.npz"
    embed_dataset_text(root, "cg", spec, "de", "title_body", out, tmp_path / "cache", progress=False)
    z = load_npz(out)
    assert z["ids"].tolist() == ["i1", "i2"] and z["emb"].dtype == np.float32
    from backretrieval.encoders import build_text_encoder

    ref = build_text_encoder("cg", spec).encode(["ein Hund\nrennt schnell", "ein Auto\nist rot"])
    np.testing.assert_array_equal(z["emb"], ref)
    with pytest.raises(InputError, match="no texts in language 'fr'"):
        embed_dataset_text(root, "cg", spec, "fr", "title", tmp_path / "fr.npz", None, progress=False)
    assert not (tmp_path / "fr.npz").exists()


def test_embed_dataset_images_files_and_precomputed(tmp_path: Path, monkeypatch) -> None:
    root = _dataset(tmp_path / "ds")
    import backretrieval.images as imf

    bb = FakeBackbone()
    monkeypatch.setattr(imf, "build_image_backbone", lambda bb_id, spec: bb)
    out = tmp_path / "img.npz"
    embed_dataset_images(root, "fakebb", {"type": "fake"}, out, tmp_path / "cache", progress=False)
    z = load_npz(out)
    assert z["ids"].tolist() == ["img1", "img2"]
    np.testing.assert_array_equal(z["emb"], bb.encode_images([root / "imgs/1.png", root / "imgs/2.png"]))
    monkeypatch.undo()

    (root / "features").mkdir()
    feats = np.arange(6, dtype=np.float16).reshape(2, 3)
    np.save(root / "features" / "r50.npy", feats)
    (root / "features" / "r50.ids.txt").write_text("img2\nimg1\n")
    embed_dataset_images(root, "r50", {"type": "precomputed", "name": "r50"}, out, None, progress=False)
    z = load_npz(out)
    assert z["ids"].tolist() == ["img2", "img1"] and z["emb"].dtype == np.float32
    np.testing.assert_array_equal(z["emb"], feats.astype(np.float32))
