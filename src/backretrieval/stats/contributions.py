"""CORR's per-query contributions: the queries' shares of a sample's CORR (Spearman's rho
of the text and image distances), so that the crossed bootstrap (:mod:`.crossed`) reweights
CORR's queries exactly as it reweights BkR's and XLR's hits."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def corr_contributions(
    q_img: np.ndarray, t_img: np.ndarray, texts: Sequence[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """CORR's per-query contributions (E, N) of one sample: with a_ij, b_ij the average ranks
    (over all N·M query × target pairs) of the text and image cosine distances, z their
    standardised values (population SD), query i contributes c_i = (1/M) Σ_j z^a_ij z^b_ij.
    The mean of c over the queries is Pearson's r of the ranks: the sample's CORR (Spearman's
    rho, ties averaged), so a replicate reweights CORR's queries exactly as it reweights BkR's
    and XLR's. ``texts[e] = (src, tgt)`` rows aligned with ``q_img`` / ``t_img``; distances in
    float32, as the CORR kernel computes them. NaN rows where a side is constant."""
    from ..metrics import average_ranks, normalize

    def z_ranks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = np.subtract(np.float32(1), normalize(a) @ normalize(b).T, dtype=np.float32)
        r = average_ranks(d.ravel()).reshape(d.shape)
        sd = r.std()
        return (r - r.mean()) / sd if sd > 0 else np.full(r.shape, np.nan)

    zi = z_ranks(q_img, t_img)
    return np.stack([(z_ranks(s, t) * zi).mean(axis=1) for s, t in texts])
