"""argv of the file-based CLI steps for a config, wired as workflow/rules/*.smk wire them
(paths from backretrieval.steps.layout, settings from the config), for tests that run single
steps in-process without Snakemake. Relative locations stay relative (tests chdir into a
temporary working directory)."""

from __future__ import annotations

import json

from backretrieval.steps import layout
from backretrieval.steps.settings import fit_requirements


def _j(obj) -> str:
    return json.dumps(obj, sort_keys=True)


def prepare(cfg: dict) -> list[str]:
    spec = dict(cfg["dataset"])
    argv = ["prepare", "--languages", *cfg["languages"], "--out", str(layout.dataset_root(cfg))]
    if spec["source"] == "prepared":
        opts = dict(spec.get("options") or {})
        argv += ["--source-dir", str(opts.pop("path"))]
        spec["options"] = opts
    return argv + ["--spec", _j(spec)]


def check(cfg: dict) -> list[str]:
    return [
        "check-dataset",
        "--dataset",
        str(layout.dataset_root(cfg)),
        "--requirements",
        _j(fit_requirements(cfg)),
        "--out",
        str(layout.dataset_check_path(cfg)),
    ]


def embed_text(cfg: dict, enc: str) -> list[str]:
    outs = [str(layout.text_emb_path(cfg, enc, lang)) for lang in cfg["languages"]]
    return [
        "embed-text",
        "--dataset",
        str(layout.dataset_root(cfg)),
        "--encoder",
        enc,
        "--spec",
        _j(cfg["encoders"][enc]),
        "--text-field",
        cfg["text_field"],
        "--languages",
        *cfg["languages"],
        "--out",
        *outs,
        "--cache-dir",
        cfg["cache_dir"],
    ]


def embed_images(cfg: dict) -> list[str]:
    bb = cfg["image_backbone"]
    return [
        "embed-images",
        "--dataset",
        str(layout.dataset_root(cfg)),
        "--backbone",
        bb,
        "--spec",
        _j(cfg["backbones"][bb]),
        "--out",
        str(layout.image_emb_path(cfg)),
        "--cache-dir",
        cfg["cache_dir"],
    ]


def sample(cfg: dict, direction: str) -> list[str]:
    return [
        "sample",
        "--dataset",
        str(layout.dataset_root(cfg)),
        "--direction",
        direction,
        "--sample-size",
        str(cfg["sample_size"]),
        "--seeds",
        *map(str, cfg["seeds"]),
        "--out",
        str(layout.samples_path(cfg, direction)),
    ]


def metrics(cfg: dict, direction: str) -> list[str]:
    src, tgt = direction.split("-")
    text = [str(layout.text_emb_path(cfg, e, lang)) for e in cfg["encoders"] for lang in (src, tgt)]
    out = layout.metrics_path(cfg, direction)
    return [
        "metrics",
        "--dataset",
        str(layout.dataset_root(cfg)),
        "--dataset-name",
        cfg["dataset"]["name"],
        "--direction",
        direction,
        "--samples",
        str(layout.samples_path(cfg, direction)),
        "--images",
        str(layout.image_emb_path(cfg)),
        "--backbone",
        cfg["image_backbone"],
        "--encoders",
        *cfg["encoders"],
        "--text",
        *text,
        "--text-field",
        cfg["text_field"],
        "--recall-k",
        str(cfg["recall_k"]),
        "--out",
        str(out),
    ]
