"""EfficientNet-Lite0 image features on the CPU: the forward batch size side by side,
one torch thread, as the workflow's embed_images job computes.

    python benchmarks/bench_images.py                 # 64 SYNTHETIC images, batch sizes 4, 8, 16, 32
    python benchmarks/bench_images.py --n 32 --batch-sizes 4 32 --repeats 2

Images: SYNTHETIC scenes rendered by the package's generator (160 px, as the default config),
written to a temporary folder. Each batch size gets its own backbone (canonical batching: every
forward pass has exactly that many images); the sizes are timed alternately, best of
``--repeats``, ``encode_images`` end to end (loading, preprocessing, forward pass). Prints the
milliseconds per image, the ratio to the default batch size, and how many images got other
bits than with the default (the batch size is part of the fingerprint for this reason).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import md_table  # noqa: E402

from backretrieval.data.synthetic import generate  # noqa: E402
from backretrieval.images import build_image_backbone  # noqa: E402


def run(n: int, batch_sizes: list[int], repeats: int) -> str:
    default = build_image_backbone("effnet-lite0", {"type": "efficientnet-lite", "variant": "lite0"}).batch_size
    sizes = sorted(set(batch_sizes) | {default})
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp) / "syn", n_items=n, languages=("en",))
        paths = sorted((Path(tmp) / "syn" / "images").glob("*.png"))[:n]
        backbones = {
            bs: build_image_backbone(
                "effnet-lite0", {"type": "efficientnet-lite", "variant": "lite0", "batch_size": bs, "device": "cpu"}
            )
            for bs in sizes
        }
        for bb in backbones.values():
            bb.encode_images(paths[:1])  # load the weights, warm up
        best = {bs: np.inf for bs in sizes}
        feats: dict[int, np.ndarray] = {}
        for _ in range(repeats):
            for bs, bb in backbones.items():
                t0 = time.perf_counter()
                feats[bs] = bb.encode_images(paths)
                best[bs] = min(best[bs], time.perf_counter() - t0)
    rows = [
        [
            f"**{bs}** (default)" if bs == default else bs,
            f"{best[bs] / len(paths) * 1000:.1f}",
            f"{best[bs] / best[default]:.2f}",
            int((feats[bs] != feats[default]).any(axis=1).sum()),
        ]
        for bs in sizes
    ]
    head = f"{len(paths)} SYNTHETIC images, EfficientNet-Lite0, 1 torch thread, best of {repeats}\n\n"
    return head + md_table(["batch size", "ms per image", "× default", "images with other bits"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    print(run(a.n, a.batch_sizes, a.repeats))


if __name__ == "__main__":
    main()
