"""Section 6: BLI (held-out dictionary, NN and CSLS retrieval, P@1 / MAP) and the agreement
matrix — known answers on constructed data and slow loops from the definitions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from backretrieval.errors import InputError
from backretrieval.findings import agreement as agr
from backretrieval.findings import bli


def test_held_out_dictionary_has_no_seed_words_and_is_seeded():
    pairs = [
        ("hund", "dog"),
        ("katze", "cat"),
        ("haus", "house"),
        ("haus", "home"),
        ("baum", "tree"),
        ("auto", "car"),
        ("auto", "dog"),
        ("rot", "red"),
        ("blau", "blue"),
    ]
    counts = {"hund": 9, "katze": 9, "haus": 9, "baum": 1, "auto": 9, "rot": 9, "blau": 9}
    tgt_vocab = {"dog", "cat", "house", "home", "tree", "car", "red"}
    test = bli.held_out_dictionary(
        pairs, exclude_src={"katze"}, exclude_tgt={"dog"}, src_counts=counts, tgt_vocab=tgt_vocab, size=10, min_count=2
    )
    assert test == {"auto": ("car",), "haus": ("home", "house"), "rot": ("red",)}
    # "hund" lost its only gold word (a seed word), "katze" is a seed word, "baum" too rare,
    # "blue" is not in the target vocabulary
    small = bli.held_out_dictionary(pairs, set(), set(), counts, tgt_vocab, size=2, min_count=2, seed=0)
    assert len(small) == 2 and small == bli.held_out_dictionary(pairs, set(), set(), counts, tgt_vocab, 2, 2, 0)
    assert set(small) <= {"auto", "haus", "hund", "katze", "rot"}
    with pytest.raises(InputError, match=">= 1"):
        bli.held_out_dictionary(pairs, set(), set(), counts, tgt_vocab, size=0)


def _slow_scores(S, T, retrieval, k):
    S = S / np.linalg.norm(S, axis=1, keepdims=True)
    T = T / np.linalg.norm(T, axis=1, keepdims=True)
    cos = S @ T.T
    if retrieval == "nn":
        return cos
    r_t = np.array([np.mean(sorted(cos[i], reverse=True)[:k]) for i in range(S.shape[0])])
    r_s = np.array([np.mean(sorted(cos[:, j], reverse=True)[:k]) for j in range(T.shape[0])])
    return 2 * cos - r_t[:, None] - r_s[None, :]


def _slow_eval(S, T, queries, gold, retrieval, k):
    sc = _slow_scores(S, T, retrieval, k)
    p1, aps = [], []
    for q, g in zip(queries, gold):
        order = sorted(range(T.shape[0]), key=lambda j: (-sc[q, j], j))
        ranks = sorted(order.index(x) + 1 for x in set(g))
        p1.append(order[0] in set(g))
        aps.append(np.mean([(i + 1) / r for i, r in enumerate(ranks)]))
    return float(np.mean(p1)), float(np.mean(aps))


@pytest.mark.parametrize("retrieval", bli.RETRIEVALS)
@pytest.mark.parametrize("seed,levels", [(0, None), (1, 1)])
def test_evaluate_bli_equals_slow_loop(retrieval, seed, levels):
    rng = np.random.default_rng(seed)
    S, T = rng.normal(size=(30, 5)), rng.normal(size=(25, 5))
    if levels:  # many tied scores
        S, T = np.round(S * levels) + 0.01 * (np.arange(5) == 0), np.round(T * levels) + 0.01 * (np.arange(5) == 0)
    queries = list(range(0, 30, 2))
    gold = [list(rng.choice(25, size=rng.integers(1, 4), replace=False)) for _ in queries]
    res = bli.evaluate_bli(S, T, queries, gold, retrieval=retrieval, csls_k=3, chunk=4)
    p1, mapv = _slow_eval(S, T, queries, gold, retrieval, 3)
    assert res.p_at_1 == pytest.approx(p1, abs=1e-12)
    assert res.map == pytest.approx(mapv, abs=1e-12)
    assert res.n_queries == len(queries) and res.n_candidates == 25


def test_perfect_alignment_and_one_gold_map_is_mrr():
    rng = np.random.default_rng(3)
    T = rng.normal(size=(50, 8))
    W = np.linalg.qr(rng.normal(size=(8, 8)))[0]
    S = T @ W.T  # source = rotated target; the right map is W
    res = bli.evaluate_bli(S @ W, T, list(range(50)), [[i] for i in range(50)])
    assert res.p_at_1 == 1.0 and res.map == 1.0
    # one gold word per query: MAP = mean reciprocal rank
    ranks = bli.gold_ranks(np.array([[0.1, 0.5, 0.3]]), [[0]])
    assert ranks[0].tolist() == [3] and bli.average_precision(ranks[0]) == pytest.approx(1 / 3)


def test_csls_reduces_a_hub():
    """A target word close to everything (a hub) is every query's nearest neighbour; CSLS
    penalises its dense neighbourhood and restores the true translations."""
    rng = np.random.default_rng(4)
    T = rng.normal(size=(40, 16))
    T /= np.linalg.norm(T, axis=1, keepdims=True)
    u = rng.normal(size=16)
    u /= np.linalg.norm(u)
    S = T + 1.1 * u  # every mapped source word shares one direction ...
    T2 = np.vstack([T, u])  # ... and one target word lies along it: the hub
    nn = bli.evaluate_bli(S, T2, list(range(40)), [[i] for i in range(40)], "nn")
    cs = bli.evaluate_bli(S, T2, list(range(40)), [[i] for i in range(40)], "csls", csls_k=5)
    assert nn.p_at_1 < 0.3 and cs.p_at_1 > 0.9


def test_agreement_table_and_matrix():
    enc = [f"e{i}" for i in range(8)]
    x = np.arange(8.0)
    per = pd.DataFrame({"A": x, "B": 2 * x + 1, "C": -x, "D": [np.nan] * 3 + list(x[3:])}, index=enc)
    t = agr.agreement_table(per, ["A", "B", "C", "D"], B=200, seed=0)
    row = t.set_index(["metric_a", "metric_b"])
    assert row.loc[("A", "B"), "spearman"] == pytest.approx(1.0)
    assert row.loc[("A", "C"), "spearman"] == pytest.approx(-1.0)
    assert row.loc[("A", "D"), "n_encoders"] == 5  # only the encoders with both values
    m = agr.agreement_matrix(t, ["A", "B", "C", "D"])
    assert np.allclose(m.to_numpy(), m.to_numpy().T, equal_nan=True) and m.loc["B", "C"] == pytest.approx(-1.0)
    few = agr.agreement_table(per.iloc[:3].assign(D=[1.0, 2.0, 3.0]), ["A", "D"], B=50)
    assert math.isnan(few["spearman"].iloc[0])  # fewer than 4 encoders
    with pytest.raises(InputError, match="no column"):
        agr.agreement_table(per, ["A", "Z"])


def test_clustermap_files_are_reproducible(tmp_path):
    m = pd.DataFrame(
        [[1, 0.8, -0.2], [0.8, 1, 0.1], [-0.2, 0.1, 1]], index=list("abc"), columns=list("abc"), dtype=float
    )
    agr.plot_clustermap(m, tmp_path / "one", "t")
    agr.plot_clustermap(m, tmp_path / "two", "t")
    for ext in ("png", "svg", "pdf"):
        assert (tmp_path / f"one.{ext}").read_bytes() == (tmp_path / f"two.{ext}").read_bytes()
