"""The ``case_study`` and ``human_study`` config sections with their defaults, checked against
the rest of the config: pure functions of the config dict, with no heavy imports, because the
Snakemake workflow calls them when it parses (in every job it spawns)."""

from __future__ import annotations

from ..errors import ConfigError

HEADS = ("triplet", "tripletxl")

HEAD_LABEL = {"triplet": "TRIPLET", "tripletxl": "TRIPLETXL"}

#: ``case_study.train_items`` (first = default): ``disjoint`` gives each language different
#: training items, as the paper's corpus has different recipes per language; ``shared`` keeps
#: every language's text of an item, i.e. trains on a parallel corpus when the data is one.
TRAIN_ITEMS = ("disjoint", "shared")


def case_cfg(cfg: dict) -> dict:
    cs = dict(cfg.get("case_study") or {})
    if not cs:
        raise ConfigError("params: section 'case_study' is missing")
    langs = cs.get("languages", cfg["languages"])
    for lang in langs:
        if lang not in cfg["languages"]:
            raise ConfigError(f"field 'case_study.languages': {lang!r} is not in 'languages'")
    for field, names in (
        ("base_encoders", list(cs.get("base_encoders", []))),
        ("baseline", [cs.get("baseline", "random")]),
    ):
        for e in names:
            if e not in cfg["encoders"]:
                raise ConfigError(f"field 'case_study.{field}': encoder {e!r} is not a key of 'encoders'")
    if cs.get("train_items", TRAIN_ITEMS[0]) not in TRAIN_ITEMS:
        raise ConfigError(f"field 'case_study.train_items': must be one of {list(TRAIN_ITEMS)}")
    hb = cs.get("head_base", "auto")
    if hb != "auto" and hb not in cs.get("base_encoders", []):
        raise ConfigError("field 'case_study.head_base': must be 'auto' or one of case_study.base_encoders")
    cs.setdefault("languages", langs)
    cs.setdefault("head_base", "auto")
    cs.setdefault("baseline", "random")
    cs.setdefault("train_splits", ["train"])
    cs.setdefault("train_corpus", None)
    cs.setdefault("eval_splits", ["val", "test"])
    cs.setdefault("max_train_items", None)
    cs.setdefault("train_items", TRAIN_ITEMS[0])
    cs.setdefault("train_items_seed", 0)
    cs.setdefault("sample_size", 200)
    cs.setdefault("seeds", [0, 1, 2, 3, 4])
    cs.setdefault("recall_k", cfg.get("recall_k", 10))
    cs.setdefault("triplet", {})
    cs.setdefault("bootstrap", {"B": 1000, "seed": 0})
    return cs


def human_cfg(cfg: dict) -> dict:
    """The ``human_study`` section with defaults, checked against ``case_study``.

    Defaults follow the paper: English queries, Russian suggestions (``en`` → ``ru``), 20
    queries, the top 5 suggestions of TRIPLETXL and of its base encoder, texts only.
    """
    hs = dict(cfg.get("human_study") or {})
    cs = case_cfg(cfg)
    explicit = {f for f in ("source_lang", "target_lang") if f in hs}
    hs.setdefault("source_lang", "en")
    hs.setdefault("target_lang", "ru")
    hs.setdefault("n_queries", 20)
    hs.setdefault("top_k", 5)
    hs.setdefault("model_a", "tripletxl")
    hs.setdefault("model_b", "base")
    hs.setdefault("seed", 0)
    hs.setdefault("ratings", None)
    hs.setdefault("show_images", False)
    hs.setdefault("allow_unverified_key", False)
    for f in ("source_lang", "target_lang"):
        if hs[f] not in cs["languages"]:
            how = "" if f in explicit else " (the default, the paper's en → ru pair; set it in params.yaml)"
            raise ConfigError(
                f"field 'human_study.{f}': {hs[f]!r}{how} is not one of case_study.languages {list(cs['languages'])}"
            )
    if hs["source_lang"] == hs["target_lang"]:
        raise ConfigError(
            f"field 'human_study.target_lang': must differ from source_lang ({hs['source_lang']!r}); the study "
            "rates cross-lingual suggestions"
        )
    allowed = ["base", *models(cs)]
    for f in ("model_a", "model_b"):
        if hs[f] not in allowed:
            raise ConfigError(
                f"field 'human_study.{f}': {hs[f]!r} is not one of {allowed} ('base' = the chosen base encoder)"
            )
    if hs["model_a"] == hs["model_b"]:
        raise ConfigError(f"field 'human_study.model_b': must differ from model_a ({hs['model_a']!r})")
    return hs


def directions(cs: dict) -> list[str]:
    langs = cs["languages"]
    return [f"{a}-{b}" for a in langs for b in langs if a != b]


def models(cs: dict) -> list[str]:
    return [cs["baseline"], *cs["base_encoders"], *HEADS]
