"""Our XLR vs (a) a per-query full-argsort loop (xling-eval style) and (b)
sentence-transformers ``util.semantic_search`` top-k + rank lookup.

    python benchmarks/bench_baselines.py [--quick] [--n 10000] [--argsort-queries 500]

(a) for each query: ``scores = q @ T.T; order = np.argsort(-scores); rank = pos(true) + 1``.
    Timed on the first ``--argsort-queries`` queries and extrapolated linearly to N.
(b) ``semantic_search(Q, T, top_k=10)``; hit iff the true id is among the top 10. Recall@10
    from both ways must agree (any disagreeing query must be a float near-tie at the k-th
    score, checked in float64), else AssertionError.
SYNTHETIC normalised float32 inputs (bench_common.make_data), d=768.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import make_data, md_table, measure  # noqa: E402

from backretrieval import metrics as M  # noqa: E402

K = 10


def argsort_ranks(src: np.ndarray, tgt: np.ndarray, n_queries: int) -> np.ndarray:
    ranks = np.empty(n_queries, np.int64)
    for i in range(n_queries):
        scores = src[i] @ tgt.T
        order = np.argsort(-scores)
        ranks[i] = int(np.flatnonzero(order == i)[0]) + 1
    return ranks


def semantic_search_hits(src: np.ndarray, tgt: np.ndarray, k: int = K) -> np.ndarray:
    import torch
    from sentence_transformers import util

    res = util.semantic_search(torch.from_numpy(src), torch.from_numpy(tgt), top_k=k)
    return np.array([any(h["corpus_id"] == i for h in hits) for i, hits in enumerate(res)])


def run(quick: bool = False, n: int = 10_000, argsort_queries: int | None = None) -> tuple[str, dict]:
    nq = argsort_queries or (200 if quick else 500)
    d = make_data(n)
    src, tgt = d["src"], d["tgt"]
    rep = 1 if quick else 3
    t_ours, c_ours, ranks = measure(lambda: M.xlr_ranks(src, tgt), rep)
    r_ours = M.recall_at_k(ranks, K)

    t_sub, c_sub, r_arg = measure(lambda: argsort_ranks(src, tgt, nq), 1)
    t_arg, c_arg = t_sub * n / nq, c_sub * n / nq
    agree = float(np.mean(r_arg == ranks[:nq]))
    rows = [["ours `xlr_ranks` (all ranks)", t_ours, c_ours, 1.0, 1.0, f"R@10={r_ours:.4f}"],
            [f"per-query argsort (timed on {nq} queries, ×{n / nq:g})", t_arg, c_arg, t_arg / t_ours, c_arg / c_ours,
             f"ranks identical on {agree:.1%} of the {nq} queries"]]
    units = {"ours_s": t_ours, "ours_cpu_s": c_ours, "argsort_s": t_arg, "argsort_cpu_s": c_arg,
             "argsort_agree": agree}
    try:
        import sentence_transformers  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - optional dependency
        rows.append(["sentence-transformers `semantic_search`", "skipped", "", "", "", f"not importable: {exc}"])
    else:
        t_ss, c_ss, hits = measure(lambda: semantic_search_hits(src, tgt), rep)
        r_ss = float(np.mean(hits))
        mism = np.flatnonzero(hits != (ranks <= K))
        for i in mism:  # must be a near-tie between the true score and the k-th best score
            s64 = tgt.astype(np.float64) @ src[i].astype(np.float64)
            kth = np.sort(s64)[-K]
            assert abs(s64[i] - kth) < 1e-5, f"query {i}: semantic_search and xlr_ranks disagree (no tie)"
        rows.append(["sentence-transformers `semantic_search(top_k=10)` + lookup", t_ss, c_ss, t_ss / t_ours, c_ss / c_ours,
                     f"R@10={r_ss:.4f}; {len(mism)} queries differ (all float near-ties)"])
        units.update(semantic_search_s=t_ss, semantic_search_cpu_s=c_ss, recall_ours=r_ours, recall_ss=r_ss, n_mismatch=int(len(mism)))
    t = md_table(["method (XLR, N×N)", "wall s", "CPU s", "× ours, wall (goal: argsort ≥ 5, semantic_search ≥ 2)",
                  "× ours, CPU", "check"], rows)
    return f"N={n:,}, d=768, float32, best of {rep} (argsort: 1 run).\n\n{t}", units


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--argsort-queries", type=int)
    a = ap.parse_args()
    print(run(a.quick, a.n, a.argsort_queries)[0])
