"""Evaluated alternative, NOT used by the library: XLR ranks from a bf16 screening product
with a rigorous error bound, and exact re-checking of the pairs the bound cannot decide.

    python benchmarks/bench_bf16_screen.py [--quick] [--n 10000]

Why it is here: ours (``metrics.xlr_ranks``) already runs at the speed of the bare fp32
sgemm, so beating ``semantic_search`` by more than (its time / the bare product) needs a
product cheaper than fp32. This script measures whether a bf16 product (AVX512-BF16 through
torch/oneDNN on CPU) pays off once its results are made exact.

Method (per block of query rows):

1. ``S_hat = bf16(Q) @ bf16(T).T`` (torch; fp32 accumulation, bf16 output).
2. Rigorous bound per score: with ``q = q_h + q_l`` (q_h = bf16(q)) and likewise t,
   ``|s - s_hat| <= eps0 + c·|s_hat|`` with
   ``eps0 = ||q_l||·||t|| + ||q_h||·||t_l|| + d·2^-24·||q_h||·||t_h||`` (Cauchy-Schwarz for
   the two input-rounding terms, then the fp32 accumulation error; maxima over rows) and
   ``c = 2^-9·(1 + 2^-8)`` for the bf16 rounding of the output.
3. For query i the pair (i, j) is certainly greater if ``f(S_hat[i,j]) > S_hat[i,i] + 2·eps0
   + c·|S_hat[i,i]|`` with ``f(x) = x - c|x|``, certainly not greater if ``g(S_hat[i,j]) <
   S_hat[i,i] - 2·eps0 - c·|S_hat[i,i]|`` with ``g(x) = x + c|x|``; f and g are increasing, so
   both are one threshold per row. The rest (the band) are re-checked with float64 dot
   products of the original float32 vectors.
4. rank[i] = 1 + certain + re-checked greater.

The result is exact (float64) ranks; it can differ from ours (fp32 sgemm) only at float32
near-ties, which the script counts and checks. SYNTHETIC inputs (bench_common.make_data).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import main_quick_n, make_data, md_table, measure  # noqa: E402

import backretrieval.metrics as M  # noqa: E402

C_OUT = 2.0**-9 * (1 + 2.0**-8)  # relative error bound of the bf16 output rounding


def screen_bound(q: np.ndarray, q_h: np.ndarray, t: np.ndarray, t_h: np.ndarray) -> float:
    """eps0 of the module docstring: the input-rounding and accumulation part of the bound."""

    def max_norm(x: np.ndarray) -> float:  # float32 norms, rounded up by a generous 1e-5 relative
        return float(np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64)).max()) * (1 + 1e-5)

    ql, tl = max_norm(q - q_h), max_norm(t - t_h)  # both differences are exact in float32
    qn, tn, tn_exact = max_norm(q_h), max_norm(t_h), max_norm(t)
    return ql * tn_exact + qn * tl + q.shape[1] * 2.0**-24 * qn * tn


def _row_limits(diag: np.ndarray, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo): S_hat > hi is certainly greater, S_hat < lo certainly not (module docstring)."""
    r = diag + 2 * eps0 + C_OUT * np.abs(diag)
    l = diag - 2 * eps0 - C_OUT * np.abs(diag)
    hi = np.where(r >= 0, r / (1 - C_OUT), r / (1 + C_OUT))  # inverse of f(x) = x - c|x|
    lo = np.where(l >= 0, l / (1 + C_OUT), l / (1 - C_OUT))  # inverse of g(x) = x + c|x|
    # widen by one float32 ulp so the comparison of float32 values cannot round inward
    return np.nextafter(hi.astype(np.float32), np.inf), np.nextafter(lo.astype(np.float32), -np.inf)


def bf16_screened_xlr_ranks(src: np.ndarray, tgt: np.ndarray, block_rows: int = 1024) -> tuple[np.ndarray, dict]:
    """Exact XLR ranks via bf16 screening + float64 re-check (inputs normalised float32)."""
    import torch

    n = src.shape[0]
    q_t, t_t = torch.from_numpy(src).bfloat16(), torch.from_numpy(tgt).bfloat16()
    eps0 = screen_bound(src, q_t.float().numpy(), tgt, t_t.float().numpy())
    ranks = np.empty(n, np.int64)
    n_band = 0
    phase = {"product_s": 0.0, "screen_s": 0.0, "recheck_s": 0.0}  # wall time of each step
    for s in range(0, n, block_rows):
        e = min(n, s + block_rows)
        t0 = time.perf_counter()
        b16 = q_t[s:e] @ t_t.T
        t1 = time.perf_counter()
        blk = b16.float().numpy()  # widened (exactly) to float32
        rows = np.arange(e - s)
        diag = blk[rows, rows + s].astype(np.float64)
        hi, lo = _row_limits(diag, eps0)
        certain = np.count_nonzero(blk > hi[:, None], axis=1)
        band = (blk >= lo[:, None]) & (blk <= hi[:, None])
        band[rows, rows + s] = False  # the true pair itself
        bi, bj = np.nonzero(band)  # row-major: grouped by query row
        n_band += len(bi)
        ranks[s:e] = 1 + certain
        t2 = time.perf_counter()
        q64, true64 = src[s:e].astype(np.float64), np.einsum("ij,ij->i", src[s:e], tgt[s:e], dtype=np.float64)
        cuts = np.searchsorted(bi, np.arange(e - s + 1))
        for r in np.flatnonzero(np.diff(cuts)):  # the band of one query: one small float64 product
            cols = bj[cuts[r] : cuts[r + 1]]
            ranks[s + r] += np.count_nonzero(tgt[cols].astype(np.float64) @ q64[r] > true64[r])
        for k, dt in zip(phase, (t1 - t0, t2 - t1, time.perf_counter() - t2)):
            phase[k] += dt
    return ranks, {"eps0": eps0, "band_pairs": n_band, **phase}


def run(quick: bool = False, n: int = 10_000) -> tuple[str, dict]:
    try:
        import torch
    except ImportError as exc:
        return f"skipped: torch not importable ({exc})", {}
    d = make_data(n)
    src, tgt = d["src"], d["tgt"]
    rep = 1 if quick else 3
    bf16_screened_xlr_ranks(src[:512], tgt[:512])  # warm-up (torch thread pool, oneDNN kernels)
    t_ours, c_ours, r_ours = measure(lambda: M.xlr_ranks(src, tgt), rep)
    t_bare, c_bare, _ = measure(lambda: src @ tgt.T, rep)
    qb, tb = torch.from_numpy(src).bfloat16(), torch.from_numpy(tgt).bfloat16()
    t_bf, c_bf, _ = measure(lambda: qb @ tb.T, rep)
    t_scr, c_scr, (r_scr, info) = measure(lambda: bf16_screened_xlr_ranks(src, tgt), rep)
    diff = np.flatnonzero(r_scr != r_ours)
    # any difference must be a float32 near-tie: some candidate within 1e-6 of the true score
    s64 = src.astype(np.float64)
    for i in diff:
        sc = tgt.astype(np.float64) @ s64[i]
        assert np.min(np.abs(np.delete(sc, i) - sc[i])) < 1e-6, f"query {i}: screened rank differs without a near-tie"
    rows = [
        ["ours `xlr_ranks` (fp32 sgemm, blocked)", t_ours, c_ours, 1.0, f"R@10={M.recall_at_k(r_ours, 10):.4f}"],
        ["bare fp32 product `src @ tgt.T` (numpy)", t_bare, c_bare, t_bare / t_ours, ""],
        ["bare bf16 product (torch, bf16 output)", t_bf, c_bf, t_bf / t_ours, "no ranks: the screening step alone"],
        [
            "bf16 screening + float64 re-check (exact ranks)",
            t_scr,
            c_scr,
            t_scr / t_ours,
            f"eps0={info['eps0']:.2e}; re-checked {info['band_pairs']:,} pairs "
            f"({info['band_pairs'] / n**2:.2%}); ranks ≠ ours for {len(diff)} queries (fp32 near-ties)",
        ],
        [
            "of which (last run): bf16 products / widen + screening passes / re-check",
            "",
            "",
            "",
            f"{info['product_s']:.2f} s / {info['screen_s']:.2f} s / {info['recheck_s']:.2f} s",
        ],
    ]
    text = (
        f"N={n:,}, d=768, float32 inputs, best of {rep}. Not used by the library; see the module docstring.\n\n"
        + md_table(["XLR ranks", "wall s", "CPU s", "× ours (wall)", "check"], rows)
    )
    units = {
        **{k: info[k] for k in ("product_s", "screen_s", "recheck_s")},
        "ours_s": t_ours,
        "bare_fp32_s": t_bare,
        "bare_bf16_s": t_bf,
        "screened_s": t_scr,
        "band_pairs": int(info["band_pairs"]),
        "eps0": info["eps0"],
        "differ": int(len(diff)),
    }
    return text, units


if __name__ == "__main__":
    main_quick_n(__doc__, run)
