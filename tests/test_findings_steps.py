"""The findings steps through the CLI (`backretrieval findings --analysis NAME`) on a small
constructed run (prepared dataset, embeddings, samples and metrics made here; SYNTHETIC
vectors): files written, deterministic bytes, soft BkR's m=1 column equal to the metrics' BkR,
clear errors for missing inputs; and the analyses as classes: everything derived from them,
and a new analysis that is one module and nothing else."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from backretrieval._util import io
from backretrieval.cli import main
from backretrieval.errors import ConfigError, InputError
from backretrieval.steps.metrics import metrics_step
from backretrieval.steps.sample import sample_step

NOISE = {"good": 0.3, "mid": 0.8, "weak": 1.6, "poor": 3.0, "random": None}
INFERENCE, CALIBRATION, BLI, AGREEMENT = (
    ["step", "findings", "--analysis", a] for a in ("inference", "calibration", "bli", "agreement")
)


def _make_run(root: Path, n_items: int = 90, n: int = 30, seeds=(0, 1, 2)) -> dict:
    rng = np.random.default_rng(0)
    ds = root / "data" / "ds"
    ds.mkdir(parents=True)
    io.write_json(ds / "dataset.json", {"name": "toy", "synthetic": True, "parallel": True, "languages": ["en", "de"]})
    concepts = rng.normal(size=(12, 16))
    items = []
    img = np.empty((n_items, 16), np.float32)
    for i in range(n_items):
        img[i] = concepts[i % 12] + 0.5 * rng.normal(size=16)
        for lang in ("en", "de"):
            items.append(
                {"item_id": f"i{i:03d}", "lang": lang, "image_id": f"img{i:03d}", "title": f"t{i}", "body": ""}
            )
    io.write_csv(ds / "items.csv", pd.DataFrame(items))
    art = root / "artifacts"
    io.save_npz(art / "image" / "bb.npz", emb=img, ids=np.array([f"img{i:03d}" for i in range(n_items)]))
    text = {}
    for enc, noise in NOISE.items():
        for lang in ("en", "de"):
            e = rng.normal(size=(n_items, 16)) if noise is None else img + noise * rng.normal(size=img.shape)
            p = art / "text" / enc / f"{lang}.title.npz"
            io.save_npz(p, emb=e.astype(np.float32), ids=np.array([f"i{i:03d}" for i in range(n_items)]))
            text[(enc, lang)] = p
    files = {
        "dataset": ds,
        "image": art / "image" / "bb.npz",
        "metrics": [],
        "ranks": [],
        "samples": [],
        "text": sorted(str(p) for p in text.values()),
    }
    for d in ("en-de", "de-en"):
        s = art / "samples" / f"{d}.json"
        sample_step(ds, d, n, list(seeds), s)
        m = art / "metrics" / f"{d}.csv"
        src, tgt = d.split("-")
        metrics_step(
            dataset=ds,
            dataset_name="toy",
            direction=d,
            samples_file=s,
            image_file=files["image"],
            backbone="bb",
            text_files={e: (text[(e, src)], text[(e, tgt)]) for e in NOISE},
            text_field="title",
            recall_k=5,
            corr_max_pairs=None,
            out=m,
        )
        files["metrics"].append(str(m))
        files["ranks"].append(str(m.with_suffix(".ranks.npz")))
        files["samples"].append(str(s))
    return files


def _text_args(paths) -> list[str]:
    """ENCODER:LANG=FILE of the run's text embeddings (``<encoder>/<lang>.title.npz``)."""
    return [f"{Path(p).parent.name}:{Path(p).name.split('.')[0]}={p}" for p in paths]


def _run_args(f, out_dir, run_name="toy"):
    return [
        "--dataset",
        str(f["dataset"]),
        "--metrics",
        *f["metrics"],
        "--samples",
        *f["samples"],
        "--image-emb",
        str(f["image"]),
        "--text-emb",
        *_text_args(f["text"]),
        "--run-name",
        run_name,
        "--out-dir",
        str(out_dir),
    ]


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("findings-run")
    return root, _make_run(root)


def _all_steps(root: Path, f: dict, out: Path, summary: Path, doc: Path) -> None:
    assert (
        main([*INFERENCE, *_run_args(f, out), "--bootstrap", "20", "--max-seeds", "2", "--english-only", "weak"]) == 0
    )
    assert main([*CALIBRATION, *_run_args(f, out), "--soft-m", "1", "3"]) == 0
    assert (
        main(
            [
                *BLI,
                "--dataset",
                str(f["dataset"]),
                "--metrics",
                *f["metrics"],
                "--run-name",
                "toy",
                "--out-dir",
                str(out),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                *AGREEMENT,
                "--dataset",
                str(f["dataset"]),
                "--metrics",
                *f["metrics"],
                "--run-name",
                "toy",
                "--out-dir",
                str(out),
                "--findings-files",
                str(out / "calibration_points.csv"),
                "--soft-m",
                "3",
                "--bootstrap",
                "50",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "step",
                "findings-document",
                "--records",
                *sorted(str(p) for p in out.glob("*.json")),
                "--out-doc",
                str(doc),
                "--out-dir",
                str(summary),
            ]
        )
        == 0
    )


def test_steps_write_every_output_deterministically(run, tmp_path):
    root, f = run
    outs = []
    for i in range(2):
        out, summary, doc = (
            tmp_path / f"o{i}" / "findings",
            tmp_path / f"o{i}" / "summary",
            tmp_path / f"o{i}" / "FINDINGS.md",
        )
        _all_steps(root, f, out, summary, doc)
        outs.append((out, summary, doc))
    (o1, s1, d1), (o2, s2, d2) = outs
    h1, h2 = _hashes(o1), _hashes(o2)
    for name in (
        "inference.json",
        "inference.csv",
        "inference.md",
        "inference_replicates.csv",
        "figures/inference_ci.png",
        "figures/inference_ci.svg",
        "figures/inference_ci.pdf",
        "calibration.json",
        "calibration_points.csv",
        "calibration_soft.csv",
        "figures/calibration.png",
        "bli.json",
        "agreement.json",
        "agreement.md",
        "figures/agreement_clustermap.pdf",
    ):
        assert name in h1, name
    # bit-identical reruns (the records name their folder: compare them without it)
    assert {k: v for k, v in h1.items() if not k.endswith(".json")} == {
        k: v for k, v in h2.items() if not k.endswith(".json")
    }
    for name in (k for k in h1 if k.endswith(".json")):
        a, b = json.loads((o1 / name).read_text()), json.loads((o2 / name).read_text())
        assert a["run"].pop("reports_dir") != b["run"].pop("reports_dir")
        assert a == b, name
    assert d1.read_text().replace(str(tmp_path / "o0"), "") == d2.read_text().replace(str(tmp_path / "o1"), "")
    rec = json.loads((o1 / "inference.json").read_text())
    assert rec["run"]["synthetic"] is True and "SYNTHETIC" in rec["answer"]
    assert {r["direction"] for r in rec["numbers"]["per_direction"]} == {"en-de", "de-en"}
    assert rec["settings"]["n_seeds_used"] == 2
    bli = json.loads((o1 / "bli.json").read_text())
    assert bli["status"] == "not_applicable" and "no word-vector" in bli["answer"]
    overall = json.loads((s1 / "overall.json").read_text())
    assert overall["run"] is None and overall["numbers"]["n_cells"] == 2
    # the verdict: each configuration first (here the one SYNTHETIC run, as no real one exists),
    # with its encoder counts for all encoders and without the random / English-only ones
    (conf,) = overall["numbers"]["configurations"]
    assert conf["synthetic"] is True and conf["all"]["pearson"]["k"] == 2
    assert conf["core"]["n_encoders"] == conf["all"]["n_encoders"] - 2
    (core,) = overall["numbers"]["pooled"]["core"]
    assert "weak" not in core["encoders"] and "random" not in core["encoders"]
    assert overall["verdict"].startswith("On SYNTHETIC data only")
    # fewer than 8 encoders: descriptive, no interval and nothing pooled (the verdict says so;
    # its rows, with their encoder counts, N and seeds, are FINDINGS.md's detail table)
    assert "no configuration has the 8 encoders a tested row needs" in overall["verdict"]
    assert "toy (fewer than 8 encoders) is descriptive only" in overall["verdict"]
    assert "**Pooled**" not in overall["verdict"]
    assert "toy" in d1.read_text() and "SYNTHETIC data only" in d1.read_text()


def test_calibration_points_reproduce_bkr_and_order_encoders(run, tmp_path):
    root, f = run
    out = tmp_path / "findings"
    assert main([*CALIBRATION, *_run_args(f, out), "--soft-m", "1", "2"]) == 0
    pts = pd.read_csv(out / "calibration_points.csv")
    assert (pts["soft_bkr_m1"] == pts["bkr"]).all()
    means = pts.groupby("encoder")["xlr_r1"].mean()
    assert means["good"] > means["weak"] > means["random"]  # the constructed quality order
    assert pts["p_miss"].between(5 / 30 - 1e-9, 1).all()  # at least k/N


def test_inference_finds_wider_intervals_than_seeds(run, tmp_path):
    root, f = run
    out = tmp_path / "findings"
    assert main([*INFERENCE, *_run_args(f, out), "--bootstrap", "30", "--max-seeds", "3"]) == 0
    frame = pd.read_csv(out / "inference.csv")
    row = frame[(frame["set"] == "all") & (frame["quantity"] == "rho_bkr") & (frame["stat"] == "pearson")]
    assert (row["n_valid"] > 0).all()
    assert {"all", "no_random", "all-good", "all-random"} <= set(frame["set"])


def test_missing_input_fails_before_work(run, tmp_path, capsys):
    root, f = run
    args = _run_args(f, tmp_path / "findings")
    args[args.index("--image-emb") + 1] = str(tmp_path / "nope.npz")
    assert main([*INFERENCE, *args]) == 2
    assert "nope.npz: input file not found" in capsys.readouterr().err
    assert not (tmp_path / "findings").exists()
    bli = [*BLI, "--dataset", str(f["dataset"]), "--metrics", *f["metrics"]]
    bli += ["--run-name", "t", "--out-dir", str(tmp_path / "b")]
    with pytest.raises(SystemExit):
        main([*bli, "--specs", "notjson"])
    assert "argument --specs: not valid JSON" in capsys.readouterr().err
    assert main([*bli, "--settings", '{"test_sise": 5}']) == 2  # checked before any input is read
    assert "unknown setting(s) ['test_sise'] (did you mean 'test_size'?)" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def _write_dictd(folder: Path, stem: str, articles: list[tuple[str, str]]) -> None:
    """A dictd dictionary (``.index`` + gzip ``.dict.dz``), as Debian's FreeDict packages ship."""
    import gzip

    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def enc(n: int) -> str:
        out = ""
        while True:
            out, n = b64[n % 64] + out, n // 64
            if n == 0:
                return out

    data, index = b"", []
    for head, text in articles:
        raw = text.encode("utf-8")
        index.append(f"{head}\t{enc(len(data))}\t{enc(len(raw))}\n")
        data += raw
    (folder / f"{stem}.index").write_text("".join(index), encoding="utf-8")
    with gzip.open(folder / f"{stem}.dict.dz", "wb") as fh:
        fh.write(data)


def test_bli_step_on_trained_word_vectors(run, tmp_path):
    """fastText on a constructed parallel corpus (the same Markov-chain word sequences in 'en'
    and 'de' words), aligned with a 20-pair seed dictionary: BLI on the held-out pairs is far above
    chance, and no held-out word belongs to any seed dictionary."""
    root, f = run
    rng = np.random.default_rng(0)
    n_words = 60
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    io.write_json(corpus / "dataset.json", {"name": "toy-corpus", "languages": ["en", "de"]})
    succ = np.array([[(w * 7 + 1) % n_words, (w * 13 + 5) % n_words, (w + 1) % n_words] for w in range(n_words)])
    rows = []
    for i in range(3000):  # a sparse Markov chain: every word has its own contexts
        seq = [int(rng.integers(n_words))]
        for _ in range(9):
            seq.append(int(succ[seq[-1], rng.integers(3)]))
        for lang, pre in (("en", "e"), ("de", "d")):
            rows.append(
                {
                    "item_id": f"s{i}",
                    "lang": lang,
                    "image_id": f"s{i}",
                    "title": " ".join(f"{pre}{w}x" for w in seq),
                    "body": "",
                }
            )
    io.write_csv(corpus / "items.csv", pd.DataFrame(rows))
    dicts = tmp_path / "dictd"
    dicts.mkdir()
    _write_dictd(dicts, "freedict-eng-deu", [(f"e{w}x", f"e{w}x\nd{w}x\n") for w in range(n_words)])
    base = {
        "type": "wordvec",
        "dict_size": 20,
        "corpus": str(corpus),
        "languages": ["de"],
        "text_fields": ["title"],
        "dim": 10,
        "epochs": 20,
        "seed": 0,
        "cache_dir": str(tmp_path / "wv"),
        "dict_dir": str(dicts),
        "remove_pc": False,
    }
    specs = {
        "ft-procrustes": {**base, "method": "procrustes"},
        "ft-rcsls": {**base, "method": "rcsls", "rcsls_epochs": 2},
    }
    out = tmp_path / "findings"
    args = [
        *BLI,
        "--dataset",
        str(f["dataset"]),
        "--metrics",
        *f["metrics"],
        "--run-name",
        "toy",
        "--out-dir",
        str(out),
        "--min-count",
        "1",
    ]
    assert main([*args, "--specs", json.dumps(specs)]) == 0
    res = pd.read_csv(out / "bli.csv")
    assert set(res["encoder"]) == set(specs) and set(res["retrieval"]) == {"nn", "csls"}
    assert (res["n_test"] == n_words - 20).all()
    # chance: P@1 = 1/60, MAP = H(60)/60 = 0.078
    assert (res["p_at_1"] >= 3 / 40).all() and (res["map"] > 0.2).all()
    test = pd.read_csv(out / "bli_test_dictionary.csv")
    seed = json.loads(next((tmp_path / "wv" / "dict").glob("*.json")).read_text())["pairs"]
    assert not set(test["word"]) & {w for _, w in seed}
    assert not set(" ".join(test["gold"]).split()) & {h for h, _ in seed}
    rec = json.loads((out / "bli.json").read_text())
    assert rec["status"] == "ok" and "MAP" in rec["answer"]


def test_findings_settings_defaults_overrides_and_unknown_analysis():
    from backretrieval.config import load_config
    from backretrieval.errors import ConfigError
    from backretrieval.findings.analysis import findings_settings

    cfg = load_config(Path(__file__).resolve().parents[1] / "params.yaml")
    s = findings_settings(cfg)
    assert list(s) == ANALYSES
    assert s["inference"]["bootstrap"] == 1000 and s["sample_size"]["synthetic"]["n_items"] == 10000
    assert s["image_quality"]["backbones"] == {"effnet-lite2": {"type": "efficientnet-lite", "variant": "lite2"}}
    assert s["image_quality"]["base"] == cfg["image_backbone"] and s["bli"]["specs"] == {}
    s = findings_settings({**cfg, "findings": {"inference": {"bootstrap": 50}, "hubness": {"max_seeds": 1}}})
    assert {k: s["inference"][k] for k in ("bootstrap", "bootstrap_seed", "max_seeds")} == {
        "bootstrap": 50,
        "bootstrap_seed": 0,
        "max_seeds": None,
    }
    assert s["inference"]["random_encoders"] == sorted(e for e, x in cfg["encoders"].items() if x["type"] == "random")
    assert s["hubness"]["max_seeds"] == 1 and s["hubness"]["retrievals"] == ["cosine", "csls", "margin"]
    with pytest.raises(ConfigError, match="unknown analysis 'infrence'"):
        findings_settings({**cfg, "findings": {"infrence": {}}})
    with pytest.raises(ConfigError, match="analysis 'hubness' has no setting 'max_seed'"):
        findings_settings({**cfg, "findings": {"hubness": {"max_seed": 1}}})
    with pytest.raises(ConfigError, match="analysis 'inference' has no setting 'random_encoders'"):
        findings_settings({**cfg, "findings": {"inference": {"random_encoders": []}}})  # follows from the config


#: the analyses, in document order (section, then order in it)
ANALYSES = ["inference", "image_quality", "sample_size", "hubness", "calibration", "bli", "agreement"]


def test_everything_about_an_analysis_comes_from_its_class():
    """The registry is the analyses' classes; their settings (declared once: defaults, the
    config's keys, the command's flags), their questions (docs/FINDINGS.md) and the one
    command `findings --analysis NAME` are derived from them, and each declares every setting
    it gets for a config."""
    from backretrieval.cli import build_parser
    from backretrieval.cli.findings import analysis_parser
    from backretrieval.config import load_config
    from backretrieval.findings.analysis import config_keys, findings_settings, questions, registry

    reg = registry()
    assert list(reg) == ANALYSES
    assert [q.analysis for q in questions()] == [
        "inference",
        "overall",
        "image_quality",
        "sample_size",
        "hubness",
        "calibration",
        "calibration_lodo",
        "bli",
        "agreement",
    ]
    cfg = load_config(Path(__file__).resolve().parents[1] / "params.yaml")
    settings = findings_settings(cfg)
    keys = config_keys()
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    (steps,) = [a for a in sub.choices["step"]._actions if isinstance(a, argparse._SubParsersAction)]
    assert list({a.dest: a for a in steps.choices["findings"]._actions}["analysis"].choices) == ANALYSES
    for name, cls in reg.items():
        declared = {s.name for s in cls.settings}
        assert cls.name == name and set(settings[name]) == declared, name
        assert set(keys[name]) == {s.name for s in cls.settings if s.config}, name
        flags = {a.dest for a in analysis_parser(cls)._actions}
        assert {s.name for s in cls.settings if s.command} <= flags, name
        required = {s.name: settings[name][s.name] for s in cls.settings if s.required}
        assert cls.settings_of(required) == {**cls.defaults(), **required}, name
        if required:  # a required setting without a value is refused
            with pytest.raises(InputError, match="is required"):
                cls.settings_of({})
    with pytest.raises(InputError, match="unknown analysis 'hubnes'"):
        from backretrieval.findings.analysis import get

        get("hubnes")


TRIVIAL = """\"\"\"A trivial analysis: the run's encoders, counted (one module: the whole analysis).\"\"\"

from backretrieval.findings.analysis import Analysis, Question, Setting
from backretrieval.findings.result import Result


class Trivial(Analysis):
    \"\"\"trivial.{md,json}: the number of encoders times ``scale``.\"\"\"

    name = "trivial"
    question = Question(7, "A trivial question", "How many encoders does the run have, times a scale?")
    settings = (Setting("scale", 2, "the factor", type=int),)
    files = ("trivial.md",)

    def run(self, art, settings):
        info = art.info()
        n = len(info.encoders) * settings["scale"]
        return Result(
            run=info, settings=dict(settings), numbers={"n": n}, answer=f"{n} encoders.", files={"trivial.md": str(n)}
        )
"""


def test_a_new_analysis_is_one_module_and_nothing_else(run, tmp_path, monkeypatch, capsys):
    """A module `trivial.py` dropped into the findings package (here: a folder added to the
    package's path) is an analysis: in the registry, the command line (`findings --analysis
    trivial`, its flag from its setting), the config's `findings:` section and its checks, the
    questions of docs/FINDINGS.md (a new section), and it runs through the one step into a
    record the document renders."""
    import sys

    import backretrieval.findings as package
    from backretrieval.config import load_config
    from backretrieval.findings import analysis
    from backretrieval.findings.analysis import config_keys, findings_settings
    from backretrieval.findings.document import render_findings
    from backretrieval.findings.record import read_record

    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "trivial.py").write_text(TRIVIAL, encoding="utf-8")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path / "plugin")])
    monkeypatch.setattr(analysis, "_CLASSES", dict(analysis._CLASSES))  # the registration ends with the test
    # the registry imports the module below; it leaves sys.modules with the test
    monkeypatch.setitem(sys.modules, "backretrieval.findings.trivial", None)
    del sys.modules["backretrieval.findings.trivial"]

    assert list(analysis.registry()) == [*ANALYSES, "trivial"]
    assert analysis.questions()[-1] == analysis.Question(
        7, "A trivial question", "How many encoders does the run have, times a scale?", "trivial"
    )
    cfg = load_config(Path(__file__).resolve().parents[1] / "params.yaml")
    assert config_keys()["trivial"] == ["scale"]
    assert findings_settings({**cfg, "findings": {"trivial": {"scale": 3}}})["trivial"] == {"scale": 3}
    with pytest.raises(ConfigError, match="analysis 'trivial' has no setting 'scal' \\(did you mean 'scale'\\?\\)"):
        findings_settings({**cfg, "findings": {"trivial": {"scal": 3}}})

    assert main(["step", "findings", "--analysis", "trivial", "--help"]) == 0
    assert re.search(r"--scale SCALE +the factor \(default 2\)", capsys.readouterr().out)
    root, f = run
    out = tmp_path / "findings"
    args = ["--dataset", str(f["dataset"]), "--metrics", *f["metrics"], "--run-name", "toy"]
    assert main(["step", "findings", "--analysis", "trivial", *args, "--out-dir", str(out), "--scale", "3"]) == 0
    rec = read_record(out / "trivial.json")
    assert rec.numbers == {"n": 15} and rec.outputs == ("trivial.md",) and (out / "trivial.md").read_text() == "15"
    assert "## 7. A trivial question" in render_findings([rec]) and "15 encoders." in render_findings([rec])


def test_the_step_writes_exactly_what_an_analysis_declares(run, tmp_path, monkeypatch):
    """The workflow declares an analysis's outputs from its class; a result with another file
    is refused before anything is written."""
    from backretrieval.findings.agreement import Agreement

    root, f = run
    out = tmp_path / "findings"
    assert main([*CALIBRATION, *_run_args(f, out), "--soft-m", "1", "5"]) == 0
    monkeypatch.setattr(Agreement, "files", ("agreement.md",))
    args = [*AGREEMENT, "--dataset", str(f["dataset"]), "--metrics", *f["metrics"]]
    args += ["--run-name", "toy", "--out-dir", str(out), "--findings-files", str(out / "calibration_points.csv")]
    with pytest.raises(RuntimeError, match="declares \\['agreement.md'\\]"):
        main([*args, "--bootstrap", "20"])
    assert not (out / "agreement.json").exists()


def test_one_writer_writes_files_figures_and_record_in_order(tmp_path):
    from backretrieval.evaluation.run_artifacts import RunInfo
    from backretrieval.findings.record import read_record
    from backretrieval.findings.result import Csv, Result
    from backretrieval.findings.writer import write_result

    info = RunInfo("toy", "toy", True, "reports", 30, (0,), ("en-de",), ("a", "b", "c"), "img", 10)
    drawn = []
    result = Result(
        run=info,
        settings={"B": 3},
        numbers={"x": 0.5},
        answer="An answer.",
        verdict="An answer.",
        files={
            "agreement.md": "## md",
            "agreement.csv": pd.DataFrame({"a": [1 / 3]}),
            "r.csv": Csv(pd.DataFrame({"a": [1 / 3]}), "%.3g"),
        },
        figures={"agreement_clustermap": drawn.append},
    )
    rec = write_result(tmp_path, "agreement", result)
    assert (tmp_path / "agreement.md").read_text() == "## md"
    assert (tmp_path / "agreement.csv").read_text() == "a\n0.3333333333\n"
    assert (tmp_path / "r.csv").read_text() == "a\n0.333\n"
    assert drawn == [tmp_path / "figures" / "agreement_clustermap"]
    assert (
        rec.outputs[:3] == ("agreement.md", "agreement.csv", "r.csv")
        and rec.outputs[3] == "figures/agreement_clustermap.png"
    )
    assert read_record(tmp_path / "agreement.json") == rec


def _hits_only(f: dict, root: Path) -> dict:
    """A copy of the run's metrics as an older metrics step wrote them with hits only: no
    ``bkr_mrr`` / ``bkr_mean_rank`` rows and 0/1 BkR hits in the ranks files (the values the
    old code read as hits, so its checks passed)."""
    out = dict(f, metrics=[], ranks=[])
    for m in f["metrics"]:
        frame = pd.read_csv(m)
        dst = root / "hits" / Path(m).name
        io.write_csv(dst, frame[~frame["metric"].isin(["bkr_mrr", "bkr_mean_rank"])])
        ranks = io.load_npz(Path(m).with_suffix(".ranks.npz"))
        io.save_npz(
            dst.with_suffix(".ranks.npz"),
            **{key: (r <= 5).astype(np.int64) if key.endswith("/bkr") else r for key, r in ranks.items()},
        )
        out["metrics"].append(str(dst))
        out["ranks"].append(str(dst.with_suffix(".ranks.npz")))
    return out


def test_hits_only_metrics_fail_naming_the_file(run, tmp_path, capsys):
    """A metrics table without full BkR ranks is refused, by name, by every step that reads BkR
    ranks or BkR MRR (it used to be read as hits, or its BkR MRR silently left out)."""
    from backretrieval.steps.report import read_bkr_hits

    root, f = run
    hits = _hits_only(f, tmp_path)
    first = hits["metrics"][0]
    expected = f"{first}: BkR Recall@k without bkr_mrr"
    points = tmp_path / "full" / "calibration_points.csv"
    assert main([*CALIBRATION, *_run_args(f, points.parent), "--soft-m", "1", "3"]) == 0
    capsys.readouterr()
    steps = {
        "inference": [*_run_args(hits, tmp_path / "i"), "--bootstrap", "20", "--max-seeds", "2"],
        "calibration": [*_run_args(hits, tmp_path / "c"), "--soft-m", "1", "3"],
        "agreement": [
            *["--dataset", str(f["dataset"]), "--metrics", *hits["metrics"]],
            *["--run-name", "toy", "--out-dir", str(tmp_path / "a"), "--findings-files", str(points), "--soft-m", "3"],
        ],
    }
    for step, args in steps.items():
        assert main(["step", "findings", "--analysis", step, *args]) == 2, step
        err = capsys.readouterr().err
        assert expected in err and "expected full BkR ranks: rerun the metrics step" in err, (step, err)
        assert not (tmp_path / args[args.index("--out-dir") + 1]).exists(), step
    with pytest.raises(InputError, match=re.escape(expected)):
        read_bkr_hits([Path(p) for p in hits["metrics"]], 5)
    assert set(read_bkr_hits([Path(p) for p in f["metrics"]], 5)) == set(NOISE)  # full ranks: read
