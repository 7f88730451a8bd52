"""The SIMULATED rater of the synthetic dataset (:func:`simulate_ratings`): a ratings file filled
from the scenes' known relevance (:func:`relevance_to_rating`), so that the human study's tally runs
end to end where no person rated. Nothing it rates is evidence about real encoders."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .._util.io import write_csv
from ..errors import InputError
from .human_ratings import read_key, read_ratings_csv
from .human_study import DEFAULT_THRESHOLDS, KEY_NAME, SIMULATED_RATER


def relevance_to_rating(score: float, thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> int:
    """1 if score >= t1, 2 if >= t2, 3 if >= t3, else 4 (thresholds strictly decreasing)."""
    for level, t in enumerate(thresholds, start=1):
        if score >= t:
            return level
    return len(thresholds) + 1


def simulate_ratings(
    template_csv: str | Path,
    relevance_fn: Callable[[str, str], float],
    out_csv: str | Path,
    seed: int,
    key_path: str | Path | None = None,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    noise_sd: float = 0.0,
) -> pd.DataFrame:
    """SIMULATED rater: rating = thresholds applied to ``relevance_fn(query_id, candidate_id)``.

    The simulated rater reads the sealed key (default: ``key.sealed.json`` next to the
    template) to learn each suggestion's candidate id - acceptable only because it is a
    simulation. ``noise_sd`` > 0 adds seeded Gaussian noise to the score before thresholding.
    Writes ``suggestion_id, query_id, rating, rater, key_sha256`` with ``rater = simulated``.
    """
    template_csv = Path(template_csv)
    if len(thresholds) != 3 or any(x <= y for x, y in zip(thresholds, thresholds[1:])):
        raise InputError(f"thresholds must be 3 strictly decreasing values, got {tuple(thresholds)}")
    if noise_sd < 0:
        raise InputError(f"noise_sd must be >= 0, got {noise_sd}")
    key, key_sha = read_key(key_path if key_path is not None else template_csv.parent / KEY_NAME)
    df = read_ratings_csv(template_csv)
    if "query_id" not in df.columns:
        raise InputError(f"{template_csv}: missing column 'query_id'")
    rng = np.random.default_rng(seed)
    rows = []
    for i, (sid, qid) in enumerate(zip(df["suggestion_id"], df["query_id"]), start=2):  # the file's line
        ent = key["suggestions"].get(sid)
        if ent is None:
            raise InputError(f"{template_csv}: row {i}: suggestion_id {sid!r} is not in the key")
        score = float(relevance_fn(str(qid), str(ent["candidate_id"])))
        if not (math.isfinite(score) and 0.0 <= score <= 1.0):
            raise InputError(
                f"relevance_fn({qid!r}, {ent['candidate_id']!r}) returned {score}; expected a value in [0, 1]"
            )
        if noise_sd > 0:
            score = float(np.clip(score + rng.normal(0.0, noise_sd), 0.0, 1.0))
        rows.append(
            {
                "suggestion_id": sid,
                "query_id": qid,
                "rating": relevance_to_rating(score, thresholds),
                "rater": SIMULATED_RATER,
                "key_sha256": key_sha,
            }
        )
    out = pd.DataFrame(rows, columns=["suggestion_id", "query_id", "rating", "rater", "key_sha256"])
    write_csv(out_csv, out)
    return out
