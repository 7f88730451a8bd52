"""One seed's sample of one direction as arrays (the input of the findings analyses), built
from a prepared ``items`` table, the seeded samples and embedding lookups; plus the
agreement statistics the analyses share (metric vs XLR across encoders)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
import scipy.stats as st

from ..data.sampling import Sample
from ..errors import InputError
from ..evaluation.core import Lookup, image_of_items, rows_of

log = logging.getLogger("backretrieval")


@dataclass(frozen=True)
class SampleView:
    """The arrays of one (direction, seed) sample.

    ``bkr_src[e]``/``bkr_tgt[e]``: encoder e's query texts and (non-matching) target texts;
    ``xlr_tgt[e]``: the queries' translations (row i of bkr_src ↔ row i), empty for
    non-parallel data; image ids of queries and targets; item ids (for ground truth).
    """

    direction: str
    seed: int
    queries: list[str]
    bkr_targets: list[str]
    query_images: list[str]
    target_images: list[str]
    bkr_src: dict[str, np.ndarray]
    bkr_tgt: dict[str, np.ndarray]
    xlr_tgt: dict[str, np.ndarray]

    @property
    def encoders(self) -> list[str]:
        return sorted(self.bkr_src)


def build_view(
    sample: Sample,
    images: Mapping[str, Mapping[str, str]],
    texts: Mapping[str, Mapping[str, Lookup]],
    direction: str | None = None,
) -> SampleView:
    """The view of one sample; ``texts[encoder][lang]`` are embedding lookups."""
    src, tgt = sample.src_lang, sample.tgt_lang
    d = direction or f"{src}-{tgt}"
    try:
        q_img = [images[src][i] for i in sample.queries]
        t_img = [images[tgt][i] for i in sample.bkr_targets]
    except KeyError as exc:
        raise InputError(f"sample {d} seed {sample.seed}: item {exc.args[0]!r} is not in the dataset") from exc
    bkr_src, bkr_tgt, xlr_tgt = {}, {}, {}
    for enc in sorted(texts):
        by_lang = texts[enc]
        if src not in by_lang or tgt not in by_lang:
            raise InputError(f"encoder {enc}: embeddings of {src} and {tgt} are needed for {d}")
        bkr_src[enc] = rows_of(by_lang[src], sample.queries, f"{enc}/{src}")
        bkr_tgt[enc] = rows_of(by_lang[tgt], sample.bkr_targets, f"{enc}/{tgt}")
        if sample.xlr_targets is not None:
            xlr_tgt[enc] = rows_of(by_lang[tgt], sample.xlr_targets, f"{enc}/{tgt}")
    return SampleView(
        d, int(sample.seed), list(sample.queries), list(sample.bkr_targets), q_img, t_img, bkr_src, bkr_tgt, xlr_tgt
    )


def iter_views(
    samples: Iterable[Sample], items: pd.DataFrame, texts: Mapping[str, Mapping[str, Lookup]]
) -> Iterator[SampleView]:
    """Views of ``samples`` one at a time (the arrays of all samples would not fit in memory)."""
    imgs = image_of_items(items)
    samples = list(samples)
    for i, s in enumerate(samples, start=1):
        log.info("sample %d/%d: %s-%s seed %d", i, len(samples), s.src_lang, s.tgt_lang, s.seed)
        yield build_view(s, imgs, texts)


# ---------------------------------------------------------------------------------------------
# agreement of a metric with XLR across encoders


def pairwise_order_agreement(metric: np.ndarray, reference: np.ndarray) -> float:
    """Share of model pairs that ``metric`` orders as ``reference`` does (pairs tied in the
    reference are left out; a tie in ``metric`` on an untied pair counts as half)."""
    metric, reference = np.asarray(metric, float), np.asarray(reference, float)
    if metric.shape != reference.shape:
        raise InputError("pairwise order agreement: metric and reference must have the same length")
    agree, total = 0.0, 0
    for i, j in combinations(range(len(metric)), 2):
        r = np.sign(reference[i] - reference[j])
        if r == 0:
            continue
        m = np.sign(metric[i] - metric[j])
        agree += 1.0 if m == r else (0.5 if m == 0 else 0.0)
        total += 1
    return agree / total if total else float("nan")


def agreement(x: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Spearman, Pearson, Kendall tau-b and pairwise-order agreement of ``x`` with
    ``reference`` across models (NaN where a side is constant)."""
    x, y = np.asarray(x, float), np.asarray(reference, float)
    if len(x) < 3:
        raise InputError(f"agreement across encoders needs >= 3 encoders, got {len(x)}")
    const = np.ptp(x) == 0 or np.ptp(y) == 0
    nan = float("nan")
    return {
        "spearman": nan if const else float(st.spearmanr(x, y).statistic),
        "pearson": nan if const else float(st.pearsonr(x, y).statistic),
        "kendall": nan if const else float(st.kendalltau(x, y).statistic),
        "pairwise": pairwise_order_agreement(x, y),
    }


def agreement_table(df: pd.DataFrame, groups: list[str], metric: str, reference: str) -> pd.DataFrame:
    """Per group (e.g. variant × direction × seed): :func:`agreement` of ``metric`` with
    ``reference`` across encoders. ``df`` is wide: one row per (group..., encoder)."""
    out = []
    for key, g in df.groupby(groups, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        out.append(
            {**dict(zip(groups, key)), **agreement(g[metric].to_numpy(), g[reference].to_numpy()), "n_encoders": len(g)}
        )
    return pd.DataFrame(out)


def mean_interval(values: np.ndarray) -> dict[str, float]:
    """Mean and the 2.5 / 97.5 percentiles of ``values`` (NaNs dropped) and their count —
    a description of the spread over samples, not a confidence interval (the seeds of one
    direction re-split the same items and are not independent replicates)."""
    v = np.asarray(values, float)
    v = v[~np.isnan(v)]
    if not v.size:
        return {"mean": float("nan"), "p2.5": float("nan"), "p97.5": float("nan"), "n": 0}
    lo, hi = np.percentile(v, [2.5, 97.5])
    return {"mean": float(v.mean()), "p2.5": float(lo), "p97.5": float(hi), "n": int(v.size)}
