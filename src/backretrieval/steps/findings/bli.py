"""Analysis ``bli``: bilingual lexicon induction of the word-vector family (held-out FreeDict
dictionaries; nearest neighbour and CSLS)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...findings.document import RunInfo, markdown_table
from .artifacts import RunArtifacts
from .step import Plugin, Result, synthetic_note

log = logging.getLogger("backretrieval")


def run(art: RunArtifacts, s: Mapping[str, Any]) -> Result:
    """bli.{csv,md,json}, bli_test_dictionary.csv + figures/bli.* . ``specs``: the word-vector
    encoders' params entries (``type: wordvec``); their vectors, seed dictionaries and maps come
    from the wordvec cache (trained there by the embedding step, else trained now, deterministically)."""
    from ...encoders.dictionaries import load_freedict_pairs
    from ...encoders.wordvec import build_wordvec_encoder, normalize_embeddings
    from ...findings import bli as B

    specs: dict[str, dict] = s["specs"]
    test_size, min_count, seed, csls_k = s["test_size"], s["min_count"], s["seed"], s["csls_k"]
    info = art.info()
    settings: dict[str, Any] = {
        "test_size": test_size,
        "min_count": min_count,
        "seed": seed,
        "csls_k": csls_k,
        "retrievals": list(B.RETRIEVALS),
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
        test = B.held_out_dictionary(
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
            for retrieval in B.RETRIEVALS:
                r = B.evaluate_bli(S, T, queries, gold, retrieval=retrieval, csls_k=csls_k)
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
    title = f"{info.dataset}: BLI of the word-vector family (mean over languages)"
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
        figures={"bli": lambda p: B.plot_bli(frame, p, title)},
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


ANALYSIS = Plugin("bli", run)
