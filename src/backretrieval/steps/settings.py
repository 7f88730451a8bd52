"""What each step reads from a config: pure functions of the validated config dict.

No heavy imports here (pandas, scipy, torch): the Snakemake workflow calls these when it
parses, and Snakemake parses the workflow again in every job it spawns (each rule runs in a
shadow directory), so their import cost is paid once per job.
"""

from __future__ import annotations

from .._util.device import DEFAULT_MODEL_THREADS
from ..errors import InputError

# the encoders' roles in the findings' encoder sets (Table 1 uses them too)
from ..stats.encoder_sets import WORDVEC_FAMILY as WORDVEC_FAMILY
from ..stats.encoder_sets import encoder_roles as encoder_roles
from ..stats.encoder_sets import english_only_encoders as english_only_encoders

__all__ = [
    "WORDVEC_FAMILY",
    "encoder_roles",
    "english_only_encoders",
    "fit_requirements",
    "report_settings",
    "seed_groups",
]


def seed_groups(seeds: list[int], size: int | None) -> list[list[int]]:
    """The seed groups of one direction's metric jobs: consecutive chunks of ``seeds`` (in their
    configured order, which is the order of the samples file) of at most ``size`` seeds; one
    group of all seeds when ``size`` is None."""
    if size is None:
        return [list(seeds)]
    if size < 1:
        raise InputError(f"seed_group_size: expected an integer >= 1, got {size}")
    return [list(seeds[i : i + size]) for i in range(0, len(seeds), size)]


def report_settings(cfg: dict) -> dict:
    """The settings :func:`build_report` reads, from a validated config (N and the k of
    Recall@k it reads from the metrics files)."""
    boot = cfg.get("stats") or {}
    return {
        "run_name": cfg["run_name"],
        "n_seeds": len(cfg["seeds"]),
        "image_backbone": cfg["image_backbone"],
        "text_field": cfg["text_field"],
        "figure_seed": int(cfg.get("figure_seed", cfg["seeds"][0])),
        "bootstrap_B": int(boot.get("bootstrap_B", 1000)),
        "bootstrap_seed": int(boot.get("bootstrap_seed", 0)),
        # Table 1's core block and its test's encoder families (the findings' definitions)
        **encoder_roles(cfg),
        # not a setting of the report's numbers: recorded in metrics.json's environment block
        "model_threads": int(cfg.get("model_threads", DEFAULT_MODEL_THREADS)),
    }


def fit_requirements(cfg: dict) -> dict:
    """What :func:`check_fits` needs to know of a validated config (a JSON-able dict): the
    languages, directions, N and image backbone, and the case/human-study sizes."""
    req: dict = {
        "languages": list(cfg["languages"]),
        "directions": list(cfg["directions"]),
        "sample_size": int(cfg["sample_size"]),
        "image_backbone": str(cfg["image_backbone"]),
        "backbone": dict(cfg["backbones"][cfg["image_backbone"]]),
    }
    if cfg.get("case_study"):
        from ..study.case_config import case_cfg, human_cfg

        cs = case_cfg(cfg)
        req["case_study"] = {
            "languages": list(cs["languages"]),
            "eval_splits": list(cs["eval_splits"]),
            "train_splits": list(cs["train_splits"]),
            "sample_size": int(cs["sample_size"]),
            "train_corpus": bool(cs.get("train_corpus")),
        }
        if cfg.get("human_study"):
            hs = human_cfg(cfg)
            req["human_study"] = {k: hs[k] for k in ("source_lang", "target_lang", "n_queries", "top_k")}
    return req
