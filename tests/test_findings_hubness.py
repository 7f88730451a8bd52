"""Question 4 (hubness): k-occurrence and its statistics by hand, injected hubs raise the
skewness and capture queries under cosine, CSLS / margin release them; the step's outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st

from backretrieval.cli import main
from backretrieval.errors import InputError
from backretrieval.findings import hubness as H
from backretrieval.findings.record import read_record
from worlds import make_world, metrics_files, views, write_world


def test_k_occurrence_and_stats_hand_computed():
    counts = H.k_occurrence(np.array([0, 0, 0, 1, 2, 0]), 5)
    assert counts.tolist() == [4, 1, 1, 0, 0]
    assert H.k_occurrence(np.array([[0, 1], [1, 2]]), 3).tolist() == [1, 2, 1]
    s = H.hubness_stats(counts)
    assert s["skewness"] == pytest.approx(st.skew([4, 1, 1, 0, 0]))
    assert s["top1pct_share"] == pytest.approx(4 / 6)  # top 1 % of 5 targets = 1 target
    assert s["antihub_share"] == pytest.approx(2 / 5)
    assert s["max_over_mean"] == pytest.approx(4 / 1.2)
    assert H.hubness_stats(np.ones(10))["skewness"] == 0.0
    with pytest.raises(InputError):
        H.k_occurrence(np.array([5]), 5)
    with pytest.raises(InputError):
        H.hubness_stats(np.zeros(4))


def test_top_k_targets_ties_go_to_the_lower_index():
    scores = np.array([[0.5, 0.9, 0.9, 0.1], [0.0, 0.0, 0.0, 1.0]])
    assert H.top_k_targets(scores, 2).tolist() == [[1, 2], [3, 0]]


def test_injected_hubs_sit_at_the_centroid():
    rng = np.random.default_rng(0)
    t = rng.normal(size=(200, 8)) + 3.0  # anisotropic: every row shares a direction
    hubs = H.inject_hubs(t, 4, noise=0.1, seed=1)
    assert hubs.shape == (4, 8)
    np.testing.assert_allclose(np.linalg.norm(hubs, axis=1), 1.0, atol=1e-12)
    tn = t / np.linalg.norm(t, axis=1, keepdims=True)
    assert (tn @ hubs.T).mean() > (tn @ tn.T).mean()  # closer to the targets than they are to each other
    assert H.inject_hubs(t, 4, 0.1, 1).tobytes() == hubs.tobytes()
    with pytest.raises(InputError):
        H.inject_hubs(t, 0, 0.1, 1)


def _anisotropic_world():
    items, texts, img, _ = make_world(n_items=400)
    # every encoder's texts share a common direction (as real sentence encoders do)
    shift = np.random.default_rng(9).normal(size=next(iter(texts["good"].values()))[1].shape[1]) * 2.0
    texts = {
        e: {lang: (ix, (emb + shift).astype(np.float32)) for lang, (ix, emb) in by.items()} for e, by in texts.items()
    }
    return items, texts, img


def test_injected_hubs_raise_skewness_and_csls_margin_release_them():
    items, texts, img = _anisotropic_world()
    vs = views(items, texts, n=100, seeds=(0, 1))
    df = H.hubness_metrics(vs, img, hub_fraction=0.05, hub_noise=0.05, k=10)
    m = df.groupby(["condition", "retrieval"])[["skew_n1", "skew_nk", "hub_capture"]].mean()
    assert m.loc[("hubs", "cosine"), "skew_nk"] > m.loc[("clean", "cosine"), "skew_nk"] + 1.0
    assert m.loc[("hubs", "cosine"), "skew_n1"] > m.loc[("clean", "cosine"), "skew_n1"] + 0.5
    assert m.loc[("clean", "cosine"), "hub_capture"] == 0.0
    assert m.loc[("hubs", "cosine"), "hub_capture"] > 0.1
    for r in ("csls", "margin"):
        assert m.loc[("hubs", r), "hub_capture"] < m.loc[("hubs", "cosine"), "hub_capture"] / 2
        assert m.loc[("hubs", r), "skew_n1"] < m.loc[("hubs", "cosine"), "skew_n1"]
    # distractors never improve a cosine rank: XLR with hubs <= XLR without, per sample
    cos = df[df.retrieval == "cosine"].pivot_table(
        index=["direction", "seed", "encoder"], columns="condition", values="xlr_recall"
    )
    assert (cos["hubs"] <= cos["clean"]).all() and (cos["hubs"] < cos["clean"]).any()
    per_enc, summary = H.summarize_hubness(df)
    assert {"spearman_vs_clean_mean", "spearman_vs_same_mean", "xlr_spearman_vs_clean_mean"} <= set(summary)
    assert len(summary) == 6 and (summary["n_samples"] == 2).all()
    text = H.answer(per_enc, summary, dataset="world", synthetic=False, k=10, n=100, n_hubs=5, n_encoders=4)
    assert "injected hubs" in text and "csls" in text


def test_cli_outputs_are_deterministic(tmp_path):
    ds, text_files, img, samples = write_world(tmp_path / "w", n_items=300, n=60, seeds=(0, 1))
    args = [
        "step",
        "findings",
        "--analysis",
        "hubness",
        "--dataset",
        str(ds),
        "--samples",
        str(samples[0]),
        "--text-emb",
        *[f"{e}:{lang}={p}" for (e, lang), p in text_files.items()],
        "--image-emb",
        str(img),
        "--max-seeds",
        "1",
        "--metrics",
        *metrics_files(tmp_path / "w"),
        "--run-name",
        "world",
        "--out-dir",
    ]
    assert main(args + [str(tmp_path / "a")]) == 0
    assert main(args + [str(tmp_path / "b")]) == 0
    for name in ("hubness.csv", "hubness.md", "hubness.json", "hubness.samples.csv", "figures/hubness.png"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    rec = read_record(tmp_path / "a" / "hubness.json")  # document.py's schema
    assert rec.analysis == "hubness" and rec.run.run_name == "world" and rec.verdict
    doc = json.loads((tmp_path / "a" / "hubness.json").read_text())
    assert doc["settings"]["n_hubs"] == 1 and doc["settings"]["csls_k"] == 10 and doc["settings"]["margin_k"] == 4
    assert "clean/csls" in doc["numbers"]["per_setting"]


def test_xlr_from_score_matrix_equals_the_kernel_with_distractors():
    import backretrieval.metrics as M

    rng = np.random.default_rng(3)
    src = (rng.normal(size=(60, 10)) + 2).astype(np.float32)
    tgt = (src + rng.normal(size=(60, 10))).astype(np.float32)
    hubs = H.inject_hubs(tgt, 3, 0.1, seed=0)
    for kind in ("cosine", "csls", "margin"):
        scores = M.retrieval_scores(src, np.concatenate([tgt, hubs]), kind)
        ranks = H._ranks_from_scores(scores)
        assert ranks.tolist() == M.xlr_ranks(src, tgt, retrieval=kind, extra_candidates=hubs).tolist()
