"""Blinded human evaluation of two models' suggestions (the paper's case study, Sec. 3.2).

The paper asks raters to score, for 20 English queries, the top-5 Russian suggestions of model
A (TRIPLETXL) and of model B (its base encoder) on a 1-4 scale (1 = very relevant ... 4 = not
relevant) and reports that model A yields 2.3x more "very relevant" suggestions. This module
produces the rating material (steps 1-2); :mod:`backretrieval.study.human_tally` tallies it
(steps 3-4):

1. :func:`top_k_suggestions` - each query's top-k candidates by cosine similarity.
2. :func:`make_sheets` - pools both models' suggestions per query, shuffles them (seeded),
   gives each an opaque random id and writes

   * ``ratings_template.csv`` (suggestion_id, query_id, query_text, suggestion_text, rating,
     rater, key_sha256) for raters who prefer a spreadsheet;
   * ``rating_sheet.html``: one self-contained page, rendered with jinja2 from the package
     templates ``study/templates/rating_sheet.{html,css,js}`` (no external resources or
     network access; every corpus text HTML-escaped and marked with its language, ``lang`` and
     ``dir``, so Arabic reads right to left) with the 1-4 scale defined (:data:`RATING_DEFINITIONS`),
     a rater-id field, 1-4 radio buttons per suggestion, a rated/unrated counter and a
     "Save ratings" button that downloads ``ratings.csv`` (suggestion_id, rating, rater,
     key_sha256). By default the page shows **texts only**: images are the pivot that
     Backretrieval itself uses, so showing them would let the check lean on the same signal
     it is meant to confirm. ``show_images=True`` inlines thumbnails as ``data:`` URIs;
   * ``key.sealed.json``: suggestion id -> query, candidate and model(s). Keep it away from
     the raters. Its sha256 is printed in the template and the page so that :func:`tally`
     checks that ratings and key belong together.

   **Every training seed's heads on one sheet.** A model trained once per training seed (the
   case study's heads) is given as :class:`SeedRuns`: the top-k of each seed's head. The sheet
   pools, per query, the suggestions of every run of both models, each candidate shown once, so
   the tally can score every seed's head from one set of ratings (a decision that flips with the
   training draw is then seen as such, instead of resting on one draw).

   **Shared suggestions.** When both models propose the same candidate for a query, the rater
   sees (and rates) it once; the key lists both models for that suggestion and :func:`tally`
   counts its rating for *both* models (each model proposed it), in the pooled counts and in
   the per-query counts. So a query shows between k and 2k suggestions, and the two models'
   rating samples overlap in shared suggestions.

3. :func:`tally` - validates the ratings file (a ``rater`` id on every row; each rater rates
   every keyed suggestion exactly once; ratings integers 1-4; no unknown ids; the key's sha256
   on every row, unless ``allow_unverified_key``) and only then unblinds:

   * pooled over raters and queries: per-model rating counts, share of "very relevant", the
     A/B ratio of very-relevant counts (the paper's 2.3x), a two-sided Mann-Whitney U test on
     the ratings and Fisher's exact test on very-relevant vs not;
   * paired per query: the number of very-relevant ratings of each model's suggestions for the
     query (summed over raters), compared by a two-sided Wilcoxon signed-rank test (zero
     differences dropped; exact null distribution without ties up to 50 queries, exhaustive
     sign-flip permutation with ties up to 13 nonzero differences, else the normal
     approximation with tie correction) and an exact sign test. Queries are the independent
     units here, which the pooled tests do not respect (suggestions of one query are related,
     shared suggestions appear in both samples).
4. :func:`~.simulated_rater.simulate_ratings` - a SIMULATED rater for the synthetic dataset (no humans): it reads
   the key to learn each suggestion's candidate id (acceptable only because it is a simulation)
   and maps a ground-truth relevance score in [0, 1] to a rating with fixed thresholds. Its
   output has a ``rater`` column set to ``simulated``; :func:`tally` and
   :func:`tally_markdown` report such ratings as SIMULATED.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io as _io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util.io import write_csv, write_text
from ..errors import InputError

RATING_LABELS: dict[int, str] = {
    1: "very relevant",
    2: "relevant",
    3: "slightly relevant",
    4: "not relevant",
}
#: What each level means, shown on the rating page (the paper names the levels only).
RATING_DEFINITIONS: dict[int, str] = {
    1: "the suggestion is about the same thing as the query (e.g. the same dish): "
    "a result you would be glad to get for this query",
    2: "closely related: the same kind of thing, differing in some details",
    3: "only loosely related: shares a topic or a few elements with the query",
    4: "unrelated to the query",
}
#: Languages written right to left (ISO 639 codes); every other language is marked ``ltr``.
RTL_LANGUAGES = frozenset({"ar", "arc", "ckb", "dv", "fa", "he", "iw", "ks", "ps", "sd", "ug", "ur", "yi"})
RATER_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
KEY_FORMAT = "backretrieval-human-study-key"
KEY_VERSION = 2
#: a key whose models are given as several runs (every training seed's head on one sheet)
KEY_VERSION_RUNS = 3
TEMPLATE_NAME = "ratings_template.csv"
HTML_NAME = "rating_sheet.html"
KEY_NAME = "key.sealed.json"
SIMULATED_RATER = "simulated"
DEFAULT_THRESHOLDS = (0.75, 0.5, 0.25)

Suggestion = Sequence[Any]  # (candidate_id, text) or (candidate_id, text, image_path | None)


# --------------------------------------------------------------------------- suggestions


def top_k_suggestions(query_emb: np.ndarray, cand_emb: np.ndarray, k: int = 5) -> np.ndarray:
    """Indices (n_queries, k) of each query's k most cosine-similar candidates, best first.

    Ties are broken by the lowest candidate index (stable sort).
    """
    q, c = np.asarray(query_emb, dtype=np.float64), np.asarray(cand_emb, dtype=np.float64)
    if q.ndim != 2 or c.ndim != 2 or q.shape[1] != c.shape[1]:
        raise InputError(
            f"top_k_suggestions: expected 2-D query/candidate embeddings of equal width, got {q.shape} and {c.shape}"
        )
    if not 1 <= k <= c.shape[0]:
        raise InputError(f"top_k_suggestions: k={k} must be in 1..{c.shape[0]} (number of candidates)")
    for name, a in (("query_emb", q), ("cand_emb", c)):
        norms = np.linalg.norm(a, axis=1)
        if not np.isfinite(a).all() or (norms == 0).any():
            raise InputError(f"top_k_suggestions: {name} has a zero or non-finite row")
    sim = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (c / np.linalg.norm(c, axis=1, keepdims=True)).T
    return np.argsort(-sim, axis=1, kind="stable")[:, :k].astype(np.int64)


# --------------------------------------------------------------------------- sheets


@dataclass(frozen=True)
class SeedRuns:
    """One trained model's suggestions per training seed: seed -> query_id -> ranked suggestions
    (each as :func:`make_sheets` takes one run's)."""

    by_seed: Mapping[int, Mapping[Any, Sequence[Suggestion]]]


def _runs(
    model: str, sugg: Mapping[Any, Sequence[Suggestion]] | SeedRuns
) -> dict[str, Mapping[Any, Sequence[Suggestion]]]:
    """run id -> suggestions: the model itself for one run, ``<model>@<seed>`` per training seed."""
    from .case_config import run_id

    if isinstance(sugg, SeedRuns):
        if not sugg.by_seed:
            raise InputError(f"suggestions of model {model!r}: no training seeds")
        return {run_id(model, int(seed)): v for seed, v in sorted(sugg.by_seed.items())}
    return {model: sugg}


@dataclass(frozen=True)
class Sheets:
    template: Path
    html: Path
    key: Path
    key_sha256: str
    n_queries: int
    n_suggestions: int
    n_shared: int


def _norm_suggestions(
    sugg: Mapping[Any, Sequence[Suggestion]], model: str, query_ids: list[str]
) -> dict[str, list[tuple[str, str, str | None]]]:
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    keys = {str(q): v for q, v in sugg.items()}
    unknown = sorted(set(keys) - set(query_ids))
    if unknown:
        raise InputError(f"suggestions of model {model!r}: unknown query_id(s) {unknown[:5]}")
    for qid in query_ids:
        if qid not in keys or len(keys[qid]) == 0:
            raise InputError(f"suggestions of model {model!r}: no suggestions for query_id {qid!r}")
        rows = []
        seen: set[str] = set()
        for s in keys[qid]:
            if len(s) not in (2, 3):
                raise InputError(
                    f"suggestions of model {model!r}, query {qid!r}: expected (candidate_id, text"
                    f"[, image_path]), got {s!r}"
                )
            cid, text = str(s[0]), str(s[1])
            img = None if len(s) < 3 or s[2] is None or str(s[2]) == "" else str(s[2])
            if cid in seen:
                raise InputError(f"suggestions of model {model!r}, query {qid!r}: candidate {cid!r} listed twice")
            seen.add(cid)
            rows.append((cid, text, img))
        out[qid] = rows
    return out


def _thumbnail_data_uri(path: str, image_root: Path | None, max_px: int, cache: dict[str, str]) -> str:
    from PIL import Image, ImageOps

    p = Path(path)
    if not p.is_absolute() and image_root is not None:
        p = Path(image_root) / p
    key = str(p)
    if key in cache:
        return cache[key]
    if not p.is_file():
        raise InputError(f"image {path!r}: file {p} not found")
    try:
        with Image.open(p) as im:
            im = ImageOps.exif_transpose(im)
            im.thumbnail((max_px, max_px))
            if im.mode not in ("RGB", "L"):
                im = im.convert("RGB")
            buf = _io.BytesIO()
            im.save(buf, format="JPEG", quality=85)
    except (OSError, ValueError) as exc:
        raise InputError(f"image {p}: cannot be read as an image ({exc})") from exc
    uri = "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    cache[key] = uri
    return uri


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_sheets(
    queries: pd.DataFrame,
    suggestions_a: Mapping[Any, Sequence[Suggestion]] | SeedRuns,
    suggestions_b: Mapping[Any, Sequence[Suggestion]] | SeedRuns,
    out_dir: str | Path,
    seed: int,
    model_names: tuple[str, str] = ("A", "B"),
    image_root: str | Path | None = None,
    thumb_px: int = 256,
    title: str = "Relevance rating",
    query_lang: str | None = None,
    suggestion_lang: str | None = None,
    show_images: bool = False,
    training_seeds: Mapping[str, int] | None = None,
) -> Sheets:
    """Write ``ratings_template.csv``, ``rating_sheet.html`` and ``key.sealed.json`` to ``out_dir``.

    ``queries``: columns ``query_id``, ``text`` and optionally ``image_path``.
    ``suggestions_a``/``_b``: query_id -> ranked list of ``(candidate_id, text[, image_path])``,
    or, for a model trained once per training seed, :class:`SeedRuns` (every seed's run is
    pooled into the one sheet; the key records which runs proposed each suggestion).
    ``query_lang``/``suggestion_lang``: ISO 639 codes of the texts, set as ``lang`` on every
    text element of the page with ``dir="rtl"`` for right-to-left scripts (``dir="auto"``
    when not given). Image paths are ignored unless ``show_images`` (see the module
    docstring); relative ones are resolved against ``image_root``. Same ``seed`` → identical
    files. ``training_seeds``: model → the training seed of the one run whose suggestions are
    rated, for a model trained once per seed but given as one run (recorded in the key).
    """
    if len(model_names) != 2 or model_names[0] == model_names[1]:
        raise InputError(f"model_names: expected two different names, got {model_names!r}")
    for name, lang in (("query_lang", query_lang), ("suggestion_lang", suggestion_lang)):
        if lang is not None and not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]+)*", str(lang)):
            raise InputError(f"{name}: expected an ISO 639 code like 'en' or 'ar', got {lang!r}")
    for col in ("query_id", "text"):
        if col not in queries.columns:
            raise InputError(f"queries: missing column {col!r}; expected query_id, text[, image_path]")
    q = queries.reset_index(drop=True)
    query_ids = [str(x) for x in q["query_id"]]
    if len(set(query_ids)) != len(query_ids):
        dup = pd.Series(query_ids)[pd.Series(query_ids).duplicated()].iloc[0]
        raise InputError(f"queries: duplicate query_id {dup!r}")
    if not query_ids:
        raise InputError("queries: no rows")
    runs_of = {m: _runs(m, sg) for m, sg in zip(model_names, (suggestions_a, suggestions_b))}
    norm = {run: _norm_suggestions(sg, run, query_ids) for m in model_names for run, sg in runs_of[m].items()}
    model_of = {run: m for m in model_names for run in runs_of[m]}

    multi_run = any(len(r) > 1 or run != m for m, r in runs_of.items() for run in r)
    rng = np.random.default_rng(seed)
    used_ids: set[str] = set()
    cache: dict[str, str] = {}
    root = Path(image_root) if image_root is not None else None
    blocks: list[dict[str, Any]] = []
    key_entries: dict[str, dict[str, Any]] = {}
    n_shared = 0
    for i, qid in enumerate(query_ids):
        pooled: dict[str, dict[str, Any]] = {}
        for run, by_query in norm.items():
            model = model_of[run]
            for rank, (cid, text, img) in enumerate(by_query[qid], start=1):
                if cid not in pooled:
                    pooled[cid] = {"cid": cid, "text": text, "img": img, "models": [], "runs": [], "ranks": {}}
                e = pooled[cid]
                if e["text"] != text:
                    raise InputError(f"query {qid!r}: candidate {cid!r} has different texts in the models' suggestions")
                if model not in e["models"]:
                    e["models"].append(model)
                e["runs"].append(run)
                e["ranks"][run] = rank
        n_shared += sum(len(e["models"]) > 1 for e in pooled.values())
        entries = list(pooled.values())
        order = rng.permutation(len(entries))
        shown = []
        for j in order:
            e = entries[int(j)]
            sid = rng.bytes(8).hex()
            while sid in used_ids:  # pragma: no cover - 64-bit collision
                sid = rng.bytes(8).hex()
            used_ids.add(sid)
            key_entries[sid] = {
                "query_id": qid,
                "candidate_id": e["cid"],
                "models": e["models"],
                "ranks": e["ranks"],
            }
            if multi_run:  # which runs (training seeds) proposed it
                key_entries[sid]["runs"] = e["runs"]
            shown.append({"sid": sid, "text": e["text"], "img": e["img"] if show_images else None})
        qimg = None
        if show_images and "image_path" in q.columns:
            v = q.at[i, "image_path"]
            qimg = None if v is None or (isinstance(v, float) and math.isnan(v)) or str(v) == "" else str(v)
        blocks.append({"qid": qid, "text": str(q.at[i, "text"]), "img": qimg, "suggestions": shown})

    key_obj = {
        "format": KEY_FORMAT,
        "version": KEY_VERSION,
        "model_names": list(model_names),
        "seed": int(seed),
        "queries": query_ids,
        "query_lang": query_lang,
        "suggestion_lang": suggestion_lang,
        "show_images": bool(show_images),
        "shared_suggestions_count_for_both_models": True,
        "suggestions": key_entries,
    }
    if multi_run:
        # every run of each model on the sheet: a trained model's training seeds, in order
        key_obj["version"] = KEY_VERSION_RUNS
        key_obj["runs"] = {m: list(runs_of[m]) for m in model_names}
    elif training_seeds:
        # which training run of each trained model was rated: one sheet, one run per model
        key_obj["training_seeds"] = {str(m): int(s) for m, s in training_seeds.items()}
    key_text = json.dumps(key_obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    key_sha = _sha256_text(key_text)

    for b in blocks:  # thumbnails (validated before anything is written)
        b["img_uri"] = _thumbnail_data_uri(b["img"], root, thumb_px, cache) if b["img"] else None
        for s in b["suggestions"]:
            s["img_uri"] = _thumbnail_data_uri(s["img"], root, thumb_px, cache) if s["img"] else None

    template = pd.DataFrame(
        [
            {
                "suggestion_id": s["sid"],
                "query_id": b["qid"],
                "query_text": b["text"],
                "suggestion_text": s["text"],
                "rating": "",
                "rater": "",
                "key_sha256": key_sha,
            }
            for b in blocks
            for s in b["suggestions"]
        ]
    )
    page = _render_html(blocks, key_sha, title, query_lang, suggestion_lang)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = Sheets(
        template=out / TEMPLATE_NAME,
        html=out / HTML_NAME,
        key=out / KEY_NAME,
        key_sha256=key_sha,
        n_queries=len(blocks),
        n_suggestions=len(key_entries),
        n_shared=n_shared,
    )
    write_text(paths.key, key_text)
    write_csv(paths.template, template)
    write_text(paths.html, page)
    return paths


def _text_dir(lang: str | None) -> str:
    """The ``dir`` of a corpus text: ``rtl``/``ltr`` by its language, ``auto`` when unknown."""
    if not lang:
        return "auto"
    return "rtl" if lang.split("-")[0].lower() in RTL_LANGUAGES else "ltr"


def _templates() -> Any:
    """The jinja2 environment of the page's package templates (``study/templates/``): every
    ``{{ }}`` value HTML-escaped with :func:`html.escape` (quotes included), a line holding only
    a ``{% %}`` tag leaves no line, and a template's last newline is kept."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("backretrieval.study", "templates"),
        autoescape=False,  # escaping is ``finalize``: html.escape on every value, no Markup
        finalize=lambda value: html.escape(str(value)),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def _render_html(
    blocks: list[dict[str, Any]],
    key_sha: str,
    title: str,
    query_lang: str | None = None,
    suggestion_lang: str | None = None,
) -> str:
    """The rating page (``templates/rating_sheet.html`` with its CSS and JS inlined)."""
    return (
        _templates()
        .get_template("rating_sheet.html")
        .render(
            blocks=blocks,
            key_sha=key_sha,
            title=title,
            labels=RATING_LABELS,
            definitions=RATING_DEFINITIONS,
            query_lang=query_lang,
            query_dir=_text_dir(query_lang),
            suggestion_lang=suggestion_lang,
            suggestion_dir=_text_dir(suggestion_lang),
        )
    )
