from pathlib import Path

import pytest
import yaml

from backretrieval.cli import main
from backretrieval.config import all_directions, load_config, pivot_directions
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


def test_packaged_schema_copy_is_identical():
    a = (ROOT / "workflow/schemas/config.schema.yaml").read_text()
    b = (ROOT / "src/backretrieval/data/config.schema.yaml").read_text()
    assert a == b, "run: cp workflow/schemas/config.schema.yaml src/backretrieval/data/"


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
