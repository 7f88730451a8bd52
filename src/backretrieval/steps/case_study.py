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

The library part (config defaults, item selection, Table 2 statistics) is
:mod:`backretrieval.study.case_study`; the human-study steps are :mod:`.human_study`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from .._util import io
from ..data.prepared import read_meta
from ..data.sampling import draw_sample
from ..errors import ConfigError
from ..metrics.kernels import BkrImageIndex, backretrieve
from ..reporting.figures import fig3_boxplot
from ..reporting.tables import table2_latex, table2_markdown
from ..study.case_study import HEAD_LABEL, HEADS, _concat_repr, case_cfg, case_items, directions, models, table2
from .layout import _load, case_reports, case_root, field_path, repr_path

log = logging.getLogger("backretrieval")


# -------------------------------------------------------------------------------------------
# 1. embed


def embed_step(cfg: dict, dataset: Path, encoder: str) -> None:
    from ..encoders import build_text_encoder
    from ..encoders.embed import embed_texts

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


def _image_lookup(cfg: dict) -> tuple[dict[str, int], np.ndarray]:
    from .layout import image_emb_path

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
    from ..reporting.figures import plot_loss_curves
    from ..study.triplet import TripletConfig, encode, save_head, train_heads

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
