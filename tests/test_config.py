import re
import subprocess
from pathlib import Path

import pytest
import yaml

from backretrieval.cli import main
from backretrieval.config import all_directions, load_config, pivot_directions, validate_config
from backretrieval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_default_params_and_named_configs_validate():
    cfg = load_config(ROOT / "params.yaml")
    # en <-> every other language, except Indonesian: its texts are there for the case study
    # (the paper's case-study languages), the main evaluation keeps its five pairs
    assert "id" in cfg["case_study"]["languages"]
    assert cfg["directions"] == pivot_directions([lang for lang in cfg["languages"] if lang != "id"])
    for p in sorted((ROOT / "config").glob("*.yaml")) + [ROOT / "tests/data/e2e.yaml"]:
        load_config(p)


def test_the_schema_is_one_file_in_the_package():
    """The config schema has one copy, the package's (the workflow validates through
    backretrieval.config), so no second file can drift from it."""
    from backretrieval.config import SCHEMA_PATH

    assert SCHEMA_PATH == ROOT / "src/backretrieval/data/config.schema.yaml" and SCHEMA_PATH.is_file()
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert [f for f in tracked.splitlines() if f.endswith("config.schema.yaml")] == [
        "src/backretrieval/data/config.schema.yaml"
    ]


@pytest.mark.parametrize(
    "override, field, hint",
    [
        # a misspelt setting of a known analysis: named with the analysis and its settings
        ("findings={hubness: {hub_fractoin: 0.5}}", "findings.hubness.hub_fractoin", "did you mean 'hub_fraction'?"),
        ("findings={sample_size: {n_gird: [100]}}", "findings.sample_size.n_gird", "did you mean 'n_grid'?"),
        # a misspelt analysis
        ("findings={hubnes: {seed: 1}}", "findings.hubnes", "did you mean 'hubness'?"),
        ("findings={overall: {}}", "findings.overall", "the analyses are"),
        # a backbone's key of another type, a misspelt one
        ("backbones.effnet-lite0.arch=resnet50", "backbones.effnet-lite0.arch", "its keys are"),
        ("backbones.effnet-lite0.varaint=lite2", "backbones.effnet-lite0.varaint", "did you mean 'variant'?"),
        # a dataset option its source does not read
        ("dataset.options={miror: data/raw}", "dataset.options.miror", "its options are []"),
    ],
)
def test_misspelt_keys_are_refused_naming_the_key(override, field, hint):
    with pytest.raises(ConfigError, match=f"field '{re.escape(field)}'.*{re.escape(hint)}"):
        load_config(ROOT / "params.yaml", [override])


def test_findings_keys_are_the_settings_of_each_analysis():
    """A config's findings section may set exactly the settings each analysis declares but those
    that follow from the config (its encoders' roles, its image backbone); each is accepted and
    used, and one that follows from the config is refused by name."""
    from backretrieval.findings.analysis import config_keys, findings_settings, registry

    cfg = load_config(ROOT / "params.yaml")
    keys = config_keys()
    assert list(keys) == list(registry())
    for name, cls in registry().items():
        assert keys[name] == sorted(s.name for s in cls.settings if s.config)
    assert {"n_grid", "directions", "encoders", "baseline", "synthetic"} <= set(keys["sample_size"])
    assert "backbones" in keys["image_quality"] and "base" not in keys["image_quality"]
    given = {"hubness": {"hub_fraction": 0.5}, "sample_size": {"n_grid": [100, 200]}}
    cfg = load_config(ROOT / "params.yaml", [f"findings={given}"])
    s = findings_settings(cfg)
    assert s["hubness"]["hub_fraction"] == 0.5 and s["sample_size"]["n_grid"] == [100, 200]
    with pytest.raises(ConfigError, match=r"field 'findings\.image_quality\.base': analysis 'image_quality' has no"):
        load_config(ROOT / "params.yaml", ["findings={'image_quality': {'base': 'x'}}"])


def test_corpus_options_are_checked_per_source():
    cfg = load_config(ROOT / "config/multi30k.yaml")
    corpus = next(iter(cfg["corpora"]))
    cfg["corpora"][corpus]["options"]["splts"] = ["train"]
    with pytest.raises(ConfigError, match=rf"field 'corpora\.{corpus}\.options\.splts'.*did you mean 'splits'"):
        validate_config(cfg, "multi30k.yaml")


def test_source_options_list_every_option_prepare_reads():
    """SOURCE_OPTIONS (what the config allows) holds every option data/prepare.py reads."""
    from backretrieval.data import prepare

    read = set(re.findall(r"opts(?:\.get\(|\[)\"(\w+)\"", Path(prepare.__file__).read_text()))
    assert len(read) > 10, read
    allowed = {key for keys in prepare.SOURCE_OPTIONS.values() for key in keys}
    assert read <= allowed, sorted(read - allowed)


@pytest.mark.parametrize(
    "override, message",
    [
        ("sample_size=abc", "field 'sample_size'"),
        ("recall_k=0", "field 'recall_k'"),
        ("directions=[en-xx]", "language 'xx'"),
        ("directions=[en-en]", "same source and target"),
        ("image_backbone=nope", "field 'image_backbone'"),
        ("text_field=abstract", "field 'text_field'"),
        ("encoders={a: {type: x}}", "field 'encoders'"),
        ("bogus=1", "bogus"),
    ],
)
def test_bad_values_are_named(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(ROOT / "params.yaml", [override])


def test_cli_bad_config_exits_2_with_one_line(tmp_path, capsys):
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["seeds"] = [1, 1]
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(cfg))
    assert main(["validate-config", "--config", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field 'seeds'" in err[0] and str(p) in err[0]


def test_direction_helpers():
    assert all_directions(["en", "de", "fr"]) == ["en-de", "en-fr", "de-en", "de-fr", "fr-en", "fr-de"]
    assert pivot_directions(["en", "de"]) == ["en-de", "de-en"]


def test_removed_k_key_is_refused(tmp_path):
    """The old spelling `k` of recall_k is gone (CHANGELOG): a config still using it is refused,
    naming the field, instead of being renamed."""
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["k"] = cfg.pop("recall_k")
    p = tmp_path / "old.yaml"
    p.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=r"old.yaml.*'recall_k' is a required property"):
        load_config(p)
    with pytest.raises(ConfigError, match=r"'k' was unexpected"):
        load_config(ROOT / "params.yaml", ["k=5"])
