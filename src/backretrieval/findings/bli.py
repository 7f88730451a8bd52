"""Section 6a: bilingual lexicon induction (BLI) for the word-vector family, as Glavaš et al.
(2019, "How to (properly) evaluate cross-lingual word embeddings") report it: P@1 and MAP of
retrieving a source word's translations among all target words, with nearest-neighbour and
CSLS retrieval (Conneau et al. 2018, k = 10), on a held-out dictionary that shares no word
with any seed dictionary the maps were trained on.

* **Test dictionary** (:func:`held_out_dictionary`): FreeDict pairs with both words in the
  vocabularies, minus every pair whose source or target word occurs in a seed dictionary; of
  the source words with corpus count >= ``min_count``, a seeded random ``size`` are kept, each
  with all its remaining translations as gold set.
* **Ranking**: candidates in the order (score descending, index ascending) — ties go to the
  lower index, as everywhere in :mod:`backretrieval.metrics`. The rank of a gold word is its
  position in that order.
* **P@1**: the first candidate is a gold translation. **MAP**: mean over queries of the average
  precision ``(1/|G|) Σ_i i / rank_(i)`` over the gold ranks in increasing order; with one gold
  word per query it is the MRR Glavaš et al. report as MAP.
* **CSLS** (Conneau et al. 2018, eq. 6): ``CSLS(x, y) = 2 cos(x, y) − r_T(x) − r_S(y)``,
  ``r_T(x)`` the mean cosine of mapped source word x to its k nearest target words, ``r_S(y)``
  the mean cosine of target word y to its k nearest mapped source words (whole vocabularies).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

RETRIEVALS = ("nn", "csls")


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


def held_out_dictionary(
    pairs: Iterable[tuple[str, str]],
    exclude_src: Iterable[str],
    exclude_tgt: Iterable[str],
    src_counts: Mapping[str, int],
    tgt_vocab: Iterable[str],
    size: int,
    min_count: int = 1,
    seed: int = 0,
) -> dict[str, tuple[str, ...]]:
    """source word → its gold target words, for at most ``size`` source words (module doc).
    No source word is in ``exclude_src`` and no gold word in ``exclude_tgt`` (the seed
    dictionaries' words); deterministic for a seed."""
    if size < 1:
        raise InputError(f"test dictionary size must be >= 1, got {size}")
    ex_s, ex_t, tv = set(exclude_src), set(exclude_tgt), set(tgt_vocab)
    gold: dict[str, set[str]] = {}
    for s, t in pairs:
        if s in ex_s or t in ex_t or t not in tv or src_counts.get(s, 0) < min_count:
            continue
        gold.setdefault(s, set()).add(t)
    words = sorted(gold)
    rng = np.random.default_rng(seed)
    keep = sorted(words[i] for i in rng.permutation(len(words))[:size]) if len(words) > size else words
    return {w: tuple(sorted(gold[w])) for w in keep}


def neighbourhood_mean(a: np.ndarray, b: np.ndarray, k: int, chunk: int = 2048) -> np.ndarray:
    """For every row of ``a``: the mean cosine to its ``k`` nearest rows of ``b`` (unit rows)."""
    k = min(k, b.shape[0])
    out = np.empty(a.shape[0])
    for s in range(0, a.shape[0], chunk):
        sc = a[s : s + chunk] @ b.T
        top = np.partition(sc, sc.shape[1] - k, axis=1)[:, sc.shape[1] - k :]
        out[s : s + chunk] = top.mean(axis=1)
    return out


def gold_ranks(scores: np.ndarray, gold: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """Per query row, the sorted ranks of its gold columns in the order (score desc, index asc)."""
    out = []
    for i, g in enumerate(gold):
        row = scores[i]
        g = np.asarray(sorted(set(g)), dtype=np.int64)
        gs = row[g]
        greater = (row[None, :] > gs[:, None]).sum(axis=1)
        cols = np.arange(row.size)
        tied_before = ((row[None, :] == gs[:, None]) & (cols[None, :] < g[:, None])).sum(axis=1)
        out.append(np.sort(1 + greater + tied_before))
    return out


def average_precision(ranks: np.ndarray) -> float:
    """``(1/|G|) Σ_i i / rank_(i)`` of sorted gold ranks."""
    r = np.sort(np.asarray(ranks, dtype=np.float64))
    return float(np.mean(np.arange(1, r.size + 1) / r))


@dataclass(frozen=True)
class BliResult:
    retrieval: str
    p_at_1: float
    map: float
    n_queries: int
    n_candidates: int


def evaluate_bli(
    src_vectors: np.ndarray,
    tgt_vectors: np.ndarray,
    queries: Sequence[int],
    gold: Sequence[Sequence[int]],
    retrieval: str = "nn",
    csls_k: int = 10,
    chunk: int = 1024,
) -> BliResult:
    """P@1 and MAP of retrieving ``gold[i]`` (rows of ``tgt_vectors``) for source row
    ``queries[i]`` among all target rows. Vectors are the aligned (mapped) spaces; rows are
    L2-normalised here. ``retrieval``: ``nn`` (cosine) or ``csls`` (CSLS over the whole
    vocabularies, ``csls_k`` neighbours)."""
    if retrieval not in RETRIEVALS:
        raise InputError(f"retrieval: expected one of {RETRIEVALS}, got {retrieval!r}")
    if len(queries) != len(gold) or not len(queries):
        raise InputError(f"BLI: {len(queries)} queries but {len(gold)} gold sets (need the same, > 0)")
    S, T = _unit(src_vectors), _unit(tgt_vectors)
    if S.shape[1] != T.shape[1]:
        raise InputError(f"BLI: source and target dimensions differ ({S.shape[1]} vs {T.shape[1]})")
    q = np.asarray(queries, dtype=np.int64)
    r_s = neighbourhood_mean(T, S, csls_k) if retrieval == "csls" else None
    p1, aps = [], []
    for s in range(0, q.size, chunk):
        qv = S[q[s : s + chunk]]
        sc = qv @ T.T
        if retrieval == "csls":
            r_t = neighbourhood_mean(qv, T, csls_k)
            sc = 2 * sc - r_t[:, None] - r_s[None, :]
        for r in gold_ranks(sc, gold[s : s + chunk]):
            p1.append(float(r[0] == 1))
            aps.append(average_precision(r))
    return BliResult(
        retrieval=retrieval,
        p_at_1=float(np.mean(p1)),
        map=float(np.mean(aps)),
        n_queries=int(q.size),
        n_candidates=int(T.shape[0]),
    )


def plot_bli(frame, out_base, title: str) -> list:
    """MAP and P@1 by dictionary size, one line per method, NN and CSLS panels (mean over
    languages). PNG/SVG/PDF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figures import finish_figure

    mean = frame.groupby(["method", "dict_size", "retrieval"], sort=True)[["p_at_1", "map"]].mean().reset_index()
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.2), sharey=True)
    for ax, metric in zip(axes, ("map", "p_at_1")):
        sns.lineplot(data=mean, x="dict_size", y=metric, hue="method", style="retrieval", markers=True, ax=ax)
        ax.set_xlabel("seed dictionary size (pairs requested)")
        ax.set_ylabel({"map": "MAP", "p_at_1": "P@1"}[metric])
        ax.legend(fontsize=6)
    return finish_figure(fig, out_base, title)
