"""Analysis ``inference`` (section 1): the right unit of inference — the item bootstrap of BkR's
and CORR's correlation with XLR, pairwise-order accuracy, sensitivity, and the overall verdict
across configurations.

* the method is the library's (:mod:`backretrieval.stats`): :mod:`~backretrieval.stats.crossed`
  (the crossed bootstrap, pooling), :mod:`~backretrieval.stats.questions` (the two questions,
  BCa), :mod:`~backretrieval.stats.weighted`, :mod:`~backretrieval.stats.contributions` (CORR per
  query), :mod:`~backretrieval.stats.encoder_sets` (the encoders by role) and
  :mod:`~backretrieval.stats.table1` (Table 1's test, which the report step runs);
* :mod:`.per_run`: the analysis on one run (per-query outcomes, the record's numbers and text),
  with its :mod:`.replicates` table and :mod:`.figures`;
* :mod:`.verdict` (the verdict across configurations in numbers, with its simulation
  :class:`~.verdict.Layout`) and :mod:`.verdict_text` (in words); the simulation that checks its
  coverage, :mod:`backretrieval.findings.inference_sim`, builds on them;
* :mod:`.summary`: the record ``overall``, the verdict across configurations (the analysis's
  summary, :meth:`Inference.summarize`);
* :class:`Inference`, here: the analysis's declaration (light: the registry imports this package
  whenever the command line builds its parser, which must not load pandas or SciPy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...stats.encoder_sets import WORDVEC_FAMILY, encoder_roles
from ..analysis import Analysis, Question, Setting
from .replicates import REPLICATES_FILE

#: the committed coverage table of benchmarks/bench_inference_coverage.py (per layout signature),
#: relative to the repository root; the overall verdict cites it by layout
COVERAGE_FILE = "benchmarks/inference_coverage_hits.json"

if TYPE_CHECKING:
    from ...evaluation.run_artifacts import RunArtifacts
    from ..result import Result


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
    summary_reads = (REPLICATES_FILE,)
    summary_files = (COVERAGE_FILE,)
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

    @classmethod
    def summarize(cls, records: Sequence[tuple[Path, Any]], summary_dir: Path) -> list[Any]:
        from .summary import overall_record

        return [overall_record(records, summary_dir, COVERAGE_FILE)]

    def run(self, artifacts: RunArtifacts, settings: Mapping[str, Any]) -> Result:
        from .per_run import inference_result

        return inference_result(artifacts, settings)
