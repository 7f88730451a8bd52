"""Analysis ``sample_size`` (question 3): how large must N be?

For every N of a grid, seeded samples of the paper's protocol (N queries, their N
translations for XLR, N disjoint targets for BkR) are drawn and XLR@1, XLR@k and BkR@k of every
encoder computed (:func:`sample_size_metrics`). :func:`ranking_stability` then asks, per N,
how often a sample orders the encoders as the largest N does (by BkR: stability; by XLR:
validity), how well BkR agrees with XLR@1 and XLR@k on the same sample, and where the
random encoder's BkR lies against its chance level k/N. :func:`smallest_reliable_n` states the
answer under an explicit criterion.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, InputError
from ..metrics import evaluate_sample
from .analysis import Analysis, OwnData, Question, Setting
from .answers import question_files, question_result
from .result import Result

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation.run_artifacts import RunArtifacts
    from .views import Lookup

log = logging.getLogger("backretrieval")


class SampleSize(Analysis):
    """sample_size.{csv,md,json}, sample_size.samples.csv + figures/sample_size.* on one prepared
    dataset (``--dataset``; ``--run-dataset``: the run's own when it is another). N values above
    what the dataset allows (2N items with texts in both languages) are dropped with a warning.

    Defaults: on the synthetic config, a SYNTHETIC dataset scaled to 10,000 items (en, de;
    random, MiniLM, USE-M and 1024-bucket char n-grams: cheap encoders of graded quality; the
    1024-bucket char n-grams cost a quarter of the config's 4096-bucket ones in every N × N
    product), prepared and embedded by the workflow; on real data the config's own items and
    encoders (N up to what the items allow). ``encoders`` is a list of configured ids or, on
    the synthetic config, a mapping id → spec."""

    name = "sample_size"
    question = Question(3, "How large must N be?", "From which sample size N does BkR order the encoders reliably?")
    inputs = ("image", "text")
    settings = (
        Setting("seeds", list(range(10)), "seed values of the samples at each N", type=int, nargs="+", metavar="SEED"),
        Setting(
            "min_agreement",
            0.9,
            "criterion: least share of encoder pairs ordered as at the largest N",
            type=float,
        ),
        Setting(
            "min_share",
            0.9,
            "criterion: least share of samples (direction x seed) meeting --min-agreement",
            type=float,
        ),
        Setting("n_grid", None, "sample sizes N to evaluate", type=int, nargs="+", metavar="N", required=True),
        Setting("directions", None, "directions to sample, e.g. en-de de-en", nargs="+", required=True),
        Setting("baseline", None, "the random encoder (its BkR is compared with k/N)", metavar="ENC"),
        Setting("encoders", {}, "the encoders embedded for the analysis (ids or id → spec)", command=False),
        Setting("synthetic", None, "the scaled SYNTHETIC dataset (synthetic config only)", command=False),
    )
    files = question_files("sample_size")
    figures = ("sample_size",)

    @classmethod
    def own_data(cls, cfg: Mapping[str, Any], settings: Mapping[str, Any]) -> OwnData:
        """Its encoders in the languages of its directions: on the synthetic config, on the
        SYNTHETIC generator scaled up (its first items equal the default's), prepared and embedded
        by the workflow; else the run's."""
        languages = tuple(sorted({lang for d in settings["directions"] for lang in d.split("-")}))
        syn = settings["synthetic"]
        if cfg["dataset"]["source"] != "synthetic":
            return OwnData(encoders=settings["encoders"], languages=languages)
        name = f"synthetic-findings-{syn['n_items']}-{'-'.join(syn['languages'])}-s{syn['seed']}"
        dataset = {
            "name": name,
            "source": "synthetic",
            "options": {},
            "synthetic": {k: syn[k] for k in ("n_items", "seed", "image_size")},
        }
        return OwnData(settings["encoders"], languages, dataset, tuple(syn["languages"]))

    @classmethod
    def configure(cls, cfg: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        synthetic = cfg["dataset"]["source"] == "synthetic"
        own = cfg["dataset"].get("synthetic", {})
        s = {
            **cls.defaults(),
            "n_grid": [100, 200, 500, 1000, 2000, 5000] if synthetic else [100, 200, 300, 400, 500],
            "directions": ["en-de", "de-en"] if synthetic else list(cfg["directions"]),
            "encoders": (
                {
                    **{e: cfg["encoders"][e] for e in ("random", "minilm-en", "use-m") if e in cfg["encoders"]},
                    "char-ngram-1k": {"type": "char_ngram", "dim": 1024, "n": [2, 3, 4]},
                }
                if synthetic
                else list(cfg["encoders"])
            ),
            "synthetic": {
                "n_items": 10000,
                "languages": ["en", "de"],
                "seed": own.get("seed", 0),
                "image_size": own.get("image_size", 160),
            }
            if synthetic
            else None,
            **given,
        }
        if not isinstance(s["encoders"], dict):  # a list of the config's encoder ids
            missing = [e for e in s["encoders"] if e not in cfg["encoders"]]
            if missing:
                raise ConfigError(f"findings.sample_size.encoders: {missing} are not configured encoders")
            s["encoders"] = {e: cfg["encoders"][e] for e in s["encoders"]}
        if not synthetic and any(spec != cfg["encoders"].get(e) for e, spec in s["encoders"].items()):
            raise ConfigError(
                "findings.sample_size.encoders: on a real dataset only configured encoders "
                "(their cached embeddings) can be used"
            )
        if "baseline" not in given:  # the first random encoder among the analysis's
            random_encoders = [e for e, spec in s["encoders"].items() if spec.get("type") == "random"]
            s["baseline"] = random_encoders[0] if random_encoders else None
        return s

    def run(self, art: RunArtifacts, s: Mapping[str, Any]) -> Result:
        from .markdown import markdown_table

        directions, n_grid, seeds, baseline, k = s["directions"], s["n_grid"], s["seeds"], s["baseline"], art.k
        criterion = Criterion(agreement=s["min_agreement"], share=s["min_share"])
        meta = art.dataset_meta()
        items = art.items()
        texts = art.texts()
        image = art.image_lookup()
        if baseline is not None and baseline not in texts:
            raise InputError(f"findings sample size: baseline encoder {baseline!r} has no embeddings ({sorted(texts)})")
        max_n = min(_parallel_items(items, d) for d in directions) // 2
        grid = sorted(n for n in set(n_grid) if n <= max_n)
        dropped = sorted(n for n in set(n_grid) if n > max_n)
        if dropped:
            log.warning("sample size: N %s dropped: %s has at most %d items per side", dropped, meta.name, max_n)
        if len(grid) < 2:
            raise InputError(
                f"findings sample size: {meta.name} allows N <= {max_n}; fewer than 2 values of {sorted(n_grid)} remain"
            )
        per_enc = sample_size_metrics(items, texts, image, directions, grid, seeds, k=k, parallel=meta.parallel)
        stab = ranking_stability(per_enc, k, baseline=baseline, criterion=criterion)
        text = answer(
            stab,
            dataset=meta.name,
            synthetic=meta.synthetic,
            k=k,
            n_encoders=len(texts),
            n_seeds=len(seeds),
            directions=list(directions),
            baseline=baseline,
            criterion=criterion,
        )
        numbers = {
            "smallest_stable_n": smallest_reliable_n(stab, "stab_reliable_share", criterion),
            "smallest_valid_n": smallest_reliable_n(stab, "valid_reliable_share", criterion),
            "criterion": criterion.text(),
            "per_n": stab.set_index("n").to_dict(orient="index"),
            "mean_bkr": per_enc.groupby(["n", "encoder"])["bkr_recall"].mean().unstack().to_dict(orient="index"),
        }
        settings = dict(
            k=k,
            n_grid=grid,
            n_dropped=dropped,
            seeds=list(seeds),
            directions=list(directions),
            encoders=sorted(texts),
            baseline=baseline,
            dataset=meta.name,
            items_per_side_max=max_n,
        )
        means = per_enc.groupby(["n", "encoder"])[["xlr_r1", "xlr_recall", "bkr_recall"]].mean().reset_index()
        extra = "Mean metrics per N and encoder:\n\n" + markdown_table(means, 4)
        figure = (
            FIGURE_TITLE,
            lambda p, title: plot_sample_size(stab, per_enc, k, p, title, criterion),
        )
        return question_result(art, "sample_size", text, settings, numbers, stab, per_enc, figure, extra)


def _parallel_items(items: pd.DataFrame, direction: str) -> int:
    src, tgt = direction.split("-")
    return len(set(items.loc[items.lang == src, "item_id"]) & set(items.loc[items.lang == tgt, "item_id"]))


def sample_size_metrics(
    items: pd.DataFrame,
    texts: Mapping[str, Mapping[str, Lookup]],
    images: Lookup,
    directions: Iterable[str],
    n_grid: Iterable[int],
    seeds: Iterable[int],
    k: int,
    parallel: bool = True,
) -> pd.DataFrame:
    """XLR@1, XLR@k, XLR MRR and BkR@k of every encoder for every (N, direction, seed).

    Samples are drawn with :func:`backretrieval.data.sampling.draw_sample` (the pipeline's
    sampler) from ``items``; ``texts[encoder][lang]`` and ``images`` are embedding lookups.
    Returns a wide frame: n, direction, seed, encoder, xlr_r1, xlr_recall, xlr_mrr, bkr_recall.
    """
    import pandas as pd

    from ..data.sampling import draw_sample
    from ..evaluation.core import image_of_items, rows_of
    from .views import build_view

    if not parallel:
        raise InputError("sample size: XLR needs a parallel dataset (translations of the queries)")
    imgs = image_of_items(items)
    out = []
    grid = sorted({int(n) for n in n_grid})
    if not grid or grid[0] < 2:
        raise InputError(f"sample size: the N grid must hold integers >= 2, got {list(n_grid)}")
    for n in grid:
        for direction in directions:
            src, tgt = direction.split("-")
            for seed in seeds:
                sample = draw_sample(items, src, tgt, n, int(seed), parallel)
                v = build_view(sample, imgs, texts, direction)
                q_img = rows_of(images, v.query_images, "image features")
                t_img = rows_of(images, v.target_images, "image features")
                enc_inputs = {
                    e: {
                        "bkr_src": v.bkr_src[e],
                        "bkr_tgt": v.bkr_tgt[e],
                        "xlr_src": v.bkr_src[e],
                        "xlr_tgt": v.xlr_tgt[e],
                    }
                    for e in v.encoders
                }
                ranks: dict[str, dict[str, np.ndarray]] = {}
                res = evaluate_sample(
                    enc_inputs, None, q_img, t_img, k=k, full_bkr_ranks=False, ranks_out=ranks, with_corr=False
                )
                for e in v.encoders:
                    out.append(
                        dict(
                            n=n,
                            direction=direction,
                            seed=int(seed),
                            encoder=e,
                            xlr_r1=float(np.mean(ranks[e]["xlr"] == 1)),
                            xlr_recall=res[e]["xlr_recall"],
                            xlr_mrr=res[e]["xlr_mrr"],
                            bkr_recall=res[e]["bkr_recall"],
                        )
                    )
    return pd.DataFrame(out)


@dataclass(frozen=True)
class Criterion:
    """ "BkR orders the encoders reliably at N": in at least ``share`` of the samples (direction ×
    seed) at N, and at every larger N of the grid, at least ``agreement`` of the encoder pairs
    are ordered as the reference orders them (the mean over seeds at the largest N)."""

    agreement: float = 0.9
    share: float = 0.9

    def text(self) -> str:
        return (
            f">= {self.agreement:.0%} of encoder pairs ordered as at the largest N in >= "
            f"{self.share:.0%} of the samples (direction x seed), at that N and every larger N"
        )


def ranking_stability(
    df: pd.DataFrame, k: int, baseline: str | None = None, criterion: Criterion = Criterion()
) -> pd.DataFrame:
    """One row per N: agreement of each sample's BkR order with the reference orders at the
    largest N (BkR mean over seeds: ``stab_*``; XLR@k mean: ``valid_*``), Spearman of BkR with
    XLR@1 and XLR@k on the same sample, the share of samples meeting ``criterion``, and the
    mean BkR of the ``baseline`` (random) encoder next to k/N."""
    import pandas as pd

    from .views import agreement, mean_interval, pairwise_order_agreement

    n_max = int(df["n"].max())
    ref = df[df.n == n_max].groupby(["direction", "encoder"])[["bkr_recall", "xlr_recall"]].mean()
    out = []
    for n, g_n in df.groupby("n", sort=True):
        per_sample = []
        for (direction, _seed), g in g_n.groupby(["direction", "seed"], sort=True):
            g = g.sort_values("encoder")
            r = ref.loc[direction].reindex(g["encoder"])
            bkr = g["bkr_recall"].to_numpy()
            per_sample.append(
                dict(
                    stab_pairwise=pairwise_order_agreement(bkr, r["bkr_recall"].to_numpy()),
                    stab_kendall=_kendall(bkr, r["bkr_recall"].to_numpy()),
                    valid_pairwise=pairwise_order_agreement(bkr, r["xlr_recall"].to_numpy()),
                    xlr_pairwise=pairwise_order_agreement(g["xlr_recall"].to_numpy(), r["xlr_recall"].to_numpy()),
                    spearman_xlr1=agreement(bkr, g["xlr_r1"].to_numpy())["spearman"],
                    spearman_xlr=agreement(bkr, g["xlr_recall"].to_numpy())["spearman"],
                )
            )
        ps = pd.DataFrame(per_sample)
        row: dict = {"n": int(n), "n_samples": len(ps), "chance_k_over_n": k / int(n)}
        for col in ps.columns:
            mi = mean_interval(ps[col].to_numpy())
            row[f"{col}_mean"], row[f"{col}_p2.5"], row[f"{col}_p97.5"] = mi["mean"], mi["p2.5"], mi["p97.5"]
        row["stab_reliable_share"] = float(np.mean(ps["stab_pairwise"] >= criterion.agreement))
        row["valid_reliable_share"] = float(np.mean(ps["valid_pairwise"] >= criterion.agreement))
        if baseline is not None:
            row["baseline_bkr"] = float(g_n[g_n.encoder == baseline]["bkr_recall"].mean())
        row["mean_bkr"] = float(g_n[g_n.encoder != baseline]["bkr_recall"].mean())
        out.append(row)
    return pd.DataFrame(out)


def _kendall(x: np.ndarray, y: np.ndarray) -> float:
    import scipy.stats as st

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(st.kendalltau(x, y).statistic)


def smallest_reliable_n(
    stability: pd.DataFrame, column: str = "stab_reliable_share", criterion: Criterion = Criterion()
) -> int | None:
    """The smallest N of the grid from which on (that N and every larger one) ``column`` is
    at least ``criterion.share``; None when even the largest N misses it."""
    ok = (stability.sort_values("n")[column] >= criterion.share).to_numpy()
    ns = stability.sort_values("n")["n"].to_numpy()
    best = None
    for i in range(len(ns) - 1, -1, -1):
        if not ok[i]:
            break
        best = int(ns[i])
    return best


# ---------------------------------------------------------------------------------------------
# figure and answer


#: the figure's title after the dataset (:func:`~.result.question_result`)
FIGURE_TITLE = "BkR's encoder ranking vs N"


def plot_sample_size(
    stability: pd.DataFrame, per_encoder: pd.DataFrame, k: int, out_base, title: str, criterion: Criterion = Criterion()
) -> list:
    """Three panels over N (log scale): ranking stability / validity (pairwise order agreement,
    mean and 2.5–97.5 % of samples), Spearman of BkR with XLR@1 and XLR@k, and every encoder's
    mean BkR with the chance level k/N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

    from ..reporting.figures import finish_figure, legend_outside, series_styles

    def plain(v: float, _pos=None) -> str:
        # 100, 200, 0.05: a number as written, not 2×10²
        return f"{v:g}"

    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 3, figsize=(14.0, 4.4))
    n = stability["n"]
    for ax, cols in (
        (axes[0], (("stab_pairwise", "vs BkR order at largest N"), ("valid_pairwise", "vs XLR order at largest N"))),
        (axes[1], (("spearman_xlr1", "Spearman(BkR, XLR@1)"), ("spearman_xlr", f"Spearman(BkR, XLR@{k})"))),
    ):
        for col, label in cols:
            ax.plot(n, stability[f"{col}_mean"], marker="o", ms=3, label=label)
            ax.fill_between(n, stability[f"{col}_p2.5"], stability[f"{col}_p97.5"], alpha=0.2)
        legend_outside(ax, where="below", title="mean; band: 2.5–97.5 % of samples", title_fontsize=7)
    axes[0].axhline(criterion.agreement, color="grey", lw=0.8, ls="--")
    axes[0].set_ylabel("pairwise order agreement")
    axes[0].set_title(f"ranking stability (dashed: criterion {criterion.agreement:.0%})", fontsize=9)
    axes[1].set_ylabel("correlation across encoders")
    axes[1].set_title("agreement with XLR on the same sample", fontsize=9)
    means = per_encoder.groupby(["n", "encoder"])["bkr_recall"].mean().reset_index()
    styles = series_styles(sorted(means["encoder"].unique()))
    for enc, g in means.groupby("encoder", sort=True):
        color, marker, ls = styles[enc]
        axes[2].plot(g["n"], g["bkr_recall"], marker=marker, ms=3.5, color=color, ls=ls, lw=1.2, label=enc)
    axes[2].plot(n, k / n, color="black", ls=":", label="k/N (chance)")
    axes[2].set_yscale("log")
    axes[2].yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes[2].yaxis.set_major_formatter(FuncFormatter(plain))
    axes[2].yaxis.set_minor_locator(NullLocator())
    axes[2].set_ylabel(f"BkR@{k} (mean over samples)")
    axes[2].set_title("every encoder's BkR", fontsize=9)
    legend_outside(axes[2], where="right", fontsize=6)
    grid = sorted(int(x) for x in n.unique())
    for ax in axes:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(grid))
        ax.xaxis.set_major_formatter(FuncFormatter(plain))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("N")
    return finish_figure(fig, out_base, title)


def answer(
    stability: pd.DataFrame,
    *,
    dataset: str,
    synthetic: bool,
    k: int,
    n_encoders: int,
    n_seeds: int,
    directions: list[str],
    baseline: str | None,
    criterion: Criterion = Criterion(),
) -> str:
    """The generated answer paragraph (from the numbers of ``stability``)."""
    st_ = stability.sort_values("n").set_index("n")
    n_stab = smallest_reliable_n(stability, "stab_reliable_share", criterion)
    n_valid = smallest_reliable_n(stability, "valid_reliable_share", criterion)
    syn = "SYNTHETIC data" if synthetic else "real data"
    grid = ", ".join(str(int(x)) for x in st_.index)
    n_max = int(st_.index.max())
    parts = [
        f"On {dataset} ({syn}; {n_encoders} encoders, directions {', '.join(directions)}, {n_seeds} seeds per N, "
        f"N in {{{grid}}}) with the criterion '{criterion.text()}':",
        (
            f"BkR's encoder order is stable from N = {n_stab} on"
            if n_stab is not None
            else f"BkR's encoder order is not stable even at N = {n_max}"
        ),
        "and it matches the XLR order at the largest N"
        + (f" from N = {n_valid} on." if n_valid is not None else " at no N of the grid."),
    ]
    if n_stab == n_max:
        # the largest N is also the reference, so meeting the criterion there says little
        pairs = n_encoders * (n_encoders - 1) // 2
        parts.append(
            f"That is: no N below the reference N = {n_max} met the criterion; with {n_encoders} encoders "
            f"({pairs} pairs) a sample meets it only if it orders at least {math.ceil(criterion.agreement * pairs)} "
            f"of the {pairs} pairs as the reference does, so read the mean agreement below rather than this threshold."
        )
    lo, hi = st_.iloc[0], st_.iloc[-1]
    parts.append(
        f"At N = {int(st_.index[0])} a sample orders {lo['stab_pairwise_mean']:.0%} of encoder pairs as the largest N does "
        f"(2.5 % of samples: {lo['stab_pairwise_p2.5']:.0%}), at N = {n_max} {hi['stab_pairwise_mean']:.0%}; "
        f"agreement with the XLR order goes from {lo['valid_pairwise_mean']:.0%} to {hi['valid_pairwise_mean']:.0%}."
    )
    parts.append(
        f"BkR's Spearman correlation with XLR@1 on the same sample is {lo['spearman_xlr1_mean']:.2f} at the smallest and "
        f"{hi['spearman_xlr1_mean']:.2f} at the largest N (with XLR@{k}: {lo['spearman_xlr_mean']:.2f} and "
        f"{hi['spearman_xlr_mean']:.2f})."
    )
    if baseline is not None and "baseline_bkr" in st_:
        ratios = st_["baseline_bkr"] / st_["chance_k_over_n"]
        parts.append(
            f"The random encoder scores BkR at {ratios.min():.2f}-{ratios.max():.2f} times its chance level k/N "
            f"(k/N = {lo['chance_k_over_n']:.3f} at N = {int(st_.index[0])}, {hi['chance_k_over_n']:.4f} at N = {n_max}), "
            f"while the other encoders average {lo['mean_bkr']:.3f} and {hi['mean_bkr']:.3f}."
        )
    parts.append(
        "Seeds re-split one item pool (at the largest N they reuse nearly all items), so the spreads describe "
        "sampling variation within this dataset, not between datasets."
    )
    return " ".join(parts)
