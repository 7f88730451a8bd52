"""The relations between a config's fields that the JSON schema cannot state (:func:`check_relations`):
directions and languages, encoder and backbone specs, paths inside the checkout, code a config
may run (:func:`code_notice`), the case and human studies, the findings' keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._util.io import ARTIFACTS_ROOT, REPORTS_ROOT
from ..errors import ConfigError, did_you_mean
from ._messages import _fail

#: The config key of Recall@k (the main evaluation's and, under ``case_study``, the case
#: study's). Every check of it below reads it through this name.
RECALL_K = "recall_k"

#: The top-level key that lets a config name code to run (encoders of type ``callable``).
ALLOW_CODE = "allow_code"

#: Correlation across encoders (Table 1, Figure 2) needs at least this many encoders.
MIN_ENCODERS = 3
#: A dataset without parallel texts has no correlation (no Table 1, Figure 2): ranking the
#: encoders by BkR (pairwise McNemar tests) needs two.
MIN_ENCODERS_NONPARALLEL = 2


def _check_inside(source: str, field: str, value: str, root: str, root_allowed: bool, prefix: str = "") -> None:
    """``prefix + value`` is a relative path under ``root`` (``root`` itself where
    ``root_allowed``): no absolute path, no ``~``, no ``..``, so a run never writes outside the
    checkout's ``reports/`` or ``artifacts/`` (e.g. into ``src/``); and it stays there once
    every symlink on its way is resolved (``reports/link`` -> a folder elsewhere is refused).
    Relative paths are the working directory's (the checkout's root, where the workflow runs)."""
    import posixpath

    p = f"{prefix}{value}".replace("\\", "/")
    norm = posixpath.normpath(p)
    lexical = not p.startswith(("/", "~")) and ".." not in p.split("/")
    inside = lexical and ((root_allowed and norm == root) or norm.startswith(root + "/"))
    if not inside:
        where = f"'{root}/'" + (" or that folder itself" if root_allowed else "")
        made = f" (it makes {p!r})" if prefix else ""
        if lexical and norm == root:
            _fail(
                source,
                field,
                f"{value!r}{made} is the folder of every run's files; a run's go in a folder of its own "
                f"under it, e.g. '{root}/<run_name>'",
            )
        _fail(source, field, f"{value!r}{made} must stay inside the checkout's {where}: a relative path without '..'")
    real_root, real = Path(root).resolve(), Path(norm).resolve()
    if real != real_root and real_root not in real.parents:
        _fail(
            source,
            field,
            f"{p!r} resolves to {str(real)!r}, outside the "
            f"checkout's '{root}/' ({str(real_root)!r}): a symlink on its way leads elsewhere; name a real "
            f"folder under '{root}/'",
        )


def check_relations(cfg: dict[str, Any], source: str = "params.yaml") -> None:
    """Cross-field checks of a schema-valid config (the steps that rely on each in brackets).

    * every direction joins two different configured languages [sample, metrics];
    * each backbone spec has only the keys of its ``type``
      (:data:`backretrieval.images.BACKBONE_SPEC_KEYS`) [embed-images];
    * ``image_backbone`` is a key of ``backbones`` [embed-images];
    * ``figure_seed`` is one of ``seeds`` [report: Figure 2];
    * ``recall_k`` < ``sample_size``: with k >= N every recall is 1 [metrics];
    * at least :data:`MIN_ENCODERS` encoders: the correlation across encoders [report]; a
      dataset without parallel texts (no correlation) needs :data:`MIN_ENCODERS_NONPARALLEL`,
      to rank them [report];
    * ``cache_dir`` is a writable folder or can be created [embed-text, embed-images];
    * an encoder ``model`` written as a local path (``/``, ``./``, ``../``, ``~``) exists [embed-text];
    * an encoder that imports and runs code (``type: callable``) needs ``allow_code: true``
      [embed-text];
    * each encoder spec has a known ``type``, that type's required keys and no other keys
      (:data:`backretrieval.encoders.ENCODER_SPEC_KEYS`) [embed-text];
    * a ``precomputed`` encoder's files exist, one per configured language when given per
      language [embed-text];
    * a ``wordvec`` encoder lists every language it will embed [embed-text, case-embed];
    * a ``data/prepared/<name>`` corpus (wordvec ``corpus``, ``case_study.train_corpus``) is a
      configured ``corpora`` entry or an existing folder [prepare_corpus, embed-text];
    * a dataset's or corpus's ``options`` are options of its ``source``
      (:data:`backretrieval.data.prepare.SOURCE_OPTIONS`) [prepare];
    * ``source: prepared`` (dataset or corpus) names ``options.path`` [prepare];
    * synthetic data: ``dataset.synthetic.n_items`` >= 2 * ``sample_size`` (N queries plus N
      disjoint targets per direction) [sample];
    * ``case_study``: languages among ``languages``; base encoders and baseline configured,
      baseline not a base encoder; ``head_base`` auto or a base encoder; case ``recall_k`` < case
      ``sample_size``; train and evaluation splits disjoint unless ``train_corpus`` is set;
      ``triplet.k`` < ``triplet.batch_size`` [case-*];
    * ``findings``: each key an analysis, each of its keys one of that analysis's settings
      (:func:`backretrieval.findings.analysis.config_keys`) [findings];
    * ``human_study`` needs ``case_study``; its two languages differ and are case-study
      languages; ``model_a``/``model_b`` differ and name case-study models or ``base``; a
      ``ratings`` file exists [human-*].

    * ``reports_dir`` is a folder under ``reports`` (not ``reports`` itself, every run's),
      ``artifacts/<run_name>`` a folder under ``artifacts`` (relative, no ``..``, no symlink on
      the way leading elsewhere): a run writes nowhere else in the checkout [report, findings,
      every step];

    Relations that need the prepared dataset (item counts per direction, images or features
    for every item) are checked by :func:`backretrieval.steps.prepare.check_dataset_fits`.
    """
    _check_inside(source, "reports_dir", cfg["reports_dir"], REPORTS_ROOT, root_allowed=False)
    _check_inside(source, "run_name", cfg["run_name"], ARTIFACTS_ROOT, root_allowed=False, prefix=f"{ARTIFACTS_ROOT}/")
    langs = set(cfg["languages"])
    for d in cfg["directions"]:
        src, tgt = d.split("-")
        if src == tgt:
            raise ConfigError(f"{source}: field 'directions': {d!r} has the same source and target")
        for lang in (src, tgt):
            if lang not in langs:
                raise ConfigError(
                    f"{source}: field 'directions': {d!r} uses language {lang!r} which is not in 'languages' {sorted(langs)}"
                )
    for bb_id, spec in cfg["backbones"].items():
        _check_backbone_spec(source, bb_id, spec)
    if cfg["image_backbone"] not in cfg["backbones"]:
        raise ConfigError(
            f"{source}: field 'image_backbone': {cfg['image_backbone']!r} is not a key of 'backbones' {sorted(cfg['backbones'])}"
        )
    if cfg.get("figure_seed", cfg["seeds"][0]) not in cfg["seeds"]:
        raise ConfigError(f"{source}: field 'figure_seed': must be one of 'seeds'")
    n, k = cfg["sample_size"], cfg[RECALL_K]
    if k >= n:
        _fail(
            source,
            RECALL_K,
            f"Recall@{k} needs {RECALL_K} < sample_size ({n}); with "
            f"{RECALL_K} >= N every query is a hit and every recall is 1",
            also=("sample_size",),
        )
    from ..steps.layout import dataset_parallel

    if dataset_parallel(cfg):
        if len(cfg["encoders"]) < MIN_ENCODERS:
            _fail(
                source,
                "encoders",
                f"{len(cfg['encoders'])} encoder(s) configured; at least {MIN_ENCODERS} encoders are needed "
                "to correlate metrics across encoders (Table 1, Figure 2)",
            )
    elif len(cfg["encoders"]) < MIN_ENCODERS_NONPARALLEL:
        _fail(
            source,
            "encoders",
            f"{len(cfg['encoders'])} encoder(s) configured; at least {MIN_ENCODERS_NONPARALLEL} encoders are "
            "needed to rank encoders on a dataset without parallel texts",
        )
    _check_cache_dir(source, cfg)
    corpora = cfg.get("corpora") or {}
    for enc_id, spec in cfg["encoders"].items():
        _check_encoder_spec(source, enc_id, spec)
        _check_code_allowed(source, cfg, enc_id, spec)
        _check_model_path(source, enc_id, spec)
        if spec["type"] == "precomputed":
            _check_precomputed(source, enc_id, spec, cfg["languages"])
        if spec.get("corpus") is not None:
            _check_corpus(source, f"encoders.{enc_id}.corpus", spec["corpus"], corpora)
    _check_wordvec_languages(source, cfg["encoders"], cfg["languages"], "languages")
    ds = cfg["dataset"]
    _check_source_options(source, "dataset", ds)
    for name, corpus in corpora.items():
        _check_source_options(source, f"corpora.{name}", corpus)
    if ds["source"] == "prepared" and not (ds.get("options") or {}).get("path"):
        _fail(source, "dataset.options.path", "required for dataset.source 'prepared' (the prepared folder)")
    for name, corpus in corpora.items():
        if corpus["source"] == "prepared" and not (corpus.get("options") or {}).get("path"):
            _fail(source, f"corpora.{name}.options.path", "required for source 'prepared' (the prepared folder)")
    if ds["source"] == "synthetic":
        n_items = (ds.get("synthetic") or {}).get("n_items", 2400)
        if n_items < 2 * n:
            _fail(
                source,
                "dataset.synthetic.n_items",
                f"{n_items} items, but sample_size N={n} needs {2 * n} per direction (N queries + N disjoint targets)",
                also=("sample_size",),
            )
    if cfg.get("findings"):
        _check_findings(source, cfg)
    if cfg.get("case_study"):
        _check_case_study(cfg, source, corpora)
    elif cfg.get("human_study"):
        _fail(source, "human_study", "needs a 'case_study' section (the study compares case-study models)")


def _check_findings(source: str, cfg: dict[str, Any]) -> None:
    from ..findings.analysis import check_config as check_findings

    try:  # the analyses and their settings are known where their defaults are declared
        check_findings(cfg)
    except ConfigError as exc:
        err = ConfigError(f"{source}: {exc}")
        err.fields = getattr(exc, "fields", ())  # type: ignore[attr-defined]
        raise err from exc


def _check_encoder_spec(source: str, enc_id: str, spec: dict) -> None:
    from ..encoders import COMMON_SPEC_KEYS, ENCODER_SPEC_KEYS

    where = f"encoders.{enc_id}"
    kind = spec["type"]
    if kind not in ENCODER_SPEC_KEYS:
        _fail(source, f"{where}.type", f"unknown encoder type {kind!r}; expected one of {sorted(ENCODER_SPEC_KEYS)}")
    rule = ENCODER_SPEC_KEYS[kind]
    missing = [key for key in rule.get("required", ()) if key not in spec]
    if missing:
        _fail(source, where, f"type {kind!r} requires key(s) {missing}")
    one_of = rule.get("one_of", ())
    if one_of and not any(key in spec for key in one_of):
        _fail(source, where, f"type {kind!r} needs one of the keys {list(one_of)}")
    allowed = {*COMMON_SPEC_KEYS, *rule.get("required", ()), *rule.get("optional", ()), *one_of}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        _fail(source, where, f"unknown key(s) {unknown} for type {kind!r}; allowed: {sorted(allowed)}")


def _check_source_options(source: str, where: str, section: dict) -> None:
    from ..data.prepare import SOURCE_OPTIONS

    allowed = SOURCE_OPTIONS[section["source"]]  # the schema admits only these sources
    for key in section.get("options") or {}:
        if key not in allowed:
            _fail(
                source,
                f"{where}.options.{key}",
                f"source {section['source']!r} has no option {key!r}{did_you_mean(key, allowed)}; "
                f"its options are {sorted(allowed)}",
            )


def _check_backbone_spec(source: str, bb_id: str, spec: dict) -> None:
    from ..images import BACKBONE_SPEC_KEYS

    allowed = BACKBONE_SPEC_KEYS[spec["type"]]  # the schema admits only these types
    for key in spec:
        if key not in allowed:
            _fail(
                source,
                f"backbones.{bb_id}.{key}",
                f"a backbone of type {spec['type']!r} has no key {key!r}{did_you_mean(key, allowed)}; "
                f"its keys are {sorted(allowed)}",
            )


def _check_cache_dir(source: str, cfg: dict[str, Any]) -> None:
    """``cache_dir`` is a folder that can be written, or can be created (its first existing
    ancestor is a writable folder): else the embedding step would fail after hours of work."""
    import os

    value = cfg.get("cache_dir")
    if not value:
        return
    p = Path(os.path.expanduser(str(value)))
    if p.exists() and not p.is_dir():
        _fail(source, "cache_dir", f"{value!r} is a file; the embedding cache needs a folder")
    probe = p
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        _fail(source, "cache_dir", f"{value!r} cannot be created: {str(probe)!r} is a file")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        what = "is a folder" if probe == p else f"would be created in {str(probe)!r}, a folder"
        _fail(source, "cache_dir", f"{value!r} {what} that cannot be written; pick a writable folder for the cache")


def _check_model_path(source: str, enc_id: str, spec: dict) -> None:
    import os

    from ..encoders import looks_like_path

    value = spec.get("model")
    if looks_like_path(value) and not Path(os.path.expanduser(value)).exists():
        _fail(
            source,
            f"encoders.{enc_id}.model",
            f"{value!r}: path does not exist (a local model folder; a Hub model is named like 'org/name')",
        )


def _check_code_allowed(source: str, cfg: dict[str, Any], enc_id: str, spec: dict) -> None:
    from ..encoders import code_target

    target = code_target(spec)
    if target is not None and not cfg.get(ALLOW_CODE):
        _fail(
            source,
            f"encoders.{enc_id}",
            f"type {spec['type']!r} imports and runs the Python function {target!r}; a config runs code only "
            f"with '{ALLOW_CODE}: true' at its top level: set it if you trust this config (docs/SECURITY.md)",
        )


def code_notice(cfg: dict[str, Any]) -> str | None:
    """One line for ``validate-config``: the config opts into running code, and which code."""
    from ..encoders import code_target

    if not cfg.get(ALLOW_CODE):
        return None
    targets = [f"{enc_id} ({t})" for enc_id, spec in cfg["encoders"].items() if (t := code_target(spec))]
    what = "encoders " + ", ".join(targets) if targets else "no encoder uses it yet"
    return f"{ALLOW_CODE}: true: this config may import and run Python code ({what}); trust it as code"


def _check_precomputed(source: str, enc_id: str, spec: dict, languages: list[str]) -> None:
    from ..encoders.precomputed import precomputed_files

    where = f"encoders.{enc_id}"
    try:
        files = precomputed_files(enc_id, spec)
    except ConfigError as exc:
        _fail(source, where, str(exc))
    if None not in files:
        lacking = [lang for lang in languages if lang not in files]
        if lacking:
            _fail(source, f"{where}.npy", f"no embeddings for languages {lacking} (files given for {sorted(files)})")
    for lang, (npy, ids) in files.items():
        for key, path in (("npy", npy), ("ids", ids)):
            if not path.is_file():
                _fail(source, f"{where}.{key}" + (f".{lang}" if lang else ""), f"{path}: file not found")


def _check_wordvec_languages(
    source: str, encoders: dict, languages: list[str], why: str, only: list[str] | None = None
) -> None:
    for enc_id, spec in encoders.items():
        if spec["type"] != "wordvec" or (only is not None and enc_id not in only):
            continue
        have = {spec.get("hub", "en"), *(spec.get("languages") or [])}
        lacking = [lang for lang in languages if lang not in have]
        if lacking:
            _fail(
                source,
                f"encoders.{enc_id}.languages",
                f"lacks {lacking}, which '{why}' embeds with it (the encoder covers {sorted(have)})",
            )


def _check_corpus(source: str, field: str, path: str, corpora: dict) -> None:
    parts = Path(str(path)).parts
    if len(parts) == 3 and parts[:2] == ("data", "prepared"):
        if parts[2] not in corpora and not Path(path).is_dir():
            _fail(
                source,
                field,
                f"{path!r} is neither a configured corpus (corpora: {sorted(corpora)}) nor an existing folder",
            )


def _check_case_study(cfg: dict[str, Any], source: str, corpora: dict) -> None:
    from ..study.case_config import case_cfg, human_cfg

    raw = cfg["case_study"]
    try:  # the section's own checks (known languages, encoders, head_base) live with its defaults
        cs = case_cfg(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    if cs["baseline"] in raw["base_encoders"]:
        _fail(
            source,
            "case_study.baseline",
            f"{cs['baseline']!r} is also a base encoder; the baseline is evaluated beside them and must differ",
        )
    if cs[RECALL_K] >= cs["sample_size"]:
        _fail(
            source,
            f"case_study.{RECALL_K}",
            f"Recall@{cs[RECALL_K]} needs {RECALL_K} < case_study.sample_size ({cs['sample_size']})",
        )
    if cs.get("train_corpus"):
        _check_corpus(source, "case_study.train_corpus", cs["train_corpus"], corpora)
    else:
        both = sorted(set(cs["train_splits"]) & set(cs["eval_splits"]))
        if both:
            _fail(
                source,
                "case_study.train_splits",
                f"{both} also in case_study.eval_splits: the heads would be trained on evaluation items",
            )
    from ..study.triplet import TripletConfig

    tri = TripletConfig.from_dict(dict(cs["triplet"]))
    if tri.k >= tri.batch_size:
        _fail(
            source,
            "case_study.triplet.k",
            f"{tri.k} neighbours need a larger batch (case_study.triplet.batch_size = {tri.batch_size})",
        )
    _check_wordvec_languages(
        source,
        cfg["encoders"],
        list(cs["languages"]),
        "case_study.languages",
        only=[*cs["base_encoders"], cs["baseline"]],
    )
    if not cfg.get("human_study"):
        return
    try:  # languages and models of the study are checked with its defaults
        hs = human_cfg(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    if hs.get("ratings") and not Path(hs["ratings"]).is_file():
        _fail(source, "human_study.ratings", f"{hs['ratings']}: file not found")


def all_directions(languages: list[str]) -> list[str]:
    """Every ordered pair of distinct languages."""
    return [f"{a}-{b}" for a in languages for b in languages if a != b]


def pivot_directions(languages: list[str], pivot: str = "en") -> list[str]:
    """pivot→X and X→pivot for every other language (the default)."""
    out = []
    for x in languages:
        if x != pivot:
            out += [f"{pivot}-{x}", f"{x}-{pivot}"]
    return out
