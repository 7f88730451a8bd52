"""Human study, second half: read the sealed key and a ratings file (human or SIMULATED), check
that they belong together, unblind and tally (pooled and paired per query), and the SIMULATED
rater of the synthetic dataset. The rating material itself is made by
:mod:`backretrieval.study.human_study`, whose docstring describes the whole study."""

from __future__ import annotations

import hashlib
import io as _io
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util.io import write_csv
from ..errors import InputError
from .human_study import DEFAULT_THRESHOLDS, KEY_FORMAT, KEY_NAME, RATER_RE, RATING_LABELS, SIMULATED_RATER

# --------------------------------------------------------------------------- key + ratings IO


def read_key(key_path: str | Path) -> tuple[dict[str, Any], str]:
    """The sealed key (validated) and the sha256 of its bytes."""
    p = Path(key_path)
    if not p.is_file():
        raise InputError(f"{p}: key file not found")
    raw = p.read_bytes()
    try:
        key = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{p}: not valid JSON ({exc})") from exc
    if not isinstance(key, dict) or key.get("format") != KEY_FORMAT:
        raise InputError(f"{p}: not a human-study key (field 'format' must be {KEY_FORMAT!r})")
    for field in ("model_names", "suggestions"):
        if field not in key:
            raise InputError(f"{p}: field {field!r} is required")
    for sid, ent in key["suggestions"].items():
        for field in ("query_id", "candidate_id", "models"):
            if field not in ent:
                raise InputError(f"{p}: suggestion {sid!r} lacks field {field!r}")
    return key, hashlib.sha256(raw).hexdigest()


#: Separators a spreadsheet may save a "CSV" with (comma; semicolon where the decimal mark is a
#: comma; tab for "Unicode text"). The ratings file's own is detected from its header line.
RATING_SEPARATORS = ",;\t"


def _decode_ratings(path: Path, raw: bytes) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with a byte-order mark ("Unicode text")
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: ratings file is damaged UTF-16 ({exc}); save it as 'CSV UTF-8'") from exc
    if b"\x00" in raw[:4096]:
        raise InputError(
            f"{path}: ratings file looks like UTF-16 without a byte-order mark (NUL bytes); "
            "save it as 'CSV UTF-8 (comma delimited)'"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: ratings file is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save it as 'CSV UTF-8 (comma delimited)'"
        ) from exc


def _read_ratings_csv(path: Path) -> pd.DataFrame:
    """The ratings table: UTF-8 (or UTF-16 with a byte-order mark), separated by commas,
    semicolons or tabs (detected from the header line by :class:`csv.Sniffer`)."""
    import csv

    if not path.is_file():
        raise InputError(f"{path}: ratings file not found")
    text = _decode_ratings(path, path.read_bytes())
    header = text.split("\n", 1)[0]
    try:
        sep = csv.Sniffer().sniff(header, delimiters=RATING_SEPARATORS).delimiter
    except csv.Error:
        sep = ","
    try:
        df = pd.read_csv(_io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: cannot be read as CSV ({exc})") from exc
    for col in ("suggestion_id", "rating"):
        if col not in df.columns:
            seen = ", ".join(map(str, df.columns[:6]))
            raise InputError(
                f"{path}: missing column {col!r}; expected at least suggestion_id, rating separated by "
                f"commas (header read as: {seen})"
            )
    df["suggestion_id"] = df["suggestion_id"].str.strip()
    df["rating"] = df["rating"].str.strip()
    return df


_INT_RE = re.compile(r"^[+-]?\d+(\.0*)?$")


@dataclass(frozen=True)
class _Ratings:
    by_rater: dict[str, dict[str, int]]  # rater -> suggestion id -> rating
    key_verified: bool  # every row carried the key's sha256


def _parse_ratings(
    df: pd.DataFrame, path: Path, key: dict[str, Any], key_sha: str, key_path: Path, allow_unverified_key: bool
) -> _Ratings:
    """Validate every row; raise one InputError listing the problems, else the ratings."""
    if "rater" not in df.columns:
        raise InputError(
            f"{path}: missing column 'rater' (the rater id of each row); expected columns "
            "suggestion_id, rating, rater, key_sha256"
        )
    problems: list[str] = []
    keyed = key["suggestions"]
    first_row: dict[tuple[str, str], int] = {}
    by_rater: dict[str, dict[str, int]] = {}
    raters = df["rater"].str.strip()
    # row i is the file's line i (the header is row 1), as validate-dataset numbers rows
    for i, (sid, raw, rater) in enumerate(zip(df["suggestion_id"], df["rating"], raters), start=2):
        where = f"row {i} (suggestion_id {sid!r}, rater {rater!r})"
        if not RATER_RE.match(rater):
            problems.append(f"{where}: rater id must be 1-64 letters, digits, '_', '.' or '-'")
            continue
        by_rater.setdefault(rater, {})
        if (rater, sid) in first_row:
            problems.append(f"{where}: duplicate suggestion_id for this rater (first at row {first_row[(rater, sid)]})")
            continue
        first_row[(rater, sid)] = i
        if sid not in keyed:
            problems.append(f"{where}: suggestion_id is not in the key")
            continue
        if raw == "":
            problems.append(f"{where}: no rating")
            continue
        if not _INT_RE.match(raw):
            hint = " (a decimal comma: write whole numbers, e.g. 3)" if re.match(r"^\d+,\d*$", raw) else ""
            problems.append(f"{where}: rating {raw!r} is not an integer 1-4{hint}")
            continue
        v = int(float(raw))
        if not 1 <= v <= 4:
            problems.append(f"{where}: rating {v} outside 1-4")
            continue
        by_rater[rater][sid] = v
    for rater in by_rater:
        missing = [sid for sid in keyed if (rater, sid) not in first_row]
        if missing:
            problems.append(
                f"rater {rater!r}: {len(missing)} suggestion(s) of the key have no row (missing rows), "
                f"e.g. {missing[:3]}"
            )
    if not by_rater and not problems:
        problems.append("no rating rows")
    if SIMULATED_RATER in by_rater and len(by_rater) > 1:
        problems.append(
            f"rater {SIMULATED_RATER!r} (the SIMULATED rater) mixed with human raters "
            f"{sorted(set(by_rater) - {SIMULATED_RATER})[:5]}; tally them separately"
        )
    hashes = df["key_sha256"].str.strip() if "key_sha256" in df.columns else pd.Series([""] * len(df))
    bad = sorted({h for h in hashes if h and h != key_sha})
    if bad:
        problems.append(
            f"column key_sha256 = {bad[0][:16]}... does not match the key's sha256 "
            f"{key_sha[:16]}... (ratings made for a different sheet)"
        )
    n_unchecked = int((hashes == "").sum())
    if n_unchecked and not allow_unverified_key:
        what = (
            "has no column key_sha256"
            if "key_sha256" not in df.columns
            else f"has {n_unchecked} row(s) without key_sha256"
        )
        problems.append(
            f"the ratings file {what}, so it cannot be checked against the key {key_path} "
            f"(sha256 {key_sha[:16]}...); if you are sure they belong together, pass "
            "--allow-unverified-key (backretrieval human-tally) or set human_study.allow_unverified_key: true"
        )
    if problems:
        shown = "; ".join(problems[:10]) + (f"; ... and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise InputError(f"{path}: {len(problems)} problem(s), nothing tallied: {shown}")
    return _Ratings(by_rater=by_rater, key_verified=n_unchecked == 0)


# --------------------------------------------------------------------------- tally


@dataclass(frozen=True)
class TallyResult:
    model_names: tuple[str, str]
    counts: dict[str, dict[int, int]]  # model -> rating level -> count (pooled over raters)
    n_ratings: dict[str, int]
    very_relevant: dict[str, int]
    share_very_relevant: dict[str, float]
    mean_rating: dict[str, float]
    ratio_very_relevant: float  # very_relevant[A] / very_relevant[B] (inf if B = 0 < A)
    mannwhitney_u: float
    mannwhitney_p: float
    fisher_odds_ratio: float
    fisher_p: float
    # paired per query: very-relevant ratings of each model's suggestions for the query
    per_query: list[dict[str, Any]]  # query_id, very_relevant_a, very_relevant_b (a, b = model_names)
    queries_a_more: int  # queries where A has more very-relevant ratings than B
    queries_b_more: int
    queries_equal: int
    wilcoxon_statistic: float  # smaller of the signed-rank sums (zero differences dropped)
    wilcoxon_p: float
    wilcoxon_method: str
    sign_test_p: float  # exact binomial test of queries_a_more vs queries_b_more
    n_queries: int
    n_suggestions: int
    n_shared: int
    raters: list[str]
    simulated: bool
    key_verified: bool  # every row of the ratings file carried the key's sha256
    key_sha256: str
    # model -> training seed of the rated run, for models trained once per seed (from the key)
    training_seeds: dict[str, int] = dataclass_field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["model_names"] = list(self.model_names)
        d["counts"] = {m: {str(k): v for k, v in c.items()} for m, c in self.counts.items()}
        return d


def paired_query_tests(a: Sequence[int], b: Sequence[int]) -> tuple[float, float, str, float]:
    """Two-sided Wilcoxon signed-rank test and exact sign test on per-query pairs ``(a, b)``.

    Zero differences are dropped (Wilcoxon's convention). The Wilcoxon p-value uses scipy's
    exact null distribution when the nonzero |differences| have no ties (up to 50 of them),
    an exhaustive sign-flip permutation when they have ties (up to 13), else the normal
    approximation with tie correction. Returns ``(statistic, p, method, sign_test_p)``; all
    differences zero gives ``(0.0, 1.0, "all differences zero", 1.0)``.
    """
    from scipy import stats

    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    d = d[d != 0]
    if len(d) == 0:
        return 0.0, 1.0, "all differences zero", 1.0
    ties = len(np.unique(np.abs(d))) < len(d)
    if not ties and len(d) <= 50:
        method: Any = "exact"
        label = "exact"
    elif ties and len(d) <= 13:
        method = stats.PermutationMethod(n_resamples=np.inf)
        label = "exact (exhaustive sign-flip permutation, tied differences)"
    else:
        method = "asymptotic"
        label = "normal approximation" + (" with tie correction" if ties else "")
    w = stats.wilcoxon(d, alternative="two-sided", method=method)
    n_pos = int((d > 0).sum())
    sign_p = float(stats.binomtest(n_pos, len(d), 0.5, alternative="two-sided").pvalue)
    return float(w.statistic), float(w.pvalue), label, sign_p


def tally(
    ratings_csv: str | Path,
    key_path: str | Path,
    model_names: Sequence[str] | None = None,
    allow_unverified_key: bool = False,
) -> TallyResult:
    """Validate ``ratings_csv`` against the key, then unblind and compare the two models.

    ``model_names`` (optional) must be the key's two model names; their order sets A and B.
    A suggestion shared by both models counts for both (see the module docstring). A ratings
    file whose rows do not all carry the key's sha256 is refused unless
    ``allow_unverified_key`` (a wrong sha256 is always refused).
    """
    from scipy import stats

    path = Path(ratings_csv)
    key, key_sha = read_key(key_path)
    key_models = list(key["model_names"])
    names = list(model_names) if model_names is not None else key_models
    if len(names) != 2 or sorted(names) != sorted(key_models):
        raise InputError(f"model_names {names} do not match the key's model_names {key_models} ({key_path})")
    df = _read_ratings_csv(path)
    parsed = _parse_ratings(df, path, key, key_sha, Path(key_path), allow_unverified_key)

    a, b = names
    query_ids = [str(q) for q in key.get("queries") or sorted({e["query_id"] for e in key["suggestions"].values()})]
    per_model: dict[str, list[int]] = {m: [] for m in names}
    vr_query: dict[str, dict[str, int]] = {q: {m: 0 for m in names} for q in query_ids}
    for sid, ent in key["suggestions"].items():
        for m in ent["models"]:
            if m not in per_model:
                raise InputError(f"{key_path}: suggestion {sid!r} names unknown model {m!r}")
            if ent["query_id"] not in vr_query:
                raise InputError(f"{key_path}: suggestion {sid!r} names query {ent['query_id']!r} not in 'queries'")
            for ratings in parsed.by_rater.values():
                per_model[m].append(ratings[sid])
                vr_query[ent["query_id"]][m] += int(ratings[sid] == 1)
    counts = {m: {lvl: int(sum(1 for r in per_model[m] if r == lvl)) for lvl in RATING_LABELS} for m in names}
    n = {m: len(per_model[m]) for m in names}
    vr = {m: counts[m][1] for m in names}
    share = {m: (vr[m] / n[m] if n[m] else math.nan) for m in names}
    mean = {m: (float(np.mean(per_model[m])) if n[m] else math.nan) for m in names}
    if vr[b] > 0:
        ratio = vr[a] / vr[b]
    else:
        ratio = math.inf if vr[a] > 0 else math.nan
    if n[a] and n[b] and len(set(per_model[a]) | set(per_model[b])) > 1:
        mw = stats.mannwhitneyu(per_model[a], per_model[b], alternative="two-sided")
        mw_u, mw_p = float(mw.statistic), float(mw.pvalue)
    else:  # all ratings identical: no evidence of a difference
        mw_u, mw_p = (n[a] * n[b] / 2.0, 1.0) if n[a] and n[b] else (math.nan, math.nan)
    fe = stats.fisher_exact([[vr[a], n[a] - vr[a]], [vr[b], n[b] - vr[b]]], alternative="two-sided")
    qa = [vr_query[q][a] for q in query_ids]
    qb = [vr_query[q][b] for q in query_ids]
    w_stat, w_p, w_method, sign_p = paired_query_tests(qa, qb)
    return TallyResult(
        model_names=(a, b),
        counts=counts,
        n_ratings=n,
        very_relevant=vr,
        share_very_relevant=share,
        mean_rating=mean,
        ratio_very_relevant=float(ratio),
        mannwhitney_u=mw_u,
        mannwhitney_p=mw_p,
        fisher_odds_ratio=float(fe.statistic),
        fisher_p=float(fe.pvalue),
        per_query=[{"query_id": q, "very_relevant_a": x, "very_relevant_b": y} for q, x, y in zip(query_ids, qa, qb)],
        queries_a_more=int(sum(x > y for x, y in zip(qa, qb))),
        queries_b_more=int(sum(x < y for x, y in zip(qa, qb))),
        queries_equal=int(sum(x == y for x, y in zip(qa, qb))),
        wilcoxon_statistic=w_stat,
        wilcoxon_p=w_p,
        wilcoxon_method=w_method,
        sign_test_p=sign_p,
        n_queries=len(query_ids),
        n_suggestions=len(key["suggestions"]),
        n_shared=sum(1 for e in key["suggestions"].values() if len(e["models"]) > 1),
        raters=sorted(parsed.by_rater),
        simulated=list(parsed.by_rater) == [SIMULATED_RATER],
        key_verified=parsed.key_verified,
        key_sha256=key_sha,
        training_seeds={str(m): int(s) for m, s in (key.get("training_seeds") or {}).items()},
    )


def _fmt(x: float, spec: str = ".3g") -> str:
    if isinstance(x, float) and math.isnan(x):
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "∞"
    return format(x, spec)


def tally_markdown(result: TallyResult, simulated: bool | None = None) -> str:
    """A Markdown report section; ``simulated`` (default: detected from the file) adds a banner."""
    sim = result.simulated if simulated is None else simulated
    a, b = result.model_names
    n_r = len(result.raters)
    lines = ["## Human study (blinded ratings)", ""]
    if sim:
        lines += [
            "> **SIMULATED RATINGS.** These ratings were produced by a simulated rater from "
            "ground-truth relevance of a synthetic dataset, not by human raters. They test the "
            "pipeline; they are not evidence about the models.",
            "",
        ]
    lines += [
        f"{result.n_queries} queries, {result.n_suggestions} rated suggestions, "
        f"{n_r} rater(s) ({', '.join(result.raters)}). {result.n_shared} suggestion(s) were "
        "proposed by both models: each was shown once and its rating counts for both models "
        "(in the pooled counts and in both models' per-query counts). "
        "Scale: " + ", ".join(f"{k} = {v}" for k, v in RATING_LABELS.items()) + ".",
        "",
    ]
    if result.training_seeds:
        runs = ", ".join(f"{m} of training seed {s}" for m, s in result.training_seeds.items())
        lines += [
            f"One sheet, from one training run of each trained model: {runs} (the first of "
            "case_study.training_seeds); Table 2 averages the heads over all training seeds.",
            "",
        ]
    lines += [
        "| model | n | 1 | 2 | 3 | 4 | share very relevant | mean rating |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in (a, b):
        c = result.counts[m]
        lines.append(
            f"| {m} | {result.n_ratings[m]} | {c[1]} | {c[2]} | {c[3]} | {c[4]} | "
            f"{_fmt(result.share_very_relevant[m], '.1%')} | {_fmt(result.mean_rating[m], '.2f')} |"
        )
    lines += [
        "",
        f"- Very-relevant ratio {a}/{b} (pooled): **{_fmt(result.ratio_very_relevant, '.2f')}×** "
        f"({result.very_relevant[a]} vs {result.very_relevant[b]}).",
        f"- Per query (paired; very-relevant ratings of each model's suggestions for the query"
        f"{', summed over raters' if n_r > 1 else ''}): {a} more in {result.queries_a_more}, "
        f"{b} more in {result.queries_b_more}, equal in {result.queries_equal} of {result.n_queries} queries. "
        f"Wilcoxon signed-rank (two-sided, zero differences dropped, {result.wilcoxon_method}): "
        f"W = {_fmt(result.wilcoxon_statistic, '.1f')}, p = {_fmt(result.wilcoxon_p)}; "
        f"exact sign test p = {_fmt(result.sign_test_p)}.",
        f"- Pooled over suggestions: Fisher's exact test (very relevant vs not, two-sided): odds ratio "
        f"{_fmt(result.fisher_odds_ratio)}, p = {_fmt(result.fisher_p)}; "
        f"Mann–Whitney U (ratings, two-sided): U = {_fmt(result.mannwhitney_u, '.1f')}, "
        f"p = {_fmt(result.mannwhitney_p)}. These treat suggestions as independent, which they are "
        "not quite (suggestions of one query are related; shared suggestions appear in both "
        "samples): the per-query test is the one that respects the design.",
        f"- Key sha256 `{result.key_sha256[:16]}…`"
        + (
            " (verified against every row of the ratings file)."
            if result.key_verified
            else " (**not verified**: the ratings file did not carry the key's hash on every row; tallied with --allow-unverified-key)."
        ),
        "",
        "<details><summary>Per-query very-relevant counts</summary>",
        "",
        f"| query | {a} | {b} |",
        "|---|---:|---:|",
    ]
    for row in result.per_query:
        lines.append(f"| {row['query_id']} | {row['very_relevant_a']} | {row['very_relevant_b']} |")
    lines += ["", "</details>", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- simulated rater


def relevance_to_rating(score: float, thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> int:
    """1 if score >= t1, 2 if >= t2, 3 if >= t3, else 4 (thresholds strictly decreasing)."""
    for level, t in enumerate(thresholds, start=1):
        if score >= t:
            return level
    return len(thresholds) + 1


def simulate_ratings(
    template_csv: str | Path,
    relevance_fn: Callable[[str, str], float],
    out_csv: str | Path,
    seed: int,
    key_path: str | Path | None = None,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    noise_sd: float = 0.0,
) -> pd.DataFrame:
    """SIMULATED rater: rating = thresholds applied to ``relevance_fn(query_id, candidate_id)``.

    The simulated rater reads the sealed key (default: ``key.sealed.json`` next to the
    template) to learn each suggestion's candidate id - acceptable only because it is a
    simulation. ``noise_sd`` > 0 adds seeded Gaussian noise to the score before thresholding.
    Writes ``suggestion_id, query_id, rating, rater, key_sha256`` with ``rater = simulated``.
    """
    template_csv = Path(template_csv)
    if len(thresholds) != 3 or any(x <= y for x, y in zip(thresholds, thresholds[1:])):
        raise InputError(f"thresholds must be 3 strictly decreasing values, got {tuple(thresholds)}")
    if noise_sd < 0:
        raise InputError(f"noise_sd must be >= 0, got {noise_sd}")
    key, key_sha = read_key(key_path if key_path is not None else template_csv.parent / KEY_NAME)
    df = _read_ratings_csv(template_csv)
    if "query_id" not in df.columns:
        raise InputError(f"{template_csv}: missing column 'query_id'")
    rng = np.random.default_rng(seed)
    rows = []
    for i, (sid, qid) in enumerate(zip(df["suggestion_id"], df["query_id"]), start=2):  # the file's line
        ent = key["suggestions"].get(sid)
        if ent is None:
            raise InputError(f"{template_csv}: row {i}: suggestion_id {sid!r} is not in the key")
        score = float(relevance_fn(str(qid), str(ent["candidate_id"])))
        if not (math.isfinite(score) and 0.0 <= score <= 1.0):
            raise InputError(
                f"relevance_fn({qid!r}, {ent['candidate_id']!r}) returned {score}; expected a value in [0, 1]"
            )
        if noise_sd > 0:
            score = float(np.clip(score + rng.normal(0.0, noise_sd), 0.0, 1.0))
        rows.append(
            {
                "suggestion_id": sid,
                "query_id": qid,
                "rating": relevance_to_rating(score, thresholds),
                "rater": SIMULATED_RATER,
                "key_sha256": key_sha,
            }
        )
    out = pd.DataFrame(rows, columns=["suggestion_id", "query_id", "rating", "rater", "key_sha256"])
    write_csv(out_csv, out)
    return out
