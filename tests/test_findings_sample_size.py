"""Question 3 (sample size): the reliability criterion on hand-made tables, and known answers
on a constructed world (the random encoder's BkR ~ k/N; graded encoders ordered reliably)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from backretrieval.cli import main
from backretrieval.errors import InputError
from backretrieval.findings import sample_size as ss
from backretrieval.findings.record import read_record
from worlds import make_world, metrics_files, write_world


def _table(orders: dict[int, list[list[float]]]) -> pd.DataFrame:
    """n -> one BkR vector per seed over encoders a, b, c (XLR: a > b > c)."""
    rows = []
    for n, per_seed in orders.items():
        for seed, bkr in enumerate(per_seed):
            for enc, val, xlr in zip("abc", bkr, (0.9, 0.5, 0.1)):
                rows.append(
                    dict(
                        n=n,
                        direction="en-de",
                        seed=seed,
                        encoder=enc,
                        xlr_r1=xlr,
                        xlr_recall=xlr,
                        xlr_mrr=xlr,
                        bkr_recall=val,
                    )
                )
    return pd.DataFrame(rows)


def test_stability_and_smallest_reliable_n_hand_made():
    good, swap = [0.8, 0.5, 0.1], [0.5, 0.8, 0.1]  # swap: 2 of 3 pairs right
    df = _table({100: [good, swap, swap, good], 200: [good, good, good, swap], 400: [good] * 4})
    crit = ss.Criterion(agreement=0.9, share=0.75)
    stab = ss.ranking_stability(df, k=10, baseline="c", criterion=crit).set_index("n")
    assert stab.loc[100, "stab_reliable_share"] == 0.5
    assert stab.loc[200, "stab_reliable_share"] == 0.75
    assert stab.loc[400, "stab_pairwise_mean"] == 1.0
    assert stab.loc[100, "stab_pairwise_mean"] == pytest.approx((1 + 2 / 3 + 2 / 3 + 1) / 4)
    assert stab.loc[100, "chance_k_over_n"] == 0.1
    assert stab.loc[100, "baseline_bkr"] == pytest.approx(0.1)
    assert ss.smallest_reliable_n(stab.reset_index(), "stab_reliable_share", crit) == 200
    assert ss.smallest_reliable_n(stab.reset_index(), "valid_reliable_share", crit) == 200
    # a failure at a larger N resets the answer: reliable only from 400 on
    df2 = _table({100: [good] * 4, 200: [swap] * 4, 400: [good] * 4})
    stab2 = ss.ranking_stability(df2, k=10, criterion=crit)
    assert ss.smallest_reliable_n(stab2, "stab_reliable_share", crit) == 400
    never = ss.ranking_stability(_table({100: [swap] * 2, 200: [swap, good]}), k=10, criterion=crit)
    assert ss.smallest_reliable_n(never, "valid_reliable_share", crit) is None


def test_random_encoder_scores_chance_and_graded_encoders_are_ordered():
    items, texts, img, _ = make_world(n_items=600)
    df = ss.sample_size_metrics(items, texts, img, ["en-de"], [50, 200], seeds=range(4), k=10)
    assert set(df.columns) >= {"n", "direction", "seed", "encoder", "xlr_r1", "xlr_recall", "bkr_recall"}
    rnd = df[df.encoder == "random"].groupby("n")["bkr_recall"].mean()
    assert rnd[50] == pytest.approx(10 / 50, abs=0.06)
    assert rnd[200] == pytest.approx(10 / 200, abs=0.03)
    assert (df["xlr_r1"] <= df["xlr_recall"]).all()
    stab = ss.ranking_stability(df, k=10, baseline="random").set_index("n")
    assert stab.loc[200, "valid_pairwise_mean"] >= 0.8
    with pytest.raises(InputError):
        ss.sample_size_metrics(items, texts, img, ["en-de"], [1], seeds=[0], k=10)


def test_cli_writes_outputs_and_drops_too_large_n(tmp_path, caplog):
    ds, text_files, img, _ = write_world(tmp_path / "w", n_items=300)
    out = tmp_path / "out"
    args = [
        "step",
        "findings",
        "--analysis",
        "sample_size",
        "--dataset",
        str(ds),
        "--text-emb",
        *[f"{e}:{lang}={p}" for (e, lang), p in text_files.items()],
        "--image-emb",
        str(img),
        "--directions",
        "en-de",
        "--n-grid",
        "40",
        "80",
        "1000",
        "--seeds",
        "0",
        "1",
        "2",
        "--baseline",
        "random",
        "--metrics",
        *metrics_files(tmp_path / "w"),
        "--run-name",
        "world",
        "--out-dir",
        str(out),
    ]
    assert main(args) == 0
    rec = read_record(out / "sample_size.json")  # document.py's schema
    assert rec.analysis == "sample_size" and rec.run.run_name == "world" and rec.verdict
    doc = json.loads((out / "sample_size.json").read_text())
    assert doc["settings"]["n_grid"] == [40, 80] and doc["settings"]["n_dropped"] == [1000]
    assert "N = " in doc["answer"] and doc["numbers"]["criterion"].startswith(">= 90%")
    assert (out / "figures" / "sample_size.svg").is_file()
    first = (out / "sample_size.csv").read_bytes()
    assert main(args) == 0
    assert (out / "sample_size.csv").read_bytes() == first
    bad = args[:]
    bad[bad.index("--baseline") + 1] = "nope"
    assert main(bad) == 2


def test_pairwise_order_agreement_hand_computed():
    from backretrieval.findings.views import pairwise_order_agreement

    assert pairwise_order_agreement(np.array([3, 2, 1]), np.array([3, 2, 1])) == 1.0
    assert pairwise_order_agreement(np.array([1, 2, 3]), np.array([3, 2, 1])) == 0.0
    # reference tie (pair 0-1) left out; metric tie on pair 1-2 counts half
    assert pairwise_order_agreement(np.array([3, 1, 1]), np.array([2, 2, 1])) == pytest.approx((1 + 0.5) / 2)
