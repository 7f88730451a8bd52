"""Read a config file and lay it over ``params.yaml`` (:func:`layered_config`, by the rule of
:func:`overlay`; YTE templating refused, :func:`templating`), then validate it once
(:func:`load_config`): the workflow and ``validate-config`` build the same config the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .._util.io import REPORTS_ROOT
from ..errors import ConfigError
from ._messages import _short
from .validation import validate_config

# -------------------------------------------------------------------------------------------
# a config file laid over params.yaml

#: The defaults a config file is laid over: the checkout's ``params.yaml`` (in the working
#: directory, where Snakemake and DVC run). A config file names only what differs from it.
BASE_CONFIG = "params.yaml"
#: Top-level mappings that a config file's value replaces whole instead of merging into: their
#: keys are names the run picks (``encoders``, ``backbones``, ``corpora``), or, for
#: ``dataset``, keys that mean something only for one source.
REPLACED_WHOLE = ("dataset", "encoders", "backbones", "corpora")
#: Keys of the base that belong to its own run and never pass to a config laid over it: the
#: run's name and reports folder (``reports_dir`` defaults to ``reports/<run_name>``) and its
#: studies, which study its dataset and encoders (a config has them only if it names them).
NOT_INHERITED = ("run_name", "reports_dir", "case_study", "human_study")


def overlay(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` laid over ``base`` (neither changed): a key of ``top`` replaces ``base``'s value,
    except that where both values are mappings they are merged key by key, recursively, by the
    same rule; a top-level mapping of :data:`REPLACED_WHOLE` replaces ``base``'s whole. Lists,
    scalars and ``null`` replace."""
    import copy

    out = copy.deepcopy(base)
    for key, value in top.items():
        if key not in REPLACED_WHOLE and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(base)
    for key, value in top.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merge(out[key], value) if both else copy.deepcopy(value)
    return out


#: YTE, the template engine Snakemake runs on a YAML config file whose top level says
#: ``__use_yte__: true``: its ``__definitions__`` block and every ``?``-prefixed key or value are
#: Python, run while the file is loaded. A config runs no code of its own (docs/SECURITY.md), so
#: a config file with any of them is refused, before Snakemake reads it wherever the project's
#: doors can (:func:`read_config_file`; the Makefile's targets: scripts/plain_config.py).
YTE_KEYS = ("__use_yte__", "__definitions__")


def templating(cfg: Any) -> str | None:
    """Where a parsed config file uses YTE templating (the first place found), or None."""
    if isinstance(cfg, dict):
        for key in YTE_KEYS:
            if key in cfg:
                return f"its top-level key {key!r}"

    def walk(node: Any, where: str) -> str | None:
        if isinstance(node, str):
            return f"{where or '(top level)'}: {node[:60]!r} (a '?' expression)" if node.startswith("?") else None
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            sub = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and key.startswith("?"):
                return f"key {sub!r} (a '?' expression)"
            if found := walk(value, sub):
                return found
        return None

    return walk(cfg, "")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A config file's mapping (ConfigError naming the file when it is missing, not UTF-8, not
    YAML, not a mapping, or a YTE template: :func:`templating`)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"{path}: config file cannot be read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError:
        from ..data.prepared import read_text_utf8
        from ..errors import InputError

        try:  # its message names the first bad byte, its line and column
            read_text_utf8(path, "config file")
        except InputError as exc:
            raise ConfigError(str(exc)) from exc
        raise
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from exc
    if where := templating(cfg):
        raise ConfigError(
            f"{path}: uses YTE templating ({where}), which runs Python when Snakemake loads the file; "
            "a backretrieval config is plain YAML and runs no code: write the values out (docs/SECURITY.md)"
        )
    if cfg is None:
        return {}
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys, got a YAML {type(cfg).__name__}")
    return cfg


def layered_config(files: list[str | Path], base: str | Path | None = BASE_CONFIG) -> tuple[dict[str, Any], str]:
    """The config of ``files`` laid over ``base`` (each file over the ones before it, by
    :func:`overlay`), and the name of its source for error messages. Not validated.

    The base contributes every key but :data:`NOT_INHERITED`; ``reports_dir``, when no file
    names it, is ``reports/<run_name>``. Without ``files`` the config is ``base`` itself; where
    ``base`` is None, missing, or one of ``files``, the files alone are the config (the first
    one complete, as before config files were laid over params.yaml)."""
    paths = [Path(f) for f in files]
    if not paths:
        if base is None:
            raise ConfigError("no config file given")
        if not Path(base).is_file():
            raise ConfigError(f"{base}: config file not found (the workflow's config; or pass --configfile FILE)")
        return read_config_file(base), str(base)
    layers = [read_config_file(p) for p in paths]
    names = " + ".join(str(p) for p in paths)
    under = base is not None and Path(base).is_file() and not any(_same_file(p, Path(base)) for p in paths)
    cfg: dict[str, Any] = {}
    if under:
        assert base is not None
        cfg = {k: v for k, v in read_config_file(base).items() if k not in NOT_INHERITED}
    for layer in layers:
        cfg = overlay(cfg, layer)
    if not under:
        return cfg, names
    if "reports_dir" not in cfg and isinstance(cfg.get("run_name"), str):
        cfg["reports_dir"] = f"{REPORTS_ROOT}/{cfg['run_name']}"
    return cfg, f"{names} (over {base})"


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def load_config(
    path: str | Path = "params.yaml", overrides: list[str] | None = None, base: str | Path | None = None
) -> dict[str, Any]:
    """Read a YAML config (laid over ``base``, e.g. :data:`BASE_CONFIG`, as the workflow lays a
    ``--configfile`` over params.yaml: :func:`layered_config`), apply ``key.sub=value``
    overrides (YAML-parsed), validate."""
    cfg, source = layered_config([path], base)
    given: dict[str, str] = {}
    for ov in overrides or []:
        if "=" not in ov:
            raise ConfigError(f"--set {_short(ov)}: expected key.path=value")
        key, value = ov.split("=", 1)
        node = cfg
        parts = key.split(".")
        for i, p in enumerate(parts[:-1]):
            node = node.setdefault(p, {})
            if not isinstance(node, dict):  # --set run_name.x=1, --set seeds.0=5
                what = (
                    "a list (give it whole: --set key=[...])" if isinstance(node, list) else f"a {type(node).__name__}"
                )
                raise ConfigError(
                    f"--set {_short(ov)}: {'.'.join(parts[: i + 1])!r} is {what}, not a mapping with keys; "
                    "a --set key names a mapping's key"
                )
        try:
            node[parts[-1]] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ConfigError(
                f"--set {_short(ov)}: the value is not YAML ({' '.join(str(exc).split())}); quote it: --set 'key=\"...\"'"
            ) from exc
        given[key] = f"--set {ov}"
    return validate_config(cfg, source, given)
