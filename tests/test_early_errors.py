"""Errors that come before any work and name what to fix: the config's cache_dir, local model
paths, fewer than 3 encoders, command-line overrides, code-running encoder specs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from backretrieval.cli import main
from backretrieval.config import load_config, overrides_from, validate_config
from backretrieval.errors import ConfigError, InputError
from snake import ROOT, run_snakemake


def _cfg(**changes) -> dict:
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg.update(changes)
    return cfg


def _write(tmp_path: Path, cfg: dict) -> Path:
    p = tmp_path / "cfg.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


# -- cache_dir ---------------------------------------------------------------------------------


def test_cache_dir_that_is_a_file_is_named(tmp_path):
    f = tmp_path / "cache"
    f.write_text("x")
    with pytest.raises(ConfigError, match=r"field 'cache_dir': .* is a file"):
        validate_config(_cfg(cache_dir=str(f)), "c.yaml")
    with pytest.raises(ConfigError, match=r"field 'cache_dir': .* cannot be created: .* is a file"):
        validate_config(_cfg(cache_dir=str(f / "sub")), "c.yaml")


def test_cache_dir_that_cannot_be_written_is_named(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    # root may write anywhere, so the permission check is observed through os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == ro else real(p, mode, **kw))
    with pytest.raises(ConfigError, match=r"field 'cache_dir': .* cannot be written"):
        validate_config(_cfg(cache_dir=str(ro)), "c.yaml")
    with pytest.raises(ConfigError, match=r"field 'cache_dir': .* would be created in .* cannot be written"):
        validate_config(_cfg(cache_dir=str(ro / "new")), "c.yaml")


def test_cache_dir_that_can_be_created_is_fine(tmp_path):
    validate_config(_cfg(cache_dir=str(tmp_path / "a" / "b")), "c.yaml")
    assert not (tmp_path / "a").exists()  # checked, not created


def test_validate_config_cli_refuses_a_file_cache_dir(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    p = _write(tmp_path, _cfg(cache_dir=str(tmp_path / "f")))
    assert main(["validate-config", "--config", str(p)]) == 2
    assert "field 'cache_dir'" in capsys.readouterr().err


# -- local model paths -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/nonexistent/path", "./no/such/model", "~/no-such-model-xyz"])
def test_local_model_path_that_does_not_exist(path):
    cfg = _cfg()
    cfg["encoders"]["mine"] = {"type": "sentence-transformers", "model": path}
    with pytest.raises(ConfigError, match=r"field 'encoders\.mine\.model': .*path does not exist"):
        validate_config(cfg, "c.yaml")


def test_hub_names_are_not_checked_as_paths():
    cfg = _cfg()
    cfg["encoders"]["mine"] = {"type": "sentence-transformers", "model": "org/some-model"}
    validate_config(cfg, "c.yaml")


def test_model_flag_path_that_does_not_exist_fails_before_work():
    from backretrieval.evaluation.models import parse_model

    with pytest.raises(InputError, match=r"--encoder '/nonexistent/path': path does not exist"):
        parse_model("/nonexistent/path")
    assert parse_model("org/name")[1] == {"type": "sentence-transformers", "model": "org/name"}


# -- fewer than 3 encoders ---------------------------------------------------------------------


def test_fewer_than_three_encoders_says_why():
    cfg = _cfg()
    cfg["encoders"] = dict(list(cfg["encoders"].items())[:2])
    with pytest.raises(ConfigError, match="at least 3 encoders are needed to correlate metrics across encoders"):
        validate_config(cfg, "c.yaml")


def test_nonparallel_data_needs_two_encoders_not_three(tmp_path):
    """Without parallel texts there is no correlation (Table 1, Figure 2): two encoders can be
    ranked; one cannot."""
    import json

    data = tmp_path / "np"
    data.mkdir()
    (data / "dataset.json").write_text(json.dumps({"name": "np", "languages": ["en", "de"], "parallel": False}))
    cfg = _cfg(dataset={"name": "np", "source": "prepared", "options": {"path": str(data)}})
    for section in ("case_study", "human_study"):  # they name encoders of their own
        cfg.pop(section, None)
    cfg["encoders"] = dict(list(cfg["encoders"].items())[:2])
    validate_config(cfg, "c.yaml")
    cfg["encoders"] = dict(list(cfg["encoders"].items())[:1])
    with pytest.raises(
        ConfigError, match="at least 2 encoders are needed to rank encoders on a dataset without parallel"
    ):
        validate_config(cfg, "c.yaml")


# -- overrides are named -----------------------------------------------------------------------


def test_override_is_named_instead_of_the_file(tmp_path):
    p = _write(tmp_path, _cfg(sample_size=15, recall_k=10))
    with pytest.raises(ConfigError, match=r"^--set recall_k=15 \(overriding .*cfg\.yaml\): field 'recall_k'"):
        load_config(p, ["recall_k=15"])
    with pytest.raises(ConfigError, match=r"^--set sample_size=10 \(overriding"):  # the other side of k < N
        load_config(p, ["sample_size=10"])
    with pytest.raises(ConfigError, match=r"^\S*cfg\.yaml: field 'recall_k'"):  # the file's own error
        load_config(_write(tmp_path, _cfg(sample_size=15, recall_k=15)))


def test_snakemake_config_overrides_are_named():
    cfg = _cfg(sample_size=15, recall_k=15)
    ov = overrides_from({"recall_k": 15, "stats": {"bootstrap_B": 100}})
    assert ov == {"recall_k": "--config recall_k=15", "stats.bootstrap_B": "--config stats.bootstrap_B=100"}
    with pytest.raises(ConfigError, match=r"^--config recall_k=15 \(overriding params\.yaml\): field 'recall_k'"):
        validate_config(cfg, "params.yaml", ov)


def test_snakemake_names_the_override(tmp_path):
    """The workflow's parse-time check (common.smk) names `--config recall_k=15`."""
    r = run_snakemake(
        tmp_path,
        "-n",
        *("--config", "recall_k=15", "sample_size=15"),
        configfile=ROOT / "params.yaml",
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert r.returncode != 0
    assert "--config recall_k=15" in r.stdout + r.stderr, (r.stdout + r.stderr)[-2000:]


def test_snakemake_blames_the_configfile_not_config(tmp_path):
    """A value from `--configfile` is the file's: the error names the file, never `--config`;
    with both, only the `--config` value is called an override."""
    bad = _write(tmp_path, _cfg(sample_size=15, recall_k=15))
    r = run_snakemake(tmp_path, "-n", configfile=bad, cwd=ROOT, timeout=300, check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "field 'recall_k'" in out, out[-2000:]
    assert "--config" not in out and "cfg.yaml: field 'recall_k'" in out, out[-2000:]
    k15 = tmp_path / "k15.yaml"
    k15.write_text(yaml.safe_dump(_cfg(sample_size=20, recall_k=15)))
    r = run_snakemake(tmp_path, "-n", "--config", "sample_size=15", configfile=k15, cwd=ROOT, timeout=300, check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "--config sample_size=15 (overriding" in out, out[-2000:]
    assert "--config recall_k" not in out, out[-2000:]


# -- code-running encoder specs need an opt-in ------------------------------------------------


def test_callable_encoder_needs_allow_code(tmp_path, capsys):
    cfg = _cfg()
    cfg["encoders"]["shell"] = {"type": "callable", "target": "subprocess:run", "kwargs": {"shell": True}}
    with pytest.raises(ConfigError, match=r"field 'encoders\.shell': .*'subprocess:run'.*allow_code: true"):
        validate_config(dict(cfg), "c.yaml")
    p = _write(tmp_path, cfg)
    assert main(["validate-config", "--config", str(p)]) == 2
    assert "allow_code" in capsys.readouterr().err
    cfg["allow_code"] = True
    p = _write(tmp_path, cfg)
    assert main(["validate-config", "--config", str(p)]) == 0
    out = capsys.readouterr().out
    assert "allow_code: true" in out and "shell (subprocess:run)" in out


def test_model_flag_callable_needs_allow_code(tmp_path, capsys):
    rc = main(["evaluate", "--encoder", "subprocess:run", "--dataset", str(tmp_path / "none"), "--directions", "en-de"])
    assert rc == 2 and "--allow-code" in capsys.readouterr().err
    rc = main(
        [
            "evaluate",
            "--encoder",
            "{type: callable, target: 'os:system'}",
            "--dataset",
            str(tmp_path / "none"),
            "--directions",
            "en-de",
        ]
    )
    assert rc == 2 and "--allow-code" in capsys.readouterr().err


def test_loaders_refuse_pickles():
    """Model folders are trusted, datasets are not: every torch.load in the package passes
    weights_only=True and every np.load allow_pickle=False (a pickle would run code)."""
    import ast

    bad = []
    for py in sorted((ROOT / "src" / "backretrieval").rglob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
            kw = {k.arg: k.value for k in node.keywords}
            want = {("torch", "load"): ("weights_only", True), ("np", "load"): ("allow_pickle", False)}
            rule = want.get((owner, node.func.attr))
            if rule is None:
                continue
            v = kw.get(rule[0])
            if not (isinstance(v, ast.Constant) and v.value is rule[1]):
                bad.append(f"{py.relative_to(ROOT)}:{node.lineno}")
    assert not bad, f"loads without {want}: {bad}"
