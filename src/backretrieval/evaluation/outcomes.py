"""The per-query outcomes of a run's artifacts: the hits at k of the per-query ranks
(:func:`query_outcomes`), and per seed of one direction every encoder's XLR and BkR hits and
CORR's per-query contributions (:func:`inference_outcomes`), checked against the metrics CSV:
what the crossed bootstrap (:mod:`backretrieval.stats.crossed`) reweights, for the findings'
inference analysis and Table 1's test alike."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..stats.contributions import corr_contributions
from ..stats.crossed import SeedOutcomes
from .run_artifacts import RunArtifacts


def query_outcomes(ranks: dict[str, np.ndarray], enc: str, seed: int, kind: str, k: int) -> np.ndarray:
    """One encoder's per-query outcomes of one seed: hits at ``k`` of its ``kind`` (xlr, bkr)
    ranks (full ranks: :meth:`RunArtifacts.require_full_ranks`)."""
    key = f"{enc}/{seed}/{kind}"
    if key not in ranks:
        raise InputError(f"per-query ranks: no entry {key!r} (metrics and ranks files out of step?)")
    r = ranks[key].astype(np.int64)
    return (r <= k).astype(np.float64)


def inference_outcomes(
    art: RunArtifacts,
    direction: str,
    n_seeds: int | None,
    with_corr: bool,
) -> tuple[list, list[str], list[str]]:
    """The per-query outcomes of the first ``n_seeds`` seeds (None: all) of one direction
    (:class:`~backretrieval.stats.crossed.SeedOutcomes`: XLR and BkR hits, CORR's per-query
    contributions), the item keys the queries index (the image id of each query item: items
    that show the same image share a bootstrap weight in every direction and configuration) and
    the encoders (rows). Checks that the ranks and contributions reproduce the metrics CSV."""
    art.require_full_ranks()
    encoders = art.encoders
    m = art.metrics[art.metrics["direction"] == direction]
    wide = m.pivot_table(index=["seed", "encoder"], columns="metric", values="value")
    samples = sorted(art.samples[direction], key=lambda s: s.seed)[:n_seeds]
    if not samples:
        raise InputError(f"direction {direction}: no samples")
    if samples[0].xlr_targets is None:
        raise InputError(f"direction {direction}: the dataset is not parallel; XLR (the reference) is undefined")
    if with_corr and "corr" not in wide.columns:
        raise InputError(f"{direction}: the metrics CSV has no 'corr' rows")
    ranks = art.ranks(direction)
    image_of = art.image_of(direction.split("-")[0])
    keys = sorted({image_of[i] for s in samples for i in s.queries})
    pos = {k: j for j, k in enumerate(keys)}
    out = []
    for s in samples:
        xlr = np.stack([query_outcomes(ranks, e, s.seed, "xlr", art.k) for e in encoders])
        bkr = np.stack([query_outcomes(ranks, e, s.seed, "bkr", art.k) for e in encoders])
        per_query = {"bkr": bkr}
        checks = [("xlr", xlr, "xlr_recall", 1e-9), ("bkr", bkr, "bkr_recall", 1e-9)]
        if with_corr:
            emb = art.sample_embeddings(direction, s, encoders)
            per_query["corr"] = corr_contributions(emb["q_img"], emb["t_img"], [emb["text"][e][:2] for e in encoders])
            checks.append(("corr", per_query["corr"], "corr", 1e-5))
        for what, arr, metric, tol in checks:
            csv = wide.loc[s.seed].reindex(encoders)[metric].to_numpy(float)
            if not np.allclose(arr.mean(axis=1), csv, rtol=0, atol=tol):
                raise InputError(
                    f"{direction} seed {s.seed}: per-query {what} outcomes do not reproduce {metric} of the metrics CSV"
                )
        out.append(
            SeedOutcomes(
                seed=s.seed,
                query_items=np.array([pos[image_of[i]] for i in s.queries]),
                xlr=xlr,
                per_query=per_query,
            )
        )
    return out, keys, encoders
