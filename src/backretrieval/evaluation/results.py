"""Summaries, the result JSON and the printed table of an :class:`~.run.Evaluation`.

Result JSON (``format: backretrieval-result``, version 2): a valid MTEB result (mteb 2.x's
``TaskResult.model_validate`` accepts it), written by default in mteb's cache layout
(:func:`default_result_path`, :func:`write_result_to_cache`): ``task_name``
(``Backretrieval-<dataset>``), ``dataset_revision`` (the dataset's
content sha256), ``mteb_version`` (the installed mteb's, else null), ``evaluation_time`` and
``scores.test``, a list with one entry per direction (``hf_subset`` = the direction,
``languages`` as ISO 639-3 + ISO 15924 codes such as ``eng-Latn``, ``main_score`` = BkR
Recall@k, every metric's mean as a flat key, e.g. ``bkr_recall_at_10``), plus our own fields
(MTEB keeps unknown fields): per-seed values and CIs (``metrics``), per-query hits, the
samples' sha256, the model, dataset, image side and protocol (per direction also the image id
of every seed's queries, ``per_query.query_images``: the unit of ``compare``'s test); each score entry also carries a
copy of the top-level fields that are not MTEB's (``backretrieval``), since mteb drops unknown
top-level fields when it saves a result again; :func:`read_result` restores them. Everything outside ``volatile``
and the MTEB fields ``evaluation_time`` and ``mteb_version`` is a function of the inputs (same
model, data, protocol → same bytes); ``volatile`` holds the evaluation time, the creation
time, the software versions and the dataset's local path. Per-query BkR (and XLR) hits are
stored per direction and seed as base64 of ``numpy.packbits`` (N bits, big-endian bit order),
so ``backretrieval compare`` can pair two results query by query. Version 1 files (``scores``
keyed by direction) are still read. ``protocol`` is :meth:`.protocol.Protocol.record` with the
directions (keys as params.yaml spells them: ``sample_size``, ``seeds``, ``recall_k``, ...); the
``n`` and ``k`` of earlier releases are read as those (:func:`.protocol.read_record`).

CIs (95 % by default): the percentile bootstrap over the distinct items of a direction (the
query images; :func:`backretrieval.stats.item_bootstrap_ci`, B resamples, seeded) of the
per-query values pooled over the seeds (hits, reciprocal ranks, ranks): the seeds' samples
overlap, so an item drawn by several seeds is one unit, resampled with all its queries. No CI
(``ci_low``/``ci_high`` null, ``ci_note`` saying why) where none can be estimated honestly:
CORR has no per-query values, fewer than ``stats.items.MIN_ITEMS`` items, every item alike, or
no item ids. (A bootstrap over 3 seeds' means rests on 3 numbers, and its interval can be of
zero width.) Per direction, ``duplicate_targets`` counts the targets whose text repeats
another target's in the same sample (they tie exactly).
"""

from __future__ import annotations

import base64
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from .._util import io
from ..errors import InputError
from ..stats.items import MIN_ITEMS
from .core import duplicates_sentence
from .defaults import DEFAULT_BOOTSTRAP
from .protocol import read_record

FORMAT = "backretrieval-result"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
TASK_NAME = "Backretrieval"
MAIN_METRIC = "bkr_recall"
#: the MTEB split name of the scores (the whole prepared dataset is sampled)
SPLIT = "test"
#: the top-level fields of an MTEB result (mteb's TaskResult); the others are ours
MTEB_FIELDS = ("task_name", "dataset_revision", "mteb_version", "evaluation_time", "kg_co2_emissions", "scores")
#: the key, in each score entry, of a copy of our top-level fields (mteb keeps entries whole)
PROVENANCE = "backretrieval"
#: top-level fields that change between identical runs (besides ``volatile``)
VOLATILE_MTEB_FIELDS = ("evaluation_time", "mteb_version")

#: ISO 639-1 (or 639-3) code → MTEB's language-script code (ISO 639-3 + ISO 15924)
LANGUAGE_SCRIPTS = {
    "af": "afr-Latn", "am": "amh-Ethi", "ar": "ara-Arab", "az": "aze-Latn", "be": "bel-Cyrl",
    "bg": "bul-Cyrl", "bn": "ben-Beng", "ca": "cat-Latn", "cs": "ces-Latn", "cy": "cym-Latn",
    "da": "dan-Latn", "de": "deu-Latn", "el": "ell-Grek", "en": "eng-Latn", "eo": "epo-Latn",
    "es": "spa-Latn", "et": "est-Latn", "eu": "eus-Latn", "fa": "fas-Arab", "fi": "fin-Latn",
    "fr": "fra-Latn", "ga": "gle-Latn", "gl": "glg-Latn", "gu": "guj-Gujr", "he": "heb-Hebr",
    "hi": "hin-Deva", "hr": "hrv-Latn", "hu": "hun-Latn", "hy": "hye-Armn", "id": "ind-Latn",
    "is": "isl-Latn", "it": "ita-Latn", "ja": "jpn-Jpan", "ka": "kat-Geor", "kk": "kaz-Cyrl",
    "km": "khm-Khmr", "kn": "kan-Knda", "ko": "kor-Hang", "la": "lat-Latn", "lo": "lao-Laoo",
    "lt": "lit-Latn", "lv": "lav-Latn", "mk": "mkd-Cyrl", "ml": "mal-Mlym", "mn": "mon-Cyrl",
    "mr": "mar-Deva", "ms": "msa-Latn", "my": "mya-Mymr", "nb": "nob-Latn", "ne": "nep-Deva",
    "nl": "nld-Latn", "nn": "nno-Latn", "no": "nor-Latn", "pa": "pan-Guru", "pl": "pol-Latn",
    "pt": "por-Latn", "ro": "ron-Latn", "ru": "rus-Cyrl", "si": "sin-Sinh", "sk": "slk-Latn",
    "sl": "slv-Latn", "sq": "sqi-Latn", "sr": "srp-Cyrl", "sv": "swe-Latn", "sw": "swa-Latn",
    "ta": "tam-Taml", "te": "tel-Telu", "th": "tha-Thai", "tl": "tgl-Latn", "tr": "tur-Latn",
    "uk": "ukr-Cyrl", "ur": "urd-Arab", "uz": "uzb-Latn", "vi": "vie-Latn", "yi": "yid-Hebr",
    "zh": "zho-Hans",
}  # fmt: skip

#: metrics in table order; ``{k}`` is Recall@k's k
METRIC_LABELS = {
    "xlr_recall": "XLR Recall@{k}",
    "xlr_mrr": "XLR MRR",
    "bkr_recall": "BkR Recall@{k}",
    "bkr_mrr": "BkR MRR",
    "corr": "CORR (Spearman)",
    "xlr_mean_rank": "XLR mean rank",
    "bkr_mean_rank": "BkR mean rank",
}
TABLE_METRICS = ("xlr_recall", "xlr_mrr", "bkr_recall", "bkr_mrr", "corr")
SUMMARY_COLUMNS = [
    "encoder", "direction", "metric", "mean", "sd", "ci_low", "ci_high", "n_seeds", "n_items", "ci_method", "ci_note",
]  # fmt: skip


def language_script(code: str) -> str:
    """MTEB's ``xxx-Scrp`` code of a language code of the data (``de`` → ``deu-Latn``): the
    table :data:`LANGUAGE_SCRIPTS`, ISO 639-3 codes in it, else the ``langcodes`` package when
    installed (likely script); InputError otherwise."""
    c = str(code)
    if c in LANGUAGE_SCRIPTS:
        return LANGUAGE_SCRIPTS[c]
    by_3 = {v.split("-")[0]: v for v in LANGUAGE_SCRIPTS.values()}
    if c in by_3:
        return by_3[c]
    try:
        import langcodes  # optional

        lang = langcodes.Language.get(c).maximize()
        if lang.script:
            return f"{lang.to_alpha3()}-{lang.script}"
    except (ImportError, LookupError, ValueError):
        pass
    raise InputError(
        f"language {c!r}: no ISO 639-3 + script code known (the result JSON is an MTEB result and "
        f"names languages like eng-Latn); use an ISO 639-1 code ({', '.join(sorted(LANGUAGE_SCRIPTS)[:6])}, ...) "
        "or install the `langcodes` package"
    )


def metric_key(metric: str, k: int) -> str:
    """The flat MTEB score key of one of our metrics: ``bkr_recall`` → ``bkr_recall_at_10``."""
    return f"{metric}_at_{k}" if metric.endswith("_recall") else metric


def _ci_method(B: int, level: float) -> str:
    pct = f"{level * 100:g}%"
    return (
        f"{pct} CI: percentile bootstrap over the distinct items (query images; an item drawn by several seeds "
        f"counts once, with all its queries; B={B}); none where it cannot be estimated honestly (CORR has no "
        f"per-query values; fewer than {MIN_ITEMS} items; every item alike)"
    )


def _per_query_values(metric: str, ranks: dict[str, np.ndarray], k: int) -> np.ndarray | None:
    kind, what = metric.split("_", 1) if "_" in metric else (metric, "")
    r = ranks.get(kind)
    if r is None or kind not in ("xlr", "bkr"):
        return None
    r = r.astype(np.float64)
    return {"recall": (r <= k).astype(np.float64), "mrr": 1.0 / r, "mean_rank": r}.get(what)


def _item_interval(
    ev: Any, d: str, metric: str, seeds: list[int], *, B: int, seed: int, level: float
) -> tuple[float, float, int, str]:
    """(low, high, distinct items, note) of the item bootstrap of ``metric``'s per-query values
    of direction ``d`` pooled over ``seeds`` (NaN and the reason where there is none)."""
    k = int(ev.protocol["recall_k"])
    by_seed = ev.ranks.get(d, {})
    parts = [_per_query_values(metric, by_seed[s], k) if s in by_seed else None for s in seeds]
    if not parts or any(p is None for p in parts):
        what = "CORR" if metric == "corr" else metric
        return math.nan, math.nan, 0, f"no per-query values ({what}): no interval"
    units = (getattr(ev, "query_units", None) or {}).get(d, {})
    if any(s not in units for s in seeds):
        return math.nan, math.nan, 0, "no item ids: no interval"
    keys = np.asarray([u for s in seeds for u in units[s]], dtype=object)
    ci = stats.item_bootstrap_ci(np.concatenate(parts), keys, B=B, seed=seed, alpha=1 - level)
    return ci.low, ci.high, ci.n_items, ci.note


def summarize(ev: Any, *, B: int = DEFAULT_BOOTSTRAP, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Per (encoder, direction, metric): mean and sd over seeds, the item-bootstrap CI of the
    per-query values pooled over the seeds (see the module docstring)."""
    df = ev.scores
    rows = []
    method = _ci_method(B, level)
    order = {m: i for i, m in enumerate(METRIC_LABELS)}
    for (enc, d, metric), g in df.groupby(["encoder", "direction", "metric"], sort=False):
        g = g.sort_values("seed")
        vals = g["value"].to_numpy(dtype=np.float64)
        finite = vals[np.isfinite(vals)]
        mean = float(finite.mean()) if finite.size else math.nan
        sd = float(finite.std(ddof=1)) if finite.size >= 2 else math.nan
        seeds = [int(x) for x in g["seed"]]
        low, high, n_items, note = _item_interval(ev, d, metric, seeds, B=B, seed=seed, level=level)
        rows.append(
            dict(
                encoder=enc,
                direction=d,
                metric=metric,
                mean=mean,
                sd=sd,
                ci_low=low,
                ci_high=high,
                n_seeds=int(finite.size),
                n_items=int(n_items),
                ci_method=method,
                ci_note=note,
            )
        )
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    out["_o"] = out["metric"].map(lambda m: order.get(m, len(order)))
    dir_order = {d: i for i, d in enumerate(ev.protocol["directions"])}
    out["_d"] = out["direction"].map(dir_order)
    return out.sort_values(["_d", "_o"], kind="stable").drop(columns=["_o", "_d"]).reset_index(drop=True)


# -------------------------------------------------------------------------------------------
# per-query hits, compact


def pack_hits(hits: np.ndarray) -> str:
    """0/1 hits → base64 of numpy.packbits (big-endian bit order)."""
    return base64.b64encode(np.packbits(np.asarray(hits, dtype=bool)).tobytes()).decode("ascii")


def unpack_hits(text: str, n: int) -> np.ndarray:
    """The inverse of :func:`pack_hits` for ``n`` queries (bool array)."""
    raw = np.frombuffer(base64.b64decode(text.encode("ascii"), validate=True), dtype=np.uint8)
    if raw.size != (n + 7) // 8:
        raise ValueError(f"{raw.size} bytes do not hold {n} hits")
    return np.unpackbits(raw, count=n).astype(bool)


# -------------------------------------------------------------------------------------------
# the result JSON


def _num(x: Any) -> float | None:
    x = float(x)
    return None if not math.isfinite(x) else x


def random_baseline(n: int, k: int) -> dict[str, float]:
    """Expected Recall@k and MRR of a random encoder: k/N and H_N/N (uniform rank of the true
    candidate among N)."""
    return {"recall_at_k": k / n, "mrr": float(np.sum(1.0 / np.arange(1, n + 1)) / n)}


def direction_entry(ev: Any, d: str, summ: pd.DataFrame) -> dict[str, Any]:
    """The MTEB score entry of one direction (``hf_subset`` = ``d``): ``main_score`` (BkR
    Recall@k), each metric's mean as a flat key (:func:`metric_key`), and our fields:
    ``metrics`` (mean, sd, CI, per-seed values), ``per_query`` hits, ``random_baseline``,
    ``samples_sha256``. Shared by the result JSON and the MTEB task."""
    n, k = int(ev.protocol["sample_size"]), int(ev.protocol["recall_k"])
    seeds = [int(s) for s in ev.protocol["seeds"]]
    sub = summ[summ["direction"] == d]
    per_seed = ev.scores[ev.scores["direction"] == d]
    metrics = {}
    for _, r in sub.iterrows():
        vals = per_seed[per_seed["metric"] == r["metric"]].sort_values("seed")["value"]
        metrics[r["metric"]] = {
            "mean": _num(r["mean"]),
            "sd": _num(r["sd"]),
            "ci_low": _num(r["ci_low"]),
            "ci_high": _num(r["ci_high"]),
            "n_items": int(r["n_items"]),
            **({"ci_note": str(r["ci_note"])} if r["ci_note"] else {}),
            "per_seed": [_num(v) for v in vals],
        }
    per_query: dict[str, Any] = {}
    for kind in ("bkr", "xlr"):
        if all(kind in ev.ranks[d][s] for s in seeds):
            per_query[f"{kind}_hits"] = [pack_hits(ev.ranks[d][s][kind] <= k) for s in seeds]
    units = getattr(ev, "query_units", {}).get(d)
    if units:  # the query's image per seed: the unit of `compare`'s test (an item re-drawn is one)
        per_query["query_images"] = [list(units[s]) for s in seeds]
    src, tgt = d.split("-")
    return {
        "hf_subset": d,
        "languages": [language_script(src), language_script(tgt)],
        "main_score": metrics.get(MAIN_METRIC, {}).get("mean"),
        "main_metric": metric_key(MAIN_METRIC, k),
        **{metric_key(m, k): v["mean"] for m, v in metrics.items()},
        "metrics": metrics,
        "random_baseline": random_baseline(n, k),
        "samples_sha256": ev.samples_sha256[d],
        **({"duplicate_targets": dups} if (dups := getattr(ev, "duplicate_targets", {}).get(d)) else {}),
        "per_query": per_query,
    }


def mteb_version() -> str | None:
    """The installed mteb's version (None without mteb)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mteb")
    except PackageNotFoundError:
        return None


def result_dict(
    ev: Any, *, B: int = DEFAULT_BOOTSTRAP, seed: int = 0, level: float = 0.95, volatile: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The result JSON of one :class:`~.run.Evaluation` (see the module docstring)."""
    summ = ev.summary(B=B, seed=seed, level=level)
    k = int(ev.protocol["recall_k"])
    entries = [direction_entry(ev, d, summ) for d in ev.protocol["directions"]]
    mains = [e["main_score"] for e in entries if e["main_score"] is not None]
    dataset = {key: v for key, v in ev.dataset.items() if key != "path"}
    vol = volatile if volatile is not None else volatile_fields(ev)
    result = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "task_name": task_name(str(dataset["name"])),
        "dataset_revision": dataset["content_sha256"],
        "mteb_version": mteb_version(),
        "evaluation_time": vol.get("evaluation_time_s"),
        "main_metric": metric_key(MAIN_METRIC, k),
        "main_score": float(np.mean(mains)) if mains else None,
        "model": dict(ev.model),
        "dataset": dataset,
        "image_backbone": dict(ev.image_backbone),
        "protocol": {
            **ev.protocol,
            "split": SPLIT,
            "per_query_encoding": "base64 of numpy.packbits (big-endian), one string "
            "per seed in protocol.seeds order; hit = rank <= k",
            "ci": {"level": level, "B": B, "seed": seed, "method": _ci_method(B, level)},
        },
        "scores": {SPLIT: entries},
        "volatile": vol,
    }
    # mteb keeps a score entry whole but drops top-level fields it does not know: every entry
    # carries the rest (model, dataset, image side, protocol, ...), so a file mteb loaded and
    # saved again is still a full result (read_result restores the top level from it)
    provenance = {key: v for key, v in result.items() if key not in MTEB_FIELDS}
    for e in entries:
        e[PROVENANCE] = provenance
    return result


def scores_by_direction(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{direction: score entry}`` of a result JSON (version 2: the entries of ``scores.test``
    by ``hf_subset``; version 1: ``scores`` as it is)."""
    scores = result.get("scores", {})
    if result.get("format_version") == 1:
        return dict(scores)
    entries = scores.get(SPLIT, []) if isinstance(scores, dict) else []
    return {str(e.get("hf_subset")): e for e in entries if isinstance(e, dict)}


def volatile_fields(ev: Any) -> dict[str, Any]:
    """The fields that change between identical runs (time, versions, where the data lay)."""
    from .._util.versions import software_versions

    return {
        "evaluation_time_s": round(float(ev.seconds), 3),
        "created_utc": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "software_versions": software_versions(),
        "dataset_path": ev.dataset.get("path"),
    }


def write_result(path: str | Path, result: dict[str, Any]) -> Path:
    """Write the result JSON atomically (sorted keys: the same result gives the same bytes)."""
    io.write_json(path, result)
    return Path(path)


def read_result(path: str | Path) -> dict[str, Any]:
    """A result JSON, checked for the fields ``compare`` and the table need (InputError naming the file)."""
    p = Path(path)
    try:
        res = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{p}: file not found") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{p}: not a readable JSON file ({exc})") from exc
    if isinstance(res, dict) and "format" not in res:  # saved by mteb: our fields are in the entries
        entries = res.get("scores", {}).get(SPLIT) if isinstance(res.get("scores"), dict) else None
        prov = (
            entries[0].get(PROVENANCE)
            if isinstance(entries, list) and entries and isinstance(entries[0], dict)
            else None
        )
        if isinstance(prov, dict):
            res = {**prov, **{key: v for key, v in res.items() if key in MTEB_FIELDS}}
    if not isinstance(res, dict) or res.get("format") != FORMAT:
        raise InputError(
            f'{p}: not a backretrieval result (no "format": "{FORMAT}"; written by `backretrieval evaluate`)'
        )
    if res.get("format_version") not in READABLE_VERSIONS:
        raise InputError(
            f"{p}: result format version {res.get('format_version')!r}; this version reads "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    for key in ("model", "dataset", "image_backbone", "protocol", "scores"):
        if key not in res:
            raise InputError(f"{p}: field '{key}' is missing")
    if res["format_version"] != 1 and not isinstance(
        res["scores"].get(SPLIT) if isinstance(res["scores"], dict) else None, list
    ):
        raise InputError(f"{p}: field 'scores.{SPLIT}' is not a list of per-direction entries")
    if not isinstance(res["protocol"], dict):
        raise InputError(f"{p}: field 'protocol' is not an object")
    res["protocol"] = read_record(res["protocol"])  # written by an earlier release: n and k, read as now
    return res


def _safe(s: str) -> str:
    """A name as one path component (``/`` becomes ``__``, as mteb writes model names)."""
    return "".join(c if c.isalnum() or c in "-_.+" else "_" for c in s.replace("/", "__")) or "model"


def task_name(dataset_name: str) -> str:
    """The MTEB task name of a dataset: ``Backretrieval-<dataset>`` (one task per dataset, so
    mteb's cache keeps one file per model, revision and dataset)."""
    return f"{TASK_NAME}-{_safe(dataset_name)}"


def model_revision(model: dict[str, Any]) -> str:
    """The model's revision in mteb's cache layout: its fingerprint (weights, settings, versions)."""
    return _safe(str(model.get("fingerprint") or "no_revision_available"))


def default_result_path(result: dict[str, Any], results_dir: str | Path = "results") -> Path:
    """``<results_dir>/<model name>/<revision>/<task name>.json``: mteb's cache layout, so
    ``mteb.ResultCache(<folder holding results_dir>)`` finds it (with :func:`model_meta` beside it)."""
    model = result["model"]
    return Path(results_dir) / _safe(str(model["name"])) / model_revision(model) / f"{_safe(result['task_name'])}.json"


def model_meta(result: dict[str, Any]) -> dict[str, Any]:
    """The ``model_meta.json`` of the revision folder: the name and revision mteb's cache reads."""
    model = result["model"]
    return {
        "name": str(model["name"]),
        "revision": model_revision(model),
        "framework": [],
        "loader": None,
        "languages": None,
        "release_date": None,
        "n_parameters": None,
        "memory_usage_mb": None,
        "max_tokens": None,
        "embed_dim": None,
        "license": None,
        "open_weights": None,
        "public_training_code": None,
        "public_training_data": None,
        "similarity_fn_name": "cosine",
        "use_instructions": None,
        "training_datasets": None,
        "reference": None,
    }


def write_result_to_cache(result: dict[str, Any], results_dir: str | Path = "results") -> Path:
    """Write the result at :func:`default_result_path` with ``model_meta.json`` beside it."""
    path = write_result(default_result_path(result, results_dir), result)
    meta = path.parent / "model_meta.json"
    if not meta.exists():
        io.write_json(meta, model_meta(result))
    return path


# -------------------------------------------------------------------------------------------
# the printed table


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def format_table(result: dict[str, Any]) -> str:
    """Plain-text tables of a result JSON: one per direction, mean and CI per metric, and the
    random baseline for scale."""
    ds, prot = result["dataset"], read_record(result["protocol"])
    k, n = prot["recall_k"], prot["sample_size"]
    synth = " (SYNTHETIC data)" if ds.get("synthetic") else ""
    lines = [
        f"Backretrieval of {result['model']['name']} on {ds['name']}{synth}: N={n}, {len(prot['seeds'])} seed(s), "
        f"k={k}, text field '{prot['text_field']}', image backbone {result['image_backbone']['id']}",
        f"mean over seeds; {prot['ci']['method']}",
    ]
    by_dir = scores_by_direction(result)
    for d in prot.get("directions", sorted(by_dir)):
        sc = by_dir[d]
        src, tgt = d.split("-")
        lines += ["", f"{src}→{tgt}", f"  {'metric':<18} {'mean':>7}  95% CI"]
        for metric in TABLE_METRICS:
            m = sc["metrics"].get(metric)
            if m is None:
                continue
            ci = f"[{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]" if m["ci_low"] is not None else "no CI"
            lines.append(f"  {METRIC_LABELS[metric].format(k=k):<18} {_fmt(m['mean']):>7}  {ci}")
        n_items = sc["metrics"].get(MAIN_METRIC, {}).get("n_items")
        if n_items:
            lines.append(f"  {n_items} distinct items (query images) in {len(prot['seeds'])} × N={n} queries")
        dup = duplicates_sentence({d: sc["duplicate_targets"]}, int(n)) if sc.get("duplicate_targets") else ""
        if dup:
            lines.append(f"  {dup}")
        rb = sc["random_baseline"]
        lines.append(f"  random baseline: Recall@{k} = k/N = {rb['recall_at_k']:.3f}, MRR = H_N/N = {rb['mrr']:.3f}")
        if "xlr_recall" not in sc["metrics"]:
            lines.append("  (no XLR: the dataset is not parallel)")
    return "\n".join(lines)
