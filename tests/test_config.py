from pathlib import Path

import pytest
import yaml

from backretrieval.cli import main
from backretrieval.config import all_directions, load_config, pivot_directions
from backretrieval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_default_params_and_named_configs_validate():
    cfg = load_config(ROOT / "params.yaml")
    assert cfg["directions"] == pivot_directions(cfg["languages"])
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
        ("k=0", "field 'k'"),
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
