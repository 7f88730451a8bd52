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


def _with_k(tmp_path, **case):
    """params.yaml with the deprecated spelling `k` (top level, and in case_study if asked)."""
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg["k"] = cfg.pop("recall_k")
    if case:
        cfg["case_study"].pop("recall_k")
        cfg["case_study"].update(case)
    p = tmp_path / "old.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_deprecated_k_is_renamed_with_a_warning(tmp_path):
    with pytest.warns(FutureWarning, match=r"old.yaml: field 'k' is deprecated; rename it to 'recall_k'"):
        cfg = load_config(_with_k(tmp_path))
    assert cfg["recall_k"] == 10 and "k" not in cfg
    with pytest.warns(FutureWarning) as caught:
        cfg = load_config(_with_k(tmp_path, k=7))
    said = sorted(str(w.message).split(": ", 1)[1] for w in caught)
    assert said == [
        "field 'case_study.k' is deprecated; rename it to 'case_study.recall_k' (Recall@k)",
        "field 'k' is deprecated; rename it to 'recall_k' (Recall@k)",
    ]
    assert cfg["case_study"]["recall_k"] == 7 and "k" not in cfg["case_study"]
    # the alias reaches the relations under the new name
    with pytest.warns(FutureWarning), pytest.raises(ConfigError, match="field 'recall_k'"):
        load_config(_with_k(tmp_path), ["k=5000"])


def test_k_and_recall_k_together_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"field 'k': deprecated alias of 'recall_k', which is also set"):
        load_config(ROOT / "params.yaml", ["k=5"])
