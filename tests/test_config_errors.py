"""Bad config input is one line naming the field (or the override) and what is allowed, before
any work: `--set` into a scalar or a list, a `--set` value that is not YAML, a list given through
Snakemake's `--config`, over-long names and paths (refused at validation with the limit, not by
the filesystem hours later), a config file that is not UTF-8, and `train_corpus` / `ratings`
values of the wrong kind."""

from __future__ import annotations

import copy

import pytest
import yaml

from backretrieval.cli import main
from backretrieval.config import validate_config
from backretrieval.errors import ConfigError
from snake import ROOT, run_snakemake

TINY = ROOT / "tests/data/tiny.yaml"


def _tiny() -> dict:
    return yaml.safe_load(TINY.read_text(encoding="utf-8"))


def _one_error_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("run_name.x=1", "--set 'run_name.x=1': 'run_name' is a str, not a mapping with keys"),
        ("seeds.0=5", "--set 'seeds.0=5': 'seeds' is a list (give it whole: --set key=[...]), not a mapping"),
        ("run_name=`x`", "--set 'run_name=`x`': the value is not YAML ("),
        ("sample_size", "--set 'sample_size': expected key.path=value"),
    ],
)
def test_a_bad_set_is_one_line(tmp_path, monkeypatch, capsys, override, said):
    monkeypatch.chdir(tmp_path)
    line = _one_error_line(capsys, ["validate-config", "--config", str(TINY), "--set", override])
    assert said in line, line


def test_a_list_through_snakemakes_config_points_at_configfile(tmp_path):
    res = run_snakemake(tmp_path, "-n", "--config", "seeds=[0,1]", configfile=TINY, cwd=tmp_path, check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert "--config cannot give a list or a mapping" in out and "--configfile" in out, out[-3000:]
    assert not (tmp_path / "artifacts").exists()


LONG = 10_000


@pytest.mark.parametrize(
    ("field", "value", "limit"),
    [
        ("reports_dir", "reports/" + "x" * LONG, "the limit is 1024"),
        ("reports_dir", "reports/" + "x" * 300, "longer than 255 characters"),
        ("run_name", "r" * LONG, "the limit is 128"),
        ("cache_dir", "c" * LONG, "the limit is 1024"),
    ],
)
def test_an_overlong_name_or_path_is_refused_naming_field_and_limit(tmp_path, monkeypatch, capsys, field, value, limit):
    monkeypatch.chdir(tmp_path)
    cfg = _tiny()
    cfg[field] = value
    with pytest.raises(ConfigError, match=f"field '{field}'.*{limit}") as exc:
        validate_config(cfg, "c.yaml")
    assert len(str(exc.value)) < 600  # the value is not repeated whole
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    line = _one_error_line(capsys, ["validate-config", "--config", str(path)])  # no crash in validate-config
    assert f"field '{field}'" in line and limit in line, line[:600]


def test_an_overlong_encoder_name_is_refused_at_validation():
    cfg = _tiny()
    cfg["encoders"]["e" * LONG] = {"type": "random"}
    with pytest.raises(ConfigError, match=r"field 'encoders': key 'eee.*10000 characters long; the limit is 128"):
        validate_config(cfg, "c.yaml")


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "latin1.yaml"
    path.write_bytes(TINY.read_bytes() + "# café\n".encode("latin-1"))
    line = _one_error_line(capsys, ["validate-config", "--config", str(path)])
    assert f"{path}: config file is not UTF-8 (byte 0xe9 at line " in line, line


@pytest.mark.parametrize("section,key", [("case_study", "train_corpus"), ("human_study", "ratings")])
@pytest.mark.parametrize("value", [5, "data/x$y"])
def test_train_corpus_and_ratings_say_what_is_allowed(section, key, value):
    from backretrieval.config import schema_problems

    cfg = copy.deepcopy(_tiny())
    cfg[section] = {key: value}
    (msg,) = [m for f, m in schema_problems(cfg) if f == f"{section}.{key}"]
    assert msg.startswith(f"{value!r} is not a path (a path may hold spaces") and msg.endswith(" or null"), msg
    assert "not valid under any of the given schemas" not in msg
