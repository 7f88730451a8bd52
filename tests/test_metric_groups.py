"""Seed groups of the metrics step (`seed_group_size`): one job per (direction, seed group)
(`backretrieval metrics --seeds ...`) joined by `backretrieval metrics-gather` gives the bytes
of one job over every seed (CSV and per-query ranks), whatever the seeds' order and group size.

SYNTHETIC dataset (tiny images), SIMULATED image features (random, `features/sim.npy`), cheap
encoders (char n-grams, random): no model runs. The Snakemake wiring (metrics_part +
metrics_gather, grouped cluster profile) is exercised in tests/test_cluster.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from backretrieval import cli
from backretrieval.data.synthetic import generate
from backretrieval.steps.layout import ranks_path
from backretrieval.steps.settings import seed_groups

ENCODERS = {
    "ngram": {"type": "char_ngram", "dim": 256, "n": [2, 3]},
    "ngram-small": {"type": "char_ngram", "dim": 32, "n": [3]},
    "rnd": {"type": "random", "dim": 32, "seed": 0},
}
SEEDS = [7, 0, 3, 11, 5]  # not sorted: the samples file keeps this order, the CSV sorts by seed
DIRECTION = "en-de"


def _run(*argv: str) -> None:
    assert cli.main(["step", *(str(a) for a in argv)]) == 0, argv


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    wd = tmp_path_factory.mktemp("groups")
    root = wd / "syn"
    generate(root, n_items=90, languages=["en", "de"], seed=0, image_size=32)
    items = pd.read_csv(root / "items.csv", dtype=str)
    image_ids = sorted(set(items["image_id"]))
    (root / "features").mkdir()
    feats = np.random.default_rng(0).standard_normal((len(image_ids), 24)).astype(np.float32)
    np.save(root / "features" / "sim.npy", feats)
    (root / "features" / "sim.ids.txt").write_text("\n".join(image_ids) + "\n")
    img = wd / "image.npz"
    _run(
        "embed-images",
        "--dataset",
        root,
        "--image-backbone",
        "sim",
        "--spec",
        json.dumps({"type": "precomputed", "name": "sim"}),
        "--out",
        img,
        "--cache-dir",
        wd / "cache",
    )
    text = []
    for enc, spec in ENCODERS.items():
        outs = [wd / "text" / enc / f"{lang}.npz" for lang in ("en", "de")]
        _run(
            "embed-text",
            "--dataset",
            root,
            "--encoder",
            enc,
            "--spec",
            json.dumps(spec),
            "--text-field",
            "title",
            "--languages",
            "en",
            "de",
            "--out",
            *outs,
            "--cache-dir",
            wd / "cache",
        )
        text += outs
    samples = wd / "samples.json"
    _run(
        "sample", "--dataset", root, "--directions", DIRECTION, "--sample-size", 30, "--seeds", *SEEDS, "--out", samples
    )
    return dict(wd=wd, root=root, images=img, text=text, samples=samples)


def _metrics(d: dict, out: Path, *extra: str) -> None:
    _run(
        "metrics",
        "--dataset",
        d["root"],
        "--dataset-name",
        "syn",
        "--direction",
        DIRECTION,
        "--samples",
        d["samples"],
        "--image-emb",
        d["images"],
        "--image-backbone",
        "sim",
        "--encoders",
        *ENCODERS,
        "--text-emb",
        *d["text"],
        "--text-field",
        "title",
        "--recall-k",
        5,
        "--out",
        out,
        *extra,
    )


def _grouped(d: dict, tag: str, size: int, *extra: str) -> Path:
    parts = []
    for g, seeds in enumerate(seed_groups(SEEDS, size)):
        part = d["wd"] / tag / "parts" / f"{g}.csv"
        _metrics(d, part, "--seeds", *map(str, seeds), *extra)
        parts.append(part)
    out = d["wd"] / tag / "gathered.csv"
    _run("metrics-gather", "--metrics", *parts, "--out", out)
    return out


def test_seed_groups_are_consecutive_chunks_in_configured_order():
    assert seed_groups(SEEDS, None) == [SEEDS]
    assert seed_groups(SEEDS, 2) == [[7, 0], [3, 11], [5]]
    assert seed_groups(SEEDS, 5) == seed_groups(SEEDS, 9) == [SEEDS]


@pytest.mark.parametrize("extra", [(), ("--corr-max-pairs", "200")], ids=["ranks", "subsample"])
def test_gathered_seed_groups_are_byte_identical_to_one_job(data, extra):
    tag = "hits" if extra else "ranks"
    whole = data["wd"] / tag / "whole.csv"
    _metrics(data, whole, *extra)
    df = pd.read_csv(whole)
    assert sorted(set(df["seed"])) == sorted(SEEDS) and set(df["encoder"]) == set(ENCODERS)
    for size in (1, 2, 3):
        out = _grouped(data, f"{tag}{size}", size, *extra)
        assert out.read_bytes() == whole.read_bytes(), size
        assert ranks_path(out).read_bytes() == ranks_path(whole).read_bytes(), size


def test_bad_seed_groups_are_clear_errors(data, capsys):
    out = data["wd"] / "bad" / "x.csv"
    assert (
        cli.main(
            [
                "step",
                "metrics",
                "--dataset",
                str(data["root"]),
                "--dataset-name",
                "syn",
                "--direction",
                DIRECTION,
                "--samples",
                str(data["samples"]),
                "--image-emb",
                str(data["images"]),
                "--image-backbone",
                "sim",
                "--encoders",
                *ENCODERS,
                "--text-emb",
                *map(str, data["text"]),
                "--text-field",
                "title",
                "--recall-k",
                "5",
                "--seeds",
                "7",
                "42",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "no sample for seed(s) [42]" in capsys.readouterr().err and not out.exists()
    part = data["wd"] / "bad" / "p.csv"
    _metrics(data, part, "--seeds", "7")
    gathered = data["wd"] / "bad" / "g.csv"
    rc = cli.main(
        [
            "step",
            "metrics-gather",
            "--metrics",
            str(part),
            str(part),
            "--out",
            str(gathered),
        ]
    )
    assert rc == 2 and "overlapping seed groups" in capsys.readouterr().err and not gathered.exists()
