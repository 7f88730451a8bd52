"""Tests for backretrieval.encoders.dictionaries (FreeDict) and backretrieval.encoders.wordvec (fastText + maps)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ortho_group
from threadpoolctl import threadpool_limits

import backretrieval
from backretrieval.encoders.dictionaries import (
    load_freedict_pairs,
    parse_article,
    parse_dictd_pairs,
    rank_seed_pairs,
    select_seed_pairs,
    tokenize,
)
from backretrieval.encoders.wordvec import (
    align_cca,
    align_procrustes,
    align_rcsls,
    build_wordvec_encoder,
    doc_vectors,
    first_principal_direction,
    normalize_embeddings,
    rcsls_loss_grad,
    sif_weights,
    train_fasttext,
)
from backretrieval.errors import ConfigError, InputError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
M30K = SHARED / "multi30k" / "data" / "task1" / "raw"
SYS_DICTD = Path("/usr/share/dictd")
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


# ---------------------------------------------------------------------------- tokenisation


def test_tokenize_unicode_scripts():
    assert tokenize("Ein Mann, der läuft!") == ["ein", "mann", "der", "läuft"]
    assert tokenize("Привет, МИР - ёж") == ["привет", "мир", "ёж"]
    # Arabic with harakat (combining marks) stays one token; the comma (U+060C) separates
    assert tokenize("كَتَبَ، الولدُ") == ["كَتَبَ", "الولدُ"]
    assert tokenize("a_b 3.5 don't") == ["a", "b", "3", "5", "don", "t"]
    assert tokenize("") == []


# ---------------------------------------------------------------------------- FreeDict


def _b64(n: int) -> str:
    out = ""
    while True:
        out = B64[n % 64] + out
        n //= 64
        if n == 0:
            return out


def write_dictd(folder: Path, stem: str, articles: list[tuple[str, str]], compress: bool = True) -> None:
    """A dictd dictionary: ``<stem>.index`` + ``<stem>.dict(.dz)`` (gzip = valid dictzip)."""
    data = b""
    index = []
    meta = "00-database-info\nA test dictionary\n"
    for head, text in [("00databaseinfo", meta), *articles]:
        raw = text.encode("utf-8")
        index.append(f"{head}\t{_b64(len(data))}\t{_b64(len(raw))}\n")
        data += raw
    (folder / f"{stem}.index").write_text("".join(index), encoding="utf-8")
    if compress:
        with gzip.open(folder / f"{stem}.dict.dz", "wb") as fh:
            fh.write(data)
    else:
        (folder / f"{stem}.dict").write_bytes(data)


ENG_DEU = [
    (
        "dog",
        'dog /dˈɒɡ/\nHund <masc> [zool.]\n      "train a dog"  - einen Hund abrichten\n'
        "   Synonym: {dawg}\n\n see: {dogs}\n\n",
    ),
    ("dog", "dog /dˈɒɡ/\nBandhaken <masc>, Bandzieher <masc>\n         Note: Fassbinderei\n"),
    ("street", "street /stɹˈiːt/ (St /sˈənt/)\nStraße <fem>Str.,  /ˌɛstˌiːˈɑː/\n         Note: in der Stadt\n"),
    ("man", "man /mˈan/\n1. Mann, Mensch\n2. die Menschheit\n"),
    ("red car", "red car /rɛd/\nrotes Auto\n"),  # multi-word headword: dropped
]
DEU_ENG = [
    ("frau", 'Frau /frˈaʊ/ <fem, n, sg>\nwoman <n>\n      "die Frau von heute"  - the new woman\n'),
    ("hund", "Hund /hˈʊnt/ <masc, n, sg>\n [zool.] dog <n>, mine car <n>\n"),
]


def test_parse_article_drops_examples_notes_and_labels():
    head, tr = parse_article(ENG_DEU[0][1])
    assert head == "dog"
    assert [t for t in tr if t.strip()] == ["Hund"]
    head, tr = parse_article(ENG_DEU[3][1])
    assert head == "man" and tr == ["Mann", "Mensch", "die Menschheit"]


def test_load_freedict_pairs_both_directions(tmp_path):
    write_dictd(tmp_path, "freedict-eng-deu", ENG_DEU)
    write_dictd(tmp_path, "freedict-deu-eng", DEU_ENG, compress=False)
    pairs = load_freedict_pairs("en", "de", tmp_path)
    expected = {
        ("dog", "hund"),
        ("dog", "bandhaken"),
        ("dog", "bandzieher"),
        ("street", "straße"),
        ("street", "str"),
        ("man", "mann"),
        ("man", "mensch"),
        ("woman", "frau"),  # from deu-eng, flipped
    }
    assert set(pairs) == expected
    assert pairs == sorted(pairs)
    # the other direction is the flip; ISO 639-3 codes work too
    assert load_freedict_pairs("deu", "eng", tmp_path) == sorted((b, a) for a, b in expected)
    # vocabulary filter = filtering the full list
    vocab = ({"dog", "woman", "street"}, {"hund", "frau", "bandhaken"})
    filtered = load_freedict_pairs("en", "de", tmp_path, vocab=vocab)
    assert filtered == [p for p in pairs if p[0] in vocab[0] and p[1] in vocab[1]]
    assert filtered == [("dog", "bandhaken"), ("dog", "hund"), ("woman", "frau")]


def test_missing_dictionary_names_package(tmp_path):
    write_dictd(tmp_path, "freedict-eng-deu", ENG_DEU)
    with pytest.raises(InputError, match=r"apt-get install dict-freedict-eng-fra"):
        load_freedict_pairs("en", "fr", tmp_path)
    with pytest.raises(InputError, match="no FreeDict code"):
        load_freedict_pairs("en", "klingon", tmp_path)
    with pytest.raises(InputError, match="dict-freedict-eng-deu"):
        load_freedict_pairs("en", "de", tmp_path / "nowhere")


def test_freedict_entries_are_segmented_like_the_corpus(tmp_path):
    pytest.importorskip("fugashi", reason="fugashi not installed (pip install fugashi unidic-lite)")
    # a multi-word Japanese "translation" is not a single word once segmented: dropped
    write_dictd(
        tmp_path,
        "freedict-eng-jpn",
        [
            ("cat", "cat /kæt/\n猫\n"),
            ("sofa", "sofa /ˈsəʊfə/\nソファ\n"),
            ("sleeping", "sleeping\n寝ている\n"),
        ],
    )
    pairs = parse_dictd_pairs(
        tmp_path / "freedict-eng-jpn.index", tmp_path / "freedict-eng-jpn.dict.dz", head_lang="eng", trans_lang="jpn"
    )
    assert pairs == [("cat", "猫"), ("sofa", "ソファ")]


def test_corrupt_index_is_an_input_error(tmp_path):
    write_dictd(tmp_path, "freedict-eng-deu", ENG_DEU)
    idx = tmp_path / "freedict-eng-deu.index"
    idx.write_text(idx.read_text() + "broken line without tabs\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"freedict-eng-deu.index: line \d+"):
        load_freedict_pairs("en", "de", tmp_path)
    write_dictd(tmp_path, "freedict-eng-deu", ENG_DEU)
    idx.write_text(idx.read_text() + "cat\tZZZZ\tB\n", encoding="utf-8")
    with pytest.raises(InputError, match="past the end"):
        load_freedict_pairs("en", "de", tmp_path)


@pytest.mark.skipif(
    not (SYS_DICTD / "freedict-eng-fra.index").is_file(),
    reason="Debian package dict-freedict-eng-fra not installed (apt-get install dict-freedict-eng-fra)",
)
def test_real_installed_freedict_eng_fra():
    pairs = set(load_freedict_pairs("en", "fr"))
    assert {("dog", "chien"), ("man", "homme"), ("woman", "femme")} <= pairs
    assert all(len(tokenize(a)) == 1 and len(tokenize(b)) == 1 for a, b in pairs)
    assert len(pairs) > 5000


@pytest.mark.skipif(
    not (SYS_DICTD / "freedict-eng-rus.index").is_file(),
    reason="Debian package dict-freedict-eng-rus not installed (apt-get install dict-freedict-eng-rus)",
)
def test_real_installed_freedict_eng_rus_cyrillic():
    pairs = set(load_freedict_pairs("en", "ru"))
    assert ("and", "и") in pairs


def test_seed_selection_by_frequency_nested_and_reported():
    pairs = [("a", "x"), ("a", "y"), ("a", "z"), ("b", "y"), ("c", "w"), ("d", "q"), ("e", "v")]
    src = {"a": 10, "b": 5, "c": 1, "d": 3}  # "e" not in the source vocabulary
    tgt = {"x": 8, "y": 9, "z": 7, "w": 2, "q": 30, "v": 1}
    # relative frequencies: src total 19, tgt total 57; pair score = min of the two
    #   a-x: min(10/19, 8/57)=.1404  a-y: min(.526, 9/57=.1579)  a-z: .1228
    #   b-y: min(5/19=.263, .1579)   c-w: min(.0526, .0351)      d-q: min(.1579, .526)
    # order: (a,y) (b,y) (d,q) tie .1579 -> by word; then a-x .1404, a-z .1228 (a capped at 2),
    # y is capped at 2 as well
    ranked = rank_seed_pairs(pairs, src, tgt, max_per_word=2)
    assert ranked == [("a", "y"), ("b", "y"), ("d", "q"), ("a", "x"), ("c", "w")]
    one, three, five = (select_seed_pairs(pairs, src, tgt, n) for n in (1, 3, 5))
    assert one.pairs == three.pairs[:1] and three.pairs == five.pairs[:3]
    big = select_seed_pairs(pairs, src, tgt, 5000)
    assert big.size == 5 and big.requested == 5000 and big.available == 5 and big.truncated
    assert rank_seed_pairs(pairs, src, tgt, max_per_word=1) == [("a", "y"), ("d", "q"), ("c", "w")]
    with pytest.raises(InputError):
        select_seed_pairs(pairs, src, tgt, 0)


# ---------------------------------------------------------------------------- alignment


def test_procrustes_recovers_orthogonal_map():
    rng = np.random.default_rng(0)
    Q = ortho_group.rvs(20, random_state=1)
    X = rng.normal(size=(200, 20))
    W = align_procrustes(X, X @ Q)
    np.testing.assert_allclose(W, Q, atol=1e-10)
    np.testing.assert_allclose(W.T @ W, np.eye(20), atol=1e-10)
    with pytest.raises(InputError):
        align_procrustes(X, X[:10])


def test_cca_recovers_planted_shared_subspace():
    rng = np.random.default_rng(0)
    n, k, d = 2000, 3, 10
    z = rng.normal(size=(n, k))
    X = z @ rng.normal(size=(k, d)) + 0.05 * rng.normal(size=(n, d))
    Y = z @ rng.normal(size=(k, d)) + 0.05 * rng.normal(size=(n, d))
    Y[:, 5:] = rng.normal(size=(n, 5))  # target dimensions unrelated to the source
    Wx, Wy = align_cca(X, Y, dim=5)
    u, v = X @ Wx, Y @ Wy
    corr = [np.corrcoef(u[:, j], v[:, j])[0, 1] for j in range(5)]
    assert min(corr[:3]) > 0.95  # the planted shared directions
    assert max(abs(c) for c in corr[3:]) < 0.15  # nothing else is shared
    # canonical variates are uncorrelated; the well-determined ones have unit variance (the
    # ridge shrinks the pure-noise source directions, whose variance is tiny here)
    cu = np.cov(u.T)
    np.testing.assert_allclose(cu[:3, :3], np.eye(3), atol=1e-2)
    np.testing.assert_allclose(cu - np.diag(np.diag(cu)), 0.0, atol=1e-2)
    # independent reference for the top canonical correlation: max over linear combos via
    # sklearn's iterative CCA (installed with sentence-transformers)
    sk = pytest.importorskip("sklearn.cross_decomposition")
    a, b = sk.CCA(n_components=1).fit(X, Y).transform(X, Y)
    assert abs(np.corrcoef(a[:, 0], b[:, 0])[0, 1] - corr[0]) < 1e-3


def _planted_translation_task(seed: int = 0, n: int = 300, d: int = 20, noise: float = 0.35):
    """Synthetic: target words Zt; source words are a rotation of them plus noise."""
    rng = np.random.default_rng(seed)
    Zt = normalize_embeddings(rng.normal(size=(n, d)))
    Q = ortho_group.rvs(d, random_state=seed)
    Zs = normalize_embeddings(Zt @ Q.T + noise * rng.normal(size=(n, d)) / np.sqrt(d))
    return Zs, Zt


def _p_at_1(Zs, Zt, W, rows):
    sc = (Zs[rows] @ W) @ Zt.T
    return float(np.mean(sc.argmax(axis=1) == rows))


def _rcsls_loss_loop(X, Y, Zs, Zt, W, k):
    """Slow reference of the RCSLS loss: one query at a time."""
    total = 0.0
    for x, y in zip(X, Y):
        xw = x @ W
        nt = np.sort(Zt @ xw)[-k:]
        ns = np.sort((Zs @ W) @ y)[-k:]
        total += -2 * xw @ y + nt.mean() + ns.mean()
    return total / len(X)


def test_rcsls_loss_and_gradient_match_references():
    Zs, Zt = _planted_translation_task(n=120, d=8)
    X, Y = Zs[:40], Zt[:40]
    W = align_procrustes(X, Y) + 0.01 * np.random.default_rng(3).normal(size=(8, 8))
    loss, grad = rcsls_loss_grad(X, Y, Zs, Zt, W, k=5)
    assert loss == pytest.approx(_rcsls_loss_loop(X, Y, Zs, Zt, W, 5), abs=1e-10)
    eps = 1e-6
    for i, j in [(0, 0), (2, 5), (7, 3)]:
        E = np.zeros_like(W)
        E[i, j] = eps
        num = (_rcsls_loss_loop(X, Y, Zs, Zt, W + E, 5) - _rcsls_loss_loop(X, Y, Zs, Zt, W - E, 5)) / (2 * eps)
        assert grad[i, j] == pytest.approx(num, abs=1e-6)


def test_rcsls_not_worse_than_procrustes_on_planted_noisy_case():
    Zs, Zt = _planted_translation_task(seed=0, n=300, d=20, noise=0.8)
    train = np.arange(100)
    test = np.arange(100, 300)
    X, Y = Zs[train], Zt[train]
    W0 = align_procrustes(X, Y)
    p0 = _p_at_1(Zs, Zt, W0, test)
    assert p0 > 0.5  # the planted task is solvable at all
    for spectral in (False, True):
        W = align_rcsls(X, Y, Zs, Zt, k=10, epochs=10, lr=25.0 if not spectral else 1.0, spectral=spectral)
        l0, _ = rcsls_loss_grad(X, Y, Zs, Zt, W0, 10)
        l1, _ = rcsls_loss_grad(X, Y, Zs, Zt, W, 10)
        assert l1 < l0  # it optimises its loss; backtracking never accepts a worse step
    # Held-out P@1: the planted map *is* orthogonal (Procrustes' model class), and an
    # unconstrained W overfits 100 pairs (its loss is unbounded below: it is linear in W) -
    # the spectral (unit-ball) variant stays within 3 points of the Procrustes init.
    p1 = _p_at_1(Zs, Zt, W, test)
    assert p1 >= p0 - 0.03, (p0, p1)
    # spectral variant keeps singular values in [0, 1]
    Ws = align_rcsls(X, Y, Zs, Zt, epochs=3, spectral=True)
    assert np.linalg.svd(Ws, compute_uv=False).max() <= 1 + 1e-9
    # zero epochs = the Procrustes initialisation
    np.testing.assert_allclose(align_rcsls(X, Y, Zs, Zt, epochs=0), W0)
    # seeded minibatch SGD is deterministic
    a = align_rcsls(X, Y, Zs, Zt, epochs=3, batch_size=50, seed=7)
    b = align_rcsls(X, Y, Zs, Zt, epochs=3, batch_size=50, seed=7)
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------- document vectors


def test_single_word_doc_is_its_normalised_vector():
    vecs = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]])
    index = {"hund": 0, "katze": 1}
    out = doc_vectors(["Hund!", "zebra", "katze zebra"], index, vecs, weights=np.array([0.1, 5.0]))
    np.testing.assert_allclose(out[0], [0.6, 0.8, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(out[1], 0.0)  # only unknown words → zero vector
    np.testing.assert_allclose(out[2], [0.0, 0.0, 1.0], rtol=1e-6)
    assert out.dtype == np.float32


def test_sif_downweights_frequent_words_hand_computed():
    counts = np.array([3, 1])  # p = (0.75, 0.25)
    w = sif_weights(counts, a=0.25)
    np.testing.assert_allclose(w, [0.25 / 1.0, 0.25 / 0.5])  # (0.25, 0.5)
    vecs = np.eye(2)
    index = {"the": 0, "cat": 1}
    out = doc_vectors(["the cat"], index, vecs, weights=w)
    np.testing.assert_allclose(out[0], np.array([1.0, 2.0]) / np.sqrt(5), rtol=1e-6)
    plain = doc_vectors(["the cat"], index, vecs)
    np.testing.assert_allclose(plain[0], np.array([1.0, 1.0]) / np.sqrt(2), rtol=1e-6)
    # removing a principal direction leaves vectors orthogonal to it
    pc = np.array([1.0, 0.0])
    out = doc_vectors(["the cat", "cat"], index, vecs, weights=w, pc=pc, normalize=False)
    np.testing.assert_allclose(out @ pc, 0.0, atol=1e-7)
    np.testing.assert_allclose(out[0], [0.0, 0.25], rtol=1e-6)  # (0.25*e1 + 0.5*e2)/2 minus e1 part


def test_normalize_embeddings_unit_and_centred():
    x = np.random.default_rng(0).normal(size=(50, 6)) + 3.0
    n = normalize_embeddings(x)
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, rtol=1e-5)
    assert np.abs(n.mean(axis=0)).max() < 0.1  # centred before the final rescale


# ---------------------------------------------------------------------------- encoder spec


def test_spec_validation(tmp_path):
    base = dict(type="wordvec", method="procrustes", dict_size=1000, corpus=str(tmp_path), languages=["de"])
    enc = build_wordvec_encoder("x", base)
    assert enc.spec.languages == ("en", "de")  # hub added
    assert build_wordvec_encoder("x", {**base, "method": "cca"}).spec.cca_space == "pair"
    assert build_wordvec_encoder("x", {**base, "method": "cca", "languages": ["de", "fr"]}).spec.cca_space == "hub"
    with pytest.raises(ConfigError, match="method"):
        build_wordvec_encoder("x", {**base, "method": "muse"})
    with pytest.raises(ConfigError, match="'corpus' is required"):
        build_wordvec_encoder("x", {k: v for k, v in base.items() if k != "corpus"})
    with pytest.raises(ConfigError, match="dict_size"):
        build_wordvec_encoder("x", {**base, "dict_size": 0})
    with pytest.raises(ConfigError, match="unknown field"):
        build_wordvec_encoder("x", {**base, "dimension": 5})
    with pytest.raises(ConfigError, match="exactly one language"):
        build_wordvec_encoder("x", {**base, "method": "cca", "cca_space": "pair", "languages": ["de", "fr"]})
    with pytest.raises(InputError, match="needs the language"):
        enc.encode(["a dog"])
    with pytest.raises(InputError, match="not in its languages"):
        enc.encode(["a dog"], lang="fr")
    with pytest.raises(ConfigError, match="does not exist"):
        build_wordvec_encoder("x", {**base, "corpus": str(tmp_path / "missing")}).encode(["x"], "en")


# ---------------------------------------------------------------------------- fastText + e2e


def _lines(path: Path, n: int | None = None) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        out = []
        for i, line in enumerate(fh):
            if n is not None and i >= n:
                break
            out.append(line.strip())
    return out


needs_m30k = pytest.mark.skipif(
    not (M30K / "train.en.gz").is_file(),
    reason=f"real Multi30K captions not found under {M30K} (../shared/datasets absent)",
)


_TRAIN_IN_FRESH_PROCESS = """
import gzip, hashlib, sys
from backretrieval.encoders.wordvec import train_fasttext
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as fh:
    sents = [line.strip() for _, line in zip(range(int(sys.argv[2])), fh)]
mv = train_fasttext(sents, dim=50, epochs=5, seed=0)
print(hashlib.sha256(mv.vectors.tobytes()).hexdigest())
"""


@needs_m30k
def test_fasttext_training_is_bit_identical():
    # the same vectors again in this process, and in a fresh process with another hash seed, one
    # BLAS thread and glibc's MALLOC_PERTURB_=128 (new heap memory is filled with 0x7F bytes,
    # the float 3.4e38): a trainer that reads memory it never initialised (fasttext-numpy2's
    # input matrix) drifts or fails with "Encountered NaN." there.
    # scripts/stress_fasttext.py repeats this 30 + 30 times on the whole Multi30K corpus.
    sents = _lines(M30K / "train.en.gz", 3000)
    a = train_fasttext(sents, dim=50, epochs=5, seed=0)
    b = train_fasttext(sents, dim=50, epochs=5, seed=0)
    assert a.words == b.words
    np.testing.assert_array_equal(a.vectors, b.vectors)
    src = str(Path(backretrieval.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "MALLOC_PERTURB_": "128",
        "PYTHONHASHSEED": "4321",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    out = subprocess.run(
        [sys.executable, "-c", _TRAIN_IN_FRESH_PROCESS, str(M30K / "train.en.gz"), "3000"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == hashlib.sha256(a.vectors.tobytes()).hexdigest()
    c = train_fasttext(sents, dim=50, epochs=5, seed=7)
    assert not np.array_equal(a.vectors, c.vectors)  # the seed reaches the trainer
    assert a.words[0] == "a" and int(a.counts[0]) == max(a.counts)
    assert a.vectors.dtype == np.float32 and a.vectors.shape == (len(a.words), 50)
    assert np.isfinite(a.vectors).all()


def test_alignment_does_not_depend_on_blas_threads():
    # OpenBLAS sums X.T @ Y over thousands of rows (and the SVDs) in another order with 2
    # threads than with 1; the maps and document vectors must not change with the core count.
    rng = np.random.default_rng(5)
    n, d = 3000, 64
    Zs = normalize_embeddings(rng.standard_normal((4000, d)))
    Zt = normalize_embeddings(Zs @ ortho_group.rvs(d, random_state=6) + 0.3 * rng.standard_normal((4000, d)))
    X, Y = Zs[:n].astype(np.float64), Zt[:n].astype(np.float64)
    index = {f"w{i}": i for i in range(len(Zs))}
    texts = [" ".join(f"w{j}" for j in rng.integers(0, len(Zs), 12)) for _ in range(500)]

    def run() -> list[np.ndarray]:
        wx, wy = align_cca(X, Y, 32)
        docs = doc_vectors(texts, index, Zs, normalize=False)
        return [
            align_procrustes(X, Y),
            wx,
            wy,
            align_rcsls(X, Y, Zs, Zt, k=5, epochs=2),
            docs,
            first_principal_direction(docs),
        ]

    with threadpool_limits(limits=1, user_api="blas"):
        one = run()
    with threadpool_limits(limits=2, user_api="blas"):
        two = run()
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def toy_m30k(tmp_path_factory):
    """Prepared dataset: first 3000 Multi30K train captions + the 1014 val captions (en, de)."""
    if not (M30K / "train.en.gz").is_file():
        pytest.skip(f"real Multi30K captions not found under {M30K}")
    if not (SYS_DICTD / "freedict-eng-deu.index").is_file() and not (SYS_DICTD / "freedict-deu-eng.index").is_file():
        pytest.skip("Debian package dict-freedict-eng-deu not installed (apt-get install dict-freedict-eng-deu)")
    root = tmp_path_factory.mktemp("m30k")
    rows = []
    val = {}
    for lang in ("en", "de"):
        for split, n in (("train", 3000), ("val", None)):
            texts = _lines(M30K / f"{split}.{lang}.gz", n)
            if split == "val":
                val[lang] = texts
            rows += [
                dict(item_id=f"{split}{i}", lang=lang, image_id=f"{split}{i}", title=t, body="", split=split)
                for i, t in enumerate(texts)
            ]
    pd.DataFrame(rows).to_csv(root / "items.csv", index=False)
    (root / "dataset.json").write_text(json.dumps({"name": "m30k-toy", "languages": ["en", "de"]}))
    return root, val


def _retrieval(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """P@1 and R@10 of retrieving row i of b for row i of a (cosine; rows L2-normalised)."""
    s = a @ b.T
    rank = (s > np.diag(s)[:, None]).sum(axis=1)
    return float(np.mean(rank == 0)), float(np.mean(rank < 10))


@pytest.mark.slow
@pytest.mark.shared_data
def test_end_to_end_multi30k_en_de(toy_m30k, tmp_path):
    root, val = toy_m30k
    base = dict(
        type="wordvec",
        corpus=str(root),
        languages=["en", "de"],
        dim=100,
        epochs=10,
        seed=0,
        cache_dir=str(tmp_path / "cache"),
        rcsls_epochs=5,
    )
    chance_p1, chance_r10 = 1 / len(val["en"]), 10 / len(val["en"])
    results = {}
    configs = [
        ("procrustes", 1000, {}),
        ("procrustes", 5000, {}),
        ("rcsls", 1000, {}),
        ("cca", 1000, {}),  # auto = pair space with a single partner language
        ("cca-hub-plain", 1000, {"method": "cca", "cca_space": "hub", "remove_pc": False, "sif": False}),
    ]
    for method, size, extra in configs:
        spec = {**base, "method": method, "dict_size": size, **extra}
        enc = build_wordvec_encoder(f"{method}-{size}", spec)
        de = enc.encode(val["de"], "de")
        en = enc.encode(val["en"], "en")
        assert de.dtype == np.float32 and de.shape == (len(val["de"]), 100)
        results[(method, size)] = _retrieval(de, en)
        meta = enc.metadata()["languages"]["de"]
        results[(method, size, "dict")] = (meta["dict_size"], meta["dict_requested"])
    print("\nMulti30K val de→en (3000 train lines, dim 100):", results)
    for key, (p1, r10) in ((k, v) for k, v in results.items() if len(k) == 2):
        assert p1 > 10 * chance_p1 and r10 > 5 * chance_r10, (key, p1, r10)
    # the 5K dictionary is truncated to what the small corpus offers, and says so
    size5k, req5k = results[("procrustes", 5000, "dict")]
    assert req5k == 5000 and 1000 < size5k <= 5000
    assert results[("procrustes", 5000)][0] >= results[("procrustes", 1000)][0] - 0.03
    # one pair of monolingual models is shared by the four family members
    assert len(list((tmp_path / "cache" / "mono").glob("*.npz"))) == 2
    # cached re-run: identical vectors, bit for bit
    again = build_wordvec_encoder("p", {**base, "method": "procrustes", "dict_size": 1000})
    first = build_wordvec_encoder("p", {**base, "method": "procrustes", "dict_size": 1000})
    np.testing.assert_array_equal(again.encode(val["de"][:50], "de"), first.encode(val["de"][:50], "de"))
    assert again.fingerprint() == first.fingerprint()
    other = build_wordvec_encoder("p", {**base, "method": "procrustes", "dict_size": 3000})
    assert other.fingerprint() != first.fingerprint()
