"""Work shared between the encoders of one sample (issue 16, goal 2): ``evaluate_sample`` with
the sample's image score matrix kept and shared by every encoder's full BkR ranks (the
default) vs without (``score_cache_bytes=0``: each encoder scores its distinct back-retrieved
targets itself, as before), side by side in one process, alternating, best of ``--repeats``.

    python benchmarks/bench_sharing.py                     # N=1,000 (default config) and N=10,000
    python benchmarks/bench_sharing.py --n 5000 --encoders 10 --repeats 2

Data: SYNTHETIC (bench_common.make_data: concept clusters, text dims of the protocol's
stand-in encoders, image dim 1280), full BkR ranks, CORR with ``--corr-max-pairs`` (default
1e6, as in benchmarks/protocol.yaml). Checks that the results and per-query ranks are
identical. Also prints the bare products of the sample (the floor of benchmarks/bench_protocol.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_common import make_data  # noqa: E402
from protocol_data import ENCODERS  # noqa: E402

from backretrieval.metrics.kernels import evaluate_sample  # noqa: E402


def _encoders(n: int, count: int) -> tuple[dict, np.ndarray, np.ndarray]:
    encs, img = {}, None
    for i, (name, dim) in enumerate(list(ENCODERS.items())[:count]):
        d = make_data(n, d_text=dim, seed=i)
        encs[name] = {"xlr_src": d["src"], "xlr_tgt": d["tgt"], "bkr_src": d["src"], "bkr_tgt": d["tgt2"]}
        if img is None:
            img = (d["src_img"], d["tgt_img"])
    return encs, img[0], img[1]


def _timed(fn) -> tuple[float, float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def run(n: int, count: int, repeats: int, corr_max_pairs: int | None) -> list[list]:
    encs, s_img, t_img = _encoders(n, count)
    best = {"without": (np.inf, np.inf), "shared": (np.inf, np.inf)}
    outs = {}
    for _ in range(repeats):
        for label, cache in (("without", 0), ("shared", None)):
            kept = {}
            w, c, res = _timed(
                lambda: evaluate_sample(
                    encs,
                    None,
                    s_img,
                    t_img,
                    k=10,
                    corr_max_pairs=corr_max_pairs,
                    ranks_out=kept,
                    score_cache_bytes=cache,
                )
            )
            best[label] = (min(best[label][0], w), min(best[label][1], c))
            outs[label] = (res, kept)
    same = outs["without"][0] == outs["shared"][0] and all(
        np.array_equal(outs["without"][1][e][k], outs["shared"][1][e][k]) for e in encs for k in ("xlr", "bkr")
    )
    bare = []
    for a, b in (
        [(t_img, s_img)]
        + [(e["xlr_src"], e["xlr_tgt"]) for e in encs.values()]
        + [(e["bkr_src"], e["bkr_tgt"]) for e in encs.values()]
    ):
        w, c, _ = _timed(lambda: a @ b.T)
        bare.append((w, c))
    bw, bc = sum(x[0] for x in bare), sum(x[1] for x in bare)
    (ww, wc), (sw, sc) = best["without"], best["shared"]
    return [
        [n, count, "without (each encoder scores its back-retrieved targets)", ww, wc, ww / bw, wc / bc, "1", "1"],
        [n, count, "**shared image scores** (default)", sw, sc, sw / bw, sc / bc, f"{ww / sw:.2f}", f"{wc / sc:.2f}"],
        [n, count, "bare products (1 image + 2 per encoder)", bw, bc, 1.0, 1.0, "", ""],
        [n, count, f"identical results and ranks: {same}", "", "", "", "", "", ""],
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--encoders", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--corr-max-pairs", type=float, default=1e6)
    a = ap.parse_args()
    print(
        "| N | encoders | evaluate_sample | wall s | CPU s | wall × bare products | CPU × bare products "
        "| speed-up (wall) | speed-up (CPU) |\n|---|---|---|---|---|---|---|---|---|"
    )
    for n in a.n:
        for row in run(n, a.encoders, a.repeats, int(a.corr_max_pairs) if a.corr_max_pairs else None):
            print("| " + " | ".join(f"{x:.3g}" if isinstance(x, float) else str(x) for x in row) + " |", flush=True)


if __name__ == "__main__":
    main()
