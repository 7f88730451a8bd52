"""The paper's case study (Section 3.2) as library code: the ``case_study`` / ``human_study``
config sections with their defaults (:mod:`.case_config`), the case-study items (training + evaluation), the
evaluated base representation and the statistics of Table 2. The steps that read and write
artifacts are in :mod:`backretrieval.steps.case_study` and :mod:`backretrieval.steps.human_study`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.prepared import load_items
from ..errors import InputError
from ..metrics import normalize
from .case_config import HEAD_LABEL, HEADS, TRAIN_ITEMS, case_cfg, directions, human_cfg, models

__all__ = ["HEADS", "HEAD_LABEL", "case_cfg", "case_items", "directions", "human_cfg", "models", "table2"]


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


def _concat_repr(title: np.ndarray, body: np.ndarray) -> np.ndarray:
    return np.hstack([normalize(title.astype(np.float32)), normalize(body.astype(np.float32))]).astype(np.float32)


# -------------------------------------------------------------------------------------------
# Table 2 statistics


def _label(m: str, chosen: str) -> str:
    if m in HEAD_LABEL:
        return f"{HEAD_LABEL[m]} ({chosen})"
    return m


def table2(df: pd.DataFrame, hits: dict[str, np.ndarray], cs: dict, chosen: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per model: BkR×1000 averaged over pairs with a bootstrap CI over pairs; best vs rest."""
    from .. import stats  # SciPy: only the report step needs it, not every case-study job

    b = cs.get("bootstrap", {})
    B, seed = int(b.get("B", 1000)), int(b.get("seed", 0))
    per_pair = df.groupby(["model", "direction"])["bkr_recall"].mean().reset_index()
    rows = []
    for m, g in per_pair.groupby("model"):
        vals = g["bkr_recall"].to_numpy() * 1000
        ci = stats.bootstrap_ci(vals, B=B, seed=seed)
        rows.append(
            dict(
                model=m,
                label=_label(m, chosen),
                bkr_x1000=float(vals.mean()),
                ci_low=ci.low,
                ci_high=ci.high,
                worst_pair=g.loc[g["bkr_recall"].idxmin(), "direction"],
                n_pairs=len(g),
            )
        )
    t = pd.DataFrame(rows).sort_values("bkr_x1000", ascending=False).reset_index(drop=True)
    best = t.loc[0, "model"]
    keys = sorted({k.split("/", 1)[1] for k in hits})
    pooled = {m: np.concatenate([hits[f"{m}/{k}"] for k in keys]) for m in t["model"]}
    sig = []
    for m in t["model"][1:]:
        mc = stats.mcnemar_exact(pooled[best], pooled[m])
        bs = stats.paired_bootstrap_diff(pooled[best], pooled[m], B=B, seed=seed)
        per_pair_p = []
        for d in directions(cs):
            a = np.concatenate([hits[f"{best}/{d}/{s}"] for s in cs["seeds"]])
            c = np.concatenate([hits[f"{m}/{d}/{s}"] for s in cs["seeds"]])
            per_pair_p.append(stats.mcnemar_exact(a, c).pvalue)
        adj = stats.adjust_pvalues(np.array(per_pair_p), method="bonferroni")
        sig.append(
            dict(
                best=best,
                other=m,
                n_queries=len(pooled[m]),
                diff_x1000=bs.diff * 1000,
                diff_ci_low=bs.low * 1000,
                diff_ci_high=bs.high * 1000,
                mcnemar_p=mc.pvalue,
                bootstrap_p=bs.pvalue,
                pairs_best_better_p05_bonf=int(np.sum(adj < 0.05)),
                n_pairs=len(per_pair_p),
            )
        )
    sig_df = pd.DataFrame(sig)
    if len(sig_df):
        sig_df["mcnemar_p_bonferroni"] = stats.adjust_pvalues(sig_df["mcnemar_p"].to_numpy(), method="bonferroni")
    return t, sig_df
