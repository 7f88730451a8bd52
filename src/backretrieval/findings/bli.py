"""Analysis ``bli`` (section 6a): bilingual lexicon induction (BLI) for the word-vector family, as Glavaš et al.
(2019, "How to (properly) evaluate cross-lingual word embeddings") report it: P@1 and MAP of
retrieving a source word's translations among all target words, with nearest-neighbour and
CSLS retrieval (Conneau et al. 2018, k = 10), on a held-out dictionary that shares no word
with any seed dictionary the maps were trained on.

* **Test dictionary** (:func:`held_out_dictionary`): FreeDict pairs with both words in the
  vocabularies, minus every pair whose source or target word occurs in a seed dictionary; of
  the source words with corpus count >= ``min_count``, a seeded random ``size`` are kept, each
  with all its remaining translations as gold set.
* **Ranking**: candidates in the order (score descending, index ascending) — ties go to the
  lower index, as everywhere in :mod:`backretrieval.metrics`. The rank of a gold word is its
  position in that order.
* **P@1**: the first candidate is a gold translation. **MAP**: mean over queries of the average
  precision ``(1/|G|) Σ_i i / rank_(i)`` over the gold ranks in increasing order; with one gold
  word per query it is the MRR Glavaš et al. report as MAP.
* **CSLS** (Conneau et al. 2018, eq. 6): ``CSLS(x, y) = 2 cos(x, y) − r_T(x) − r_S(y)``,
  ``r_T(x)`` the mean cosine of mapped source word x to its k nearest target words, ``r_S(y)``
  the mean cosine of target word y to its k nearest mapped source words (whole vocabularies).
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .analysis import Analysis, Question, Setting
from .answers import synthetic_note
from .result import Result

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation.run_artifacts import RunArtifacts, RunInfo

log = logging.getLogger("backretrieval")

RETRIEVALS = ("nn", "csls")


def _specs(text: str) -> dict[str, dict]:
    """The value of ``--specs``: a JSON object {encoder: its params entry}."""
    try:
        specs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc})") from exc
    if not isinstance(specs, dict) or not all(isinstance(v, dict) for v in specs.values()):
        raise argparse.ArgumentTypeError("expected a JSON object {encoder: its params entry as an object}")
    return specs


class Bli(Analysis):
    """bli.{csv,md,json}, bli_test_dictionary.csv + figures/bli.* . ``specs``: the word-vector
    encoders' params entries (``type: wordvec``); their vectors, seed dictionaries and maps come
    from the wordvec cache (trained there by the embedding step, else trained now,
    deterministically). A configuration without word-vector encoders gets a record that says
    so, and no other file. Defaults: a 2,000-pair held-out dictionary."""

    name = "bli"
    question = Question(
        6,
        "Bilingual lexicon induction (word-vector family)",
        "How do the word-vector models rank on BLI (P@1, MAP; nearest neighbour and CSLS)?",
        order=1,
    )
    inputs = ("wordvec",)
    settings = (
        Setting("test_size", 2000, "held-out dictionary pairs", type=int),
        Setting("min_count", 5, "minimum word count of a dictionary pair", type=int),
        Setting("seed", 0, "random seed (held-out dictionary split)", type=int),
        Setting("csls_k", 10, "neighbourhood size of CSLS", type=int),
        Setting(
            "specs",
            {},
            "the word-vector encoders' params entries, a JSON object {encoder: entry} (a config's: its type wordvec encoders)",
            type=_specs,
            metavar="JSON",
            config=False,
        ),
    )
    files = ("bli.md", "bli.csv", "bli_test_dictionary.csv")
    figures = ("bli",)

    @classmethod
    def configure(cls, cfg: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        wordvec = {e: spec for e, spec in sorted(cfg["encoders"].items()) if spec.get("type") == "wordvec"}
        return {**cls.defaults(), "specs": wordvec, **given}

    @classmethod
    def outputs(cls, settings: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return (cls.files, cls.figures) if settings["specs"] else ((), ())

    def run(self, art: RunArtifacts, s: Mapping[str, Any]) -> Result:
        import pandas as pd

        from ..encoders.dictionaries import load_freedict_pairs
        from ..encoders.wordvec import build_wordvec_encoder, normalize_embeddings
        from .markdown import markdown_table

        specs: dict[str, dict] = s["specs"]
        test_size, min_count, seed, csls_k = s["test_size"], s["min_count"], s["seed"], s["csls_k"]
        info = art.info()
        settings: dict[str, Any] = {
            "test_size": test_size,
            "min_count": min_count,
            "seed": seed,
            "csls_k": csls_k,
            "retrievals": list(RETRIEVALS),
            "encoders": sorted(specs),
        }
        if len(specs) == 0:
            return Result(
                run=info,
                settings=settings,
                numbers={},
                status="not_applicable",
                answer="This configuration has no word-vector (type: wordvec) encoders, so there is nothing to induce a lexicon from.",
            )
        encs = {e: build_wordvec_encoder(e, spec) for e, spec in sorted(specs.items())}
        hubs = {enc.spec.hub for enc in encs.values()}
        if len(hubs) != 1:
            raise InputError(f"BLI: the word-vector encoders use different hub languages {sorted(hubs)}")
        hub = hubs.pop()
        langs = sorted({lang for enc in encs.values() for lang in enc.spec.languages if lang != hub})
        rows = []
        test_sizes = {}
        test_rows = []
        for lang in langs:
            members = {e: enc for e, enc in encs.items() if lang in enc.spec.languages}
            ex_src, ex_tgt = set(), set()
            vocab_src: set[str] | None = None
            vocab_tgt: set[str] | None = None
            for enc in members.values():
                sd = enc.seed_dictionary(lang)
                ex_tgt |= {h for h, _ in sd["pairs"]}
                ex_src |= {w for _, w in sd["pairs"]}
                vs, vt = set(enc.mono(lang).words), set(enc.mono(hub).words)
                vocab_src = vs if vocab_src is None else vocab_src & vs
                vocab_tgt = vt if vocab_tgt is None else vocab_tgt & vt
            first = next(iter(members.values()))
            assert vocab_src is not None and vocab_tgt is not None  # members is not empty
            pairs = load_freedict_pairs(hub, lang, Path(first.spec.dict_dir), vocab=(vocab_tgt, vocab_src))
            counts = first.mono(lang).count_map()
            test = held_out_dictionary(
                ((w, h) for h, w in pairs), ex_src, ex_tgt, counts, vocab_tgt, test_size, min_count, seed
            )
            test_sizes[lang] = len(test)
            test_rows += [{"lang": lang, "word": w, "gold": " ".join(g)} for w, g in sorted(test.items())]
            if not test:
                log.warning("BLI %s-%s: no held-out dictionary pairs left", lang, hub)
                continue
            for e, enc in members.items():
                src_mv, hub_mv = enc.mono(lang), enc.mono(hub)
                S = normalize_embeddings(src_mv.vectors).astype(np.float64) @ enc.mapping(lang)["W"]
                T = normalize_embeddings(hub_mv.vectors).astype(np.float64) @ enc.mapping(hub)["W"]
                si, ti = src_mv.index, hub_mv.index
                words = sorted(test)
                queries = [si[w] for w in words]
                gold = [[ti[t] for t in test[w]] for w in words]
                sd = enc.seed_dictionary(lang)
                for retrieval in RETRIEVALS:
                    r = evaluate_bli(S, T, queries, gold, retrieval=retrieval, csls_k=csls_k)
                    rows.append(
                        {
                            "encoder": e,
                            "method": enc.spec.method,
                            "dict_size": enc.spec.dict_size,
                            "seed_pairs": sd["size"],
                            "lang": lang,
                            "direction": f"{lang}-{hub}",
                            "retrieval": retrieval,
                            "p_at_1": r.p_at_1,
                            "map": r.map,
                            "n_test": r.n_queries,
                            "n_candidates": r.n_candidates,
                        }
                    )
        frame = pd.DataFrame(rows)
        md_rows = frame.pivot_table(
            index=["method", "dict_size", "lang"], columns="retrieval", values=["p_at_1", "map"]
        ).reset_index()
        md_rows.columns = [
            " ".join(c for c in col if c).strip() if isinstance(col, tuple) else col for col in md_rows.columns
        ]
        md = (
            f"## BLI — {info.label()}\n\nHeld-out FreeDict test dictionaries (no word of any seed dictionary), "
            f"up to {test_size} source words with corpus count ≥ {min_count} per language ({', '.join(f'{k}: {v}' for k, v in test_sizes.items())}); "
            f"queries in the source language, candidates: the whole {hub} vocabulary; CSLS k={csls_k}.\n\n"
            + markdown_table(md_rows, 3)
        )
        settings["test_dictionary_sizes"] = test_sizes
        numbers = bli_numbers(frame)
        title = figure_title(info)
        return Result(
            run=info,
            settings=settings,
            numbers=numbers,
            answer=bli_answer(numbers, info, test_sizes),
            files={
                "bli.md": md,
                "bli.csv": frame,
                "bli_test_dictionary.csv": pd.DataFrame(test_rows, columns=["lang", "word", "gold"]),
            },
            figures={"bli": lambda p: plot_bli(frame, p, title)},
        )


def bli_numbers(frame: pd.DataFrame) -> dict[str, Any]:
    g = frame.groupby(["encoder", "retrieval"])[["p_at_1", "map"]].mean().reset_index()
    per = {f"{r.encoder}/{r.retrieval}": {"p_at_1": r.p_at_1, "map": r.map} for r in g.itertuples()}
    by_method = frame.groupby(["method", "retrieval"])["map"].mean()
    by_size = frame.groupby(["dict_size", "retrieval"])["map"].mean()
    nn = g[g["retrieval"] == "nn"].set_index("encoder")["map"]
    cs = g[g["retrieval"] == "csls"].set_index("encoder")["map"]
    return {
        "per_encoder": per,
        "by_method": {f"{m}/{r}": float(v) for (m, r), v in by_method.items()},
        "by_dict_size": {f"{d}/{r}": float(v) for (d, r), v in by_size.items()},
        "best_nn": str(nn.idxmax()),
        "best_nn_map": float(nn.max()),
        "csls_gain_mean": float((cs - nn).mean()),
        "csls_helps": int((cs > nn).sum()),
        "n_encoders": int(nn.size),
    }


def bli_answer(numbers: dict[str, Any], info: RunInfo, test_sizes: dict[str, int]) -> str:
    bm = numbers["by_method"]
    methods = sorted({k.split("/")[0] for k in bm})
    sizes = sorted({int(k.split("/")[0]) for k in numbers["by_dict_size"]})
    parts = [
        f"On held-out FreeDict pairs ({', '.join(f'{k}: {v} words' for k, v in test_sizes.items())}), mean MAP over "
        "languages with nearest-neighbour retrieval: "
        + ", ".join(f"{m} {bm[f'{m}/nn']:.3f}" for m in methods)
        + "; by seed dictionary size: "
        + ", ".join(f"{s} {numbers['by_dict_size'][f'{s}/nn']:.3f}" for s in sizes)
        + "."
    ]
    parts.append(
        f"The best model is {numbers['best_nn']} (MAP {numbers['best_nn_map']:.3f}). CSLS changes MAP by "
        f"{numbers['csls_gain_mean']:+.3f} on average and helps {numbers['csls_helps']} of {numbers['n_encoders']} models."
    )
    return " ".join(parts) + synthetic_note(info)


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


def held_out_dictionary(
    pairs: Iterable[tuple[str, str]],
    exclude_src: Iterable[str],
    exclude_tgt: Iterable[str],
    src_counts: Mapping[str, int],
    tgt_vocab: Iterable[str],
    size: int,
    min_count: int = 1,
    seed: int = 0,
) -> dict[str, tuple[str, ...]]:
    """source word → its gold target words, for at most ``size`` source words (module doc).
    No source word is in ``exclude_src`` and no gold word in ``exclude_tgt`` (the seed
    dictionaries' words); deterministic for a seed."""
    if size < 1:
        raise InputError(f"test dictionary size must be >= 1, got {size}")
    ex_s, ex_t, tv = set(exclude_src), set(exclude_tgt), set(tgt_vocab)
    gold: dict[str, set[str]] = {}
    for s, t in pairs:
        if s in ex_s or t in ex_t or t not in tv or src_counts.get(s, 0) < min_count:
            continue
        gold.setdefault(s, set()).add(t)
    words = sorted(gold)
    rng = np.random.default_rng(seed)
    keep = sorted(words[i] for i in rng.permutation(len(words))[:size]) if len(words) > size else words
    return {w: tuple(sorted(gold[w])) for w in keep}


def neighbourhood_mean(a: np.ndarray, b: np.ndarray, k: int, chunk: int = 2048) -> np.ndarray:
    """For every row of ``a``: the mean cosine to its ``k`` nearest rows of ``b`` (unit rows)."""
    k = min(k, b.shape[0])
    out = np.empty(a.shape[0])
    for s in range(0, a.shape[0], chunk):
        sc = a[s : s + chunk] @ b.T
        top = np.partition(sc, sc.shape[1] - k, axis=1)[:, sc.shape[1] - k :]
        out[s : s + chunk] = top.mean(axis=1)
    return out


def gold_ranks(scores: np.ndarray, gold: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """Per query row, the sorted ranks of its gold columns in the order (score desc, index asc)."""
    out = []
    for i, g in enumerate(gold):
        row = scores[i]
        g = np.asarray(sorted(set(g)), dtype=np.int64)
        gs = row[g]
        greater = (row[None, :] > gs[:, None]).sum(axis=1)
        cols = np.arange(row.size)
        tied_before = ((row[None, :] == gs[:, None]) & (cols[None, :] < g[:, None])).sum(axis=1)
        out.append(np.sort(1 + greater + tied_before))
    return out


def average_precision(ranks: np.ndarray) -> float:
    """``(1/|G|) Σ_i i / rank_(i)`` of sorted gold ranks."""
    r = np.sort(np.asarray(ranks, dtype=np.float64))
    return float(np.mean(np.arange(1, r.size + 1) / r))


@dataclass(frozen=True)
class BliResult:
    retrieval: str
    p_at_1: float
    map: float
    n_queries: int
    n_candidates: int


def evaluate_bli(
    src_vectors: np.ndarray,
    tgt_vectors: np.ndarray,
    queries: Sequence[int],
    gold: Sequence[Sequence[int]],
    retrieval: str = "nn",
    csls_k: int = 10,
    chunk: int = 1024,
) -> BliResult:
    """P@1 and MAP of retrieving ``gold[i]`` (rows of ``tgt_vectors``) for source row
    ``queries[i]`` among all target rows. Vectors are the aligned (mapped) spaces; rows are
    L2-normalised here. ``retrieval``: ``nn`` (cosine) or ``csls`` (CSLS over the whole
    vocabularies, ``csls_k`` neighbours)."""
    if retrieval not in RETRIEVALS:
        raise InputError(f"retrieval: expected one of {RETRIEVALS}, got {retrieval!r}")
    if len(queries) != len(gold) or not len(queries):
        raise InputError(f"BLI: {len(queries)} queries but {len(gold)} gold sets (need the same, > 0)")
    S, T = _unit(src_vectors), _unit(tgt_vectors)
    if S.shape[1] != T.shape[1]:
        raise InputError(f"BLI: source and target dimensions differ ({S.shape[1]} vs {T.shape[1]})")
    q = np.asarray(queries, dtype=np.int64)
    r_s = neighbourhood_mean(T, S, csls_k) if retrieval == "csls" else None
    p1, aps = [], []
    for s in range(0, q.size, chunk):
        qv = S[q[s : s + chunk]]
        sc = qv @ T.T
        if retrieval == "csls":
            r_t = neighbourhood_mean(qv, T, csls_k)
            sc = 2 * sc - r_t[:, None] - r_s[None, :]
        for r in gold_ranks(sc, gold[s : s + chunk]):
            p1.append(float(r[0] == 1))
            aps.append(average_precision(r))
    return BliResult(
        retrieval=retrieval,
        p_at_1=float(np.mean(p1)),
        map=float(np.mean(aps)),
        n_queries=int(q.size),
        n_candidates=int(T.shape[0]),
    )


def figure_title(info) -> str:
    """The title of ``figures/bli`` (a :class:`~.document.RunInfo`), SYNTHETIC data marked."""
    return f"{info.figure_label}: BLI of the word-vector family (mean over languages)"


def plot_bli(frame, out_base, title: str) -> list:
    """MAP and P@1 by dictionary size, one line per method, NN and CSLS panels (mean over
    languages). PNG/SVG/PDF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figures import COLORS, finish_figure, legend_outside

    mean = frame.groupby(["method", "dict_size", "retrieval"], sort=True)[["p_at_1", "map"]].mean().reset_index()
    methods = sorted(mean["method"].unique())
    retrievals = sorted(mean["retrieval"].unique(), key=lambda r: (r != "nn", r))
    # a method by its colour, a retrieval by its line style and marker: every line told apart
    color = {m: COLORS[i % len(COLORS)] for i, m in enumerate(methods)}
    line = {r: (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))[i % 4] for i, r in enumerate(retrievals)}
    names = {"nn": "nearest neighbour", "csls": "CSLS"}
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.4), sharey=True)
    for ax, metric in zip(axes, ("map", "p_at_1")):
        for m in methods:
            for r in retrievals:
                g = mean[(mean["method"] == m) & (mean["retrieval"] == r)].sort_values("dict_size")
                if len(g):
                    ls, marker = line[r]
                    ax.plot(
                        g["dict_size"],
                        g[metric],
                        color=color[m],
                        ls=ls,
                        marker=marker,
                        ms=4,
                        label=f"{m}, {names.get(r, r)}",
                    )
        label = {"map": "MAP", "p_at_1": "P@1"}[metric]
        ax.set_title(f"{label} by seed dictionary size", fontsize=9)
        ax.set_xlabel("seed dictionary size (pairs requested)")
        ax.set_ylabel(label)
    legend_outside(axes[-1], where="right", title="method, retrieval", title_fontsize=7)
    return finish_figure(fig, out_base, title)
