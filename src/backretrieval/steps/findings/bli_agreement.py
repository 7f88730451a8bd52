"""Findings steps: BLI of the word-vector family and the metric agreement matrix."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..._util import io
from ...errors import InputError
from ...findings.document import FindingsRecord, RunInfo, markdown_table
from ._common import RunArtifacts, _figure_outputs, _record, _synthetic_note, _write_tables

log = logging.getLogger("backretrieval")

# ============================================================================================
# 6. BLI for the word-vector family, and the agreement matrix


def bli_step(
    run: RunArtifacts,
    *,
    run_name: str,
    out_dir: Path,
    specs: dict[str, dict],
    test_size: int = 2000,
    min_count: int = 5,
    seed: int = 0,
    csls_k: int = 10,
) -> FindingsRecord:
    """Section 6a → bli.{csv,md,json} + figures/bli.* . ``specs``: the word-vector encoders'
    params entries (``type: wordvec``); their vectors, seed dictionaries and maps come from the
    wordvec cache (trained there by the embedding step, else trained now, deterministically)."""
    from ...encoders.dictionaries import load_freedict_pairs
    from ...encoders.wordvec import build_wordvec_encoder, normalize_embeddings
    from ...findings import bli as B

    out_dir = Path(out_dir)
    info = run.run_info(run_name, str(out_dir.parent))
    settings = {
        "test_size": test_size,
        "min_count": min_count,
        "seed": seed,
        "csls_k": csls_k,
        "retrievals": list(B.RETRIEVALS),
        "encoders": sorted(specs),
    }
    if len(specs) == 0:
        rec = FindingsRecord(
            analysis="bli",
            run=info,
            settings=settings,
            numbers={},
            status="not_applicable",
            answer="This configuration has no word-vector (type: wordvec) encoders, so there is nothing to induce a lexicon from.",
            verdict="",
            outputs=(),
        )
        _record(out_dir, rec)
        return rec
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
    outputs = _write_tables(out_dir, "bli", frame, md)
    io.write_csv(out_dir / "bli_test_dictionary.csv", pd.DataFrame(test_rows, columns=["lang", "word", "gold"]))
    outputs.append("bli_test_dictionary.csv")
    B.plot_bli(
        frame, out_dir / "figures" / "bli", f"{info.dataset}: BLI of the word-vector family (mean over languages)"
    )
    outputs += _figure_outputs("bli")
    settings["test_dictionary_sizes"] = test_sizes
    numbers = bli_numbers(frame)
    answer = bli_answer(numbers, info, test_sizes)
    rec = FindingsRecord(
        analysis="bli", run=info, settings=settings, numbers=numbers, answer=answer, verdict="", outputs=tuple(outputs)
    )
    _record(out_dir, rec)
    return rec


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
    return " ".join(parts) + _synthetic_note(info)


AGREEMENT_METRICS = {
    "XLR R@1": "xlr_r1",
    "XLR R@k": "xlr_rk",
    "XLR MRR": "xlr_mrr",
    "BkR": "bkr",
    "BkR MRR": "bkr_mrr",
    "CORR": "corr",
}


def agreement_step(
    run: RunArtifacts,
    *,
    run_name: str,
    out_dir: Path,
    points_file: Path,
    bli_file: Path | None,
    soft_m: int,
    B: int,
    boot_seed: int,
) -> FindingsRecord:
    """Section 6b → agreement.{csv,md,json} + figures/agreement_clustermap.* . Per-encoder values
    come from calibration_points.csv (XLR R@1/R@k/MRR, BkR, soft BkR, CORR), the metrics CSVs
    (BkR MRR) and bli.csv (MAP, nearest neighbour), each averaged over directions and seeds."""
    from ...findings.agreement import agreement_matrix, agreement_table, plot_clustermap

    out_dir = Path(out_dir)
    info = run.run_info(run_name, str(out_dir.parent))
    points = pd.read_csv(points_file)
    soft_col = f"soft_bkr_m{soft_m}"
    if soft_col not in points.columns:
        raise InputError(f"{points_file}: no column {soft_col!r} (soft BkR with m={soft_m} was not computed)")
    per = points.groupby("encoder")[["xlr_r1", "xlr_rk", "xlr_mrr", "bkr", "corr", soft_col]].mean()
    if "bkr_mrr" in set(run.metrics["metric"]):
        per["bkr_mrr"] = run.metrics[run.metrics["metric"] == "bkr_mrr"].groupby("encoder")["value"].mean()
    names = {
        **{k.replace("R@k", f"R@{run.k}"): v for k, v in AGREEMENT_METRICS.items()},
        f"soft BkR (m={soft_m})": soft_col,
    }
    if bli_file is not None and Path(bli_file).is_file() and Path(bli_file).stat().st_size > 1:
        bli = pd.read_csv(bli_file)
        if len(bli):
            nn = bli[bli["retrieval"] == "nn"].groupby("encoder")["map"].mean()
            per["bli_map"] = nn
            names["BLI MAP"] = "bli_map"
    names = {k: v for k, v in names.items() if v in per.columns}
    wide = per.rename(columns={v: k for k, v in names.items()})[list(names)]
    table = agreement_table(wide, list(names), B=B, seed=boot_seed)
    matrix = agreement_matrix(table, list(names))
    md = (
        f"## Agreement matrix — {info.label()}\n\nSpearman ρ across encoders between per-encoder means "
        f"(over directions and seeds; BLI over languages, word-vector encoders only) with 95% bootstrap CIs over encoders "
        f"(B={B}).\n\n"
        + markdown_table(table.drop(columns=["encoders"]), 3)
        + "\n### Matrix\n\n"
        + markdown_table(matrix.reset_index().rename(columns={"index": "metric"}), 2)
        + "\n### Per-encoder values\n\n"
        + markdown_table(wide.reset_index(), 4)
    )
    outputs = _write_tables(out_dir, "agreement", table, md)
    plot_clustermap(
        matrix,
        out_dir / "figures" / "agreement_clustermap",
        f"{'SYNTHETIC — ' if info.synthetic else ''}{info.dataset}: agreement across encoders (Spearman)",
    )
    outputs += _figure_outputs("agreement_clustermap")
    numbers = {
        "pairs": {
            f"{r.metric_a} ~ {r.metric_b}": {"spearman": r.spearman, "low": r.low, "high": r.high, "n": r.n_encoders}
            for r in table.itertuples()
        },
        "metrics": list(names),
    }
    answer = agreement_answer(table, info, f"XLR R@{run.k}")
    rec = FindingsRecord(
        analysis="agreement",
        run=info,
        settings={"B": B, "bootstrap_seed": boot_seed, "soft_m": soft_m},
        numbers=numbers,
        answer=answer,
        verdict="",
        outputs=tuple(outputs),
    )
    _record(out_dir, rec)
    return rec


def agreement_answer(table: pd.DataFrame, info: RunInfo, xlr: str) -> str:
    from ...findings.document import fmt_ci

    ref = table[(table["metric_a"] == xlr) | (table["metric_b"] == xlr)].copy()
    ref["other"] = np.where(ref["metric_a"] == xlr, ref["metric_b"], ref["metric_a"])
    ref = ref[~ref["other"].str.startswith("XLR")].sort_values("spearman", ascending=False)
    parts = [
        f"Agreement with {xlr} across encoders (Spearman, 95% CI over encoders): "
        + "; ".join(f"{r.other} {fmt_ci(r.spearman, r.low, r.high, 2)} (n={r.n_encoders})" for r in ref.itertuples())
        + "."
    ]
    valid = table.dropna(subset=["spearman"])
    if len(valid):
        lo = valid.sort_values("spearman").iloc[0]
        parts.append(
            f"The least agreeing pair is {lo.metric_a} vs {lo.metric_b} (ρ = {lo.spearman:.2f}, n={lo.n_encoders})."
        )
    return " ".join(parts) + _synthetic_note(info)
