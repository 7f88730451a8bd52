"""Averaged word vectors from text files: aligned fastText ``.vec`` (MUSE, RCSLS) and
GloVe after translation to English (``glove-translate``); the ``.vec`` / GloVe reader."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._util.device import resolve_device
from .._util.hashing import fingerprint_from, folder_signature, sha256_file
from ..data.download import DownloadError, fetch
from ..errors import ConfigError, InputError, ModelUnavailableError
from .base import (
    _Base,
    _local_snapshot,
    _pkg_version,
    _require_lang,
    _unavailable,
    hub_offline,
)
from .tokenize import tokenize, tokenizer_signature


def load_vec(
    path: Path, max_vocab: int | None = 200_000, lowercase: bool = True, has_header: bool | None = None
) -> tuple[dict[str, int], np.ndarray]:
    """Read a fastText ``.vec`` (header ``n d``) or GloVe text file (no header).

    Returns (word → row, float32 matrix). The first occurrence of a word wins (after
    lowercasing when ``lowercase``). ``max_vocab`` keeps the first (most frequent) words.
    """
    if not path.is_file():
        raise InputError(f"{path}: word-vector file not found")
    vocab: dict[str, int] = {}
    rows: list[np.ndarray] = []
    dim = None
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh):
            parts = line.rstrip("\n").rstrip().split(" ")
            if lineno == 0 and (has_header or (has_header is None and len(parts) == 2)):
                dim = int(parts[1])
                continue
            if len(parts) < 3:
                continue
            if dim is None:
                dim = len(parts) - 1
            if len(parts) != dim + 1:
                continue  # words containing spaces (GloVe 840B has a few)
            word = parts[0].lower() if lowercase else parts[0]
            if word in vocab:
                continue
            vocab[word] = len(rows)
            rows.append(np.asarray(parts[1:], dtype=np.float32))
            if max_vocab and len(rows) >= max_vocab:
                break
    if not rows:
        raise InputError(f"{path}: no word vectors read (expected lines 'word v1 v2 ...')")
    return vocab, np.vstack(rows)


def average_word_vectors(
    texts: Sequence[str], vocab: dict[str, int], mat: np.ndarray, lang: str | None = None
) -> np.ndarray:
    """Mean of the vectors of the in-vocabulary tokens of each text (zeros if none); tokens
    are :func:`backretrieval.encoders.tokenize.tokenize` for ``lang`` (segmented for ja/zh/th)."""
    out = np.zeros((len(texts), mat.shape[1]), np.float32)
    for i, t in enumerate(texts):
        idx = [vocab[w] for w in tokenize(t, lang) if w in vocab]
        if idx:
            out[i] = mat[idx].mean(axis=0)
    return out


class AlignedVecEncoder(_Base):
    """Averaged aligned fastText vectors: MUSE (``type: muse``, wiki.multi.<lang>.vec) or RCSLS
    (``type: rcsls``, wiki.<lang>.align.vec). Keys: ``vectors`` ({lang: path}) and/or
    ``vectors_dir`` (folder with the official file names), ``download`` (false: fetch missing
    files from ``url_template`` into ``vectors_dir`` with :func:`backretrieval.data.download.fetch`:
    resumed, retried, atomic), ``sha256`` ({lang: hex}: pins the downloaded files; an unpinned
    download reports the hash to pin), ``max_vocab`` (200000)."""

    type_name = "muse"
    uses_lang = True
    templates = {
        "muse": ("https://dl.fbaipublicfiles.com/arrival/vectors/wiki.multi.{lang}.vec", "wiki.multi.{lang}.vec"),
        "rcsls": (
            "https://dl.fbaipublicfiles.com/fasttext/vectors-aligned/wiki.{lang}.align.vec",
            "wiki.{lang}.align.vec",
        ),
    }

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.type_name = spec["type"]
        url, fname = self.templates[self.type_name]
        self.url_template = str(spec.get("url_template", url))
        self.file_template = str(spec.get("file_template", fname))
        self.vectors = {str(k): Path(v) for k, v in (spec.get("vectors") or {}).items()}
        self.vectors_dir = Path(spec["vectors_dir"]) if spec.get("vectors_dir") else None
        self.download = bool(spec.get("download", False))
        self.sha256 = {str(k): str(v) for k, v in (spec.get("sha256") or {}).items()}
        self.max_vocab = spec.get("max_vocab", 200_000)
        self._loaded: dict[str, tuple[dict[str, int], np.ndarray]] = {}

    def path_for(self, lang: str) -> Path:
        if lang in self.vectors:
            return self.vectors[lang]
        if self.vectors_dir is None:
            raise ConfigError(
                f"encoder '{self.id}': no vectors for language '{lang}'; set vectors: {{{lang}: path}} or vectors_dir"
            )
        return self.vectors_dir / self.file_template.format(lang=lang)

    def _ensure(self, lang: str) -> Path:
        p = self.path_for(lang)
        if not p.is_file():
            url = self.url_template.format(lang=lang)
            if not self.download:
                raise ModelUnavailableError(
                    f"model '{self.id}' ({self.type_name}): {p} missing; download {url} there or set `download: true`"
                )
            try:
                fetch(url, p, self.sha256.get(lang))
            except DownloadError as exc:
                raise ModelUnavailableError(f"model '{self.id}' ({self.type_name}): {exc}") from exc
        return p

    def _fp_parts(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "max_vocab": self.max_vocab,
            "files": {k: str(v) for k, v in sorted(self.vectors.items())},
            "dir": str(self.vectors_dir),
            "file_template": self.file_template,
        }

    def fingerprint_for(self, lang: str) -> str:
        p = self._ensure(lang)
        return fingerprint_from(
            {**self._fp_parts(), "lang": lang, "file": folder_signature(p), "tokenizer": tokenizer_signature(lang)},
            "enc",
        )

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        lang = _require_lang(self.id, lang)
        if lang not in self._loaded:
            self._loaded[lang] = load_vec(self._ensure(lang), max_vocab=self.max_vocab)
        vocab, mat = self._loaded[lang]
        return average_word_vectors(texts, vocab, mat, lang)


class GloveTranslateEncoder(_Base):
    """Translate to English, then average GloVe vectors. Keys: ``glove`` (path to a GloVe text
    file, required), ``translations`` (TSV ``source<TAB>english``, no header; looked up exactly)
    or ``mt_model`` (default ``Helsinki-NLP/opus-mt-{lang}-en``, MarianMT via transformers),
    ``max_vocab`` (400000). English input is not translated."""

    type_name = "glove-translate"
    uses_lang = True

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        if not spec.get("glove"):
            raise ConfigError(f"encoder '{enc_id}': glove-translate needs `glove:` (GloVe file)")
        self.glove = Path(spec["glove"])
        self.translations = Path(spec["translations"]) if spec.get("translations") else None
        self.mt_model = str(spec.get("mt_model", "Helsinki-NLP/opus-mt-{lang}-en"))
        self.max_vocab = spec.get("max_vocab", 400_000)
        self.device = spec.get("device", "auto")
        # beam search on padded MarianMT batches depends on the batch; TSV lookups do not
        self.batch_invariant = self.translations is not None
        self._glove: tuple[dict[str, int], np.ndarray] | None = None
        self._table: dict[str, str] | None = None
        self._mt: dict[str, tuple[Any, Any]] = {}

    def _fp_parts(self) -> dict[str, Any]:
        parts = {
            "type": self.type_name,
            "glove": str(self.glove),
            "max_vocab": self.max_vocab,
            "glove_sig": folder_signature(self.glove) if self.glove.exists() else "missing",
            "tokenizer": tokenizer_signature("en"),
        }
        if self.translations is not None:
            parts["translations_sha256"] = sha256_file(self.translations) if self.translations.is_file() else "missing"
        else:
            parts["mt_model"] = self.mt_model
            parts["transformers"] = _pkg_version("transformers")
            parts["batching"] = "one-per-call"
        return parts

    def _translate(self, texts: list[str], lang: str) -> list[str]:
        if lang == "en":
            return list(texts)
        if self.translations is not None:
            if self._table is None:
                if not self.translations.is_file():
                    raise InputError(f"{self.translations}: translations TSV not found")
                self._table = {}
                for line in self.translations.read_text(encoding="utf-8").splitlines():
                    if "\t" in line:
                        src, tgt = line.split("\t", 1)
                        self._table[src] = tgt
            missing = [t for t in texts if t not in self._table]
            if missing:
                raise InputError(
                    f"{self.translations}: no translation for {missing[0]!r} ({len(missing)} texts missing)"
                )
            return [self._table[t] for t in texts]
        return self._marian(texts, lang)

    def _marian(self, texts: list[str], lang: str) -> list[str]:
        import torch

        name = self.mt_model.format(lang=lang)
        if name not in self._mt:
            from transformers import MarianMTModel, MarianTokenizer

            local = Path(name) if Path(name).is_dir() else _local_snapshot(name)
            if local is None and hub_offline():
                raise _unavailable(self.id, name, "or give `translations:` a TSV file")
            try:
                src = str(local) if local else name
                tok = MarianTokenizer.from_pretrained(src)
                model = (
                    MarianMTModel.from_pretrained(src).eval().to(resolve_device(self.device, f"encoder '{self.id}'"))
                )
            except OSError as exc:
                raise _unavailable(self.id, name, str(exc).splitlines()[0][:200]) from exc
            self._mt[name] = (tok, model)
        tok, model = self._mt[name]
        out: list[str] = []
        with torch.no_grad():
            for i in range(0, len(texts), 16):
                batch = tok(texts[i : i + 16], return_tensors="pt", padding=True, truncation=True)
                batch = {k: v.to(model.device) for k, v in batch.items()}
                gen = model.generate(**batch, num_beams=4, max_new_tokens=256)
                out.extend(tok.batch_decode(gen, skip_special_tokens=True))
        return out

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        lang = _require_lang(self.id, lang)
        if self._glove is None:
            self._glove = load_vec(self.glove, max_vocab=self.max_vocab, has_header=None)
        vocab, mat = self._glove
        return average_word_vectors(self._translate(list(texts), lang), vocab, mat, "en")
