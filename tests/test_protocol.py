"""One protocol value (backretrieval.evaluation.protocol.Protocol): checked once when made, the one
home of its defaults, handed on by every door and the metrics step; the metrics CSV records k
beside n, and its consumers (the findings' loader, the report) read both from there, refusing a
file without k and files of different k."""

from __future__ import annotations

import ast
import dataclasses
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

import backretrieval
from backretrieval._util import io
from backretrieval.errors import InputError
from backretrieval.evaluation import defaults as D
from backretrieval.evaluation import run as R
from backretrieval.evaluation.core import METRIC_COLUMNS
from backretrieval.evaluation.metric_tables import metrics_protocol, read_metric_tables
from backretrieval.evaluation.protocol import Protocol
from backretrieval.evaluation.run_artifacts import load_run
from test_evaluate import NGRAM, _scene_features
from test_findings_steps import _make_run

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "backretrieval"


def test_the_protocol_is_checked_when_made_and_frozen():
    p = Protocol(sample_size=50, seeds=3, recall_k=5)
    assert p.seeds == (0, 1, 2) and (p.sample_size, p.recall_k, p.text_field, p.with_corr) == (
        50,
        5,
        D.DEFAULT_TEXT_FIELD,
        True,
    )
    assert Protocol() == Protocol(sample_size=D.DEFAULT_N, seeds=D.DEFAULT_SEEDS, recall_k=D.DEFAULT_K)
    assert Protocol(seeds=[4, 2]).seeds == (4, 2)
    for bad, match in (
        (dict(sample_size=1), "--sample-size 1"),
        (dict(sample_size=10, recall_k=10), "--recall-k 10"),
        (dict(recall_k=0), "--recall-k 0"),
        (dict(text_field="caption"), "--text-field 'caption'"),
        (dict(seeds=0), "--n-seeds 0"),
        (dict(seeds=[1, 1]), "--seeds"),
    ):
        with pytest.raises(InputError, match=match):
            Protocol(**bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.recall_k = 3  # type: ignore[misc]
    assert Protocol.of(None, sample_size=50, recall_k=5) == Protocol(sample_size=50, recall_k=5) and Protocol.of(p) is p
    with pytest.raises(TypeError, match="not both"):
        Protocol.of(p, sample_size=20)
    assert p.record() == {
        "sample_size": 50,
        "seeds": [0, 1, 2],
        "recall_k": 5,
        "text_field": "title",
        "corr": True,
        "corr_max_pairs": None,
    }


@pytest.fixture(scope="module")
def syn(tmp_path_factory, synthetic_dataset) -> Path:
    root = tmp_path_factory.mktemp("protocol") / "syn"
    shutil.copytree(synthetic_dataset(240, ["en", "de", "ru"], seed=0, image_size=32), root)
    _scene_features(root)
    return root


def test_one_evaluate_checks_its_protocol_and_directions_once(syn, monkeypatch):
    made, parsed = [], []
    post_init, parse = Protocol.__post_init__, R.parse_directions

    def counted_post_init(self):
        made.append(self)
        post_init(self)

    def counted_parse(directions):
        parsed.append(directions)
        return parse(directions)

    monkeypatch.setattr(Protocol, "__post_init__", counted_post_init)
    monkeypatch.setattr(R, "parse_directions", counted_parse)
    df = backretrieval.evaluate(
        NGRAM,
        syn,
        "en-de,de-en",
        sample_size=40,
        seeds=2,
        recall_k=7,
        image_backbone="scene",
        cache_dir=None,
        progress=False,
    )
    assert len(made) == 1 and len(parsed) == 1
    assert list(df.columns) == METRIC_COLUMNS and METRIC_COLUMNS.index("k") == METRIC_COLUMNS.index("n") + 1
    assert set(df["k"]) == {7} and set(df["n"]) == {40}
    # a Protocol given is taken as it is: nothing is checked again
    made.clear()
    ev = R.evaluate_model(
        NGRAM, syn, "en-de", Protocol(sample_size=40, seeds=2, recall_k=7, image_backbone="scene"), cache_dir=None
    )
    assert len(made) == 1 and ev.protocol["recall_k"] == 7 and ev.scores.equals(df[df["direction"] == "en-de"])
    with pytest.raises(TypeError, match="not both"):
        R.evaluate_model(NGRAM, syn, "en-de", Protocol(sample_size=40), recall_k=3)


def test_the_metrics_csv_records_k_and_the_consumers_read_it(tmp_path):
    f = _make_run(tmp_path / "run")  # the metrics step with k=5, N=30
    metrics = [Path(p) for p in f["metrics"]]
    for p in metrics:
        frame = pd.read_csv(p)
        assert list(frame.columns) == METRIC_COLUMNS and set(frame["k"]) == {5} and set(frame["n"]) == {30}
    assert metrics_protocol(read_metric_tables(metrics)) == (30, 5)
    assert load_run(dataset=Path(f["dataset"]), metrics_files=metrics).k == 5

    # an older file without the k column: refused, naming the file and the column (k is never guessed)
    old = tmp_path / "old" / "en-de.csv"
    io.write_csv(old, pd.read_csv(metrics[0]).drop(columns="k"))
    with pytest.raises(InputError, match=rf"{re.escape(str(old))}: no 'k' column.*rerun the metrics step"):
        load_run(dataset=Path(f["dataset"]), metrics_files=[old, metrics[1]])

    # files of different k: refused, naming the files of each k
    other = tmp_path / "other" / "de-en.csv"
    io.write_csv(other, pd.read_csv(metrics[1]).assign(k=10))
    with pytest.raises(InputError, match="different k of Recall@k") as exc:
        load_run(dataset=Path(f["dataset"]), metrics_files=[metrics[0], other])
    assert f"k=5: {metrics[0]}" in str(exc.value) and f"k=10: {other}" in str(exc.value)

    # the report reads them the same way
    from backretrieval.steps import report

    with pytest.raises(InputError, match="different k of Recall@k"):
        settings = {"bootstrap_B": 10, "bootstrap_seed": 0}
        report.build_bkr_report(metrics_files=[metrics[0], other], meta=None, text_files={}, settings=settings, out={})


def _literal_defaults(names: set[str]) -> list[str]:
    """``file:function(param=default)`` of every function parameter in ``names`` with a default."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            for arg, default in pairs:
                if arg.arg in names:
                    rel = path.relative_to(SRC).as_posix()
                    found.append(f"{rel}:{node.name}({arg.arg}={ast.unparse(default)})")
    return found


def test_the_protocol_defaults_are_defined_once():
    """One constant per default (evaluation.defaults), the Protocol's fields their one use: no
    door repeats the protocol's keywords with defaults, no Recall@k kernel has a default k."""
    text = {p: p.read_text(encoding="utf-8") for p in SRC.rglob("*.py")}
    for const in ("DEFAULT_N", "DEFAULT_SEEDS", "DEFAULT_K", "DEFAULT_TEXT_FIELD"):
        homes = [p.relative_to(SRC).as_posix() for p, t in text.items() if re.search(rf"^{const} = ", t, re.M)]
        assert homes == ["evaluation/defaults.py"], (const, homes)
    # k: the k of Recall@k (bkr_image_pass needs it only for the index it may build). The others
    # named k are other neighbourhoods: concept precision's k nearest images, RCSLS's k nearest
    # words and the human study's top-k suggestions (their own settings, not the protocol's)
    other_ks = {
        "metrics/kernels.py:bkr_image_pass(k=None)",
        "study/human_study.py:top_k_suggestions(k=5)",
        "findings/image_quality.py:concept_precision(k=10)",
        "encoders/wordvec_align.py:rcsls_loss_grad(k=10)",
        "encoders/wordvec_align.py:align_rcsls(k=10)",
    }
    assert set(_literal_defaults({"k"})) <= other_ks, sorted(set(_literal_defaults({"k"})) - other_ks)
    doors = [
        f
        for f in _literal_defaults({"sample_size", "seeds", "recall_k", "n", "k", "text_field", "with_corr"})
        if f.startswith("evaluation/")
    ]
    assert doors == [], doors


#: the Recall@k kernels of backretrieval.metrics: they take the formula's k
RECALL_KERNELS = {"xlr", "bkr", "build", "evaluate_sample", "bkr_image_pass", "recall_at_k"}


def _keyword_renames(path: Path, names: set[str]) -> list[str]:
    """``key: cfg[...]["name"]``, ``"key": cs["name"]`` and ``key=args.name`` whose key is another
    name: the places where one of ``names`` would change its name on the way (a Recall@k kernel's
    ``k`` is where recall_k's walk ends)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        pairs: list[tuple[str | None, ast.AST]] = []
        if isinstance(node, ast.Dict):
            pairs = [(k.value if isinstance(k, ast.Constant) else None, v) for k, v in zip(node.keys, node.values)]
        elif isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            pairs = [(kw.arg, kw.value) for kw in node.keywords if not (callee in RECALL_KERNELS and kw.arg == "k")]
        for key, value in pairs:
            inner = value.args[0] if isinstance(value, ast.Call) and value.args else value  # int(cs["n"])
            src = None
            if isinstance(inner, ast.Subscript) and isinstance(inner.slice, ast.Constant):
                src = inner.slice.value
            elif isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "args":
                src = inner.attr
            if src in names and key is not None and key != src:
                out.append(f"{path.relative_to(SRC.parents[1]).as_posix()}:{node.lineno}: {key} <- {src}")
    return out


def test_sample_size_and_recall_k_keep_one_name_from_params_yaml_to_the_kernel():
    """N and k are ``sample_size`` and ``recall_k`` at every station of their walk: params.yaml,
    the rule's params (steps.plan), the shell's ``{params.*}``, the CLI flag and its dest, the
    step's parameter, the Protocol's field (so every door's keyword) and the sampling kernel's
    parameter. The metric kernels take the formula's ``k`` (Recall@k); the JSON records spell them
    as the Protocol does (``Protocol.record``), the metrics CSV's data columns as ``n`` and ``k``
    (as the paper writes N and k)."""
    import inspect

    from backretrieval.cli import build_parser
    from backretrieval.data.sampling import draw_sample, draw_samples
    from backretrieval.steps.metrics import metrics_step
    from backretrieval.steps.sample import sample_step
    from test_cli_help import all_subcommands

    names = {"sample_size", "recall_k"}
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert names <= set(params) and not {"n", "k", "N"} & set(params)
    # the rules' params and every mapping or keyword that hands a value on keep its name
    renames = [r for p in sorted(SRC.rglob("*.py")) for r in _keyword_renames(p, names)]
    assert renames == [], renames
    shells = "\n".join(p.read_text() for p in (ROOT / "workflow/rules").glob("*.smk"))
    assert "--sample-size {params.sample_size:q}" in shells and "--recall-k {params.recall_k:q}" in shells
    assert not re.search(r"\{params\.(n|k|N)[:}]", shells)
    for cmd, sp in all_subcommands(build_parser()).items():
        for a in sp._actions:
            if {"--sample-size", "--recall-k"} & set(a.option_strings):
                assert a.dest == a.option_strings[0].lstrip("-").replace("-", "_"), (cmd, a.option_strings, a.dest)
            assert a.dest not in names or a.option_strings[0] in ("--sample-size", "--recall-k"), (cmd, a.dest)
    assert {"sample_size", "recall_k"} <= {f.name for f in dataclasses.fields(Protocol)}
    assert not {"n", "k"} & {f.name for f in dataclasses.fields(Protocol)}
    for fn, name in ((sample_step, "sample_size"), (draw_samples, "sample_size"), (draw_sample, "sample_size")):
        assert name in inspect.signature(fn).parameters, fn.__name__
    assert "recall_k" in inspect.signature(metrics_step).parameters
    # the doors take the Protocol's names; the old keywords are refused with the new ones
    assert Protocol.of(None, sample_size=40, recall_k=4).record()["sample_size"] == 40
    with pytest.raises(TypeError, match="n= is now sample_size=; k= is now recall_k="):
        Protocol.of(None, n=40, k=4)


class _MtebNgram:
    """An mteb encoder (mteb's EncoderProtocol) over the char n-gram encoder of the library test."""

    mteb_model_meta = None

    def __init__(self) -> None:
        from backretrieval.encoders import build_text_encoder

        self.enc = build_text_encoder("ngram", NGRAM)

    def encode(self, inputs, **kw):
        import numpy as np

        return np.vstack([self.enc.encode(list(batch["text"])) for batch in inputs])

    def similarity(self, a, b):
        raise NotImplementedError

    def similarity_pairwise(self, a, b):
        raise NotImplementedError


def test_every_door_records_the_protocol_as_protocol_record(syn, tmp_path, monkeypatch):
    """One record, one spelling: the library's Evaluation and result JSON, the MTEB task's subset
    evaluation and the sentence-transformers evaluator's config record Protocol.record() (keys as
    params.yaml and the CLI flags spell them), plus the fields that are theirs (directions, ...)."""
    pytest.importorskip("mteb", reason="mteb is not installed (pip install -e '.[mteb]')")
    from backretrieval.evaluation import mteb_task
    from backretrieval.evaluation import results as RES
    from backretrieval.evaluation.protocol import RENAMED
    from backretrieval.evaluation.st_evaluator import BackretrievalEvaluator

    prot = Protocol(sample_size=40, seeds=2, recall_k=4, image_backbone="scene", with_corr=False)
    record = prot.record()
    assert list(record) == ["sample_size", "seeds", "recall_k", "text_field", "corr", "corr_max_pairs"]
    assert not set(RENAMED) & set(record)
    want = {"directions": ["en-de"], **record}

    # the library: the Evaluation, its result JSON, and the file read back
    ev = R.evaluate_model(NGRAM, syn, "en-de", prot, cache_dir=None)
    assert ev.protocol == want
    res = RES.result_dict(ev, B=20)
    assert {key: res["protocol"][key] for key in want} == want and not set(RENAMED) & set(res["protocol"])
    back = RES.read_result(RES.write_result(tmp_path / "r.json", res))["protocol"]
    assert {key: back[key] for key in want} == want

    # the MTEB task: the Evaluation of one subset (hf_subset = the direction)
    made = []

    def recording(**kw):
        made.append(kw["protocol"])
        return R.Evaluation(**kw)

    monkeypatch.setattr(mteb_task, "Evaluation", recording)
    task = mteb_task.backretrieval_task(syn, "en-de", prot, cache_dir=None, B=20)
    task.load_data()
    entry = task._evaluate_subset(
        _MtebNgram(),
        task.dataset["en-de"]["test"],
        hf_split="test",
        hf_subset="en-de",
        encode_kwargs={"batch_size": 64},
    )
    assert made == [want]
    assert entry["per_query"]["bkr_hits"] == RES.scores_by_direction(res)["en-de"]["per_query"]["bkr_hits"]

    # the sentence-transformers evaluator's config (its model card's record)
    st = BackretrievalEvaluator(syn, "en-de", prot, cache_dir=None)
    assert st.get_config_dict() == {"dataset": ev.dataset["name"], **want, "image_backbone": "scene"}


#: the keys of an earlier release's protocol record, from today's
RENAMED_BACK = {"sample_size": "n", "recall_k": "k"}


def test_a_record_of_an_earlier_release_still_loads(syn, tmp_path):
    """Result JSONs written before the protocol's keys were renamed (``n``, ``k``) are read with
    the new names (evaluation.protocol.read_record): the table, compare; new files have the new
    names only."""
    from backretrieval.evaluation import results as RES
    from backretrieval.evaluation.compare import compare_results, format_comparison
    from backretrieval.evaluation.protocol import read_record

    assert read_record({"n": 50, "seeds": [0], "k": 5, "text_field": "title"}) == {
        "sample_size": 50,
        "seeds": [0],
        "recall_k": 5,
        "text_field": "title",
    }
    assert read_record({"sample_size": 50, "n": 9}) == {"sample_size": 50}  # both: the new spelling wins
    assert read_record({"run_name": "r", "k": 10, "n_seeds": 3}) == {"run_name": "r", "recall_k": 10, "n_seeds": 3}

    res = RES.result_dict(R.evaluate_model(NGRAM, syn, "en-de", sample_size=40, seeds=2, recall_k=4,
                                           image_backbone="scene", cache_dir=None), B=20)  # fmt: skip
    old = dict(res, protocol={RENAMED_BACK.get(key, key): v for key, v in res["protocol"].items()})
    assert {"n", "k"} <= set(old["protocol"]) and not {"sample_size", "recall_k"} & set(old["protocol"])
    back = RES.read_result(RES.write_result(tmp_path / "old.json", old))
    assert back["protocol"] == res["protocol"]
    assert RES.format_table(back) == RES.format_table(res) == RES.format_table(old)
    (c,) = compare_results(old, res)  # read or not, the old spelling pairs with the new
    assert c.diff == 0 and c.n_queries == 80
    assert format_comparison([c], old, res) == format_comparison([c], res, res)
