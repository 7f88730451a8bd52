"""Tests for backretrieval.encoders.tokenize: the one word tokeniser of the word-level encoders."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from backretrieval.encoders import tokenize as tk
from backretrieval.encoders.tokenize import TOKENIZER_VERSION, normalize_lang, tokenize, tokenizer_signature
from backretrieval.encoders.vec import AlignedVecEncoder, average_word_vectors
from backretrieval.encoders.wordvec import train_fasttext
from backretrieval.errors import ModelUnavailableError

JA = "猫がソファの上で寝ている。"
JA_WORDS = ["猫", "が", "ソファ", "の", "上", "で", "寝", "て", "いる"]


@pytest.fixture
def fresh_segmenters():
    """Segmenters are loaded once per process; tests that hide a package need a clean slate."""
    tk._segmenter.cache_clear()
    yield
    tk._segmenter.cache_clear()


def test_spaced_languages_use_the_letter_mark_digit_rule():
    assert tokenize("Ein Mann, der läuft!", "de") == ["ein", "mann", "der", "läuft"]
    assert tokenize("Ein Mann, der läuft!") == ["ein", "mann", "der", "läuft"]
    assert tokenize("كَتَبَ، الولدُ", "ar") == ["كَتَبَ", "الولدُ"]
    assert tokenizer_signature("de") == tokenizer_signature(None) == TOKENIZER_VERSION


def test_language_codes_are_normalised():
    assert [normalize_lang(x) for x in ("ja", "JA-jp", "jpn", "zh_Hans", "cmn", "tha", "en", None)] == [
        "ja",
        "ja",
        "ja",
        "zh",
        "zh",
        "th",
        "en",
        None,
    ]


def test_japanese_sentence_yields_its_words():
    pytest.importorskip("fugashi", reason="fugashi not installed (pip install fugashi unidic-lite)")
    pytest.importorskip("unidic_lite", reason="unidic-lite not installed (pip install unidic-lite)")
    assert tokenize(JA, "ja") == JA_WORDS
    assert tokenize(JA, "jpn") == tokenize(JA, "ja-JP") == JA_WORDS
    # NFKC first: half-width katakana and full-width Latin become one spelling; punctuation goes
    assert tokenize("ｿﾌｧの上。ＡＢＣ", "ja") == ["ソファ", "の", "上", "abc"]
    # without the language the whole run of letters is a single token, as before
    assert tokenize(JA) == ["猫がソファの上で寝ている"]
    sig = tokenizer_signature("ja")
    assert sig.startswith(f"{TOKENIZER_VERSION}+fugashi==") and "unidic-lite==" in sig


def test_chinese_sentence_yields_its_words():
    pytest.importorskip("jieba", reason="jieba not installed (pip install jieba)")
    assert tokenize("我爱北京天安门。", "zh") == ["我", "爱", "北京", "天安门"]
    assert tokenize("一只猫在沙发上睡觉", "zh-CN") == ["一只", "猫", "在", "沙发", "上", "睡觉"]


def test_thai_sentence_yields_its_words():
    pytest.importorskip("pythainlp", reason="pythainlp not installed (pip install pythainlp)")
    assert tokenize("แมวนอนอยู่บนโซฟา", "th") == ["แมว", "นอน", "อยู่", "บน", "โซฟา"]


def test_thai_sara_am_survives_normalisation():
    # NFKC splits SARA AM (U+0E33) into NIKHAHIT + SARA AA; segmented after NFKC, the words broke
    # into ผู้/ชา/ยก/ํา/ลัง. The words come out whole, spelled with U+0E33 as written.
    pytest.importorskip("pythainlp", reason="pythainlp not installed (pip install pythainlp)")
    assert tokenize("ผู้ชายกำลังเดินอยู่บนถนน", "th") == ["ผู้ชาย", "กำลัง", "เดิน", "อยู่", "บน", "ถนน"]
    assert "\u0e33" in tokenize("ผู้ชายกำลังเดิน", "th")[1]
    # a tone mark before SARA AM (น้ำ, water) stays in place; text already decomposed is mended
    assert tokenize("ผู้ชายดื่มน้ำ", "th") == tokenize("ผู้ชายดื่มน\u0e49\u0e4d\u0e32", "th") == ["ผู้ชาย", "ดื่ม", "น้ำ"]
    assert tokenizer_signature("th").startswith("2+pythainlp==")
    assert tokenizer_signature("en") == tokenizer_signature(None) == TOKENIZER_VERSION


@pytest.mark.parametrize(
    "lang,module,package",
    [
        ("ja", "fugashi", "fugashi unidic-lite"),
        ("zh", "jieba", "jieba"),
        ("th", "pythainlp", "pythainlp"),
    ],
)
def test_missing_segmenter_names_the_package(monkeypatch, fresh_segmenters, lang, module, package):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import <module>` raise ImportError
    for key in [k for k in sys.modules if k.startswith(module + ".")]:
        monkeypatch.setitem(sys.modules, key, None)
    with pytest.raises(ModelUnavailableError, match=rf"pip install {package}"):
        tokenize("text", lang)


def test_unsupported_unspaced_language_is_an_error_not_one_token():
    with pytest.raises(ModelUnavailableError, match="Khmer.*no word segmenter"):
        tokenize("ឆ្មាដេកលើសាឡុង", "km")
    with pytest.raises(ModelUnavailableError, match="Lao"):
        tokenizer_signature("lo")


def test_word_vector_average_uses_the_segmenter(tmp_path, monkeypatch):
    # MUSE/RCSLS/GloVe path: the Japanese sentence finds the vectors of its words
    pytest.importorskip("fugashi", reason="fugashi not installed (pip install fugashi unidic-lite)")
    vec = tmp_path / "wiki.multi.ja.vec"
    vec.write_text("2 2\n猫 1 0\nソファ 0 1\n", encoding="utf-8")
    vocab = {"猫": 0, "ソファ": 1}
    mat = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    np.testing.assert_array_equal(average_word_vectors([JA], vocab, mat, "ja"), [[0.5, 0.5]])
    enc = AlignedVecEncoder("muse", {"type": "muse", "vectors": {"ja": str(vec)}})
    np.testing.assert_array_equal(enc.encode([JA], lang="ja"), [[0.5, 0.5]])
    # cached embeddings are keyed by the segmenter (and its version) too
    before = enc.fingerprint_for("ja")
    monkeypatch.setattr("backretrieval.encoders.vec.tokenizer_signature", lambda lang: "another segmenter")
    assert enc.fingerprint_for("ja") != before


def test_fasttext_vocabulary_of_japanese_corpus_is_words():
    pytest.importorskip("fugashi", reason="fugashi not installed (pip install fugashi unidic-lite)")
    sents = [JA, "犬がソファの下で寝ている。", "猫と犬が遊んでいる。"] * 20
    mv = train_fasttext(sents, lang="ja", dim=8, epochs=1, seed=0, bucket=1000)
    assert {"猫", "犬", "ソファ", "寝", "遊ん"} <= set(mv.words)
    assert all(len(w) <= 3 for w in mv.words)  # no whole sentences
