"""Load and validate ``params.yaml`` (the one config of Snakemake and DVC).

The JSON schema lives in ``workflow/schemas/config.schema.yaml`` (Snakemake validates the
same file with ``snakemake.utils.validate``); a copy ships inside the package so the CLI can
validate without the workflow folder. Cross-field checks (directions use configured
languages, the chosen backbone exists) are done here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

_SCHEMA_CANDIDATES = (
    Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml",
    Path(__file__).resolve().parent / "data" / "config.schema.yaml",
)


def schema() -> dict:
    for p in _SCHEMA_CANDIDATES:
        if p.is_file():
            return yaml.safe_load(p.read_text(encoding="utf-8"))
    raise ConfigError("config schema not found (workflow/schemas/config.schema.yaml)")


def validate_config(cfg: dict[str, Any], source: str = "params.yaml") -> dict[str, Any]:
    """Validate ``cfg``; raise ConfigError naming the offending field and the expectation."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        raise ConfigError(f"{source}: field '{where}': {e.message}")
    langs = set(cfg["languages"])
    for d in cfg["directions"]:
        src, tgt = d.split("-")
        if src == tgt:
            raise ConfigError(f"{source}: field 'directions': {d!r} has the same source and target")
        for lang in (src, tgt):
            if lang not in langs:
                raise ConfigError(
                    f"{source}: field 'directions': {d!r} uses language {lang!r} which is not in 'languages' {sorted(langs)}"
                )
    if cfg["image_backbone"] not in cfg["backbones"]:
        raise ConfigError(
            f"{source}: field 'image_backbone': {cfg['image_backbone']!r} is not a key of 'backbones' {sorted(cfg['backbones'])}"
        )
    if cfg.get("figure_seed", cfg["seeds"][0]) not in cfg["seeds"]:
        raise ConfigError(f"{source}: field 'figure_seed': must be one of 'seeds'")
    return cfg


def load_config(path: str | Path = "params.yaml", overrides: list[str] | None = None) -> dict[str, Any]:
    """Read a YAML config, apply ``key.sub=value`` overrides (YAML-parsed), validate."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    for ov in overrides or []:
        if "=" not in ov:
            raise ConfigError(f"override {ov!r}: expected key.path=value")
        key, value = ov.split("=", 1)
        node = cfg
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = yaml.safe_load(value)
    return validate_config(cfg, str(path))


def all_directions(languages: list[str]) -> list[str]:
    """Every ordered pair of distinct languages."""
    return [f"{a}-{b}" for a in languages for b in languages if a != b]


def pivot_directions(languages: list[str], pivot: str = "en") -> list[str]:
    """pivot→X and X→pivot for every other language (the default)."""
    out = []
    for x in languages:
        if x != pivot:
            out += [f"{pivot}-{x}", f"{x}-{pivot}"]
    return out
