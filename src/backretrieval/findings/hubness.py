"""Analysis ``hubness`` (question 4). Is BkR's step 1 dominated by hubs, does BkR keep its agreement with
XLR when hubs are injected, and do CSLS / margin retrieval help?

* k-occurrence (Radovanović et al. 2010): N_k(t) = how many queries have target t among
  their k nearest targets. Step 1 of BkR is a 1-NN retrieval, so N_1 is the number of queries
  that back-retrieve t; N_10 is the usual hubness view. Summaries (:func:`hubness_stats`):
  skewness of N_k over the targets (``scipy.stats.skew``), the share of queries that land on
  the top 1 % of targets, the share of targets never retrieved (anti-hubs).
* Retrieval by cosine (the paper), CSLS or ratio margin (``metrics.kernels`` options).
* Hub injection (:func:`inject_hubs`): extra targets near the centroid of an encoder's target
  embeddings, each with the image of a random existing target; they join the candidates of
  BkR step 1 and of XLR.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..metrics import BkrImageIndex, normalize, retrieval_scores
from ..metrics.retrieval import CSLS_K, MARGIN_K
from .analysis import Analysis, Question, Setting
from .answers import question_files, question_result
from .result import Result

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation.run_artifacts import RunArtifacts
    from .views import Lookup, SampleView

RETRIEVAL_ORDER = ("cosine", "csls", "margin")


class Hubness(Analysis):
    """hubness.{csv,md,json}, hubness.samples.csv + figures/hubness.* on one config's cached
    samples and embeddings. Defaults: the first 3 seeds of every direction (a few minutes on
    2 cores)."""

    name = "hubness"
    question = Question(
        4, "Hubness", "Does BkR keep its agreement with XLR under hubs, and do CSLS / margin retrieval help?"
    )
    inputs = ("samples", "image", "text")
    settings = (
        Setting("max_seeds", 3, "only the first seeds of each samples file (none: every seed)", type=int, metavar="N"),
        Setting(
            "retrievals",
            list(RETRIEVAL_ORDER),
            "retrieval rules",
            nargs="+",
            choices=RETRIEVAL_ORDER,
        ),
        Setting("hub_fraction", 0.02, "injected hubs per target", type=float),
        Setting("hub_noise", 0.1, "noise of the injected hubs", type=float),
        Setting("seed", 0, "seed of the injected hubs", type=int),
    )
    files = question_files("hubness")
    figures = ("hubness",)

    def run(self, art: RunArtifacts, s: Mapping[str, Any]) -> Result:
        from .markdown import markdown_table
        from .views import iter_views

        k, max_seeds, retrievals = art.k, s["max_seeds"], s["retrievals"]
        meta = art.dataset_meta()
        texts = art.texts()
        image = art.image_lookup()
        samples = art.sample_list(max_seeds)
        df = hubness_metrics(
            iter_views(samples, art.items(), texts),
            image,
            retrievals=retrievals,
            hub_fraction=s["hub_fraction"],
            hub_noise=s["hub_noise"],
            k=k,
            seed=s["seed"],
        )
        per_enc, summary = summarize_hubness(df)
        n = int(df["n"].iloc[0])
        n_hubs = int(df.loc[df.condition == "hubs", "n_hubs"].max())
        text = answer(
            per_enc,
            summary,
            dataset=meta.name,
            synthetic=meta.synthetic,
            k=k,
            n=n,
            n_hubs=n_hubs,
            n_encoders=len(texts),
        )
        numbers = {
            "per_setting": {f"{r.condition}/{r.retrieval}": r._asdict() for r in summary.itertuples(index=False)},
            "per_encoder": {
                f"{r.condition}/{r.retrieval}/{r.encoder}": r._asdict() for r in per_enc.itertuples(index=False)
            },
        }
        settings = dict(
            k=k,
            N=n,
            samples=len(samples),
            max_seeds_per_direction=max_seeds,
            retrievals=list(retrievals),
            csls_k=CSLS_K,
            margin_k=MARGIN_K,
            hub_fraction=s["hub_fraction"],
            n_hubs=n_hubs,
            hub_noise=s["hub_noise"],
            occurrence_k=10,
            seed=s["seed"],
            encoders=sorted(texts),
        )
        extra = "Per encoder (means over samples):\n\n" + markdown_table(per_enc)
        figure = (FIGURE_TITLE, lambda p, title: plot_hubness(per_enc, summary, p, title))
        return question_result(art, "hubness", text, settings, numbers, summary, df, figure, extra)


def top_k_targets(scores: np.ndarray, k: int) -> np.ndarray:
    """(n_queries, k) indices of each row's k highest scores, best first (ties → lower index)."""
    n_c = scores.shape[1]
    if not 1 <= k <= n_c:
        raise InputError(f"top-k: k must be in [1, {n_c}], got {k}")
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def k_occurrence(neighbours: np.ndarray, n_targets: int) -> np.ndarray:
    """N_k per target: how often each target index occurs in ``neighbours`` (shape (n_q,) for
    N_1 or (n_q, k) for N_k)."""
    nb = np.asarray(neighbours, dtype=np.int64).ravel()
    if nb.size and (nb.min() < 0 or nb.max() >= n_targets):
        raise InputError(f"k-occurrence: neighbour indices must be in [0, {n_targets})")
    return np.bincount(nb, minlength=n_targets)


def hubness_stats(counts: np.ndarray, top_share: float = 0.01) -> dict[str, float]:
    """Skewness of the k-occurrence ``counts`` (``scipy.stats.skew``, biased estimator as in
    Radovanović et al.), the share of all occurrences that fall on the top ``top_share`` of
    targets (at least one target), the largest count relative to the mean, and the share of
    targets that never occur (anti-hubs)."""
    import scipy.stats as st

    c = np.asarray(counts, dtype=np.float64)
    if c.size < 2 or c.sum() == 0:
        raise InputError("hubness stats: need >= 2 targets and >= 1 occurrence")
    top = max(1, math.ceil(top_share * c.size))
    ordered = np.sort(c)[::-1]
    return {
        "skewness": float(st.skew(c)) if np.ptp(c) > 0 else 0.0,
        "top1pct_share": float(ordered[:top].sum() / c.sum()),
        "max_over_mean": float(ordered[0] / c.mean()),
        "antihub_share": float(np.mean(c == 0)),
    }


def inject_hubs(targets: np.ndarray, n_hubs: int, noise: float, seed: int) -> np.ndarray:
    """``n_hubs`` unit vectors near the centroid direction of the (normalised) ``targets``:
    normalise(ĉ + noise · z / sqrt(d)), ĉ the unit centroid, z ~ N(0, I) seeded. On an
    anisotropic embedding (most text encoders) such points are near many queries: hubs."""
    t = normalize(np.asarray(targets, dtype=np.float64))
    if n_hubs < 1:
        raise InputError(f"inject hubs: n_hubs must be >= 1, got {n_hubs}")
    c = t.mean(axis=0)
    norm = np.linalg.norm(c)
    if norm == 0:
        raise InputError("inject hubs: the target centroid is the zero vector")
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n_hubs, t.shape[1]))
    return normalize(c / norm + noise * z / np.sqrt(t.shape[1])).astype(np.asarray(targets).dtype)


def _ranks_from_scores(scores: np.ndarray) -> np.ndarray:
    """Rank of candidate i for query i (row i): 1 + #{j: s[i, j] > s[i, i]}."""
    true = scores[np.arange(scores.shape[0]), np.arange(scores.shape[0])]
    return 1 + np.count_nonzero(scores > true[:, None], axis=1)


def hubness_metrics(
    views: Iterable[SampleView],
    images: Lookup,
    retrievals: Iterable[str] = RETRIEVAL_ORDER,
    *,
    hub_fraction: float,
    hub_noise: float,
    k: int,
    occurrence_k: int = 10,
    seed: int = 0,
) -> pd.DataFrame:
    """Per (condition, retrieval, direction, seed, encoder): N_1 and N_k statistics of BkR
    step 1 and XLR@k / BkR@k, on the clean sample (``condition = clean``) and with
    ``round(hub_fraction · N)`` injected hubs (``hubs``). Hubs are drawn per (sample, encoder)
    from ``seed`` + the sample's seed; their images are the images of targets drawn with the
    same generator. ``hub_capture``: share of queries whose step 1 lands on an injected hub.
    """
    import pandas as pd

    from ..evaluation.core import rows_of

    retrievals = list(retrievals)
    if not 0 < hub_fraction <= 1:
        raise InputError(f"hubness: hub_fraction must be in (0, 1], got {hub_fraction}")
    out = []
    for v in views:
        q_img = rows_of(images, v.query_images, "image features")
        t_img = rows_of(images, v.target_images, "image features")
        n_t = t_img.shape[0]
        n_hubs = max(1, round(hub_fraction * n_t))
        index_clean = BkrImageIndex.build(q_img, t_img, k=k)
        rng_img = np.random.default_rng([seed, v.seed, 1])
        hub_img_rows = rng_img.choice(n_t, size=n_hubs, replace=False)
        index_hubs = BkrImageIndex.build(q_img, np.concatenate([t_img, t_img[hub_img_rows]]), k=k)
        for e_i, enc in enumerate(v.encoders):
            src, tgt = v.bkr_src[enc], v.bkr_tgt[enc]
            hubs = inject_hubs(
                tgt, n_hubs, hub_noise, seed=int(np.random.default_rng([seed, v.seed, 2, e_i]).integers(2**32))
            )
            xlr_tgt = v.xlr_tgt.get(enc)
            for condition, cands, index in (
                ("clean", tgt, index_clean),
                ("hubs", np.concatenate([tgt, hubs]), index_hubs),
            ):
                # one cosine matrix per condition; CSLS / margin derived from it (same values
                # as the kernels' options, see metrics.kernels.retrieval_scores)
                cos_bkr = retrieval_scores(src, cands)
                cos_xlr = None
                if xlr_tgt is not None:
                    cos_xlr = retrieval_scores(
                        src, xlr_tgt if condition == "clean" else np.concatenate([xlr_tgt, hubs])
                    )
                for retrieval in retrievals:
                    scores = retrieval_scores(None, None, retrieval, cosines=cos_bkr)
                    t_star = np.argmax(scores, axis=1)
                    n1 = hubness_stats(k_occurrence(t_star, cands.shape[0]))
                    nk = hubness_stats(k_occurrence(top_k_targets(scores, occurrence_k), cands.shape[0]))
                    row = dict(
                        condition=condition,
                        retrieval=retrieval,
                        direction=v.direction,
                        seed=v.seed,
                        encoder=enc,
                        n=len(v.queries),
                        n_hubs=n_hubs if condition == "hubs" else 0,
                        skew_n1=n1["skewness"],
                        top1pct_n1=n1["top1pct_share"],
                        antihub_n1=n1["antihub_share"],
                        skew_nk=nk["skewness"],
                        top1pct_nk=nk["top1pct_share"],
                        hub_capture=float(np.mean(t_star >= n_t)),
                        bkr_recall=float(np.mean(index.hits(t_star))),
                    )
                    if cos_xlr is not None:
                        x_scores = retrieval_scores(None, None, retrieval, cosines=cos_xlr)
                        row["xlr_recall"] = float(np.mean(_ranks_from_scores(x_scores) <= k))
                    out.append(row)
    return pd.DataFrame(out)


def summarize_hubness(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per encoder × condition × retrieval: mean hubness stats and recalls over the samples;
    per condition × retrieval: agreement of BkR with XLR across encoders — with XLR of the same
    condition and retrieval, and with the clean cosine XLR, the encoders' quality as measured
    without hubs — mean and 2.5–97.5 % spread over the samples)."""
    import pandas as pd

    from .views import agreement_table, mean_interval

    cols = ["skew_n1", "top1pct_n1", "antihub_n1", "skew_nk", "top1pct_nk", "hub_capture", "bkr_recall", "xlr_recall"]
    cols = [c for c in cols if c in df]
    per_enc = df.groupby(["condition", "retrieval", "encoder"], sort=True)[cols].mean().reset_index()
    rows_ = []
    clean_xlr = (
        (
            df[(df.condition == "clean") & (df.retrieval == "cosine")].set_index(["direction", "seed", "encoder"])[
                "xlr_recall"
            ]
        )
        if "xlr_recall" in df
        else None
    )
    for (cond, ret), g in df.groupby(["condition", "retrieval"], sort=True):
        row: dict = {"condition": cond, "retrieval": ret}
        if clean_xlr is not None:
            g = g.assign(
                xlr_clean=clean_xlr.reindex(pd.MultiIndex.from_frame(g[["direction", "seed", "encoder"]])).to_numpy()
            )
            for ref, label in (("xlr_recall", "same"), ("xlr_clean", "clean")):
                a = agreement_table(g, ["direction", "seed"], "bkr_recall", ref)
                for stat in ("spearman", "pairwise"):
                    mi = mean_interval(a[stat].to_numpy())
                    row[f"{stat}_vs_{label}_mean"] = mi["mean"]
                    row[f"{stat}_vs_{label}_p2.5"], row[f"{stat}_vs_{label}_p97.5"] = mi["p2.5"], mi["p97.5"]
            a = agreement_table(g, ["direction", "seed"], "xlr_recall", "xlr_clean")
            row["xlr_spearman_vs_clean_mean"] = mean_interval(a["spearman"].to_numpy())["mean"]
        for c in ("skew_n1", "top1pct_n1", "skew_nk", "hub_capture", "bkr_recall"):
            row[f"{c}_mean"] = float(g[c].mean())
        row["n_samples"] = int(g.groupby(["direction", "seed"]).ngroups)
        rows_.append(row)
    return per_enc, pd.DataFrame(rows_)


# ---------------------------------------------------------------------------------------------
# figure and answer


#: the figure's title after the dataset (:func:`~.result.question_result`)
FIGURE_TITLE = "hubness of BkR step 1"


def plot_hubness(per_encoder: pd.DataFrame, summary: pd.DataFrame, out_base, title: str) -> list:
    """Left: skewness of N_1 (BkR step 1) per encoder, by retrieval, clean vs injected hubs.
    Right: BkR's Spearman agreement with the clean cosine XLR by condition and retrieval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figures import finish_figure, legend_outside

    sns.set_theme(style="whitegrid", context="paper")
    n_enc = per_encoder["encoder"].nunique()
    fig, axes = plt.subplots(1, 2, figsize=(max(11.0, 0.55 * n_enc + 6.5), 4.4), gridspec_kw={"width_ratios": [3, 2]})
    pe = per_encoder.assign(setting=per_encoder["retrieval"] + " / " + per_encoder["condition"])
    order = [f"{r} / {c}" for c in ("clean", "hubs") for r in RETRIEVAL_ORDER if r in set(pe["retrieval"])]
    sns.barplot(data=pe, x="encoder", y="skew_n1", hue="setting", hue_order=order, ax=axes[0], errorbar=None)
    axes[0].set_ylabel("skewness of N_1 (step 1)")
    axes[0].set_title("skewness of N_1 per encoder", fontsize=9)
    axes[0].set_xlabel("")
    # the key right of the figure (inside a panel it covered bars); the encoders' names upright
    # ran into each other with 14 encoders: vertical
    handles, labels = axes[0].get_legend_handles_labels()
    axes[0].get_legend().remove()
    legend_outside(axes[1], handles, labels, where="right", fontsize=6, title="retrieval / condition", title_fontsize=6)
    plt.setp(axes[0].get_xticklabels(), rotation=90, fontsize=7)
    if "spearman_vs_clean_mean" in summary:
        sm = (
            summary.assign(setting=summary["retrieval"] + " / " + summary["condition"])
            .set_index("setting")
            .reindex(order)
        )
        y = sm["spearman_vs_clean_mean"]
        err = np.vstack([y - sm["spearman_vs_clean_p2.5"], sm["spearman_vs_clean_p97.5"] - y])
        axes[1].errorbar(range(len(sm)), y, yerr=err, fmt="o", capsize=2, color="#08519c", ecolor="#9ecae1")
        axes[1].set_xticks(range(len(sm)), sm.index, rotation=90, fontsize=7)
        axes[1].set_ylabel("Spearman(BkR, clean XLR)")
        axes[1].set_title("agreement with clean XLR (2.5–97.5 % of samples)", fontsize=9)
        axes[1].set_ylim(-1.05, 1.05)
    return finish_figure(fig, out_base, title)


def answer(
    per_encoder: pd.DataFrame,
    summary: pd.DataFrame,
    *,
    dataset: str,
    synthetic: bool,
    k: int,
    n: int,
    n_hubs: int,
    n_encoders: int,
) -> str:
    """The generated answer paragraph (from the numbers of the two summaries)."""
    s = summary.set_index(["condition", "retrieval"])
    syn = "SYNTHETIC data" if synthetic else "real data"
    clean = per_encoder[(per_encoder.condition == "clean") & (per_encoder.retrieval == "cosine")].set_index("encoder")
    worst = clean["skew_n1"].idxmax()
    rets = [r for r in RETRIEVAL_ORDER if ("clean", r) in s.index]

    def agree(cond: str, ret: str, ref: str = "clean") -> str:
        r = s.loc[(cond, ret)]
        return f"{r[f'spearman_vs_{ref}_mean']:.2f} [{r[f'spearman_vs_{ref}_p2.5']:.2f}, {r[f'spearman_vs_{ref}_p97.5']:.2f}]"

    parts = [
        f"On {dataset} ({syn}; {n_encoders} encoders, N={n}, {int(s.iloc[0]['n_samples'])} samples): "
        f"BkR's step 1 by cosine has a mean N_1 skewness of {s.loc[('clean', 'cosine'), 'skew_n1_mean']:.2f} "
        f"(most skewed: {worst}, {clean.loc[worst, 'skew_n1']:.2f}, where {clean.loc[worst, 'top1pct_n1']:.0%} of the queries land "
        f"on the top 1 % of targets)."
    ]
    parts.append(
        "CSLS / margin change the mean skewness to "
        + ", ".join(f"{r} {s.loc[('clean', r), 'skew_n1_mean']:.2f}" for r in rets if r != "cosine")
        + "."
    )
    parts.append(
        "BkR's Spearman agreement with XLR across encoders (mean [2.5, 97.5 %] over samples), clean: "
        + "; ".join(f"{r} {agree('clean', r, 'same')}" for r in rets)
        + "."
    )
    if ("hubs", "cosine") in s.index:
        parts.append(
            f"With {n_hubs} injected hubs near each encoder's target centroid, cosine step 1 sends "
            f"{s.loc[('hubs', 'cosine'), 'hub_capture_mean']:.0%} of the queries to a hub (skewness "
            f"{s.loc[('hubs', 'cosine'), 'skew_n1_mean']:.2f}); "
            + ", ".join(f"{r} {s.loc[('hubs', r), 'hub_capture_mean']:.0%}" for r in rets if r != "cosine")
            + ". BkR's agreement with the clean XLR under hubs: "
            + "; ".join(f"{r} {agree('hubs', r)}" for r in rets)
            + f" (without hubs, cosine: {agree('clean', 'cosine')})."
        )
    parts.append("Samples of one direction share items; spreads describe variation, not independent replicates.")
    return " ".join(parts)
