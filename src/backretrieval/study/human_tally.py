"""Human study, second half: with the sealed key and a ratings file (human or SIMULATED) read by
:mod:`.human_ratings`, check that they belong together, unblind and tally (pooled and paired per
query) and write the tally's Markdown; the SIMULATED rater of the synthetic dataset is
:mod:`.simulated_rater`. The rating material itself is made by
:mod:`backretrieval.study.human_study`, whose docstring describes the whole study."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .human_ratings import parse_ratings, read_key, read_ratings_csv
from .human_study import RATING_LABELS, SIMULATED_RATER


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
    # model -> training seed of the rated run, for a trained model rated on one run (from the key)
    training_seeds: dict[str, Any] = dataclass_field(default_factory=dict)
    # A trained on every training seed (one sheet with every seed's heads): one entry per seed
    # (training_seed, very_relevant_a, share_very_relevant_a, mean_rating_a, ratio_very_relevant,
    # mannwhitney_p, fisher_p, wilcoxon_p); the fields above then hold A's mean over seeds (counts,
    # very_relevant, shares, mean rating, per-query counts) and the pooled tests' median p
    per_training_seed: list[dict[str, Any]] = dataclass_field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["model_names"] = list(self.model_names)
        d["counts"] = {m: {str(k): v for k, v in c.items()} for m, c in self.counts.items()}
        if self.per_training_seed:
            # what `backretrieval verify` compares as trained outcomes: per-seed values of A
            seeds = [int(r["training_seed"]) for r in self.per_training_seed]
            d["training_spread"] = {
                q: {"per_seed": [r[q] for r in self.per_training_seed], "training_seeds": seeds}
                for q in ("very_relevant_a", "mean_rating_a")
            }
        else:
            del d["per_training_seed"]
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
    df = read_ratings_csv(path)
    parsed = parse_ratings(df, path, key, key_sha, Path(key_path), allow_unverified_key)

    a, b = names
    query_ids = [str(q) for q in key.get("queries") or sorted({e["query_id"] for e in key["suggestions"].values()})]
    runs_of = {m: list((key.get("runs") or {}).get(m) or [m]) for m in names}
    if len(runs_of[b]) > 1 and len(runs_of[a]) == 1:
        raise InputError(f"{key_path}: model {b!r} has several runs; give the trained model as model A")
    model_of = {run: m for m in names for run in runs_of[m]}
    per_run: dict[str, list[int]] = {run: [] for run in model_of}
    vr_query: dict[str, dict[str, int]] = {q: {run: 0 for run in model_of} for q in query_ids}
    for sid, ent in key["suggestions"].items():
        for m in ent["models"]:
            if m not in runs_of:
                raise InputError(f"{key_path}: suggestion {sid!r} names unknown model {m!r}")
        if ent["query_id"] not in vr_query:
            raise InputError(f"{key_path}: suggestion {sid!r} names query {ent['query_id']!r} not in 'queries'")
        for run in ent.get("runs") or ent["models"]:
            if run not in model_of:
                raise InputError(f"{key_path}: suggestion {sid!r} names unknown run {run!r}")
            for ratings in parsed.by_rater.values():
                per_run[run].append(ratings[sid])
                vr_query[ent["query_id"]][run] += int(ratings[sid] == 1)

    def pooled(ra: list[int], rb: list[int]) -> dict[str, float]:
        """Counts, shares, mean ratings and the pooled tests of two runs' ratings."""
        c = {x: {lvl: int(sum(1 for r in rs if r == lvl)) for lvl in RATING_LABELS} for x, rs in (("a", ra), ("b", rb))}
        vra, vrb = c["a"][1], c["b"][1]
        if vrb > 0:
            ratio = vra / vrb
        else:
            ratio = math.inf if vra > 0 else math.nan
        if ra and rb and len(set(ra) | set(rb)) > 1:
            mw = stats.mannwhitneyu(ra, rb, alternative="two-sided")
            mw_u, mw_p = float(mw.statistic), float(mw.pvalue)
        else:  # all ratings identical: no evidence of a difference
            mw_u, mw_p = (len(ra) * len(rb) / 2.0, 1.0) if ra and rb else (math.nan, math.nan)
        fe = stats.fisher_exact([[vra, len(ra) - vra], [vrb, len(rb) - vrb]], alternative="two-sided")
        return dict(
            counts_a=c["a"], counts_b=c["b"], vr_a=vra, vr_b=vrb,
            share_a=vra / len(ra) if ra else math.nan, share_b=vrb / len(rb) if rb else math.nan,
            mean_a=float(np.mean(ra)) if ra else math.nan, mean_b=float(np.mean(rb)) if rb else math.nan,
            ratio=float(ratio), mw_u=mw_u, mw_p=mw_p, fisher_or=float(fe.statistic), fisher_p=float(fe.pvalue),
        )  # fmt: skip

    (run_b,) = runs_of[b]
    each = {run: pooled(per_run[run], per_run[run_b]) for run in runs_of[a]}
    R = len(runs_of[a])

    def avg(field: str) -> float:
        return float(np.mean([each[run][field] for run in runs_of[a]]))

    first = each[runs_of[a][0]]
    counts = {
        a: {lvl: (first["counts_a"][lvl] if R == 1 else avg_count(each, runs_of[a], lvl)) for lvl in RATING_LABELS},
        b: first["counts_b"],
    }
    n = {a: len(per_run[runs_of[a][0]]), b: len(per_run[run_b])}
    vr = {a: first["vr_a"] if R == 1 else avg("vr_a"), b: first["vr_b"]}
    share = {a: first["share_a"] if R == 1 else avg("share_a"), b: first["share_b"]}
    mean = {a: first["mean_a"] if R == 1 else avg("mean_a"), b: first["mean_b"]}
    if vr[b] > 0:
        ratio = vr[a] / vr[b]
    else:
        ratio = math.inf if vr[a] > 0 else math.nan
    # per query: A's very-relevant count summed over its runs against R × B's, i.e. the mean over
    # training seeds scaled by R (a rank test is scale-free; integers keep ties exact)
    qa_sum = [sum(vr_query[q][run] for run in runs_of[a]) for q in query_ids]
    qb_scaled = [R * vr_query[q][run_b] for q in query_ids]
    w_stat, w_p, w_method, sign_p = paired_query_tests(qa_sum, qb_scaled)
    per_seed: list[dict[str, Any]] = []
    if R > 1:
        for run in runs_of[a]:
            e = each[run]
            _, ws_p, _, _ = paired_query_tests(
                [vr_query[q][run] for q in query_ids], [vr_query[q][run_b] for q in query_ids]
            )
            per_seed.append(
                dict(
                    training_seed=int(run.rpartition("@")[2]), very_relevant_a=e["vr_a"], share_very_relevant_a=e["share_a"],
                    mean_rating_a=e["mean_a"], ratio_very_relevant=e["ratio"], mannwhitney_p=e["mw_p"],
                    fisher_p=e["fisher_p"], wilcoxon_p=ws_p,
                )
            )  # fmt: skip

    def med(field: str) -> float:
        return first[field] if R == 1 else float(np.median([each[run][field] for run in runs_of[a]]))

    return TallyResult(
        model_names=(a, b),
        counts=counts,
        n_ratings=n,
        very_relevant=vr,
        share_very_relevant=share,
        mean_rating=mean,
        ratio_very_relevant=float(ratio),
        mannwhitney_u=med("mw_u"),
        mannwhitney_p=med("mw_p"),
        fisher_odds_ratio=med("fisher_or"),
        fisher_p=med("fisher_p"),
        per_query=[
            {"query_id": q, "very_relevant_a": (x if R == 1 else x / R), "very_relevant_b": y // R}
            for q, x, y in zip(query_ids, qa_sum, qb_scaled)
        ],
        queries_a_more=int(sum(x > y for x, y in zip(qa_sum, qb_scaled))),
        queries_b_more=int(sum(x < y for x, y in zip(qa_sum, qb_scaled))),
        queries_equal=int(sum(x == y for x, y in zip(qa_sum, qb_scaled))),
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
        training_seeds=(
            {a: [s["training_seed"] for s in per_seed]}
            if per_seed
            else {str(m): int(s) for m, s in (key.get("training_seeds") or {}).items()}
        ),
        per_training_seed=per_seed,
    )


def avg_count(each: dict[str, dict], runs: list[str], level: int) -> float:
    """A model's count of ratings at ``level``, averaged over its runs (training seeds)."""
    return float(np.mean([each[run]["counts_a"][level] for run in runs]))


def _fmt(x: float, spec: str = ".3g") -> str:
    if isinstance(x, float) and math.isnan(x):
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "∞"
    return format(x, spec)


def _num(x: float) -> str:
    """A count, or a mean of counts over training seeds (one decimal)."""
    return str(x) if isinstance(x, int) else f"{x:.1f}"


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
    per_seed = result.per_training_seed
    if per_seed:
        seeds = [r["training_seed"] for r in per_seed]
        lines += [
            f"One sheet holds the suggestions of {a} of every training seed ({', '.join(map(str, seeds))}: "
            f"R = {len(seeds)} heads) and of {b}, each candidate shown once and its rating counted for every run "
            f"that proposed it. {a}'s numbers below are means over its R training seeds (n: ratings per seed); "
            "the per-query test compares, per query, its very-relevant count averaged over the seeds with "
            f"{b}'s, so queries are the units and the training draw is averaged, not picked.",
            "",
        ]
    elif result.training_seeds:
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
            f"| {m} | {result.n_ratings[m]} | {_num(c[1])} | {_num(c[2])} | {_num(c[3])} | {_num(c[4])} | "
            f"{_fmt(result.share_very_relevant[m], '.1%')} | {_fmt(result.mean_rating[m], '.2f')} |"
        )
    lines += [
        "",
        f"- Very-relevant ratio {a}/{b} (pooled): **{_fmt(result.ratio_very_relevant, '.2f')}×** "
        f"({_num(result.very_relevant[a])} vs {_num(result.very_relevant[b])}"
        + (
            f"; per seed {_fmt(min(r['ratio_very_relevant'] for r in per_seed), '.2f')}× to "
            f"{_fmt(max(r['ratio_very_relevant'] for r in per_seed), '.2f')}×"
            if per_seed
            else ""
        )
        + ").",
        f"- Per query (paired; very-relevant ratings of each model's suggestions for the query"
        f"{', summed over raters' if n_r > 1 else ''}{f'; {a}: mean over training seeds' if per_seed else ''}): "
        f"{a} more in {result.queries_a_more}, "
        f"{b} more in {result.queries_b_more}, equal in {result.queries_equal} of {result.n_queries} queries. "
        f"Wilcoxon signed-rank (two-sided, zero differences dropped, {result.wilcoxon_method}): "
        f"W = {_fmt(result.wilcoxon_statistic, '.1f')}, p = {_fmt(result.wilcoxon_p)}; "
        f"exact sign test p = {_fmt(result.sign_test_p)}.",
        (
            f"- Pooled over suggestions, per training seed (median over the {len(per_seed)} seeds): Fisher's exact "
            f"test (very relevant vs not, two-sided) p = {_fmt(result.fisher_p)}; Mann–Whitney U (ratings, "
            f"two-sided) p = {_fmt(result.mannwhitney_p)}, below 0.05 for "
            f"{sum(r['mannwhitney_p'] < 0.05 for r in per_seed)} of {len(per_seed)} seeds. These treat suggestions "
            "as independent, which they are not quite: the per-query test is the one that respects the design."
            if per_seed
            else f"- Pooled over suggestions: Fisher's exact test (very relevant vs not, two-sided): odds ratio "
            f"{_fmt(result.fisher_odds_ratio)}, p = {_fmt(result.fisher_p)}; "
            f"Mann–Whitney U (ratings, two-sided): U = {_fmt(result.mannwhitney_u, '.1f')}, "
            f"p = {_fmt(result.mannwhitney_p)}. These treat suggestions as independent, which they are "
            "not quite (suggestions of one query are related; shared suggestions appear in both "
            "samples): the per-query test is the one that respects the design."
        ),
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
        lines.append(f"| {row['query_id']} | {_num(row['very_relevant_a'])} | {row['very_relevant_b']} |")
    lines += ["", "</details>", ""]
    if per_seed:
        lines += [
            f"<details><summary>Per training seed ({a} vs {b})</summary>",
            "",
            f"| training seed | very relevant ({a}) | ratio | mean rating ({a}) | Wilcoxon p (per query) | Mann–Whitney p |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for r in per_seed:
            lines.append(
                f"| {r['training_seed']} | {r['very_relevant_a']} | {_fmt(r['ratio_very_relevant'], '.2f')}× | "
                f"{_fmt(r['mean_rating_a'], '.2f')} | {_fmt(r['wilcoxon_p'])} | {_fmt(r['mannwhitney_p'])} |"
            )
        lines += ["", "</details>", ""]
    return "\n".join(lines)
