"""CORR at paper scale: this implementation vs the previous one (kept at the end of this
file as the REFERENCE BASELINE), side by side, with the bare matrix products and the error of
the ``max_pairs`` estimators over seeds.

    python benchmarks/bench_corr.py [--quick] [--n 10000]
    python benchmarks/bench_corr.py --child N --pairs P|exact --impl new|old   # one timing run
    python benchmarks/bench_corr.py --child N --bare                           # the bare products
    python benchmarks/bench_corr.py --quality N --pairs P --seeds S            # |rho - exact| per seed

Every run is its own subprocess and prints one JSON line. Timing runs measure the image side
(``CorrImageSide.build``: once per sample in the pipeline) and one encoder (``spearman``: once
per encoder and sample), best of 3 for subsamples, one run each for exact CORR. "peak during"
is VmHWM after resetting it once the data exist (Linux): the process's resident peak while
CORR runs, its inputs included. SYNTHETIC normalised float32 inputs (bench_common.make_data),
d_text=768, d_img=1280.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import hwm_mb, make_data, md_table, measure, reset_peak_rss, rss_mb, run_child  # noqa: E402

import backretrieval.metrics as M  # noqa: E402
from backretrieval.metrics._base import DEFAULT_BLOCK_ELEMS, _as_pair, _block_rows, _check_bkr_shapes  # noqa: E402

IMPLS = ("old", "new")


def _data(n: int) -> dict[str, np.ndarray]:
    d = make_data(n)
    del d["tgt"]  # CORR uses the BkR sets only
    return d


def child(n: int, pairs: str, impl: str) -> dict:
    side_cls = M.CorrImageSide if impl == "new" else OldCorrImageSide
    d = _data(n)
    base = rss_mb()
    ok = reset_peak_rss()
    mp = None if pairs == "exact" else int(float(pairs))
    rep = 1 if mp is None or mp >= n * n else 3
    b_s, b_cpu, side = measure(lambda: side_cls.build(d["src_img"], d["tgt_img"], max_pairs=mp, seed=0), rep)
    e_s, e_cpu, rho = measure(lambda: side.spearman(d["src"], d["tgt2"]), rep)
    return {
        "n": n,
        "pairs": pairs,
        "impl": impl,
        "build_s": b_s,
        "build_cpu_s": b_cpu,
        "spearman_s": e_s,
        "spearman_cpu_s": e_cpu,
        "s": b_s + e_s,
        "cpu_s": b_cpu + e_cpu,
        "rho": rho,
        "rss_before_mb": base,
        "peak_during_mb": hwm_mb() if ok else None,
    }


def bare(n: int) -> dict:
    """The bare products an exact CORR needs: text (N×N×768) and image (N×N×1280) sgemm."""
    d = _data(n)
    t_s, t_cpu, _ = measure(lambda: d["src"] @ d["tgt2"].T, 3)
    i_s, i_cpu, _ = measure(lambda: d["src_img"] @ d["tgt_img"].T, 3)
    return {"n": n, "text_s": t_s, "text_cpu_s": t_cpu, "image_s": i_s, "image_cpu_s": i_cpu}


def quality(n: int, pairs: int, seeds: int) -> dict:
    """rho of both max_pairs estimators for seeds 0..seeds-1 and the exact rho, same data."""
    d = _data(n)
    args = (d["src"], d["tgt2"], d["src_img"], d["tgt_img"])
    out = {"n": n, "pairs": pairs, "seeds": seeds, "exact": M.corr(*args)}
    for impl, fn in (("new", M.corr), ("old", old_corr)):
        out[impl] = [fn(*args, max_pairs=pairs, seed=s) for s in range(seeds)]
        print(f"  corr quality {impl}: {seeds} seeds done", file=sys.stderr, flush=True)
    return out


def _pairs_label(n: int, pairs: str) -> str:
    if pairs == "exact":
        return f"all {n * n:.0e}"
    return pairs + (" (≥ N², so exact)" if float(pairs) >= n * n else "")


def run(quick: bool = False, n: int = 10_000) -> tuple[str, dict]:
    n = min(n, 3_000) if quick else n
    cases = [(n, "exact"), (n, "1e6")] + ([] if quick else [(n, "1e7"), (100_000, "1e6")])
    runs = []
    for nn, p in cases:
        for impl in IMPLS:
            r = run_child("bench_corr", ["--child", str(nn), "--pairs", p, "--impl", impl])
            runs.append(r)
            print(
                f"  corr N={nn} pairs={p} {impl}: image side {r['build_s']:.2f}s, per encoder {r['spearman_s']:.2f}s, "
                f"peak {r['peak_during_mb'] or 0:.0f} MB",
                file=sys.stderr,
                flush=True,
            )
    bare_r = run_child("bench_corr", ["--child", str(n), "--bare"])
    q_pairs = min(10**6, n * n // 10)
    q_seeds = 3 if quick else 20
    qual = run_child("bench_corr", ["--quality", str(n), "--pairs", str(q_pairs), "--seeds", str(q_seeds)])

    rows = []
    for r in runs:
        rows.append(
            [
                f"{r['n']:,}",
                _pairs_label(r["n"], r["pairs"]),
                r["impl"] + (" (previous implementation)" if r["impl"] == "old" else ""),
                r["build_s"],
                r["build_cpu_s"],
                r["spearman_s"],
                r["spearman_cpu_s"],
                f"{r['rho']:.6f}",
                round(r["rss_before_mb"] or 0),
                round(r["peak_during_mb"]) if r["peak_during_mb"] else "n/a",
            ]
        )
    t1 = md_table(
        [
            "N",
            "pairs",
            "implementation",
            "image side wall s",
            "image side CPU s",
            "per encoder wall s",
            "per encoder CPU s",
            "Spearman ρ",
            "RSS before MB",
            "peak during CORR MB",
        ],
        rows,
    )
    by = {(r["n"], r["pairs"], r["impl"]): r for r in runs}
    rows = []
    for nn, p in cases:
        o, w = by[(nn, p, "old")], by[(nn, p, "new")]
        per_bare = w["spearman_s"] / bare_r["text_s"] if nn == bare_r["n"] else ""
        rows.append(
            [
                f"{nn:,}",
                _pairs_label(nn, p),
                o["build_s"] / w["build_s"],
                o["build_cpu_s"] / w["build_cpu_s"],
                o["spearman_s"] / w["spearman_s"],
                o["spearman_cpu_s"] / w["spearman_cpu_s"],
                (o["peak_during_mb"] or 0) / (w["peak_during_mb"] or 1),
                per_bare,
                f"{abs(o['rho'] - w['rho']):.1e}",
            ]
        )
    t2 = md_table(
        [
            "N",
            "pairs",
            "image side old/new wall",
            "old/new CPU",
            "per encoder old/new wall",
            "old/new CPU",
            "peak RSS old/new",
            "new per encoder / bare text product",
            "abs(ρ new − ρ old)",
        ],
        rows,
    )
    t3 = md_table(
        ["bare product (same data, best of 3)", "wall s", "CPU s"],
        [
            [f"text `src @ tgt2.T` ({n:,}×{n:,}×768)", bare_r["text_s"], bare_r["text_cpu_s"]],
            [f"image `src_img @ tgt_img.T` ({n:,}×{n:,}×1280)", bare_r["image_s"], bare_r["image_cpu_s"]],
        ],
    )
    rows = []
    for impl, design in (
        ("old", "iid pairs with replacement (previous implementation)"),
        ("new", "`BandPairs` (balanced band)"),
    ):
        err = np.abs(np.asarray(qual[impl]) - qual["exact"])
        rows.append(
            [
                f"{n:,}",
                f"{q_pairs:.0e}",
                design,
                q_seeds,
                f"{err.max():.1e}",
                f"{np.sqrt(np.mean(err**2)):.1e}",
                f"{np.median(err):.1e}",
                f"{q_pairs**-0.5:.1e}",
            ]
        )
    t4 = md_table(["N", "pairs", "subsample", "seeds", "max abs(ρ − exact)", "rms", "median", "1/√pairs"], rows)
    text = (
        f"{t1}\n\nRatios (old ÷ new; > 1 = faster / smaller now):\n\n{t2}\n\n{t3}\n\n"
        f"Estimator error over seeds 0..{q_seeds - 1} (exact ρ = {qual['exact']:.6f}):\n\n{t4}"
    )
    return text, {"runs": runs, "bare": bare_r, "quality": qual}


# ============================================================================================
# REFERENCE BASELINE — the previous CORR implementation (src/backretrieval/metrics.py (now metrics/kernels.py) at
# commit 66a960b), kept verbatim apart from names (Old*/_old_*) so that every run measures old
# and new side by side on the same data. Not used by the library.
# ============================================================================================


def old_corr(src_text, tgt_text, src_img, tgt_img, max_pairs=None, seed=0, block_elems=DEFAULT_BLOCK_ELEMS) -> float:
    _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img)
    side = OldCorrImageSide.build(src_img, tgt_img, max_pairs=max_pairs, seed=seed, block_elems=block_elems)
    return side.spearman(src_text, tgt_text, block_elems=block_elems)


@dataclass(frozen=True)
class OldCorrImageSide:
    """OLD: iid pairs (with replacement), float64 standardised ranks, one float64 dot product."""

    n_src: int
    n_tgt: int
    pair_i: np.ndarray | None
    pair_j: np.ndarray | None
    img_rank_std: np.ndarray

    @classmethod
    def build(
        cls, src_img, tgt_img, max_pairs=None, seed=0, block_elems=DEFAULT_BLOCK_ELEMS, assume_normalized=False
    ) -> OldCorrImageSide:
        si, ti = (src_img, tgt_img) if assume_normalized else _as_pair(src_img, tgt_img, "corr image")
        i, j = _old_pairs(si.shape[0], ti.shape[0], max_pairs, seed)
        d_img = _old_distances(si, ti, i, j, block_elems)
        return cls(si.shape[0], ti.shape[0], i, j, _old_std_ranks(d_img))

    def spearman(self, src_text, tgt_text, block_elems=DEFAULT_BLOCK_ELEMS) -> float:
        st, tt = _as_pair(src_text, tgt_text, "corr text")
        if st.shape[0] != self.n_src or tt.shape[0] != self.n_tgt:
            raise ValueError("corr: text rows do not match the image side")
        r_text = _old_std_ranks(_old_distances(st, tt, self.pair_i, self.pair_j, block_elems))
        if not np.isfinite(r_text).all() or not np.isfinite(self.img_rank_std).all():
            return float("nan")
        return float(np.clip(np.dot(r_text, self.img_rank_std), -1.0, 1.0))


def _old_pairs(n_s, n_t, max_pairs, seed):
    if max_pairs is not None and max_pairs < n_s * n_t:
        rng = np.random.default_rng(seed)
        return rng.integers(0, n_s, size=max_pairs), rng.integers(0, n_t, size=max_pairs)
    return None, None


def _old_distances(a, b, i, j, block_elems):
    if i is None:
        out = np.empty((a.shape[0], b.shape[0]), dtype=a.dtype)
        step = _block_rows(a.shape[0], b.shape[0], block_elems)
        for s in range(0, a.shape[0], step):
            e = min(a.shape[0], s + step)
            np.subtract(1, a[s:e] @ b.T, out=out[s:e])
        return out.ravel()
    out = np.empty(len(i), dtype=np.float64)
    n_a, n_b = a.shape[0], b.shape[0]
    if len(i) * 64 >= n_a * n_b:
        order = np.argsort(i, kind="stable")
        bounds = np.searchsorted(i[order], np.arange(0, n_a + 1))
        rstep = _block_rows(n_a, n_b, block_elems)
        for s in range(0, n_a, rstep):
            e = min(n_a, s + rstep)
            sel = order[bounds[s] : bounds[e]]
            if sel.size:
                out[sel] = 1.0 - (a[s:e] @ b.T)[i[sel] - s, j[sel]]
        return out
    step = max(1, block_elems // max(1, a.shape[1]))
    for s in range(0, len(i), step):
        e = min(len(i), s + step)
        out[s:e] = 1.0 - np.einsum("ij,ij->i", a[i[s:e]], b[j[s:e]])
    return out


def _old_average_ranks(x):
    x = np.asarray(x).ravel()
    n = x.size
    order = np.argsort(x, kind="quicksort")
    xs = x[order]
    starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    ranks = np.empty(n, dtype=np.float64)
    if starts.size == n:
        ranks[order] = np.arange(1, n + 1, dtype=np.float64)
        return ranks
    ends = np.concatenate((starts[1:], [n]))
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def _old_std_ranks(x):
    r = _old_average_ranks(x)
    r -= r.mean()
    norm = np.linalg.norm(r)
    return r / norm if norm > 0 else np.full_like(r, np.nan)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", type=int)
    ap.add_argument("--pairs", default="exact")
    ap.add_argument("--impl", choices=IMPLS, default="new")
    ap.add_argument("--bare", action="store_true")
    ap.add_argument("--quality", type=int)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=10_000)
    a = ap.parse_args()
    if a.quality:
        print(json.dumps(quality(a.quality, int(float(a.pairs)), a.seeds)))
    elif a.child:
        print(json.dumps(bare(a.child) if a.bare else child(a.child, a.pairs, a.impl)))
    else:
        print(run(a.quick, a.n)[0])
