"""The paper's case study (Section 3.2) as pipeline steps.

1. ``embed``: title and body embeddings of every case-study item with each base encoder
   (and the random baseline); the evaluated base representation is
   ``concat(normalize(title), normalize(body))``.
2. ``select``: BkR of each base encoder over all ordered language pairs → the base encoder
   the heads are trained on (``head_base: auto`` picks the best, as the paper chose LaBSE).
3. ``train``: TRIPLET / TRIPLETXL heads on the *training* items' frozen base embeddings
   (text only, no images), then the evaluated representation ``concat(x_rt, x_rb)``.
4. ``evaluate``: BkR for every ordered pair of case-study languages (20 for 5 languages),
   every model, every seed, on the *evaluation* items (images needed) → tidy CSV + hits.
5. ``report``: Table 2 (BkR ×1000 per model averaged over pairs, bootstrap CIs, best vs
   rest with McNemar exact + paired bootstrap, Bonferroni) and Figure 3 (boxplot across pairs).
6. human study: ``sheets`` (blinded top-k suggestions of model A and B), ``simulate``
   (a SIMULATED rater from the synthetic scenes' ground truth, only where no human ratings
   exist), ``tally``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import io, stats
from .dataset import load_image_table, load_items, read_meta
from .errors import ConfigError, InputError
from .metrics import BkrImageIndex, backretrieve, normalize
from .reporting import save_figure
from .sampling import draw_sample

log = logging.getLogger("backretrieval")

HEADS = ("triplet", "tripletxl")
HEAD_LABEL = {"triplet": "TRIPLET", "tripletxl": "TRIPLETXL"}


# -------------------------------------------------------------------------------------------
# configuration and paths


def case_cfg(cfg: dict) -> dict:
    cs = dict(cfg.get("case_study") or {})
    if not cs:
        raise ConfigError("params: section 'case_study' is missing")
    langs = cs.get("languages", cfg["languages"])
    for lang in langs:
        if lang not in cfg["languages"]:
            raise ConfigError(f"case_study.languages: {lang!r} is not in 'languages'")
    for e in list(cs.get("base_encoders", [])) + [cs.get("baseline", "random")]:
        if e not in cfg["encoders"]:
            raise ConfigError(f"case_study: encoder {e!r} is not a key of 'encoders'")
    hb = cs.get("head_base", "auto")
    if hb != "auto" and hb not in cs.get("base_encoders", []):
        raise ConfigError("case_study.head_base must be 'auto' or one of case_study.base_encoders")
    cs.setdefault("languages", langs)
    cs.setdefault("head_base", "auto")
    cs.setdefault("baseline", "random")
    cs.setdefault("train_splits", ["train"])
    cs.setdefault("train_corpus", None)
    cs.setdefault("eval_splits", ["val", "test"])
    cs.setdefault("max_train_items", None)
    cs.setdefault("train_items_seed", 0)
    cs.setdefault("sample_size", 200)
    cs.setdefault("seeds", [0, 1, 2, 3, 4])
    cs.setdefault("k", cfg.get("k", 10))
    cs.setdefault("triplet", {})
    cs.setdefault("bootstrap", {"B": 1000, "seed": 0})
    return cs


def case_root(cfg: dict) -> Path:
    return Path("artifacts") / cfg["run_name"] / "case"


def case_reports(cfg: dict) -> Path:
    return Path(cfg["reports_dir"]) / "case_study"


def field_path(cfg: dict, encoder: str, lang: str, field: str) -> Path:
    return case_root(cfg) / "text" / encoder / f"{lang}.{field}.npz"


def repr_path(cfg: dict, model: str, lang: str) -> Path:
    """Evaluated representation of a model: base encoders under repr/, trained heads under
    repr_heads/ (kept apart so the base-selection step never depends on the heads)."""
    folder = "repr_heads" if model in HEADS else "repr"
    return case_root(cfg) / folder / model / f"{lang}.npz"


def directions(cs: dict) -> list[str]:
    langs = cs["languages"]
    return [f"{a}-{b}" for a in langs for b in langs if a != b]


def models(cs: dict) -> list[str]:
    return [cs["baseline"], *cs["base_encoders"], *HEADS]


# -------------------------------------------------------------------------------------------
# item selection


def _cap_per_language(train: pd.DataFrame, cap: int, seed: int) -> pd.DataFrame:
    """At most ``cap`` training items per language, a seeded random subset of each language.

    Every item gets the key ``sha256(f"{seed}:{item_id}")``; each language keeps its ``cap``
    items with the smallest keys (ties: the smaller id). A language's subset depends only on
    its own ids and the seed; on a parallel corpus (the same item_id in several languages)
    every language keeps the same ids, on a non-parallel one each language its own share.
    """
    key = train["item_id"].map(lambda i: hashlib.sha256(f"{seed}:{i}".encode("utf-8")).hexdigest())
    ranked = train.assign(_key=key).sort_values(["lang", "_key", "item_id"], kind="stable")
    return ranked.groupby("lang", sort=False).head(int(cap)).drop(columns="_key")


def case_items(dataset: Path, cs: dict) -> pd.DataFrame:
    """The case-study items: training items (capped per language) + evaluation items.

    Training items come from ``case_study.train_corpus`` (a prepared, possibly text-only
    dataset) when set, else from the main dataset's ``train_splits``. ``max_train_items``
    caps each language separately (:func:`_cap_per_language`, seed ``train_items_seed``).
    Every case-study language needs training and evaluation items.
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
    cap = cs.get("max_train_items")
    if cap:
        train = _cap_per_language(train, int(cap), int(cs.get("train_items_seed", 0)))
    ev = items[items["split"].isin(cs["eval_splits"])]
    for name, part, where, splits in (("training", train, source, cs["train_splits"]),
                                      ("evaluation", ev, Path(dataset), cs["eval_splits"])):
        missing = [lang for lang in cs["languages"] if not (part["lang"] == lang).any()]
        if missing:
            raise InputError(
                f"{where}: no {name} items for case_study.languages {missing} in splits {list(splits)}"
            )
    return pd.concat([train, ev]).sort_values(["lang", "item_id"], kind="stable").reset_index(drop=True)


def _concat_repr(title: np.ndarray, body: np.ndarray) -> np.ndarray:
    return np.hstack([normalize(title.astype(np.float32)), normalize(body.astype(np.float32))]).astype(np.float32)


# -------------------------------------------------------------------------------------------
# 1. embed


def embed_step(cfg: dict, dataset: Path, encoder: str) -> None:
    from .embedding import embed_texts
    from .encoders import build_text_encoder

    cs = case_cfg(cfg)
    items = case_items(dataset, cs)
    enc = build_text_encoder(encoder, dict(cfg["encoders"][encoder]))
    cache = Path(cfg["cache_dir"])
    for lang in cs["languages"]:
        sub = items[items["lang"] == lang]
        ids = sub["item_id"].to_numpy(dtype=str)
        fields = {}
        for fld in ("title", "body"):
            texts = [t if t.strip() else "-" for t in sub[fld].tolist()]
            emb = embed_texts(enc, texts, cache, lang=lang)
            fields[fld] = emb
            io.save_npz(field_path(cfg, encoder, lang, fld), emb=emb.astype(np.float32), ids=ids)
        io.save_npz(repr_path(cfg, encoder, lang), emb=_concat_repr(fields["title"], fields["body"]), ids=ids)


# -------------------------------------------------------------------------------------------
# evaluation core


def _load(path: Path) -> tuple[dict[str, int], np.ndarray]:
    z = io.load_npz(path)
    ids = [str(x) for x in z["ids"]]
    return {x: i for i, x in enumerate(ids)}, z["emb"]


def _image_lookup(cfg: dict) -> tuple[dict[str, int], np.ndarray]:
    from .pipeline import image_emb_path

    return _load(image_emb_path(cfg))


def _eval_models(cfg: dict, dataset: Path, model_names: list[str], out_csv: Path, hits_out: Path | None) -> pd.DataFrame:
    cs = case_cfg(cfg)
    items = case_items(dataset, cs)
    meta = read_meta(dataset)
    ev = items[items["split"].isin(cs["eval_splits"])]
    image_of = {lang: dict(zip(g["item_id"], g["image_id"])) for lang, g in ev.groupby("lang")}
    img_index, img = _image_lookup(cfg)
    reprs = {m: {lang: _load(repr_path(cfg, m, lang)) for lang in cs["languages"]} for m in model_names}
    rows, hits_store = [], {}
    for d in directions(cs):
        src, tgt = d.split("-")
        for seed in cs["seeds"]:
            s = draw_sample(ev, src, tgt, int(cs["sample_size"]), int(seed), parallel=meta.parallel)
            qi = [img_index[image_of[src][i]] for i in s.queries]
            ti = [img_index[image_of[tgt][i]] for i in s.bkr_targets]
            index = BkrImageIndex.build(img[qi], img[ti], k=int(cs["k"]))
            for m in model_names:
                (si, se), (tix, te) = reprs[m][src], reprs[m][tgt]
                q = se[[si[i] for i in s.queries]]
                t = te[[tix[i] for i in s.bkr_targets]]
                h = index.hits(backretrieve(q, t))
                rows.append(dict(model=m, direction=d, seed=int(seed), n=len(h), bkr_recall=float(h.mean())))
                hits_store[f"{m}/{d}/{seed}"] = h.astype(np.int8)
    df = pd.DataFrame(rows).sort_values(["model", "direction", "seed"], kind="stable").reset_index(drop=True)
    if hits_out is not None:
        io.save_npz(hits_out, **hits_store)
    io.write_csv(out_csv, df)
    return df


# -------------------------------------------------------------------------------------------
# 2. select the base encoder by BkR


def select_step(cfg: dict, dataset: Path, out_json: Path) -> str:
    cs = case_cfg(cfg)
    out_csv = case_root(cfg) / "select_bkr.csv"
    df = _eval_models(cfg, dataset, list(cs["base_encoders"]), out_csv, None)
    means = df.groupby("model")["bkr_recall"].mean().sort_values(ascending=False)
    chosen = cs["head_base"] if cs["head_base"] != "auto" else str(means.index[0])
    io.write_json(out_json, {"chosen": chosen, "rule": "configured" if cs["head_base"] != "auto" else "highest mean BkR",
                             "mean_bkr": {m: round(float(v), 6) for m, v in means.items()}})
    return chosen


# -------------------------------------------------------------------------------------------
# 3. train heads


def train_step(cfg: dict, dataset: Path, head: str, chosen_json: Path) -> None:
    from .triplet import TripletConfig, encode, plot_loss_curves, save_head, train_heads

    if head not in HEADS:
        raise ConfigError(f"head must be one of {HEADS}, got {head!r}")
    cs = case_cfg(cfg)
    base = json.loads(Path(chosen_json).read_text(encoding="utf-8"))["chosen"]
    items = case_items(dataset, cs)
    titles, bodies, langs, keys = [], [], [], []
    for lang in cs["languages"]:
        t_idx, t = _load(field_path(cfg, base, lang, "title"))
        b_idx, b = _load(field_path(cfg, base, lang, "body"))
        tr = items[(items["lang"] == lang) & items["split"].isin(cs["train_splits"])]
        ids = tr["item_id"].tolist()
        titles.append(t[[t_idx[i] for i in ids]])
        bodies.append(b[[b_idx[i] for i in ids]])
        langs += [lang] * len(ids)
        keys.append((lang, t_idx, t, b))
    conf = TripletConfig.from_dict({**cs["triplet"]})
    conf.validate()
    result = train_heads(np.vstack(titles), np.vstack(bodies), np.array(langs), conf, xl=(head == "tripletxl"))
    heads_dir = case_root(cfg) / "heads"
    save_head(result, heads_dir / f"{head}.pt")
    plot_loss_curves(result.history, case_reports(cfg) / "figures" / f"loss_{head}.png",
                     title=f"{HEAD_LABEL[head]} on {base} (best epoch {result.best_epoch})")
    io.write_csv(case_root(cfg) / "heads" / f"{head}.history.csv", pd.DataFrame(result.history))
    for lang, t_idx, t, b in keys:
        ids = sorted(t_idx, key=t_idx.get)
        io.save_npz(repr_path(cfg, head, lang), emb=encode(result, t, b), ids=np.array(ids, dtype=str))


# -------------------------------------------------------------------------------------------
# 4. evaluate


def evaluate_step(cfg: dict, dataset: Path) -> None:
    cs = case_cfg(cfg)
    _eval_models(cfg, dataset, models(cs), case_root(cfg) / "bkr.csv", case_root(cfg) / "bkr_hits.npz")


# -------------------------------------------------------------------------------------------
# 5. report: Table 2 + Figure 3


def _label(m: str, chosen: str) -> str:
    if m in HEAD_LABEL:
        return f"{HEAD_LABEL[m]} ({chosen})"
    return m


def table2(df: pd.DataFrame, hits: dict[str, np.ndarray], cs: dict, chosen: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per model: BkR×1000 averaged over pairs with a bootstrap CI over pairs; best vs rest."""
    b = cs.get("bootstrap", {})
    B, seed = int(b.get("B", 1000)), int(b.get("seed", 0))
    per_pair = df.groupby(["model", "direction"])["bkr_recall"].mean().reset_index()
    rows = []
    for m, g in per_pair.groupby("model"):
        vals = g["bkr_recall"].to_numpy() * 1000
        ci = stats.bootstrap_ci(vals, B=B, seed=seed)
        rows.append(dict(model=m, label=_label(m, chosen), bkr_x1000=float(vals.mean()), ci_low=ci.low, ci_high=ci.high,
                         worst_pair=g.loc[g["bkr_recall"].idxmin(), "direction"], n_pairs=len(g)))
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
        sig.append(dict(best=best, other=m, n_queries=len(pooled[m]), diff_x1000=bs.diff * 1000,
                        diff_ci_low=bs.low * 1000, diff_ci_high=bs.high * 1000,
                        mcnemar_p=mc.pvalue, bootstrap_p=bs.pvalue,
                        pairs_best_better_p05_bonf=int(np.sum((adj < 0.05))), n_pairs=len(per_pair_p)))
    sig_df = pd.DataFrame(sig)
    if len(sig_df):
        sig_df["mcnemar_p_bonferroni"] = stats.adjust_pvalues(sig_df["mcnemar_p"].to_numpy(), method="bonferroni")
    return t, sig_df


def table2_markdown(t: pd.DataFrame, sig: pd.DataFrame, caption: str) -> str:
    lines = ["### Table 2 — case study: BkR ×1000 per model, averaged over language pairs", "", caption, "",
             "| model | BkR ×1000 | 95% CI (pairs) | worst pair | best vs this: Δ×1000 [CI] | McNemar p (Bonf.) |",
             "|---|---|---|---|---|---|"]
    best = t.loc[0, "model"]
    for _, r in t.iterrows():
        txt = f"{r['bkr_x1000']:.1f}"
        if r["model"] == best:
            txt = f"**{txt}**"
            cmp_txt, p_txt = "—", "—"
        else:
            s = sig[sig["other"] == r["model"]].iloc[0]
            cmp_txt = f"{s['diff_x1000']:+.1f} [{s['diff_ci_low']:+.1f}, {s['diff_ci_high']:+.1f}]"
            p_txt = stats.format_p(s["mcnemar_p_bonferroni"]) + stats.significance_marker(s["mcnemar_p_bonferroni"])
        lines.append(f"| {r['label']} | {txt} | [{r['ci_low']:.1f}, {r['ci_high']:.1f}] | {r['worst_pair'].replace('-', '→')} | {cmp_txt} | {p_txt} |")
    return "\n".join(lines) + "\n"


def table2_latex(t: pd.DataFrame) -> str:
    best = t.loc[0, "model"]
    out = ["\\begin{table}[t]", "\\centering", "\\begin{tabular}{lrr}", "\\toprule",
           "Model & BkR$\\times$1000 & 95\\% CI \\\\", "\\midrule"]
    for _, r in t.iterrows():
        v = f"{r['bkr_x1000']:.1f}"
        v = f"\\textbf{{{v}}}" if r["model"] == best else v
        label = str(r["label"]).replace("_", "\\_")
        out.append(f"{label} & {v} & [{r['ci_low']:.1f}, {r['ci_high']:.1f}] \\\\")
    out += ["\\bottomrule", "\\end{tabular}", "\\caption{BkR$\\times$1000 per model averaged over language pairs.}",
            "\\label{tab:bkr-case-study}", "\\end{table}"]
    return "\n".join(out) + "\n"


def fig3_boxplot(df: pd.DataFrame, t: pd.DataFrame, out_base: Path, title: str, n_annotate: int = 3) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    per_pair = df.groupby(["model", "direction"])["bkr_recall"].mean().reset_index()
    per_pair["bkr_x1000"] = per_pair["bkr_recall"] * 1000
    label = dict(zip(t["model"], t["label"]))
    order = list(t["label"])
    per_pair["label"] = per_pair["model"].map(label)
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(1.3 * len(order) + 2, 4))
    sns.boxplot(data=per_pair, x="label", y="bkr_x1000", order=order, ax=ax, color="#9ecae1", fliersize=0)
    # the points, with horizontal jitter from a fixed-seed generator (seaborn's stripplot draws
    # its jitter from numpy's global RNG, so the figure files differed between runs)
    rng = np.random.default_rng(0)
    for xi, lab in enumerate(order):
        ys = per_pair.loc[per_pair["label"] == lab, "bkr_x1000"].to_numpy()
        ax.scatter(xi + rng.uniform(-0.15, 0.15, size=len(ys)), ys, s=9, color="#08519c", zorder=3, linewidths=0)
    for xi, lab in enumerate(order):
        g = per_pair[per_pair["label"] == lab].nsmallest(n_annotate, "bkr_x1000")
        for _, r in g.iterrows():
            ax.annotate(r["direction"].replace("-", "→"), (xi, r["bkr_x1000"]), xytext=(6, 0),
                        textcoords="offset points", fontsize=6, va="center")
    ax.set_xlabel("")
    ax.set_ylabel("BkR ×1000 (per language pair)")
    ax.set_title(title, fontsize=9)
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    fig.tight_layout()
    save_figure(fig, out_base)
    plt.close(fig)


def report_step(cfg: dict, dataset: Path) -> None:
    cs = case_cfg(cfg)
    meta = read_meta(dataset)
    chosen_info = json.loads((case_root(cfg) / "chosen_base.json").read_text(encoding="utf-8"))
    chosen = chosen_info["chosen"]
    df = pd.read_csv(case_root(cfg) / "bkr.csv")
    hits = io.load_npz(case_root(cfg) / "bkr_hits.npz")
    t, sig = table2(df, hits, cs, chosen)
    out = case_reports(cfg)
    syn = "SYNTHETIC dataset — " if meta.synthetic else ""
    caption = (
        f"{syn}{meta.name}; {len(directions(cs))} ordered pairs of {', '.join(cs['languages'])}; N={cs['sample_size']} "
        f"(non-matching target sets), {len(cs['seeds'])} seeds; Recall@{cs['k']}. Heads trained on frozen "
        f"'{chosen}' title/body embeddings (base chosen by {chosen_info['rule']}: "
        + ", ".join(f"{m} {v * 1000:.1f}" for m, v in chosen_info["mean_bkr"].items())
        + "). CI: percentile bootstrap over language pairs. Best vs each other model: McNemar exact on per-query hits "
        "pooled over pairs and seeds (Bonferroni across models) and a paired bootstrap of the difference."
    )
    io.write_text(out / "table2.md", table2_markdown(t, sig, caption))
    io.write_text(out / "table2.tex", table2_latex(t))
    io.write_csv(out / "table2.csv", t)
    io.write_csv(out / "table2_significance.csv", sig)
    fig3_boxplot(df, t, out / "figures" / "fig3_boxplot", f"{syn}{meta.name}: BkR per model across language pairs")
    summary = {m: round(float(v), 3) for m, v in zip(t["model"], t["bkr_x1000"])}
    io.write_json(out / "metrics.json", {"bkr_x1000_mean_over_pairs": summary, "best": t.loc[0, "model"],
                                         "head_base": chosen, "synthetic": meta.synthetic})


# -------------------------------------------------------------------------------------------
# 6. human study


def human_cfg(cfg: dict) -> dict:
    """The ``human_study`` section with defaults, checked against ``case_study``.

    Defaults follow the paper: English queries, Russian suggestions (``en`` → ``ru``), 20
    queries, the top 5 suggestions of TRIPLETXL and of its base encoder, texts only.
    """
    hs = dict(cfg.get("human_study") or {})
    cs = case_cfg(cfg)
    explicit = {f for f in ("source_lang", "target_lang") if f in hs}
    hs.setdefault("source_lang", "en")
    hs.setdefault("target_lang", "ru")
    hs.setdefault("n_queries", 20)
    hs.setdefault("top_k", 5)
    hs.setdefault("model_a", "tripletxl")
    hs.setdefault("model_b", "base")
    hs.setdefault("seed", 0)
    hs.setdefault("ratings", None)
    hs.setdefault("show_images", False)
    hs.setdefault("allow_unverified_key", False)
    for f in ("source_lang", "target_lang"):
        if hs[f] not in cs["languages"]:
            how = "" if f in explicit else " (the default, the paper's en → ru pair; set it in params.yaml)"
            raise ConfigError(
                f"human_study.{f}: {hs[f]!r}{how} is not one of case_study.languages {list(cs['languages'])}"
            )
    if hs["source_lang"] == hs["target_lang"]:
        raise ConfigError(
            f"human_study.target_lang: must differ from source_lang ({hs['source_lang']!r}); the study "
            "rates cross-lingual suggestions"
        )
    allowed = ["base", *models(cs)]
    for f in ("model_a", "model_b"):
        if hs[f] not in allowed:
            raise ConfigError(f"human_study.{f}: {hs[f]!r} is not one of {allowed} ('base' = the chosen base encoder)")
    if hs["model_a"] == hs["model_b"]:
        raise ConfigError(f"human_study.model_b: must differ from model_a ({hs['model_a']!r})")
    return hs


def human_dir(cfg: dict) -> Path:
    return case_root(cfg) / "human"


def _resolve_model(name: str, chosen: str) -> str:
    return chosen if name == "base" else name


def sheets_step(cfg: dict, dataset: Path) -> None:
    from .human_study import make_sheets, top_k_suggestions

    cs, hs = case_cfg(cfg), human_cfg(cfg)
    chosen = json.loads((case_root(cfg) / "chosen_base.json").read_text(encoding="utf-8"))["chosen"]
    ma, mb = _resolve_model(hs["model_a"], chosen), _resolve_model(hs["model_b"], chosen)
    if ma == mb:
        raise ConfigError(
            f"human_study.model_a ({hs['model_a']!r}) and model_b ({hs['model_b']!r}) are the same model "
            f"{ma!r} (the chosen base encoder); compare two different models"
        )
    items = case_items(dataset, cs)
    ev = items[items["split"].isin(cs["eval_splits"])]
    src, tgt = hs["source_lang"], hs["target_lang"]
    n_q, top_k = int(hs["n_queries"]), int(hs["top_k"])
    src_items = ev[ev["lang"] == src].reset_index(drop=True)
    if n_q > len(src_items):
        raise ConfigError(
            f"human_study.n_queries: {n_q} is more than the {len(src_items)} evaluation items of "
            f"source_lang {src!r} in {dataset} (splits {list(cs['eval_splits'])}); lower n_queries"
        )
    rng = np.random.default_rng(int(hs["seed"]))
    q = src_items.iloc[np.sort(rng.choice(len(src_items), size=n_q, replace=False))]
    qids = set(q["item_id"])
    cands = ev[(ev["lang"] == tgt) & ~ev["item_id"].isin(qids)].reset_index(drop=True)
    if top_k > len(cands):
        raise ConfigError(
            f"human_study.top_k: {top_k} is more than the {len(cands)} candidate items of target_lang "
            f"{tgt!r} in {dataset} (evaluation items, the queries' own items excluded); lower top_k"
        )
    img_path: dict[str, str] = {}
    if hs["show_images"]:
        if (Path(dataset) / "images.csv").is_file():
            images = load_image_table(dataset)
            img_path = {r.image_id: str(Path(dataset) / r.path) for r in images.itertuples()}
        else:  # precomputed features only (e.g. Multi30K + ResNet-50): the sheet shows texts only
            log.warning("%s has no image files (precomputed features only): rating sheet shows texts only", dataset)
    sugg = {}
    for m in (ma, mb):
        qi, qe = _load(repr_path(cfg, m, src))
        ci, ce = _load(repr_path(cfg, m, tgt))
        top = top_k_suggestions(qe[[qi[i] for i in q["item_id"]]], ce[[ci[i] for i in cands["item_id"]]], k=top_k)
        sugg[m] = {
            qid: [(cands.loc[j, "item_id"], f"{cands.loc[j, 'title']}\n{cands.loc[j, 'body']}".strip(),
                   img_path.get(cands.loc[j, "image_id"])) for j in row]
            for qid, row in zip(q["item_id"], top)
        }
    queries = pd.DataFrame({
        "query_id": q["item_id"].tolist(),
        "text": (q["title"] + "\n" + q["body"]).str.strip().tolist(),
        "image_path": [img_path.get(i) for i in q["image_id"]],
    })
    make_sheets(queries, sugg[ma], sugg[mb], human_dir(cfg), seed=int(hs["seed"]), model_names=(ma, mb),
                title=f"Relevance rating: {src} queries, {tgt} suggestions", query_lang=src, suggestion_lang=tgt,
                show_images=bool(hs["show_images"]))
    out = case_reports(cfg) / "rating_sheet.html"
    io.write_text(out, (human_dir(cfg) / "rating_sheet.html").read_text(encoding="utf-8"))


def simulate_step(cfg: dict, dataset: Path) -> Path:
    """SIMULATED ratings from the synthetic ground truth (scene similarity)."""
    from .human_study import simulate_ratings
    from .synthetic import load_scenes, scene_similarity

    meta = read_meta(dataset)
    if not meta.synthetic:
        raise InputError(
            f"{dataset}: the simulated rater needs the synthetic dataset's ground-truth scenes; for real data "
            "collect human ratings with rating_sheet.html and set human_study.ratings"
        )
    scenes = load_scenes(dataset)
    out = human_dir(cfg) / "ratings.simulated.csv"
    simulate_ratings(human_dir(cfg) / "ratings_template.csv", lambda qid, cid: scene_similarity(scenes[qid], scenes[cid]),
                     out, seed=int(human_cfg(cfg)["seed"]), key_path=human_dir(cfg) / "key.sealed.json")
    return out


def ratings_path(cfg: dict) -> Path:
    hs = human_cfg(cfg)
    return Path(hs["ratings"]) if hs.get("ratings") else human_dir(cfg) / "ratings.simulated.csv"


def tally_step(cfg: dict) -> None:
    from .human_study import tally, tally_markdown

    hs = human_cfg(cfg)
    res = tally(ratings_path(cfg), human_dir(cfg) / "key.sealed.json",
                allow_unverified_key=bool(hs["allow_unverified_key"]))
    md = tally_markdown(res, simulated=res.simulated or not hs.get("ratings"))
    out = case_reports(cfg)
    io.write_text(out / "human_study.md", md)
    d = res.to_dict()
    for k, v in list(d.items()):
        if isinstance(v, float) and not math.isfinite(v):
            d[k] = str(v)
    io.write_json(out / "human_study.json", d)
