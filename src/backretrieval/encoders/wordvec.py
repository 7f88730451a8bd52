"""Cross-lingual word vectors trained here: fastText + Procrustes / CCA / RCSLS (offline).

A word-vector family in the style of Glavaš et al. (2019), added here (not among the paper's models): monolingual skip-gram
fastText vectors per language (trained with gensim's implementation of fastText, see
"Determinism" below), mapped into the English space with a seed dictionary of
1K / 3K / 5K word pairs by one of

* **Procrustes** (:func:`align_procrustes`): the orthogonal ``W`` minimising ``||XW - Y||``;
* **CCA** (:func:`align_cca`): both spaces projected to their top canonical directions
  (Faruqui & Dyer 2014);
* **RCSLS** (:func:`align_rcsls`): Joulin et al. (2018), the relaxed CSLS retrieval loss
  minimised by full-batch gradient descent from the Procrustes solution (as the official
  ``fastText/alignment/align.py``: step halving with backtracking, optional spectral
  projection of ``W`` onto the unit ball).

Here the vectors are trained on the prepared dataset's *own* texts (a small corpus: ~30k
captions per language for Multi30K), the seed dictionaries come from Debian's FreeDict
packages (:mod:`backretrieval.encoders.dictionaries`), so nothing is downloaded.

Documents are the (optionally SIF-weighted, Arora et al. 2017) mean of their aligned word
vectors; tokens are :func:`backretrieval.encoders.tokenize.tokenize` of the text's language (Unicode
letters/marks/digits, lowercased; Japanese, Chinese and Thai cut into words by a segmenter first).
Out-of-vocabulary tokens are skipped (a text of only unknown words gets a zero
vector); with the default ``min_count: 1`` every word of the training corpus has a vector.

Everything is cached on disk under ``cache_dir`` (default ``.cache/wordvec``) with keys derived
from the corpus content and the settings, so every (method, dictionary size) member of the
family reuses the same monolingual fastText vectors and seed dictionaries. Writes are atomic.

Spec (one ``params.yaml: encoders`` entry)::

    ft-rcsls-5k:
      type: wordvec
      method: rcsls            # procrustes | cca | rcsls
      dict_size: 5000          # 1000 | 3000 | 5000 (any positive int; actual size recorded)
      corpus: data/prepared/multi30k     # prepared dataset root: the training texts
      languages: [en, de, fr, cs]        # the hub (``hub: en``) is added when missing
      text_fields: [title, body]         # fields used as training sentences
      splits: null             # null = all splits; or a list, e.g. [train]
      dim: 100
      epochs: 10
      min_count: 1
      seed: 0
      sif: true                # SIF weights a/(a+p(w)); false = plain mean
      sif_a: 0.001
      remove_pc: true          # remove the first principal component (per language, of the
                               # training sentences' vectors; Arora et al.'s full SIF)
      cache_dir: .cache/wordvec
      dict_dir: /usr/share/dictd
      # CCA only: cca_dim (default dim), cca_space: auto | hub | pair (see WordVecEncoder;
      #           auto = pair with one partner language, hub otherwise)
      # RCSLS only: rcsls_epochs 10, rcsls_lr 25.0, rcsls_k 10, rcsls_spectral false,
      #             rcsls_maxneg 50000

Determinism: the vectors are a pure function of (sentences, settings, gensim version): gensim's
FastText runs with ``workers=1`` and the given ``seed`` (initial vectors from numpy's seeded
generator, negative sampling and subsampling from a seeded stream, the learning rate decayed per
batch of words counted in corpus order, not by timers), so they are bit-identical across runs,
processes, hash seeds, heap contents and BLAS thread counts. Everything after training is numpy/
scipy run with one BLAS thread: OpenBLAS sums long products (``X.T @ Y`` over the dictionary
pairs, the SVDs) in a different order with one thread than with several, so every map and
document vector would depend on the thread count. Results can still differ between CPU types
(OpenBLAS picks its kernels per CPU). ``scripts/stress_fasttext.py`` checks all of this on the
shipped Multi30K corpus.

The fastText training itself is in :mod:`.wordvec_train`, the maps in :mod:`.wordvec_align`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._util import io as bio
from .._util.hashing import json_sha256
from ..errors import ConfigError, InputError
from .dictionaries import (
    DEFAULT_DICT_DIR,
    load_freedict_pairs,
    package_name,
    select_seed_pairs,
)
from .tokenize import tokenize, tokenizer_signature
from .wordvec_align import _one_blas_thread, align_cca, align_procrustes, align_rcsls, rcsls_loss_grad
from .wordvec_train import MonoVectors, _trainer_version, normalize_embeddings, train_fasttext

log = logging.getLogger(__name__)

#: Bump when training / alignment / encoding code changes what comes out (part of all keys).
WORDVEC_VERSION = "2"
METHODS = ("procrustes", "cca", "rcsls")

__all__ = [
    "METHODS",
    "MonoVectors",
    "WordVecEncoder",
    "WordVecSpec",
    "align_cca",
    "align_procrustes",
    "align_rcsls",
    "build_wordvec_encoder",
    "doc_vectors",
    "first_principal_direction",
    "normalize_embeddings",
    "rcsls_loss_grad",
    "sif_weights",
    "tokenize",
    "train_fasttext",
]


# --------------------------------------------------------------------------------------------
# document vectors


def sif_weights(counts: np.ndarray, a: float = 1e-3) -> np.ndarray:
    """SIF weights ``a / (a + p(w))`` with ``p(w) = count(w) / total`` (Arora et al. 2017)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        raise InputError("sif_weights: word counts sum to zero")
    if a <= 0:
        raise InputError(f"sif_weights: a must be > 0, got {a}")
    return a / (a + counts / total)


@_one_blas_thread
def doc_vectors(
    texts: Sequence[str],
    index: dict[str, int],
    vectors: np.ndarray,
    weights: np.ndarray | None = None,
    pc: np.ndarray | None = None,
    normalize: bool = True,
    lang: str | None = None,
) -> np.ndarray:
    """Weighted mean word vector of every text (OOV tokens skipped; none known → zeros).

    ``v(s) = 1/|s| sum_{w in s} weight(w) vec(w)`` over the known tokens (SIF when ``weights``
    are :func:`sif_weights`), then ``v - (v.pc) pc`` when ``pc`` (a unit vector) is given,
    then L2-normalised when ``normalize``. Tokens: :func:`tokenize` for ``lang``.
    float32 (len(texts), d).
    """
    d = vectors.shape[1]
    out = np.zeros((len(texts), d), dtype=np.float64)
    for i, text in enumerate(texts):
        ids = [index[t] for t in tokenize(text, lang) if t in index]
        if not ids:
            continue
        rows = vectors[ids].astype(np.float64)
        if weights is not None:
            rows = rows * weights[ids, None]
        out[i] = rows.mean(axis=0)
    if pc is not None:
        pc = np.asarray(pc, dtype=np.float64)
        # a row-wise reduction, not ``out @ pc``: BLAS matrix-vector kernels give a row other
        # bits at another offset in ``out``, and a text's vector must not depend on its batch
        out -= np.outer((out * pc).sum(axis=1), pc)
    if normalize:
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out = np.where(norms > 1e-12, out / np.maximum(norms, 1e-12), 0.0)
    return out.astype(np.float32)


@_one_blas_thread
def first_principal_direction(m: np.ndarray) -> np.ndarray:
    """Unit first right singular vector of ``m`` (uncentred, as Arora et al.), sign-fixed."""
    _, _, vt = np.linalg.svd(np.asarray(m, dtype=np.float64), full_matrices=False)
    u = vt[0]
    j = int(np.argmax(np.abs(u)))
    return u * np.sign(u[j])


# --------------------------------------------------------------------------------------------
# the encoder


@dataclass(frozen=True)
class WordVecSpec:
    method: str
    dict_size: int
    corpus: str
    languages: tuple[str, ...]
    hub: str = "en"
    text_fields: tuple[str, ...] = ("title", "body")
    splits: tuple[str, ...] | None = None
    dim: int = 100
    epochs: int = 10
    min_count: int = 1
    seed: int = 0
    bucket: int = 200_000
    sif: bool = True
    sif_a: float = 1e-3
    remove_pc: bool = True
    max_per_word: int = 2
    cca_dim: int | None = None
    cca_space: str = "hub"
    rcsls_epochs: int = 10
    rcsls_lr: float = 25.0
    rcsls_k: int = 10
    rcsls_spectral: bool = False
    rcsls_maxneg: int = 50_000
    cache_dir: str = ".cache/wordvec"
    dict_dir: str = str(DEFAULT_DICT_DIR)
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, enc_id: str, spec: dict) -> WordVecSpec:
        where = f"encoder '{enc_id}'"
        spec = dict(spec)
        typ = spec.pop("type", "wordvec")
        if typ != "wordvec":
            raise ConfigError(f"{where}: type must be 'wordvec', got {typ!r}")
        for key in ("method", "dict_size", "corpus", "languages"):
            if key not in spec:
                raise ConfigError(f"{where}: field '{key}' is required for type wordvec")
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        unknown = sorted(set(spec) - known - {"normalize", "batch_size", "device"})
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {unknown}; known: {sorted(known)}")
        kw = {k: v for k, v in spec.items() if k in known}
        if kw["method"] not in METHODS:
            raise ConfigError(f"{where}: method must be one of {METHODS}, got {kw['method']!r}")
        langs = kw["languages"]
        if isinstance(langs, str) or not langs or not all(isinstance(x, str) for x in langs):
            raise ConfigError(f"{where}: languages must be a non-empty list of codes, got {langs!r}")
        hub = str(kw.get("hub", "en"))
        kw["languages"] = tuple(dict.fromkeys([hub, *langs]))
        kw["text_fields"] = tuple(kw.get("text_fields", ("title", "body")))
        bad = [f for f in kw["text_fields"] if f not in ("title", "body")]
        if bad or not kw["text_fields"]:
            raise ConfigError(
                f"{where}: text_fields must be a non-empty subset of [title, body], got {kw['text_fields']!r}"
            )
        if kw.get("splits") is not None:
            kw["splits"] = tuple(kw["splits"])
        kw["corpus"] = str(kw["corpus"])
        for key in (
            "dict_size",
            "dim",
            "epochs",
            "min_count",
            "rcsls_epochs",
            "rcsls_k",
            "max_per_word",
            "rcsls_maxneg",
            "bucket",
        ):
            if key in kw and (not isinstance(kw[key], int) or isinstance(kw[key], bool) or kw[key] < 1):
                raise ConfigError(f"{where}: {key} must be a positive integer, got {kw[key]!r}")
        space = kw.get("cca_space", "auto")
        if space not in ("auto", "hub", "pair"):
            raise ConfigError(f"{where}: cca_space must be 'auto', 'hub' or 'pair', got {space!r}")
        if space == "auto":  # the faithful (and much better) pair space where it is well defined
            kw["cca_space"] = "pair" if len(kw["languages"]) == 2 else "hub"
        cca_dim = kw.get("cca_dim")
        if cca_dim is not None and (not isinstance(cca_dim, int) or not 1 <= cca_dim <= kw.get("dim", 100)):
            raise ConfigError(f"{where}: cca_dim must be an integer in [1, dim], got {cca_dim!r}")
        if kw["method"] == "cca" and kw.get("cca_space") == "pair" and len(kw["languages"]) > 2:
            raise ConfigError(
                f"{where}: cca_space 'pair' projects the hub language differently for every "
                f"partner, so it needs exactly one language besides '{hub}' (got "
                f"{list(kw['languages'])}); use one encoder per pair or cca_space: hub"
            )
        return cls(**kw)


def _dict_files_signature(dict_dir: Path, hub: str, lang: str) -> list[tuple[str, int]]:
    from .dictionaries import iso3

    out = []
    for a, b in ((hub, lang), (lang, hub)):
        for suffix in (".index", ".dict.dz", ".dict"):
            p = Path(dict_dir) / f"freedict-{iso3(a)}-{iso3(b)}{suffix}"
            if p.is_file():
                out.append((p.name, p.stat().st_size))
    return out


class WordVecEncoder:
    """TextEncoder over cross-lingual fastText vectors trained on ``spec.corpus``.

    ``encode(texts, lang)`` maps the texts of language ``lang`` into the shared space:
    for ``procrustes``/``rcsls`` that is the hub (English) space; for ``cca`` with
    ``cca_space: hub`` (the default with several partner languages) the other languages are mapped into the hub space by
    ``Wx Wy^+`` (canonical variates mapped back to English coordinates, so English texts
    stay where they are and one encoder serves every language), with ``cca_space: pair``
    (the default with a single partner) both sides are projected to the canonical space
    (Faruqui & Dyer; one partner only). On 3000 Multi30K captions en-de the pair space
    retrieved parallel captions about 2.5x better (P@1 0.13 vs 0.05), so prefer one CCA
    encoder per language pair.
    Training runs on the first call needing it; :meth:`metadata` reports dictionary sizes.
    """

    uses_lang = True

    def __init__(self, enc_id: str, spec: WordVecSpec) -> None:
        self.id = enc_id
        self.spec = spec
        self._fp: str | None = None
        self._corpus_hash: dict[str, str] | None = None
        self._sentences: dict[str, list[str]] | None = None
        self._mono: dict[str, MonoVectors] = {}
        self._space: dict[str, tuple[dict[str, int], np.ndarray, np.ndarray | None, np.ndarray | None]] = {}
        self._meta: dict[str, Any] = {}

    # ---- corpus ----
    def _load_sentences(self) -> dict[str, list[str]]:
        if self._sentences is None:
            from ..data.prepared import load_items

            root = Path(self.spec.corpus)
            if not root.exists():
                raise ConfigError(
                    f"encoder '{self.id}': corpus {str(root)!r} does not exist (expected a "
                    "prepared dataset folder with items.csv)"
                )
            items = load_items(root)
            if self.spec.splits is not None:
                items = items[items["split"].isin(self.spec.splits)]
            out: dict[str, list[str]] = {}
            for lang in self.spec.languages:
                sub = items[items["lang"] == lang]
                sents = [
                    t.strip() for _, row in sub.iterrows() for t in (row[f] for f in self.spec.text_fields) if t.strip()
                ]
                if not sents:
                    raise InputError(
                        f"{root}: no {lang!r} texts in fields {list(self.spec.text_fields)}"
                        + (f" of splits {list(self.spec.splits)}" if self.spec.splits else "")
                        + f" to train encoder '{self.id}' on"
                    )
                out[lang] = sents
            self._sentences = out
        return self._sentences

    def _corpus_hashes(self) -> dict[str, str]:
        if self._corpus_hash is None:
            self._corpus_hash = {
                lang: hashlib.sha256("\n".join(s).encode("utf-8")).hexdigest()
                for lang, s in self._load_sentences().items()
            }
        return self._corpus_hash

    # ---- keys ----
    def _mono_key(self, lang: str) -> str:
        s = self.spec
        return json_sha256(
            {
                "v": WORDVEC_VERSION,
                "corpus": self._corpus_hashes()[lang],
                "dim": s.dim,
                "epochs": s.epochs,
                "min_count": s.min_count,
                "seed": s.seed,
                "bucket": s.bucket,
                "trainer": _trainer_version(),
                "tokenizer": tokenizer_signature(lang),
            }
        )[:20]

    def _dict_key(self, lang: str) -> str:
        s = self.spec
        return json_sha256(
            {
                "mono": [self._mono_key(s.hub), self._mono_key(lang)],
                "size": s.dict_size,
                "max_per_word": s.max_per_word,
                "files": _dict_files_signature(Path(s.dict_dir), s.hub, lang),
            }
        )[:20]

    def _map_key(self, lang: str) -> str:
        s = self.spec
        parts: dict[str, Any] = {"dict": self._dict_key(lang), "method": s.method}
        if s.method == "cca":
            parts.update(cca_dim=s.cca_dim or s.dim, cca_space=s.cca_space)
        if s.method == "rcsls":
            parts.update(
                epochs=s.rcsls_epochs,
                lr=s.rcsls_lr,
                k=s.rcsls_k,
                spectral=s.rcsls_spectral,
                maxneg=s.rcsls_maxneg,
                seed=s.seed,
            )
        return json_sha256(parts)[:20]

    def fingerprint(self) -> str:
        if self._fp is None:
            s = asdict(self.spec)
            for k in ("cache_dir", "corpus", "extra"):
                s.pop(k, None)
            s["dict_dir"] = {
                lang: _dict_files_signature(Path(self.spec.dict_dir), self.spec.hub, lang)
                for lang in self.spec.languages
                if lang != self.spec.hub
            }
            s["corpus"] = self._corpus_hashes()
            s["v"] = WORDVEC_VERSION
            s["doc_vectors"] = "rowwise-projection"  # the encode arithmetic (vectors, not training)
            s["trainer"] = _trainer_version()
            s["tokenizer"] = {lang: tokenizer_signature(lang) for lang in self.spec.languages}
            self._fp = f"wordvec-{json_sha256(s)[:24]}"
        return self._fp

    # ---- training steps (each cached on disk) ----
    @property
    def _cache(self) -> Path:
        return Path(self.spec.cache_dir)

    def mono(self, lang: str) -> MonoVectors:
        """Monolingual fastText vectors of ``lang`` (raw), trained or read from the cache."""
        if lang not in self._mono:
            path = self._cache / "mono" / f"{lang}-{self._mono_key(lang)}.npz"
            if path.is_file():
                z = bio.load_npz(path)
                mv = MonoVectors(tuple(z["words"].tolist()), z["vectors"], z["counts"])
            else:
                s = self.spec
                t0 = time.perf_counter()
                mv = train_fasttext(
                    self._load_sentences()[lang],
                    lang=lang,
                    dim=s.dim,
                    epochs=s.epochs,
                    min_count=s.min_count,
                    seed=s.seed,
                    bucket=s.bucket,
                )
                secs = time.perf_counter() - t0
                log.info("wordvec %s: trained fastText %s (%d words) in %.1fs", self.id, lang, len(mv.words), secs)
                bio.save_npz(path, words=np.array(mv.words, dtype=str), vectors=mv.vectors, counts=mv.counts)
                bio.write_json(
                    path.with_suffix(".json"),
                    {
                        "lang": lang,
                        "vocab": len(mv.words),
                        "train_seconds": round(secs, 2),
                        "sentences": len(self._load_sentences()[lang]),
                        "dim": s.dim,
                    },
                )
            self._mono[lang] = mv
        return self._mono[lang]

    def seed_dictionary(self, lang: str) -> dict[str, Any]:
        """The seed dictionary hub→``lang``: ``{"pairs", "requested", "size", "available"}``."""
        s = self.spec
        path = self._cache / "dict" / f"{s.hub}-{lang}-{s.dict_size}-{self._dict_key(lang)}.json"
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
        hub_mv, mv = self.mono(s.hub), self.mono(lang)
        try:
            pairs = load_freedict_pairs(s.hub, lang, Path(s.dict_dir), vocab=(hub_mv.words, mv.words))
        except InputError as exc:
            raise InputError(f"encoder '{self.id}' ({s.hub}-{lang}): {exc}") from exc
        sd = select_seed_pairs(pairs, hub_mv.count_map(), mv.count_map(), s.dict_size, s.max_per_word)
        if sd.size < 2:
            raise InputError(
                f"encoder '{self.id}': only {sd.size} FreeDict pair(s) {s.hub}-{lang} have both "
                f"words in the training vocabularies; cannot align (dictionary package: "
                f"{package_name(s.hub, lang)})"
            )
        if sd.truncated:
            log.warning(
                "wordvec %s: seed dictionary %s-%s has %d pairs, fewer than the %d requested",
                self.id,
                s.hub,
                lang,
                sd.size,
                sd.requested,
            )
        out = {
            "pairs": [list(p) for p in sd.pairs],
            "requested": sd.requested,
            "size": sd.size,
            "available": sd.available,
            "hub": s.hub,
            "lang": lang,
        }
        bio.write_json(path, out)
        return out

    @_one_blas_thread
    def mapping(self, lang: str) -> dict[str, np.ndarray]:
        """``{"W": (d, k)}`` mapping normalised ``lang`` vectors into the shared space."""
        s = self.spec
        d = s.dim
        if lang == s.hub and not (s.method == "cca" and s.cca_space == "pair"):
            return {"W": np.eye(d)}
        partner = lang
        if lang == s.hub:  # CCA pair mode: the hub side of the only pair
            partner = next(x for x in s.languages if x != s.hub)
        path = self._cache / "map" / f"{s.method}-{s.hub}-{partner}-{self._map_key(partner)}.npz"
        if path.is_file():
            z = bio.load_npz(path)
        else:
            sd = self.seed_dictionary(partner)
            hub_mv, mv = self.mono(s.hub), self.mono(partner)
            hub_n, src_n = normalize_embeddings(hub_mv.vectors), normalize_embeddings(mv.vectors)
            hi, si = hub_mv.index, mv.index
            X = src_n[[si[t] for _, t in sd["pairs"]]].astype(np.float64)
            Y = hub_n[[hi[e] for e, _ in sd["pairs"]]].astype(np.float64)
            t0 = time.perf_counter()
            if s.method == "procrustes":
                z = {"W": align_procrustes(X, Y)}
            elif s.method == "rcsls":
                m = s.rcsls_maxneg
                W = align_rcsls(
                    X,
                    Y,
                    src_n[:m],
                    hub_n[:m],
                    k=s.rcsls_k,
                    epochs=s.rcsls_epochs,
                    lr=s.rcsls_lr,
                    seed=s.seed,
                    spectral=s.rcsls_spectral,
                )
                z = {"W": W}
            else:
                wx, wy = align_cca(X, Y, s.cca_dim or d)
                z = {"W": wx @ np.linalg.pinv(wy)} if s.cca_space == "hub" else {"W": wx, "W_hub": wy}
            log.info("wordvec %s: %s %s→%s in %.1fs", self.id, s.method, partner, s.hub, time.perf_counter() - t0)
            bio.save_npz(path, **z)
        if lang == s.hub:
            return {"W": z["W_hub"]}
        return {"W": z["W"]}

    @_one_blas_thread
    def _lang_space(self, lang: str) -> tuple[dict[str, int], np.ndarray, np.ndarray | None, np.ndarray | None]:
        if lang not in self._space:
            s = self.spec
            mv = self.mono(lang)
            aligned = normalize_embeddings(mv.vectors).astype(np.float64) @ self.mapping(lang)["W"]
            aligned /= np.maximum(np.linalg.norm(aligned, axis=1, keepdims=True), 1e-12)
            weights = sif_weights(mv.counts, s.sif_a) if s.sif else None
            pc = None
            if s.remove_pc:
                raw = doc_vectors(self._load_sentences()[lang], mv.index, aligned, weights, normalize=False, lang=lang)
                pc = first_principal_direction(raw)
            self._space[lang] = (mv.index, aligned, weights, pc)
        return self._space[lang]

    def prepare(self) -> None:
        """Train / load everything for all languages now (otherwise done lazily)."""
        for lang in self.spec.languages:
            self._lang_space(lang)

    def metadata(self) -> dict[str, Any]:
        """Seed dictionary sizes per language (requested / actual / available) and vocabularies."""
        s = self.spec
        out: dict[str, Any] = {"id": self.id, "method": s.method, "fingerprint": self.fingerprint(), "languages": {}}
        for lang in s.languages:
            info: dict[str, Any] = {"vocab": len(self.mono(lang).words)}
            if lang != s.hub:
                sd = self.seed_dictionary(lang)
                info.update(dict_requested=sd["requested"], dict_size=sd["size"], dict_available=sd["available"])
            out["languages"][lang] = info
        return out

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        if lang is None:
            raise InputError(f"encoder '{self.id}' (wordvec) needs the language of the texts: encode(texts, lang=...)")
        if lang not in self.spec.languages:
            raise InputError(
                f"encoder '{self.id}': language {lang!r} is not in its languages "
                f"{list(self.spec.languages)} (add it to the spec and re-run)"
            )
        if isinstance(texts, str):
            raise InputError(f"encoder '{self.id}': encode() takes a list of texts, not a str")
        index, aligned, weights, pc = self._lang_space(lang)
        return doc_vectors(list(texts), index, aligned, weights, pc, normalize=True, lang=lang)


def build_wordvec_encoder(enc_id: str, spec: dict) -> WordVecEncoder:
    """A :class:`WordVecEncoder` from a ``params.yaml`` entry (validated; trains lazily)."""
    if not isinstance(spec, dict):
        raise ConfigError(f"encoder '{enc_id}': spec must be a mapping, got {type(spec).__name__}")
    return WordVecEncoder(enc_id, WordVecSpec.from_dict(enc_id, spec))
