"""Analysis ``hubness``: k-occurrence of BkR's step 1, CSLS / margin retrieval, injected hubs,
on one config's cached samples and embeddings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...findings import hubness as hub_mod
from ...findings.document import markdown_table
from ...findings.views import iter_views
from ...metrics.retrieval import CSLS_K, MARGIN_K
from .artifacts import RunArtifacts
from .step import Plugin, Result, question_result


def run(art: RunArtifacts, s: Mapping[str, Any]) -> Result:
    k, max_seeds, retrievals = art.k, s["max_seeds"], s["retrievals"]
    meta = art.dataset_meta()
    texts = art.texts()
    image = art.image_lookup()
    samples = art.sample_list(max_seeds)
    df = hub_mod.hubness_metrics(
        iter_views(samples, art.items(), texts),
        image,
        retrievals=retrievals,
        hub_fraction=s["hub_fraction"],
        hub_noise=s["hub_noise"],
        k=k,
        seed=s["seed"],
    )
    per_enc, summary = hub_mod.summarize_hubness(df)
    n = int(df["n"].iloc[0])
    n_hubs = int(df.loc[df.condition == "hubs", "n_hubs"].max())
    text = hub_mod.answer(
        per_enc, summary, dataset=meta.name, synthetic=meta.synthetic, k=k, n=n, n_hubs=n_hubs, n_encoders=len(texts)
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
    figure = ("hubness of BkR step 1", lambda p, title: hub_mod.plot_hubness(per_enc, summary, p, title))
    return question_result(art, "hubness", text, settings, numbers, summary, df, figure, extra)


ANALYSIS = Plugin("hubness", run)
