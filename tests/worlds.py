"""The tests' hand-made toy worlds (the library's SYNTHETIC generator is the other source of
test data: ``synthetic_dataset`` in conftest.py, texts and images for the pipeline's own steps).

``make_prepared``: a bring-your-own prepared folder in the documented format (parallel items,
precomputed image features), for tests that run the steps or the workflow on it without any
model or generated image.

``make_world`` / ``write_world``: a constructed world for the findings tests: items in concept
clusters, images that show the concept, and text encoders of known, graded quality (so XLR and
BkR must order them alike); embeddings, not texts, so the expected order is known.

Item i has concept c(i) (n_concepts clusters). Its image is the concept centre plus a little
noise; its text in every language is the item's own latent vector (concept centre + item
detail) plus encoder noise of scale sigma[e]: small sigma = a good encoder. Also writes the
world as a prepared dataset + artifacts for the step / CLI tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from backretrieval.data.sampling import draw_samples
from backretrieval.evaluation.core import image_of_items
from backretrieval.findings.views import build_view


def make_prepared(root: Path, n_items: int = 30, langs=("en", "de"), splits=("val", "test")) -> Path:
    """A prepared folder: n_items parallel items (item i in split ``splits[i % len(splits)]``),
    one image each, precomputed 8-d features ``features/fake.npy``."""
    root.mkdir(parents=True)
    (root / "dataset.json").write_text(json.dumps({"name": "hand", "languages": list(langs), "parallel": True}))
    rows = [
        (f"i{i:03d}", lang, f"img{i:03d}", f"{lang} item {i} " + "ab" * (i % 7), "", splits[i % len(splits)])
        for i in range(n_items)
        for lang in langs
    ]
    pd.DataFrame(rows, columns=["item_id", "lang", "image_id", "title", "body", "split"]).to_csv(
        root / "items.csv", index=False
    )
    (root / "features").mkdir()
    np.save(root / "features/fake.npy", np.random.default_rng(0).standard_normal((n_items, 8)).astype(np.float32))
    (root / "features/fake.ids.txt").write_text("".join(f"img{i:03d}\n" for i in range(n_items)))
    return root


SIGMAS = {"good": 0.05, "mid": 0.6, "weak": 1.5, "random": None}


def make_world(
    n_items: int = 400,
    n_concepts: int = 40,
    d: int = 24,
    di: int = 16,
    seed: int = 0,
    langs=("en", "de"),
    sigmas=SIGMAS,
):
    rng = np.random.default_rng(seed)
    concept = rng.integers(n_concepts, size=n_items)
    centres_t = rng.normal(size=(n_concepts, d))
    centres_i = rng.normal(size=(n_concepts, di))
    latent = centres_t[concept] + 0.35 * rng.normal(size=(n_items, d))
    images = (centres_i[concept] + 0.2 * rng.normal(size=(n_items, di))).astype(np.float32)
    ids = [f"it{i:05d}" for i in range(n_items)]
    img_ids = [f"im{i:05d}" for i in range(n_items)]
    items = pd.DataFrame(
        [
            dict(item_id=ids[i], lang=lang, image_id=img_ids[i], title=f"t{i}", body="")
            for lang in langs
            for i in range(n_items)
        ]
    )
    texts = {}
    for e_i, (enc, sigma) in enumerate(sigmas.items()):
        texts[enc] = {}
        for l_i, lang in enumerate(langs):
            r = np.random.default_rng([seed, e_i, l_i])
            emb = r.normal(size=(n_items, d)) if sigma is None else latent + sigma * r.normal(size=(n_items, d))
            texts[enc][lang] = ({x: i for i, x in enumerate(ids)}, emb.astype(np.float32))
    image_lookup = ({x: i for i, x in enumerate(img_ids)}, images)
    return items, texts, image_lookup, concept


def views(items, texts, n=100, seeds=(0, 1), direction="en-de"):
    src, tgt = direction.split("-")
    imgs = image_of_items(items)
    return [build_view(s, imgs, texts, direction) for s in draw_samples(items, src, tgt, n, list(seeds), True)]


def write_world(root: Path, n_items: int = 300, n=80, seeds=(0, 1, 2), directions=("en-de", "de-en")):
    """The world as files: prepared dataset, text/image npz, samples JSON and the metrics CSVs of
    the main pipeline (the run a findings record names). Returns the paths; the metrics CSVs
    are ``root/metrics/<direction>.csv`` (:func:`metrics_files`)."""
    from backretrieval.steps.metrics import metrics_step

    items, texts, (img_index, img_emb), concept = make_world(n_items=n_items)
    ds = root / "dataset"
    ds.mkdir(parents=True)
    items.to_csv(ds / "items.csv", index=False)
    (ds / "dataset.json").write_text(
        json.dumps(
            {
                "name": "world",
                "synthetic": False,
                "parallel": True,
                "languages": ["en", "de"],
                "description": "test world",
                "license": "CC0",
            }
        )
    )
    text_files = {}
    for enc, by_lang in texts.items():
        for lang, (index, emb) in by_lang.items():
            p = root / "text" / enc / f"{lang}.npz"
            p.parent.mkdir(parents=True, exist_ok=True)
            np.savez(p, emb=emb, ids=np.array(sorted(index, key=index.get)))
            text_files[(enc, lang)] = p
    img = root / "image" / "bb.npz"
    img.parent.mkdir(parents=True)
    np.savez(img, emb=img_emb, ids=np.array(sorted(img_index, key=img_index.get)))
    samples = []
    for d in directions:
        src, tgt = d.split("-")
        p = root / "samples" / f"{d}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        ss = draw_samples(items, src, tgt, n, list(seeds), True)
        p.write_text(json.dumps({"direction": d, "n": n, "samples": [s.to_dict() for s in ss]}))
        samples.append(p)
        metrics_step(
            dataset=ds,
            dataset_name="world",
            direction=d,
            samples_file=p,
            image_file=img,
            backbone="bb",
            text_files={e: (text_files[(e, src)], text_files[(e, tgt)]) for e in texts},
            text_field="title",
            recall_k=10,
            corr_max_pairs=None,
            out=root / "metrics" / f"{d}.csv",
        )
    return ds, text_files, img, samples


def metrics_files(root: Path) -> list[str]:
    """The metrics CSVs :func:`write_world` wrote under ``root``."""
    return sorted(str(p) for p in (root / "metrics").glob("*.csv"))
