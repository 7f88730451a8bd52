"""The defaults of the evaluate doors (library, CLI, sentence-transformers evaluator, MTEB task),
defined once. A module of constants only, so that the command line can offer them in its
options without importing pandas and SciPy: every pipeline step starts through that command line.
"""

from __future__ import annotations

from pathlib import Path

#: where named datasets are prepared, and the local mirror of real data (relative to the cwd)
DEFAULT_PREPARED_DIR = Path("data/prepared")
DEFAULT_SHARED_DIR = Path("../shared/datasets")
#: queries per sample (the paper's §3.1 used 10,000 on Multi30K/STAIR; docs/DEVIATIONS.md),
#: seeds (the paper's 25) and the k of Recall@k (the paper's 10)
DEFAULT_N = 1000
DEFAULT_SEEDS = 25
DEFAULT_K = 10
#: the item text that is embedded
DEFAULT_TEXT_FIELD = "title"
#: the sentence-transformers evaluator's lighter protocol (it runs during training): N, seeds,
#: no CORR
EVALUATOR_N = 200
EVALUATOR_SEEDS = 5
#: the embedding cache, and texts per encoder batch
DEFAULT_CACHE_DIR = Path(".cache/embeddings")
DEFAULT_BATCH_SIZE = 64
#: bootstrap resamples of the CIs and paired tests (``--bootstrap``)
DEFAULT_BOOTSTRAP = 1000
