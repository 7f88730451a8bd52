"""A config file is laid over params.yaml (``backretrieval.config.layered_config``): it names
only what differs; mappings merge key by key except dataset, encoders, backbones and corpora
(replaced whole); params.yaml's run_name, reports_dir and studies are its own; the merged config
is validated once, every missing, unknown or invalid key in one error. The six-line
bring-your-own config of docs/DATASETS.md runs as written."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

import snake
from backretrieval.config import NOT_INHERITED, layered_config, load_config, overlay
from backretrieval.errors import ConfigError
from snake import BIN, ROOT, run_snakemake

PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
DOC = ROOT / "docs" / "DATASETS.md"
MARK = "<!-- byo-config-example (tests/test_config_overlay.py runs it) -->"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def doc_example() -> str:
    """The YAML block after the example's marker in docs/DATASETS.md."""
    text = DOC.read_text(encoding="utf-8")
    assert MARK in text, f"{DOC}: the marker of the bring-your-own config example is gone"
    m = re.match(r"\s*```yaml\n(.*?)```", text.split(MARK, 1)[1], re.S)
    assert m, f"{DOC}: no ```yaml block right after the example's marker"
    return m.group(1)


# -- the merge rule ------------------------------------------------------------------------------


def test_a_config_that_omits_most_keys_gets_the_params_yaml_defaults(tmp_path):
    p = _write(tmp_path / "quick.yaml", "run_name: quick\nseeds: [0, 1]\nfigure_seed: 1\n")
    cfg = load_config(p, base=ROOT / "params.yaml")
    assert cfg["run_name"] == "quick" and cfg["seeds"] == [0, 1] and cfg["figure_seed"] == 1
    assert cfg["reports_dir"] == "reports/quick"  # not params.yaml's reports/default
    assert "case_study" not in cfg and "human_study" not in cfg  # params.yaml's own run's studies
    given = {"run_name", "seeds", "figure_seed"}
    inherited = {k: v for k, v in PARAMS.items() if k not in given and k not in NOT_INHERITED}
    assert inherited and {k: cfg[k] for k in inherited} == inherited
    assert set(cfg) == set(inherited) | given | {"reports_dir"}


def test_mappings_merge_but_encoders_and_dataset_are_replaced_whole(tmp_path):
    p = _write(
        tmp_path / "mine.yaml",
        "run_name: mine\n"
        "encoders: {char: {type: char_ngram, dim: 64}, c3: {type: char_ngram, n: [3]}, rnd: {type: random}}\n"
        "dataset: {name: small, source: synthetic, synthetic: {n_items: 3000}}\n"
        "stats: {bootstrap_B: 200}\n",
    )
    cfg = load_config(p, base=ROOT / "params.yaml")
    assert cfg["encoders"] == {
        "char": {"type": "char_ngram", "dim": 64},
        "c3": {"type": "char_ngram", "n": [3]},
        "rnd": {"type": "random"},
    }
    assert cfg["dataset"] == {"name": "small", "source": "synthetic", "synthetic": {"n_items": 3000}}
    assert cfg["stats"] == {**PARAMS["stats"], "bootstrap_B": 200}  # bootstrap_seed kept
    assert cfg["backbones"] == PARAMS["backbones"]


def test_overlay_rule():
    base = {"a": {"x": 1, "y": {"p": 1, "q": 2}}, "l": [1, 2], "encoders": {"e": {"type": "random"}}, "s": 1}
    top = {"a": {"y": {"q": 3}, "z": 0}, "l": [3], "encoders": {"f": {"type": "char_ngram"}}, "s": None}
    before = copy.deepcopy(base)
    assert overlay(base, top) == {
        "a": {"x": 1, "y": {"p": 1, "q": 3}, "z": 0},  # mappings merge at every depth
        "l": [3],  # lists replace
        "encoders": {"f": {"type": "char_ngram"}},  # replaced whole
        "s": None,  # null replaces
    }
    assert base == before


def test_config_files_are_layered_in_order_and_the_source_names_them(tmp_path):
    a = _write(tmp_path / "a.yaml", "run_name: a\nsample_size: 100\nrecall_k: 5\n")
    b = _write(tmp_path / "b.yaml", "sample_size: 50\n")
    cfg, source = layered_config([a, b], ROOT / "params.yaml")
    assert (cfg["sample_size"], cfg["recall_k"], cfg["run_name"]) == (50, 5, "a")
    assert source == f"{a} + {b} (over {ROOT / 'params.yaml'})"
    alone, source = layered_config([a], tmp_path / "no-params.yaml")  # no base: the file alone
    assert alone == yaml.safe_load(a.read_text()) and source == str(a)
    same, _ = layered_config([ROOT / "params.yaml"], ROOT / "params.yaml")
    assert same == PARAMS  # params.yaml over itself: itself, studies included


def test_named_configurations_gain_no_setting_that_changes_their_run():
    """config/*.yaml are complete: laid over params.yaml they gain only keys whose value is what
    the steps use when the key is absent (model_threads 1)."""
    from backretrieval._util.device import DEFAULT_MODEL_THREADS

    for path in sorted((ROOT / "config").glob("*.yaml")):
        own = yaml.safe_load(path.read_text(encoding="utf-8"))
        cfg, _ = layered_config([path], ROOT / "params.yaml")
        gained = {k: v for k, v in cfg.items() if k not in own}
        assert gained in ({}, {"model_threads": DEFAULT_MODEL_THREADS}), (path.name, gained)
        assert {k: cfg[k] for k in own} == own, path.name


# -- validated once, every problem named ---------------------------------------------------------


def test_a_misspelt_top_level_key_is_refused_naming_it(tmp_path):
    p = _write(tmp_path / "typo.yaml", "run_name: typo\nsampel_size: 100\n")
    with pytest.raises(ConfigError) as info:
        load_config(p, base=ROOT / "params.yaml")
    msg = str(info.value)
    assert msg.startswith(f"{p} (over {ROOT / 'params.yaml'}): field 'sampel_size': ")
    assert "'sampel_size' was unexpected" in msg and "did you mean 'sample_size'?" in msg


def test_every_missing_and_invalid_key_is_reported_in_one_error(tmp_path):
    # no params.yaml beneath it: the file is the whole config, and lacks most keys
    p = _write(tmp_path / "bare.yaml", "run_name: bare\nseeds: seven\nstats: {bootstrp_B: 10}\n")
    with pytest.raises(ConfigError) as info:
        load_config(p)
    msg = str(info.value)
    missing = ["dataset", "languages", "directions", "text_field", "sample_size", "recall_k"]
    missing += ["image_backbone", "backbones", "encoders", "cache_dir", "reports_dir"]
    assert msg.startswith(f"{p}: {len(missing) + 2} problems: ") and "\n" not in msg
    for key in missing:
        assert f"field '{key}': '{key}' is a required property" in msg
    assert "field 'seeds': 'seven' is not of type 'array'" in msg
    assert "field 'stats.bootstrp_B': unknown key" in msg and "did you mean 'bootstrap_B'?" in msg
    assert set(info.value.fields) >= {*missing, "seeds", "stats.bootstrp_B"}


def test_validate_config_lays_the_file_over_the_working_directorys_params_yaml(tmp_path):
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    _write(tmp_path / "quick.yaml", "run_name: quick\nseeds: [0, 1]\n")
    cmd = [str(BIN / "backretrieval"), "validate-config", "--config", "quick.yaml"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=snake.env(), timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"quick.yaml: OK ({len(PARAMS['encoders'])} encoders") and "2 seeds" in res.stdout
    _write(tmp_path / "typo.yaml", "run_name: typo\nrecal_k: 5\n")
    res = subprocess.run([*cmd[:-1], "typo.yaml"], capture_output=True, text=True, cwd=tmp_path, env=snake.env())
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "field 'recal_k'" in res.stderr and "did you mean 'recall_k'?" in res.stderr


# -- the documented bring-your-own config runs -----------------------------------------------------


def make_byo(synthetic_dataset, dst: Path) -> Path:
    """A bring-your-own folder without parallel texts, with images: item i of a SYNTHETIC
    dataset keeps its text in en or de only (alternately), under a per-language id."""
    src = synthetic_dataset(60, ["en", "de"], seed=0, image_size=64)
    dst.mkdir(parents=True)
    items = pd.read_csv(src / "items.csv", dtype=str, keep_default_na=False)
    owner = {i: ("en", "de")[n % 2] for n, i in enumerate(sorted(items["item_id"].unique()))}
    items = items[items["item_id"].map(owner) == items["lang"]].copy()
    items["item_id"] = items["lang"] + "-" + items["item_id"]
    items.to_csv(dst / "items.csv", index=False)
    shutil.copy(src / "images.csv", dst / "images.csv")
    shutil.copytree(src / "images", dst / "images")
    meta = json.loads((src / "dataset.json").read_text(encoding="utf-8"))
    meta.update(name=dst.name, parallel=False, languages=["en", "de"])
    (dst / "dataset.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return dst


@pytest.fixture(scope="module")
def byo_workdir(synthetic_dataset, tmp_path_factory) -> Path:
    """A working directory with the checkout's params.yaml, the doc's config as my.yaml and the
    folder it names."""
    wd = tmp_path_factory.mktemp("byo-config")
    shutil.copy(ROOT / "params.yaml", wd / "params.yaml")
    example = doc_example()
    cfg = yaml.safe_load(example)
    _write(wd / "my.yaml", example)
    make_byo(synthetic_dataset, wd / cfg["dataset"]["options"]["path"])
    return wd


def test_the_documented_config_has_six_lines_and_names_only_what_differs():
    example = doc_example()
    assert len(example.strip().splitlines()) == 6
    cfg = yaml.safe_load(example)
    assert "reports_dir" not in cfg and "seeds" not in cfg and "backbones" not in cfg


def test_the_documented_config_plans_the_whole_run(byo_workdir):
    res = run_snakemake(byo_workdir, "-n", configfile=byo_workdir / "my.yaml", timeout=300)
    out = res.stdout + res.stderr
    name = yaml.safe_load(doc_example())["run_name"]
    assert f"reports/{name}/bkr_report.md" in out
    for rule in ("prepare_dataset", "embed_images", "embed_text", "metrics", "report"):
        assert rule in out, rule


def test_without_params_yaml_the_documented_config_is_refused_listing_every_missing_key(byo_workdir, tmp_path):
    shutil.copy(byo_workdir / "my.yaml", tmp_path / "my.yaml")
    res = run_snakemake(tmp_path, "-n", configfile=tmp_path / "my.yaml", timeout=300, check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    line = next(x for x in out.splitlines() if "problems:" in x)
    for key in ("text_field", "seeds", "recall_k", "image_backbone", "backbones", "cache_dir", "reports_dir"):
        assert f"field '{key}': '{key}' is a required property" in line, key


@pytest.mark.slow
def test_the_documented_config_runs(byo_workdir):
    """The doc's six lines run to the BkR report; a second config file makes the run small
    (N=12, two seeds): layers apply in order."""
    _write(byo_workdir / "small.yaml", "sample_size: 12\nseeds: [0, 1]\nrecall_k: 3\nstats: {bootstrap_B: 200}\n")
    run_snakemake(
        byo_workdir, "--configfile", str(byo_workdir / "my.yaml"), str(byo_workdir / "small.yaml"), cores=2, timeout=900
    )
    cfg = yaml.safe_load(doc_example())
    rep = byo_workdir / "reports" / cfg["run_name"]
    ranking = pd.read_csv(rep / "ranking.csv")
    assert set(ranking["encoder"]) == set(cfg["encoders"])
    md = (rep / "bkr_report.md").read_text(encoding="utf-8")
    assert "N=12, 2 seeds, 3 encoders" in md and "random baseline" in md
    metrics = json.loads((rep / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["meta"]["sample_size"] == 12 and metrics["meta"]["recall_k"] == 3
