"""torch (CUDA) kernels vs the numpy CPU kernels, with the reduced-precision accuracy check.

    python benchmarks/bench_gpu.py [--quick] [--n 10000]

Prints "no CUDA device" (and exits 0) where torch or CUDA is unavailable. Otherwise, on the
same SYNTHETIC normalised float32 inputs (d_text=768, d_img=1280):
* speed: numpy CPU ``xlr``+``bkr`` vs ``metrics_torch`` on CUDA in fp32/fp16/bf16 (wall time
  of the public functions: host normalisation + host→device copy + kernels + ranks back;
  ``torch.cuda.synchronize`` before stopping the clock; one warm-up call first);
* accuracy: fp32 CUDA ranks vs numpy ranks (fraction identical), fp16/bf16 vs fp32 (fraction
  of queries whose rank differs, |ΔRecall@10|; stated tolerance for fp16: ≤ 0.01),
  BkrImageIndex codes equal, and ``torch.argmax`` / our first-argmax tie behaviour on CUDA.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import make_data, md_table, measure  # noqa: E402

import backretrieval.metrics as M  # noqa: E402

FP16_TOLERANCE = 0.01


def run(quick: bool = False, n: int = 10_000, device: str = "cuda") -> tuple[str, dict]:
    """``device="cpu"`` runs the same comparison with torch on the CPU (for testing the script)."""
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        return f"no CUDA device (torch not importable: {exc})", {}
    if device == "cuda" and not torch.cuda.is_available():
        return "no CUDA device", {}
    from backretrieval.metrics import torch_kernels as T

    dev = device
    sizes = [n] if quick else sorted({n, 30_000})
    name = torch.cuda.get_device_name(0) if dev == "cuda" else f"CPU (torch {torch.get_num_threads()} threads)"
    out, units = [], {"device": name}
    label = "CUDA" if dev == "cuda" else "CPU"

    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()

    for nn in sizes:
        d = make_data(nn)
        src, tgt, tgt2, s_img, t_img = d["src"], d["tgt"], d["tgt2"], d["src_img"], d["tgt_img"]
        rep = 1 if quick and nn > 10_000 else 3
        w_np, _, (rx_np, rb_np) = measure(lambda: (M.xlr_ranks(src, tgt), M.bkr_ranks(src, tgt2, s_img, t_img)), 1)
        rows = [["numpy CPU fp32", w_np, 1.0, "reference", M.recall_at_k(rx_np, 10), M.recall_at_k(rb_np, 10)]]
        ranks = {}
        for prec in ("fp32", "fp16", "bf16"):

            def job(prec=prec):
                r = (
                    T.xlr_ranks(src, tgt, device=dev, precision=prec),
                    T.bkr_ranks(src, tgt2, s_img, t_img, device=dev, precision=prec),
                )
                sync()
                return r

            job()  # warm-up (CUDA context, cuBLAS handles)
            w, _, (rx, rb) = measure(job, rep)
            ranks[prec] = (rx, rb)
            if prec == "fp32":
                acc = f"ranks identical to numpy: XLR {np.mean(rx == rx_np):.4%}, BkR {np.mean(rb == rb_np):.4%}"
            else:
                r32x, r32b = ranks["fp32"]
                dx = M.recall_at_k(rx, 10) - M.recall_at_k(r32x, 10)
                db = M.recall_at_k(rb, 10) - M.recall_at_k(r32b, 10)
                ok = "OK" if max(abs(dx), abs(db)) <= FP16_TOLERANCE else "EXCEEDS 0.01"
                acc = (
                    f"vs fp32: rank differs XLR {np.mean(rx != r32x):.2%}, BkR {np.mean(rb != r32b):.2%}; "
                    f"ΔR@10 XLR {dx:+.4f}, BkR {db:+.4f} ({ok})"
                )
            rows.append([f"torch {label} {prec}", w, w_np / w, acc, M.recall_at_k(rx, 10), M.recall_at_k(rb, 10)])
            units[f"n{nn}_{prec}_s"] = w
        units[f"n{nn}_numpy_s"] = w_np
        # kernels only: inputs normalised and resident on the device before the clock starts
        for prec in ("fp32", "fp16"):
            dt = T._dtype(prec)
            tens = [T._to_device(x, torch.device(dev), dt) for x in (src, tgt, tgt2, s_img, t_img)]
            ts, tt, tt2, tsi, tti = tens
            ar = torch.arange(nn, device=dev)

            def kern(ts=ts, tt=tt, tt2=tt2, tsi=tsi, tti=tti, ar=ar):
                rx = T._ranks_of_true(ts, tt, ar)
                rb = T._ranks_of_true(tti, tsi, ar, query_idx=T._nearest(ts, tt2))
                sync()
                return rx, rb

            kern()
            w, _, (rx, rb) = measure(kern, rep)
            same = np.array_equal(rx.cpu().numpy(), ranks[prec][0]) and np.array_equal(rb.cpu().numpy(), ranks[prec][1])
            rows.append(
                [
                    f"torch {label} {prec}, data already on device (kernels only)",
                    w,
                    w_np / w,
                    f"same ranks as the public-API row: {same}",
                    "",
                    "",
                ]
            )
            del tens, ts, tt, tt2, tsi, tti
        # shared image index: same codes as numpy
        w_bi_np, _, idx_np = measure(lambda: M.BkrImageIndex.build(s_img, t_img, k=10), 1)
        w_bi, _, idx_t = measure(lambda: T.build_image_index(s_img, t_img, k=10, device=dev), rep)
        same = np.array_equal(idx_np.codes, idx_t.codes)
        rows.append(
            [
                f"BkrImageIndex.build numpy → torch {label} fp32",
                w_bi,
                w_bi_np / w_bi,
                f"codes identical: {same}",
                "",
                "",
            ]
        )
        out.append(
            f"N={nn:,}, {name}:\n\n"
            + md_table(
                ["path", "wall s (xlr_ranks+bkr_ranks)", "speed-up vs numpy CPU", "accuracy", "XLR R@10", "BkR R@10"],
                rows,
            )
        )

    # tie behaviour on the device
    s = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [0.0, -1.0, 5.0, 5.0]], device=dev)
    big = torch.zeros(64, 4096, device=dev)
    big[:, 100] = big[:, 3000] = 1.0
    am = torch.argmax(s, dim=1).tolist() + [int(v) for v in torch.argmax(big, dim=1).unique().tolist()]
    ours = T._first_argmax(s).tolist() + [int(v) for v in T._first_argmax(big).unique().tolist()]
    out.append(
        f"Tie check on {units['device']}: torch.argmax → {am} (lowest index expected [1, 0, 2, 100]); "
        f"metrics_torch first-argmax → {ours}."
    )
    return "\n\n".join(out), units


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument(
        "--device",
        default="cuda",
        choices=["cuda", "cpu"],
        help="cpu: same comparison with torch on the CPU (tests the script without a GPU)",
    )
    a = ap.parse_args()
    print(run(a.quick, a.n, a.device)[0])
