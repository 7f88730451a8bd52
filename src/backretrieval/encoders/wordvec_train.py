"""Monolingual fastText vectors for the word-vector family (:mod:`.wordvec`): training with
gensim's FastText (one worker, seeded) and the vocabulary they cover.

The vectors are a pure function of (sentences, settings, gensim version); see "Determinism" in
:mod:`.wordvec`'s docstring.

Facebook's ``fasttext`` Python builds are not used: in the numpy-2 build (fasttext-numpy2 0.10.4)
the input matrix is allocated with ``posix_memalign`` and never zeroed, and its initialiser
fills only the first ``thread/10`` of it, so with ``thread=1`` about 90 % of the subword rows
start from whatever the allocator hands back: usually fresh zero pages, sometimes reused heap
(other results, or NaN patterns: "Encountered NaN."), depending on the process's history.
gensim follows fastText's skip-gram with negative sampling (subwords of 3-6 characters hashed
into ``bucket`` rows, unigram^0.5 negative table, subsampling threshold ``t``, learning rate
decayed linearly to 0); it differs in two details: no end-of-line token ``</s>`` in the
contexts, and the learning rate is updated once per batch of 10,000 words (fastText: every
100 tokens).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError, ModelUnavailableError
from .tokenize import tokenize

# --------------------------------------------------------------------------------------------
# monolingual vectors


@dataclass(frozen=True)
class MonoVectors:
    """A monolingual vocabulary: words (most frequent first), vectors, corpus counts."""

    words: tuple[str, ...]
    vectors: np.ndarray  # float32 (n, d)
    counts: np.ndarray  # int64 (n,) token counts in the training corpus (our tokeniser)

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.words):
            raise InputError(f"MonoVectors: vectors must be ({len(self.words)}, d), got {self.vectors.shape}")
        if self.counts.shape != (len(self.words),):
            raise InputError(f"MonoVectors: counts must have shape ({len(self.words)},)")

    @property
    def index(self) -> dict[str, int]:
        idx = self.__dict__.get("_index")
        if idx is None:
            idx = {w: i for i, w in enumerate(self.words)}
            object.__setattr__(self, "_index", idx)
        return idx

    def count_map(self) -> dict[str, int]:
        return dict(zip(self.words, self.counts.tolist()))


def normalize_embeddings(x: np.ndarray) -> np.ndarray:
    """Unit length, mean-centre, unit length again (Artetxe et al. 2018), float32."""
    x = np.asarray(x, dtype=np.float64)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    x = x - x.mean(axis=0, keepdims=True)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return x.astype(np.float32)


def _import_gensim_fasttext() -> Any:
    try:
        from gensim.models import FastText  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ModelUnavailableError(
            "wordvec encoders train fastText vectors with gensim: pip install gensim (or the project's 'models' extra)"
        ) from exc
    return FastText


#: fastText's training reads at most this many tokens of a line as one context sequence
#: (``MAX_LINE_SIZE``); longer texts are cut into such pieces, as fastText does.
_MAX_LINE_TOKENS = 1024


def train_fasttext(
    sentences: Sequence[str],
    *,
    lang: str | None = None,
    dim: int = 100,
    epochs: int = 10,
    min_count: int = 1,
    seed: int = 0,
    model: str = "skipgram",
    ws: int = 5,
    neg: int = 5,
    minn: int = 3,
    maxn: int = 6,
    lr: float = 0.05,
    t: float = 1e-4,
    bucket: int = 200_000,
) -> MonoVectors:
    """fastText vectors of ``sentences`` (tokenised with :func:`tokenize` for ``lang``).

    Trained by gensim's FastText with fastText's own defaults (``model`` skipgram or cbow,
    window ``ws``, ``neg`` negatives drawn from unigram^0.5, character n-grams ``minn``-``maxn``
    hashed into ``bucket`` rows, subsampling threshold ``t``, learning rate ``lr`` decayed
    linearly to 0) on one worker thread, so the result is a deterministic function of the
    arguments. Returns the raw (unnormalised) vector of every word with ``count >= min_count``
    (the word's row averaged with its n-gram rows, as fastText's ``get_word_vector``), most
    frequent first (ties: alphabetical), with their counts. ``bucket`` is kept small: the
    corpora here are small and fastText's default 2M buckets would cost ``2M * dim`` floats.
    """
    if dim < 1 or epochs < 1 or min_count < 1:
        raise InputError(f"train_fasttext: dim/epochs/min_count must be >= 1 ({dim}/{epochs}/{min_count})")
    if model not in ("skipgram", "cbow"):
        raise InputError(f"train_fasttext: model must be 'skipgram' or 'cbow', got {model!r}")
    tokenised = [tokenize(s, lang) for s in sentences]
    counts = Counter(tok for toks in tokenised for tok in toks)
    vocab = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    if not vocab:
        raise InputError(
            f"train_fasttext: no word occurs >= min_count={min_count} times in the {len(sentences)} training sentences"
        )
    FastText = _import_gensim_fasttext()
    corpus = [toks[i : i + _MAX_LINE_TOKENS] for toks in tokenised for i in range(0, len(toks), _MAX_LINE_TOKENS)]
    ft = FastText(
        sentences=corpus,
        sg=int(model == "skipgram"),
        vector_size=int(dim),
        window=int(ws),
        min_count=int(min_count),
        negative=int(neg),
        ns_exponent=0.5,
        hs=0,
        sample=float(t),
        alpha=float(lr),
        min_alpha=0.0,
        min_n=int(minn),
        max_n=int(maxn),
        bucket=int(bucket),
        word_ngrams=1,
        epochs=int(epochs),
        seed=int(seed),
        workers=1,
        sorted_vocab=1,
        max_vocab_size=None,
    )
    key = ft.wv.key_to_index
    missing = [w for w in vocab if w not in key]
    if missing:  # cannot happen with the same tokens and min_count; guards a gensim change
        raise InputError(f"train_fasttext: gensim left {len(missing)} words out of its vocabulary, e.g. {missing[:3]}")
    vecs = np.asarray(ft.wv.vectors[[key[w] for w in vocab]], dtype=np.float32)
    if not np.isfinite(vecs).all():
        raise InputError(
            f"train_fasttext: training on {len(sentences)} sentences gave non-finite vectors; lower lr (now {lr})"
        )
    return MonoVectors(words=tuple(vocab), vectors=vecs, counts=np.array([counts[w] for w in vocab], np.int64))


def _trainer_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"gensim=={version('gensim')}"
    except PackageNotFoundError:
        return "gensim-missing"
