"""The paper's case study (Section 3.2) as library code: the ``case_study`` / ``human_study``
config sections with their defaults (:mod:`.case_config`), the case-study items (training + evaluation), the
evaluated base representation and the statistics of Table 2. The steps that read and write
artifacts are in :mod:`backretrieval.steps.case_study` and :mod:`backretrieval.steps.human_study`."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._util.vectors import normalize
from ..data.prepared import load_items
from ..errors import InputError
from ..evaluation.protocol import Protocol
from .case_config import (
    HEAD_LABEL,
    HEADS,
    TRAIN_ITEMS,
    case_cfg,
    directions,
    human_cfg,
    models,
    parse_run,
    run_id,
    runs,
)

if TYPE_CHECKING:
    from ..data.sampling import Sample

__all__ = [
    "HEADS",
    "HEAD_LABEL",
    "case_cfg",
    "case_items",
    "case_protocol",
    "directions",
    "human_cfg",
    "models",
    "parse_run",
    "run_id",
    "runs",
    "seed_pair_bootstrap",
    "seed_comparison",
    "best_vs_other_items",
    "eval_samples",
    "query_images",
    "table2",
    "training_spread",
]


def _item_key(seed: int, item_id: object) -> str:
    return hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()


def _cap_per_language(train: pd.DataFrame, cap: int, seed: int) -> pd.DataFrame:
    """At most ``cap`` training items per language, a seeded random subset of each language.

    Every item gets the key ``sha256(f"{seed}:{item_id}")``; each language keeps its ``cap``
    items with the smallest keys (ties: the smaller id). A language's subset depends only on
    its own ids and the seed; on a parallel corpus (the same item_id in several languages)
    every language keeps the same ids, on a non-parallel one each language its own share.
    """
    key = train["item_id"].map(lambda i: _item_key(seed, i))
    ranked = train.assign(_key=key).sort_values(["lang", "_key", "item_id"], kind="stable")
    return ranked.groupby("lang", sort=False).head(int(cap)).drop(columns="_key")


def _disjoint_by_language(train: pd.DataFrame, languages: list[str], seed: int) -> pd.DataFrame:
    """Each item id kept in one language only, so no two languages train on the same item.

    The distinct item ids are taken in the order of their key ``sha256(f"{seed}:{item_id}")``
    (ties: the smaller id); each goes to the language, among those that have a text of it, that
    has been given the fewest items so far (ties: the earlier language in ``languages``). On a
    parallel corpus the items are dealt round-robin, so each language gets about 1/L of them;
    on a non-parallel corpus (every id in one language) nothing changes.
    """
    order = {lang: i for i, lang in enumerate(languages)}
    have: dict[object, list[str]] = {}
    for item_id, lang in zip(train["item_id"], train["lang"]):
        have.setdefault(item_id, []).append(lang)
    ids = sorted(have, key=lambda i: (_item_key(seed, i), str(i)))
    given = dict.fromkeys(languages, 0)
    owner = {}
    for item_id in ids:
        lang = min(have[item_id], key=lambda lg: (given[lg], order[lg]))
        owner[item_id] = lang
        given[lang] += 1
    keep = [owner[i] == lang for i, lang in zip(train["item_id"], train["lang"])]
    return train[np.array(keep, dtype=bool)]


# -------------------------------------------------------------------------------------------
# item selection and the evaluated representation


def case_items(dataset: Path, cs: dict) -> pd.DataFrame:
    """The case-study items: training items (capped per language) + evaluation items.

    Training items come from ``case_study.train_corpus`` (a prepared, possibly text-only
    dataset) when set, else from the main dataset's ``train_splits``. With ``train_items:
    disjoint`` (default) each item id trains in one language only
    (:func:`_disjoint_by_language`); ``shared`` keeps all its languages. ``max_train_items``
    then caps each language separately (:func:`_cap_per_language`); both use the seed
    ``train_items_seed``. Every case-study language needs training and evaluation items.
    """
    items = load_items(dataset)
    items = items[items["lang"].isin(cs["languages"])]
    if cs.get("train_corpus"):
        source = Path(cs["train_corpus"])
        tc = load_items(source)
        tc = tc[tc["lang"].isin(cs["languages"])]
        train = tc[tc["split"].isin(cs["train_splits"])]
        clash = set(train["item_id"]) & set(items["item_id"])
        if clash:
            raise InputError(f"case_study.train_corpus shares item ids with the dataset (e.g. {sorted(clash)[:2]})")
    else:
        source = Path(dataset)
        train = items[items["split"].isin(cs["train_splits"])]
    mode = cs.get("train_items", TRAIN_ITEMS[0])
    if mode not in TRAIN_ITEMS:
        raise InputError(f"case_study.train_items: expected one of {list(TRAIN_ITEMS)}, got {mode!r}")
    seed = int(cs.get("train_items_seed", 0))
    if mode == "disjoint":
        train = _disjoint_by_language(train, list(cs["languages"]), seed)
    cap = cs.get("max_train_items")
    if cap:
        train = _cap_per_language(train, int(cap), seed)
    ev = items[items["split"].isin(cs["eval_splits"])]
    for name, part, where, splits in (
        ("training", train, source, cs["train_splits"]),
        ("evaluation", ev, Path(dataset), cs["eval_splits"]),
    ):
        missing = [lang for lang in cs["languages"] if not (part["lang"] == lang).any()]
        if missing:
            raise InputError(f"{where}: no {name} items for case_study.languages {missing} in splits {list(splits)}")
    return pd.concat([train, ev]).sort_values(["lang", "item_id"], kind="stable").reset_index(drop=True)


def case_protocol(cs: dict) -> Protocol:
    """The case study's evaluation protocol, made of its section (``sample_size``, ``seeds``,
    ``recall_k``) and so checked as every evaluation's (InputError naming the flag). No CORR (Table
    2 is BkR only); its text is the title and body embeddings side by side, not one ``text_field``."""
    return Protocol(sample_size=cs["sample_size"], seeds=cs["seeds"], recall_k=cs["recall_k"], with_corr=False)


def eval_samples(
    dataset: Path, cs: dict, protocol: Protocol | None = None
) -> tuple[dict[str, dict], dict[tuple[str, int], Sample]]:
    """The case study's evaluation samples, as ``case-evaluate`` draws them: (image id of every
    evaluation item per language, ``{(direction, sample seed): Sample}``) from
    :func:`~backretrieval.data.sampling.draw_sample` on the evaluation split of :func:`case_items`,
    N and the seeds those of ``protocol`` (default: :func:`case_protocol` of ``cs``)."""
    from ..data.prepared import read_meta
    from ..data.sampling import draw_sample

    prot = protocol if protocol is not None else case_protocol(cs)
    items = case_items(dataset, cs)
    meta = read_meta(dataset)
    ev = items[items["split"].isin(cs["eval_splits"])]
    image_of = {lang: dict(zip(g["item_id"], g["image_id"])) for lang, g in ev.groupby("lang")}
    samples = {}
    for d in directions(cs):
        src, tgt = d.split("-")
        for seed in prot.seeds:
            samples[(d, seed)] = draw_sample(ev, src, tgt, prot.sample_size, seed, parallel=meta.parallel)
    return image_of, samples


def query_images(dataset: Path, cs: dict, protocol: Protocol | None = None) -> dict[tuple[str, int], list[str]]:
    """``{(direction, sample seed): the image id of each query}``, in the order of the hits that
    ``case-evaluate`` records (:func:`eval_samples`): the item keys of Table 2's item test."""
    image_of, samples = eval_samples(dataset, cs, protocol)
    return {(d, seed): [str(image_of[d.split("-")[0]][i]) for i in s.queries] for (d, seed), s in samples.items()}


def _concat_repr(title: np.ndarray, body: np.ndarray) -> np.ndarray:
    return np.hstack([normalize(title.astype(np.float32)), normalize(body.astype(np.float32))]).astype(np.float32)


# -------------------------------------------------------------------------------------------
# Table 2 statistics


def _label(m: str, chosen: str) -> str:
    if m in HEAD_LABEL:
        return f"{HEAD_LABEL[m]} ({chosen})"
    return m


def _seed_pair_matrix(df: pd.DataFrame, model: str, pairs: list[str]) -> tuple[list[int | None], np.ndarray]:
    """(training seeds, V): ``V[r, p]`` = BkR of ``model``'s run with training seed ``r`` on
    pair ``p``, averaged over the sample seeds. A base encoder (never trained) has one row and
    training seed None."""
    g = df[df["model"] == model]
    ts = g["training_seed"] if "training_seed" in g else pd.Series([pd.NA] * len(g), index=g.index)
    trained = ts.notna()
    if trained.any() and not trained.all():
        raise InputError(f"case study: model {model!r} has rows with and without a training seed")
    seeds: list[int | None] = sorted(int(x) for x in ts[trained].unique()) if trained.any() else [None]
    V = np.empty((len(seeds), len(pairs)))
    for r, s in enumerate(seeds):
        rows = g if s is None else g[ts == s]
        per_pair = rows.groupby("direction")["bkr_recall"].mean()
        lacking = [p for p in pairs if p not in per_pair.index]
        if lacking:
            raise InputError(f"case study: model {model!r} (training seed {s}) has no BkR for pairs {lacking[:3]}")
        V[r] = per_pair.loc[pairs].to_numpy()
    return seeds, V


def seed_pair_bootstrap(
    V: np.ndarray, B: int, seed: int, W: np.ndarray | None = None, resample: str = "both"
) -> np.ndarray:
    """Bootstrap replicates of ``mean(V)`` (``V``: training seeds × pairs), or of
    ``mean(V) - mean(W)`` when ``W`` is given (the same pairs, its own training seeds).

    Each replicate draws the training seeds (rows) with replacement, independently for ``V``
    and ``W`` (their runs are separate trainings), and the language pairs (columns) with
    replacement, the same pairs for ``V`` and ``W`` (paired by pair); the statistic is the mean
    of the drawn cells, i.e. the mean over drawn seeds of the mean over drawn pairs. So the
    interval holds both the spread of a head over training runs and that over pairs.
    ``resample``: ``both`` (default), or ``seeds`` / ``pairs`` only (for checks).
    All draws from ``np.random.default_rng(seed)``."""
    if resample not in ("both", "seeds", "pairs"):
        raise InputError(f"resample: expected 'both', 'seeds' or 'pairs', got {resample!r}")
    rng = np.random.default_rng(seed)
    mats = [np.asarray(V, dtype=np.float64)] + ([] if W is None else [np.asarray(W, dtype=np.float64)])
    P = mats[0].shape[1]
    if any(M.shape[1] != P for M in mats):
        raise InputError("seed_pair_bootstrap: V and W must have the same pairs (columns)")

    def weights(n: int) -> np.ndarray:
        """B × n counts of how often each index is drawn (n draws with replacement)."""
        idx = rng.integers(0, n, size=(B, n))
        return np.apply_along_axis(np.bincount, 1, idx, minlength=n).astype(np.float64)

    wp = weights(P) if resample != "seeds" else np.ones((B, P))
    out = np.zeros(B)
    for sign, M in zip((1.0, -1.0), mats):
        R = M.shape[0]
        wr = weights(R) if resample != "pairs" else np.ones((B, R))
        out += sign * np.einsum("br,rp,bp->b", wr, M, wp) / (R * P)
    return out


def training_spread(df: pd.DataFrame, cs: dict) -> dict[str, dict]:
    """Per trained head: its BkR×1000 (mean over pairs) per training seed, in the order of
    ``training_seeds``, their sd (ddof 1; None for one seed) and the number of seeds, as
    ``case_study/metrics.json`` records them under ``training_spread``."""
    pairs = directions(cs)
    out = {}
    for head in HEADS:
        if head not in set(df["model"]):
            continue
        seeds, V = _seed_pair_matrix(df, head, pairs)
        per_seed = dict(zip(seeds, V.mean(axis=1) * 1000))
        vals = [float(per_seed[s]) for s in cs["training_seeds"] if s in per_seed]
        out[head] = {
            "training_seeds": [int(s) for s in cs["training_seeds"] if s in per_seed],
            "per_seed_bkr_x1000": [round(v, 3) for v in vals],
            "sd_bkr_x1000": round(float(np.std(vals, ddof=1)), 3) if len(vals) > 1 else None,
            "n_training_seeds": len(vals),
        }
    return out


#: the comparisons the paper makes (Section 3.2), as (a, b): TRIPLETXL vs TRIPLET, each head vs
#: its base encoder (``base``: the chosen one)
PAPER_COMPARISONS = (("tripletxl", "triplet"), ("triplet", "base"), ("tripletxl", "base"))


def decided(low: float, high: float, a: str, b: str) -> str:
    """The plain reading of a 95% interval of ``a − b``."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "not decided (no interval)"
    if low > 0:
        return f"{a} ahead"
    if high < 0:
        return f"{b} ahead"
    return "not decided"


def seed_comparison(a: np.ndarray, b: np.ndarray | None, level: float = 0.95) -> dict[str, float]:
    """The difference ``a − b`` of per-training-seed values (``a``: one head's mean over pairs
    per seed; ``b``: another head's, paired by seed, or None for a constant such as an untrained
    base encoder, already subtracted from ``a``): its mean, sd over seeds, and the Student t
    interval and one-sample t test over the R seeds (R − 1 degrees of freedom). One seed: no
    interval (NaN)."""
    from scipy import stats as st

    d = np.asarray(a, dtype=np.float64) - (0.0 if b is None else np.asarray(b, dtype=np.float64))
    r = len(d)
    mean = float(d.mean())
    if r < 2:
        return dict(diff=mean, sd=math.nan, low=math.nan, high=math.nan, p=math.nan, r=r)
    sd = float(d.std(ddof=1))
    half = float(st.t.ppf(0.5 + level / 2, r - 1)) * sd / math.sqrt(r)
    p = float(st.ttest_1samp(d, 0.0).pvalue) if sd > 0 else (1.0 if mean == 0 else 0.0)
    return dict(diff=mean, sd=sd, low=mean - half, high=mean + half, p=p, r=r)


def best_vs_other_items(
    hits: Mapping[str, np.ndarray],
    queries: Mapping[tuple[str, int], Sequence[str]],
    runs_a: Sequence[str],
    runs_b: Sequence[str],
    B: int = 1000,
    seed: int = 0,
    n_permutations: int = 9999,
) -> dict[str, Any]:
    """Model a − model b in BkR×1000 with the distinct query item as the unit.

    ``hits[f"{run}/{direction}/{sample seed}"]``: a run's per-query hits (``case-evaluate``'s
    ``bkr_hits.npz``); ``queries[(direction, sample seed)]``: each query's image id
    (:func:`query_images`); ``runs_a`` / ``runs_b``: each model's runs (a head: one per training
    seed; a base encoder: itself). Per query the outcome is the hit averaged over the model's
    runs (so the difference is that of Table 2's means); an image queried in several pairs and
    sample seeds is one unit: :func:`backretrieval.stats.item_paired_test` (sign flips of each
    image's summed difference; the item bootstrap's interval, NaN with ``note`` where none is
    honest). The training runs are taken as they are: the training's spread is what the paper's
    comparisons over training seeds answer."""
    from ..stats.items import item_paired_test

    va, vb, keys = [], [], []
    for (d, s), imgs in sorted(queries.items()):
        a = np.mean([np.asarray(hits[f"{r}/{d}/{s}"], dtype=np.float64) for r in runs_a], axis=0)
        b = np.mean([np.asarray(hits[f"{r}/{d}/{s}"], dtype=np.float64) for r in runs_b], axis=0)
        if a.shape != (len(imgs),) or b.shape != (len(imgs),):
            raise InputError(
                f"case study: {d} seed {s}: {a.size} and {b.size} hits for {len(imgs)} queries (hits and samples out of step?)"
            )
        va.append(a)
        vb.append(b)
        keys += list(imgs)
    r = item_paired_test(np.concatenate(va), np.concatenate(vb), keys, B=B, n_permutations=n_permutations, seed=seed)
    return dict(
        diff=r.diff * 1000,
        low=r.low * 1000,
        high=r.high * 1000,
        p=r.pvalue,
        n_items=r.n_items,
        n_queries=r.n_queries,
        note=r.note,
    )


def table2(
    df: pd.DataFrame,
    cs: dict,
    chosen: str,
    hits: Mapping[str, np.ndarray] | None = None,
    queries: Mapping[tuple[str, int], Sequence[str]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 2: per model BkR×1000 and its CI; the paper's comparisons and the best model against
    each other one.

    ``df``: case-evaluate rows (model, training_seed, direction, seed, bkr_recall), a head
    once per training seed, a base encoder once with an empty training seed.

    * ``bkr_x1000``: mean over training seeds of (mean over pairs of the BkR averaged over
      sample seeds) ×1000; ``sd_over_training_seeds``: sd (ddof 1) of the per-seed means
      (empty for a base encoder or a single seed); ``n_training_seeds``: trained runs (0 for a
      base encoder, which is not trained).
    * ``ci_low`` / ``ci_high``: percentile bootstrap (``case_study.bootstrap``) over training
      seeds × pairs (:func:`seed_pair_bootstrap`); for a model with one run (a base encoder,
      or a head with ``training_seeds: [s]``) the bootstrap over pairs.
    * the comparisons (second table), each ``a − b`` in BkR×1000 with a 95% interval and a
      plain ``decided``: the paper's (:data:`PAPER_COMPARISONS`) over the R training seeds
      (:func:`seed_comparison`: TRIPLETXL − TRIPLET paired by seed, a head − its untrained
      base), so they say whether the training reliably gives that difference on these
      evaluation samples; then, given ``hits`` and ``queries`` (``case-evaluate``'s per-query
      hits and :func:`query_images`), the best model against each other one with the distinct
      query image as the unit (:func:`best_vs_other_items`: ``n_items`` distinct images,
      ``n_queries`` queries; no interval where none is honest). Without them these rows are
      left out: a test over pooled queries would count an image drawn by several pairs and
      sample seeds as new evidence each time.
    """
    from .. import stats  # SciPy: only the report step needs it, not every case-study job

    b = cs.get("bootstrap", {})
    B, seed = int(b.get("B", 1000)), int(b.get("seed", 0))
    pairs = sorted(directions(cs))  # the order the bootstrap draws from (as with one run: groupby's)
    mats, seeds_of, rows = {}, {}, []
    for m in sorted(set(df["model"])):
        seeds, V = _seed_pair_matrix(df, m, pairs)
        mats[m], seeds_of[m] = V, seeds
        trained = seeds != [None]
        if V.shape[0] == 1:  # one run: the percentile bootstrap over pairs (as with one head)
            ci = stats.bootstrap_ci(V[0] * 1000, B=B, seed=seed)
            low, high = ci.low, ci.high
        else:
            low, high = np.quantile(seed_pair_bootstrap(V * 1000, B, seed), [0.025, 0.975])
        pair_means = V.mean(axis=0)
        rows.append(
            dict(
                model=m,
                label=_label(m, chosen),
                bkr_x1000=float(V.mean() * 1000),
                sd_over_training_seeds=float(np.std(V.mean(axis=1) * 1000, ddof=1)) if V.shape[0] > 1 else np.nan,
                n_training_seeds=len(seeds) if trained else 0,
                ci_low=float(low),
                ci_high=float(high),
                worst_pair=pairs[int(np.argmin(pair_means))],
                n_pairs=len(pairs),
            )
        )
    t = pd.DataFrame(rows).sort_values("bkr_x1000", ascending=False, kind="stable").reset_index(drop=True)
    best = t.loc[0, "model"]
    sig = []
    for a, other in PAPER_COMPARISONS:
        bm = chosen if other == "base" else other
        if a not in mats or bm not in mats:
            continue
        per_a = mats[a].mean(axis=1) * 1000
        if other == "base":
            c = seed_comparison(per_a - mats[bm].mean() * 1000, None)
        else:
            if seeds_of[a] != seeds_of[bm]:
                raise InputError(
                    f"case study: {a} and {bm} have different training seeds; they are compared paired by seed"
                )
            c = seed_comparison(per_a, mats[bm].mean(axis=1) * 1000)
        sig.append(
            dict(
                comparison="paper",
                a=a,
                b=bm,
                diff_x1000=c["diff"],
                ci_low=c["low"],
                ci_high=c["high"],
                interval=f"Student t over {c['r']} training seeds" + (" (paired)" if other != "base" else ""),
                p=c["p"],
                decided=decided(c["low"], c["high"], a, bm),
                n_training_seeds=c["r"],
            )
        )
    if hits is not None and queries is not None:
        runs_of = {m: [run_id(m, s) for s in seeds_of[m]] for m in mats}
        for m in t["model"][1:]:
            c = best_vs_other_items(hits, queries, runs_of[best], runs_of[m], B=B, seed=seed)
            sig.append(
                dict(
                    comparison="best vs other",
                    a=best,
                    b=m,
                    diff_x1000=c["diff"],
                    ci_low=c["low"],
                    ci_high=c["high"],
                    interval=f"items ({c['n_items']} distinct query images, {c['n_queries']} queries)",
                    p=c["p"],
                    decided=decided(c["low"], c["high"], best, m),
                    n_training_seeds=max(
                        int(mats[best].shape[0]) if best in HEADS else 0, int(mats[m].shape[0]) if m in HEADS else 0
                    ),
                    n_items=c["n_items"],
                    n_queries=c["n_queries"],
                    note=c["note"],
                )
            )
    return t, pd.DataFrame(sig)
