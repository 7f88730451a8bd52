"""SYNTHETIC data of the paper-protocol config (benchmarks/protocol.yaml): a prepared dataset with
precomputed image features and ten precomputed text encoders, generated from a fixed seed.

    python benchmarks/protocol_data.py                      # data/generated/protocol (25,000 items)
    python benchmarks/protocol_data.py --items 4000 --root WORKDIR/data/generated/protocol

Everything here is SYNTHETIC (no text is read or encoded, no image exists): it stands in for
the paper's data so that the metric phase of its protocol (25 seeds x 10 encoders x 8
directions at N=10,000) can be run and timed through the pipeline with embedding time
excluded. Items belong to concepts (n/50 of them); an encoder's text vector of an item is
concept centre + item offset + language noise (so XLR is a fine-grained retrieval and BkR's
back-retrieved targets show realistic hubness), an image's feature is the image-space concept
centre + noise. Encoder dimensions mimic the paper's kinds of encoders (300 for word vectors,
384-1024 for sentence encoders); the image features have EfficientNet-Lite0's 1280.

Layout under ``--root`` (the paths benchmarks/protocol.yaml names)::

    dataset/dataset.json, dataset/items.csv          prepared dataset (source: prepared)
    dataset/features/sim.npy, sim.ids.txt            precomputed image features (backbone `sim`)
    text/<encoder>/<lang>.npy, <lang>.ids.txt        precomputed text encoders
    manifest.json                                    the generation parameters (regenerated when they change)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ROOT = Path("data/generated/protocol")
LANGUAGES = ["en", "de", "fr", "es", "ru"]
#: encoder id -> dimension (SYNTHETIC stand-ins, named by the kind of encoder they mimic)
ENCODERS = {
    "syn-labse": 768,
    "syn-muse": 512,
    "syn-laser": 1024,
    "syn-xlmr": 768,
    "syn-mbert": 768,
    "syn-e5-small": 384,
    "syn-vecmap": 300,
    "syn-rcsls": 300,
    "syn-use-m": 512,
    "syn-sbert": 768,
}
D_IMG = 1280
CHUNK = 8192


def _rows(rng: np.random.Generator, centres: np.ndarray, rows: np.ndarray, noise: float, normalise: bool) -> np.ndarray:
    out = np.empty((rows.shape[0], centres.shape[1]), dtype=np.float32)
    for s in range(0, rows.shape[0], CHUNK):
        x = out[s : s + CHUNK]
        x[...] = rng.standard_normal(x.shape, dtype=np.float32)
        x *= noise
        x += centres[rows[s : s + CHUNK]]
        if normalise:
            x /= np.linalg.norm(x, axis=1, keepdims=True)
    return out


def generate(root: Path, n_items: int = 25_000, seed: int = 0, text_noise: float = 3.0) -> bool:
    """Write the SYNTHETIC protocol data under ``root``; False when it is already there with these
    parameters (nothing rewritten, so the pipeline's inputs keep their modification times)."""
    root = Path(root)
    manifest = {
        "n_items": n_items,
        "seed": seed,
        "text_noise": text_noise,
        "languages": LANGUAGES,
        "encoders": ENCODERS,
        "d_img": D_IMG,
        "synthetic": True,
    }
    mpath = root / "manifest.json"
    if mpath.is_file() and json.loads(mpath.read_text()) == manifest:
        return False
    rng = np.random.default_rng(seed)
    n_conc = max(2, n_items // 50)
    concept = rng.integers(0, n_conc, n_items)
    item_ids = [f"p{i:06d}" for i in range(n_items)]
    image_ids = [f"img{i:06d}" for i in range(n_items)]
    ds = root / "dataset"
    (ds / "features").mkdir(parents=True, exist_ok=True)
    (ds / "dataset.json").write_text(
        json.dumps(
            {
                "name": "protocol-synthetic",
                "synthetic": True,
                "parallel": True,
                "languages": LANGUAGES,
                "description": "SYNTHETIC stand-in for the paper protocol (benchmarks/protocol_data.py): no texts "
                "or images, precomputed SYNTHETIC embeddings only",
                "license": "CC0-1.0",
            },
            indent=1,
        )
        + "\n"
    )
    with open(ds / "items.csv", "w", encoding="utf-8") as fh:
        fh.write("item_id,lang,image_id,title,body,split\n")
        for lang in LANGUAGES:
            for i, (it, im) in enumerate(zip(item_ids, image_ids)):
                fh.write(f"{it},{lang},{im},synthetic item {i} ({lang}),,eval\n")
    ci = rng.standard_normal((n_conc, D_IMG), dtype=np.float32)
    np.save(ds / "features" / "sim.npy", _rows(rng, ci, concept, 1.0, True))
    (ds / "features" / "sim.ids.txt").write_text("\n".join(image_ids) + "\n")
    ids_text = "\n".join(item_ids) + "\n"
    for enc, dim in ENCODERS.items():
        ct = rng.standard_normal((n_conc, dim), dtype=np.float32)
        item = _rows(rng, ct, concept, 1.0, False)
        d = root / "text" / enc
        d.mkdir(parents=True, exist_ok=True)
        for lang in LANGUAGES:
            np.save(d / f"{lang}.npy", _rows(rng, item, np.arange(n_items), text_noise, True))
            (d / f"{lang}.ids.txt").write_text(ids_text)
    mpath.write_text(json.dumps(manifest, indent=1) + "\n")
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT, help=f"output folder (default {DEFAULT_ROOT})")
    ap.add_argument("--items", type=int, default=25_000, help="items (each in every language, one image each)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(("generated" if generate(a.root, a.items, a.seed) else "up to date") + f": {a.root}")


if __name__ == "__main__":
    main()
