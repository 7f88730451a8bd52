"""Analysis ``image_quality`` (question 2): how good must the image side be? (the paper's
future work)

On the same samples, the image features are varied — other backbones (EfficientNet-Lite0 vs
Lite2, ResNet-50 where features exist) and seeded, controlled degradations of one backbone
(:func:`degrade`: Gaussian noise, random projection to fewer dimensions, shuffled rows as the
floor) — and for each variant this module measures

* the image side's own quality: same-concept image→image precision@k (:func:`concept_precision`;
  on the SYNTHETIC data, concept = the ground-truth kind of a scene's main object), on the
  synthetic data the BkR of a perfect text encoder (:func:`scene_oracle_targets`: step 1
  returns the target whose ground-truth scene is most similar to the query's) and, where no
  ground truth exists (real data), the BkR of the best encoder by XLR as a stand-in;
* BkR's agreement with XLR across the text encoders (Spearman, Kendall, pairwise order).

Why not "the query's own translation" as the perfect encoder: BkR's targets are, by the
paper's protocol, disjoint from the queries by item and by image, so the translation is not
among them; were it retrieved, its image would be the query's own image and every query would
score rank 1 (a ceiling of 1 for any image side). The oracle above is the best a perfect text
encoder can do on BkR's target set. (A bound over *all* step-1 choices — the share of queries
whose image is in the top k of some target image — is no measure of quality: N targets cover
the N sources about k times each, so it is close to 1 even for shuffled features.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..metrics import BkrImageIndex, backretrieve, normalize, recall_at_k, xlr_ranks
from .analysis import Analysis, Question, Setting
from .answers import question_files, question_result
from .result import Result

if TYPE_CHECKING:
    import pandas as pd

    from ..evaluation.run_artifacts import RunArtifacts
    from .views import Lookup, SampleView

#: the offline EfficientNet-Lite variants: a config on one of them compares the other
LITE_VARIANTS = ("lite0", "lite2")


def degradations(s: Mapping[str, Any]) -> list[tuple[str, float | int | None]]:
    """The degraded variants of the settings' ``noise``, ``project`` and ``shuffle``."""
    return (
        [("noise", float(x)) for x in s["noise"]]
        + [("project", int(x)) for x in s["project"]]
        + ([("shuffle", None)] if s["shuffle"] else [])
    )


class ImageQuality(Analysis):
    """image_quality.{csv,md,json}, image_quality.samples.csv + figures/image_quality.*: every
    backbone of the run plus degraded copies of the ``base`` backbone, on the same samples.
    Defaults: the first 5 seeds of every direction (a few minutes on 2 cores); a config whose
    backbone is an offline EfficientNet-Lite compares the other variant (``backbones``)."""

    name = "image_quality"
    question = Question(
        2,
        "How good must the image side be?",
        "How does BkR's agreement with XLR depend on the quality of the image features?",
    )
    inputs = ("samples", "image", "backbones", "text")
    settings = (
        Setting("max_seeds", 5, "only the first seeds of each samples file (none: every seed)", type=int, metavar="N"),
        Setting("noise", [0.5, 1.0, 2.0, 4.0], "Gaussian noise levels (noise/signal norm)", type=float, nargs="*"),
        Setting("project", [128, 16, 4], "random projections to these dimensions", type=int, nargs="*"),
        Setting("shuffle", True, "add shuffled features (the floor)"),
        Setting("seed", 0, "seed of the degradations", type=int),
        Setting(
            "base",
            None,
            "the backbone whose features are degraded (the config's image_backbone; default: the first --image)",
            config=False,
        ),
        Setting("backbones", {}, "the other backbones compared (their params entries)", command=False),
    )
    files = question_files("image_quality")
    figures = ("image_quality",)

    @classmethod
    def configure(cls, cfg: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        base_spec = dict(cfg["backbones"][cfg["image_backbone"]])
        extra: dict[str, dict] = {}
        if base_spec.get("type") == "efficientnet-lite":  # the other offline EfficientNet-Lite variant
            for v in LITE_VARIANTS:
                if v != str(base_spec.get("variant", "lite0")):
                    extra[f"effnet-{v}"] = {**base_spec, "variant": v}
        return {**cls.defaults(), "base": cfg["image_backbone"], "backbones": extra, **given}

    def run(self, art: RunArtifacts, s: Mapping[str, Any]) -> Result:
        from .views import iter_views

        k, seed, max_seeds = art.k, s["seed"], s["max_seeds"]
        base = s["base"] if s["base"] is not None else next(iter(art.image_files), None)
        image_files = art.image_files
        if base not in image_files:
            raise InputError(
                f"findings image quality: base backbone {base!r} is not among the image files {sorted(image_files)}"
            )
        meta = art.dataset_meta()
        items = art.items()
        texts = art.texts()
        variants: dict[str, Lookup] = {name: art.image_lookup(name) for name in image_files}
        base_index, base_emb = variants[base]
        degr = degradations(s)
        for i, (kind, level) in enumerate(degr):
            name = f"{base}:{variant_name(kind, level)}"
            variants[name] = (base_index, degrade(base_emb, kind, level, seed + i))
        scenes = None
        concept = None
        if meta.synthetic and (Path(art.dataset) / "scenes.jsonl").is_file():
            from ..data.synthetic import load_scenes

            scenes = load_scenes(art.dataset)
            concept = _concept_precisions(items, scenes, variants, k)
        samples = art.sample_list(max_seeds)
        per_enc, per_sample = image_quality_metrics(iter_views(samples, items, texts), variants, k=k, scenes=scenes)
        order = [n for n in image_files] + [n for n in variants if n not in image_files]
        summary = summarize_image_quality(per_enc, per_sample, k, concept, order=order)
        n = int(per_sample["n"].iloc[0])
        text = answer(summary, base=base, dataset=meta.name, synthetic=meta.synthetic, k=k, n=n, n_encoders=len(texts))
        settings = dict(
            k=k,
            N=n,
            samples=len(samples),
            max_seeds_per_direction=max_seeds,
            seed=seed,
            encoders=sorted(texts),
            backbones=sorted(image_files),
            base=base,
            degradations=[variant_name(kd, lv) for kd, lv in degr],
        )
        numbers = {"per_variant": summary.set_index("variant").to_dict(orient="index")}
        samples = per_enc.merge(per_sample, on=["variant", "direction", "seed"], how="left")
        figure = (FIGURE_TITLE, lambda p, title: plot_image_quality(summary, p, title))
        return question_result(art, "image_quality", text, settings, numbers, summary, samples, figure)


def _concept_precisions(
    items: pd.DataFrame, scenes: Mapping[str, Mapping], variants: Mapping[str, Lookup], k: int
) -> dict[str, float]:
    """Same-concept precision@k of every variant over all images of the dataset (SYNTHETIC:
    concept = kind of the scene's main object)."""
    first = items.drop_duplicates("image_id")
    label_of = {img: scene_main_kind(scenes[item]) for img, item in zip(first["image_id"], first["item_id"])}
    out = {}
    for name, (index, emb) in variants.items():
        ids = [i for i in sorted(index, key=lambda i: index[i]) if i in label_of]
        feats = emb[[index[i] for i in ids]]
        out[name] = concept_precision(feats, np.array([label_of[i] for i in ids]), k)
    return out


DEGRADATION_KINDS = ("noise", "project", "shuffle")


# ---------------------------------------------------------------------------------------------
# variants of the image features


def degrade(features: np.ndarray, kind: str, level: float | int | None, seed: int) -> np.ndarray:
    """A seeded degradation of an image feature matrix (one row per image), float32.

    * ``noise``: rows are L2-normalised, then ``level · z / sqrt(d)`` is added, z ~ N(0, I):
      the noise has about ``level`` times the norm of the signal;
    * ``project``: normalised rows times a d × ``level`` Gaussian matrix (a random projection
      to ``level`` dimensions, Johnson–Lindenstrauss);
    * ``shuffle``: the rows are permuted, so every image gets another image's features — the
      floor: BkR then scores chance (k/N).

    Applied to the whole matrix once, so an image has the same degraded vector in every sample.
    """
    x = np.asarray(features)
    if x.ndim != 2 or x.shape[0] < 2:
        raise InputError(f"degrade: expected a feature matrix with >= 2 rows, got shape {x.shape}")
    rng = np.random.default_rng(seed)
    if kind == "shuffle":
        return np.ascontiguousarray(x[rng.permutation(x.shape[0])], dtype=np.float32)
    xn = normalize(x.astype(np.float64))
    d = xn.shape[1]
    if kind == "noise":
        if level is None or not float(level) >= 0:
            raise InputError(f"degrade noise: level must be a number >= 0, got {level!r}")
        return (xn + float(level) * rng.standard_normal(xn.shape) / np.sqrt(d)).astype(np.float32)
    if kind == "project":
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or not 1 <= level:
            raise InputError(f"degrade project: level must be a positive number of dimensions, got {level!r}")
        return (xn @ rng.standard_normal((d, int(level)))).astype(np.float32)
    raise InputError(f"degrade: kind must be one of {DEGRADATION_KINDS}, got {kind!r}")


def variant_name(kind: str, level: float | int | None) -> str:
    """Stable name of a degradation, e.g. ``noise-1``, ``project-16``, ``shuffle``."""
    if kind == "shuffle":
        return "shuffle"
    return f"{kind}-{level:g}" if isinstance(level, float) else f"{kind}-{level}"


# ---------------------------------------------------------------------------------------------
# the image side's own quality


def concept_precision(features: np.ndarray, labels: np.ndarray, k: int = 10, block_rows: int = 512) -> float:
    """Same-concept image→image retrieval: the mean over images of the share of its k most
    similar *other* images (cosine; ties → lower index) that have its label."""
    labels = np.asarray(labels)
    x = normalize(np.asarray(features))
    n = x.shape[0]
    if labels.shape != (n,):
        raise InputError(f"concept precision: {n} feature rows but {labels.shape} labels")
    if not 1 <= k < n:
        raise InputError(f"concept precision: k must be in [1, {n - 1}], got {k}")
    _, codes = np.unique(labels, return_inverse=True)
    codes = codes.ravel()
    hits = 0
    for s in range(0, n, block_rows):
        e = min(n, s + block_rows)
        scores = x[s:e] @ x.T
        scores[np.arange(e - s), np.arange(s, e)] = -np.inf  # leave the image itself out
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        hits += int(np.sum(codes[order] == codes[s:e, None]))
    return hits / (n * k)


def scene_main_kind(scene: Mapping) -> str:
    """The concept of a SYNTHETIC scene: the kind of its main object."""
    return str(scene["objects"][0]["kind"])


def _scene_arrays(scenes: list[Mapping]) -> dict[str, np.ndarray]:
    """Attribute codes of at most two object groups per scene (as the generator makes them)."""
    n = len(scenes)
    a = {f: np.full((n, 2), -1, dtype=np.int64) for f in ("kind", "color", "count", "size", "position")}
    bg = np.empty(n, dtype=object)
    present = np.zeros((n, 2), dtype=bool)
    vocab: dict[str, dict[str, int]] = {f: {} for f in ("kind", "color", "size", "position", "bg")}
    for i, sc in enumerate(scenes):
        objs = sc["objects"]
        if not 1 <= len(objs) <= 2:
            raise InputError(f"scene similarity matrix: scenes have 1 or 2 object groups, got {len(objs)}")
        bg[i] = vocab["bg"].setdefault(sc["background"], len(vocab["bg"]))
        for g, o in enumerate(objs):
            present[i, g] = True
            a["count"][i, g] = int(o["count"])
            for f in ("kind", "color", "size", "position"):
                a[f][i, g] = vocab[f].setdefault(o[f], len(vocab[f]))
    a["bg"] = bg.astype(np.int64)
    a["present"] = present
    return a


def scene_similarity_matrix(scenes_a: list[Mapping], scenes_b: list[Mapping]) -> np.ndarray:
    """``data.synthetic.scene_similarity`` of every pair (rows: scenes_a), vectorised for scenes
    of one or two object groups (the generator's): equal to it up to rounding (tested)."""
    arr = _scene_arrays(list(scenes_a) + list(scenes_b))  # one vocabulary for both sides
    na = len(scenes_a)
    A = {f: v[:na] for f, v in arr.items()}
    B = {f: v[na:] for f, v in arr.items()}
    from ..data.synthetic.scenes import MAX_COUNT

    def obj_sim(ga: int, gb: int) -> np.ndarray:
        ca, cb = A["count"][:, ga, None], B["count"][None, :, gb]
        count_sim = 1.0 - np.minimum(np.abs(ca - cb), MAX_COUNT - 1) / (MAX_COUNT - 1)
        return (
            0.5 * (A["kind"][:, ga, None] == B["kind"][None, :, gb])
            + 0.25 * (A["color"][:, ga, None] == B["color"][None, :, gb])
            + 0.1 * count_sim
            + 0.1 * (A["size"][:, ga, None] == B["size"][None, :, gb])
            + 0.05 * (A["position"][:, ga, None] == B["position"][None, :, gb])
        )

    two_a, two_b = A["present"][:, 1][:, None], B["present"][:, 1][None, :]
    s00, s01, s10, s11 = obj_sim(0, 0), obj_sim(0, 1), obj_sim(1, 0), obj_sim(1, 1)
    one_one = s00
    one_two = np.maximum(s00, 0.75 * s01) / 1.25
    two_one = np.maximum(s00, 0.75 * s10) / 1.25
    two_two = np.maximum(s00 + 0.5 * s11, 0.75 * s01 + 0.75 * s10) / 1.5
    objects = np.where(two_a, np.where(two_b, two_two, two_one), np.where(two_b, one_two, one_one))
    sim = 0.25 * (A["bg"][:, None] == B["bg"][None, :]) + 0.75 * objects
    return np.clip(sim, 0.0, 1.0)


def scene_oracle_targets(query_scenes: list[Mapping], target_scenes: list[Mapping]) -> np.ndarray:
    """Step 1 of a perfect text encoder (SYNTHETIC data only): for every query the target whose
    ground-truth scene is most similar to the query's (ties → lowest index)."""
    return np.argmax(scene_similarity_matrix(query_scenes, target_scenes), axis=1)


# ---------------------------------------------------------------------------------------------
# the analysis


def image_quality_metrics(
    views: Iterable[SampleView],
    variants: Mapping[str, Lookup],
    k: int,
    scenes: Mapping[str, Mapping] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """BkR of every encoder under every image variant, on the same samples.

    Returns (per encoder: variant, direction, seed, encoder, xlr_recall, bkr_recall;
    per sample: variant, direction, seed, n[, bkr_oracle]). Step 1 (text
    only) is computed once per encoder and sample and shared by all variants; XLR (text only)
    is the same for every variant. ``scenes`` (item id → scene, SYNTHETIC data): adds the
    perfect-text-encoder BkR ``bkr_oracle``.
    """
    import pandas as pd

    from ..evaluation.core import rows_of

    if not variants:
        raise InputError("image quality: no image variants given")
    enc_rows, side_rows = [], []
    for v in views:
        t_star, xlr_r = {}, {}
        for enc in v.encoders:
            t_star[enc] = backretrieve(v.bkr_src[enc], v.bkr_tgt[enc])
            if enc in v.xlr_tgt:
                xlr_r[enc] = recall_at_k(xlr_ranks(v.bkr_src[enc], v.xlr_tgt[enc]), k)
        oracle = None
        if scenes is not None:
            try:
                oracle = scene_oracle_targets([scenes[i] for i in v.queries], [scenes[i] for i in v.bkr_targets])
            except KeyError as exc:
                raise InputError(f"scenes: no ground-truth scene for item {exc.args[0]!r}") from exc
        for name in sorted(variants):
            q_img = rows_of(variants[name], v.query_images, f"image features {name}")
            t_img = rows_of(variants[name], v.target_images, f"image features {name}")
            index = BkrImageIndex.build(q_img, t_img, k=k)
            side = dict(variant=name, direction=v.direction, seed=v.seed, n=len(v.queries))
            if oracle is not None:
                side["bkr_oracle"] = float(np.mean(index.hits(oracle)))
            side_rows.append(side)
            for enc in v.encoders:
                enc_rows.append(
                    dict(
                        variant=name,
                        direction=v.direction,
                        seed=v.seed,
                        encoder=enc,
                        xlr_recall=xlr_r.get(enc, float("nan")),
                        bkr_recall=float(np.mean(index.hits(t_star[enc]))),
                    )
                )
    return pd.DataFrame(enc_rows), pd.DataFrame(side_rows)


def summarize_image_quality(
    per_encoder: pd.DataFrame,
    per_sample: pd.DataFrame,
    k: int,
    concept: Mapping[str, float] | None = None,
    order: list[str] | None = None,
) -> pd.DataFrame:
    """One row per image variant: its own quality (concept precision@k where given, the
    perfect-encoder BkR where scenes exist, the BkR of the best encoder by mean XLR) and BkR's
    agreement with XLR across encoders per (direction, seed) — mean and 2.5–97.5 % spread over
    the samples — plus the mean BkR per encoder."""
    import pandas as pd

    from .views import agreement_table, mean_interval

    agree = agreement_table(per_encoder, ["variant", "direction", "seed"], "bkr_recall", "xlr_recall")
    best = per_encoder.groupby("encoder")["xlr_recall"].mean().idxmax()
    out = []
    for name in order or sorted(per_sample["variant"].unique()):
        a = agree[agree.variant == name]
        s = per_sample[per_sample.variant == name]
        row: dict = {"variant": name}
        if concept is not None:
            row["concept_precision"] = concept.get(name, float("nan"))
        if "bkr_oracle" in s:
            row["bkr_oracle"] = float(s["bkr_oracle"].mean())
        row["best_encoder"] = best
        sel = (per_encoder.variant == name) & (per_encoder.encoder == best)
        row["bkr_best_encoder"] = float(per_encoder.loc[sel, "bkr_recall"].mean())
        row["chance_k_over_n"] = float(np.mean(k / s["n"]))
        for stat in ("spearman", "kendall", "pairwise"):
            mi = mean_interval(a[stat].to_numpy())
            row[f"{stat}_mean"], row[f"{stat}_p2.5"], row[f"{stat}_p97.5"] = mi["mean"], mi["p2.5"], mi["p97.5"]
        row["n_samples"] = int(len(a))
        means = per_encoder[per_encoder.variant == name].groupby("encoder")["bkr_recall"].mean()
        row.update({f"bkr[{e}]": float(val) for e, val in means.items()})
        out.append(row)
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------------------------
# figure and answer


#: the figure's title after the dataset (:func:`~.result.question_result`)
FIGURE_TITLE = "image quality vs BkR's agreement with XLR"


def plot_image_quality(summary: pd.DataFrame, out_base, title: str) -> list:
    """Image quality (x) vs BkR's Spearman agreement with XLR (y, mean and 2.5–97.5 % of the
    samples), one point per image variant; one panel per available quality measure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..reporting.figures import finish_figure, legend_outside, series_styles

    xs = [
        c for c in ("concept_precision", "bkr_oracle", "bkr_best_encoder") if c in summary and summary[c].notna().any()
    ]
    labels = {
        "concept_precision": "same-concept image precision@k",
        "bkr_oracle": "BkR of a perfect text encoder",
        "bkr_best_encoder": "BkR of the best encoder (by XLR)",
    }
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, len(xs), figsize=(4.2 * len(xs) + 1.8, 3.8), squeeze=False)
    # each variant by its colour and marker, named in one key right of the panels: names
    # beside the points printed over each other where variants score alike
    styles = series_styles(list(summary["variant"]))
    for ax, x in zip(axes.flat, xs):
        for _, r in summary.iterrows():
            color, marker, _ = styles[r["variant"]]
            y = r["spearman_mean"]
            err = [[y - r["spearman_p2.5"]], [r["spearman_p97.5"] - y]]
            ax.errorbar([r[x]], [y], yerr=err, fmt=marker, ms=5, capsize=2, color=color, alpha=0.9, label=r["variant"])
        ax.set_xlabel(labels[x])
        ax.set_ylabel("Spearman(BkR, XLR) across encoders")
        ax.set_ylim(-1.05, 1.05)
    legend_outside(axes.flat[-1], where="right", fontsize=6, title="image variant (bar: 2.5–97.5 %)", title_fontsize=6)
    return finish_figure(fig, out_base, title)


def answer(
    summary: pd.DataFrame,
    *,
    base: str,
    dataset: str,
    synthetic: bool,
    k: int,
    n: int,
    n_encoders: int,
    tolerance: float = 0.1,
) -> str:
    """The generated answer paragraph (from the numbers of ``summary``)."""
    s = summary.set_index("variant")
    b = s.loc[base]
    syn = "SYNTHETIC data (numbers say nothing about real images)" if synthetic else "real data"
    quality = (
        "concept_precision" if "concept_precision" in s and s["concept_precision"].notna().any() else "bkr_best_encoder"
    )
    qlabel = {
        "concept_precision": f"same-concept image precision@{k}",
        "bkr_best_encoder": f"BkR of the best encoder by XLR ({b['best_encoder']})",
    }[quality]

    def q(v: str) -> str:
        return f"{s.loc[v, quality]:.2f}"

    parts = [
        f"On {dataset} ({syn}; {n_encoders} text encoders, N={n}, {int(b['n_samples'])} samples = direction x seed), "
        f"BkR with the pipeline's image features ({base}) agrees with XLR across encoders at a mean Spearman rho of "
        f"{b['spearman_mean']:.2f} (2.5-97.5 % of samples {b['spearman_p2.5']:.2f} to {b['spearman_p97.5']:.2f}; "
        f"pairwise order {b['pairwise_mean']:.2f}); its {qlabel} is {q(base)}"
        + (f"; a perfect text encoder would reach BkR {b['bkr_oracle']:.2f}" if "bkr_oracle" in s else "")
        + (
            f", the best encoder by XLR ({b['best_encoder']}) reaches {b['bkr_best_encoder']:.2f}"
            if quality != "bkr_best_encoder"
            else ""
        )
        + "."
    ]
    others = [v for v in s.index if v != base and not v.startswith(("noise", "project", "shuffle"))]
    for v in others:
        parts.append(f"{v}: {qlabel} {q(v)}, rho {s.loc[v, 'spearman_mean']:.2f}.")
    kept = [v for v in s.index if s.loc[v, "spearman_mean"] >= b["spearman_mean"] - tolerance]
    lost = [v for v in s.index if v not in kept]
    if lost:
        worst_kept = min(kept, key=lambda v: s.loc[v, quality])
        best_lost = max(lost, key=lambda v: s.loc[v, quality])
        parts.append(
            f"Agreement stays within {tolerance} of the base down to a {qlabel} of {q(worst_kept)} ({worst_kept}); "
            f"the best-quality variant that loses more is {best_lost} ({qlabel} {q(best_lost)}, rho "
            f"{s.loc[best_lost, 'spearman_mean']:.2f})."
        )
    else:
        parts.append(f"Every variant keeps rho within {tolerance} of the base.")
    if "shuffle" in s.index:
        sh = s.loc["shuffle"]
        bkr_cols = [c for c in s.columns if c.startswith("bkr[")]
        mean_bkr = float(np.nanmean([sh[c] for c in bkr_cols])) if bkr_cols else float("nan")
        parts.append(
            f"With shuffled features (the floor) BkR is at chance (mean {mean_bkr:.3f} vs k/N = {sh['chance_k_over_n']:.3f}) "
            f"and rho drops to {sh['spearman_mean']:.2f}."
        )
    parts.append(
        "Samples of one direction re-split the same items, so the spreads describe variation, not independent replicates."
    )
    return " ".join(parts)
