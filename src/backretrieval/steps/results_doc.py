"""The results-doc step: the run configurations and their reports folders → docs/RESULTS.md.

The configurations and their reports folders are given explicitly (in pairs); the run list
(``scripts/dvc_runs.yaml``) says which are DVC stages and why the others are not. A folder
without ``metrics.json`` is a configuration that was not run here: allowed for a listed
non-stage (its reason is printed), an error for a stage.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import yaml

from .._util import io
from ..errors import InputError
from ..reporting.results_doc import RunSource, render_results


def _load_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{path}: not found") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a YAML mapping")
    return data


def listed_configs(dvc_runs: str | os.PathLike[str]) -> list[str]:
    """Every run configuration of the run list: the DVC stages, then the others, in file order."""
    runs = _load_yaml(Path(dvc_runs))
    return [str(c) for c in runs.get("stages") or []] + [str(c) for c in runs.get("not_stages") or {}]


def run_sources(configs: Sequence[str], reports: Sequence[str], dvc_runs: str | os.PathLike[str]) -> list[RunSource]:
    """One :class:`RunSource` per (config, reports folder) pair."""
    if len(configs) != len(reports):
        raise InputError(
            f"results-doc: {len(configs)} --run-configs but {len(reports)} --reports (give one folder per config)"
        )
    runs = _load_yaml(Path(dvc_runs))
    stages = [str(s) for s in runs.get("stages") or []]
    not_stages = {str(k): str(v) for k, v in (runs.get("not_stages") or {}).items()}
    sources = []
    for config, rd in zip(configs, reports, strict=True):
        if config not in stages and config not in not_stages:
            raise InputError(f"{config}: not listed in {dvc_runs} (stages or not_stages)")
        cfg = _load_yaml(Path(config))
        if "run_name" not in cfg:
            raise InputError(f"{config}: missing field 'run_name'")
        ran = (Path(rd) / "metrics.json").exists()
        if not ran and config in stages:
            raise InputError(f"{Path(rd) / 'metrics.json'}: not found; {config} is a DVC stage, run it first")
        sources.append(
            RunSource(
                config=config,
                run_name=str(cfg["run_name"]),
                reports_dir=Path(rd) if ran else None,
                dvc_stage=config in stages,
                reason=not_stages.get(config),
            )
        )
    return sources


def write_results_doc(
    configs: Sequence[str], reports: Sequence[str], dvc_runs: str | os.PathLike[str], out: str | os.PathLike[str]
) -> None:
    io.write_text(out, render_results(run_sources(configs, reports, dvc_runs), out))
