"""Validate a config: the JSON schema shipped inside the package (:data:`SCHEMA_PATH`,
``src/backretrieval/data/config.schema.yaml``, every problem at once), then the relations between
fields (:func:`.relations.check_relations`); an error in a value given on the command line names
the override (:func:`validate_config`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, did_you_mean
from ._messages import _fail, _short
from .relations import check_relations

#: the config's JSON schema (the only copy: the workflow validates through this module)
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "config.schema.yaml"


def schema() -> dict:
    """The config's JSON schema (:data:`SCHEMA_PATH`)."""
    return yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate_config(
    cfg: dict[str, Any], source: str = "params.yaml", overrides: dict[str, str] | None = None
) -> dict[str, Any]:
    """Validate ``cfg``; raise ConfigError naming the offending field and the expectation.

    First the JSON schema, then every relation between fields that a later step relies on (see
    :func:`check_relations`), so a bad config fails before any work. ``overrides``: dotted
    key -> how the user wrote it (``--config recall_k=15``) for the values given on the command
    line; an error in such a field names the override rather than the file.
    """
    try:
        return _validate(cfg, source)
    except ConfigError as exc:
        named = _overrides_named(exc, overrides or {})
        if not named:
            raise
        msg = str(exc)
        msg = msg[len(source) + 2 :] if msg.startswith(f"{source}: ") else msg
        if any(t.startswith("--config ") and ("=[" in t or "={" in t or "." in t.split("=", 1)[0]) for t in named):
            # Snakemake's --config reads a list's or mapping's items as strings ('0', not 0)
            msg += "; --config cannot give a list or a mapping (its items arrive as strings): put it in a YAML file and pass it with --configfile"
        raise ConfigError(f"{', '.join(named)} (overriding {source}): {msg}") from exc


def _overrides_named(exc: ConfigError, overrides: dict[str, str]) -> list[str]:
    fields = getattr(exc, "fields", ())
    hit = []
    for key, text in overrides.items():
        if any(f == key or f.startswith(key + ".") or key.startswith(f + ".") for f in fields):
            hit.append(text)
    return hit


def overrides_from(values: dict[str, Any], flag: str = "--config", prefix: str = "") -> dict[str, str]:
    """``{dotted key: '<flag> key=value'}`` of a nested mapping of command-line values (e.g.
    Snakemake's ``--config``), for :func:`validate_config`'s ``overrides``."""
    out: dict[str, str] = {}
    for k, v in values.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(overrides_from(v, flag, key + "."))
        else:
            out[key] = f"{flag} {key}={v}"
    return out


def _validate(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    problems = schema_problems(cfg)
    if len(problems) == 1:
        _fail(source, *problems[0])
    if problems:  # every missing, unknown or invalid key at once, not one per run
        exc = ConfigError(f"{source}: {len(problems)} problems: " + "; ".join(f"field '{f}': {m}" for f, m in problems))
        exc.fields = tuple(f for f, _ in problems)  # type: ignore[attr-defined]
        raise exc
    check_relations(cfg, source)
    return cfg


def schema_problems(cfg: Any) -> list[tuple[str, str]]:
    """``(field, message)`` for every way ``cfg`` breaks the schema (empty when it does not): a
    missing key named by itself, an unknown key with the closest known one, a wrong value with
    what the schema expects."""
    import jsonschema

    sch = schema()
    validator = jsonschema.Draft202012Validator(sch)
    out: list[tuple[str, str]] = []
    for e in sorted(validator.iter_errors(cfg), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in e.absolute_path)
        msg = e.message
        if e.validator == "required" and isinstance(e.instance, dict):
            missing = [k for k in e.validator_value if k not in e.instance]
            out += [(f"{where}.{k}" if where else k, f"{k!r} is a required property") for k in missing]
            continue
        if e.validator == "additionalProperties" and isinstance(e.instance, dict) and isinstance(e.schema, dict):
            known = sorted(e.schema.get("properties") or {})
            for k in sorted(set(e.instance) - set(known)):
                field = f"{where}.{k}" if where else str(k)
                out.append((field, f"unknown key ({k!r} was unexpected){did_you_mean(str(k), known)}"))
            continue
        if e.validator == "pattern" and isinstance(e.schema, dict) and e.schema.get("description"):
            # the schema's $defs say what a name, a language or a path may hold
            msg = f"{_short(e.instance)} does not match {e.validator_value!r}: {e.schema['description']}"
        elif e.validator == "maxLength":  # a name or path the filesystem would refuse, hours later
            msg = f"{_short(e.instance)} is {len(e.instance)} characters long; the limit is {e.validator_value}"
        elif e.validator == "not" and isinstance(e.instance, str):  # $defs.path: a component's length
            msg = f"{_short(e.instance)} has a folder or file name longer than 255 characters (the filesystem's limit)"
        elif e.validator == "anyOf":  # say what is allowed, not "not valid under any of the given schemas"
            msg = f"{_short(e.instance)} is not {' or '.join(_what(s) for s in e.validator_value)}"
            limits = [c for c in e.context or () if c.validator in ("maxLength", "not")]
            if limits:
                msg += " (too long: at most 1024 characters, 255 per folder or file name)"
        if "propertyNames" in e.relative_schema_path:  # a map's key (an encoder's name, ...)
            msg = f"key {msg}"
        out.append((where or "(top level)", msg))
    return list(dict.fromkeys(out))  # a missing key is in each of its mapping's `required` errors


def _what(sub: dict) -> str:
    """What a sub-schema of an ``anyOf`` allows, in words."""
    if "$ref" in sub:
        name = sub["$ref"].rsplit("/", 1)[-1]
        desc = (schema().get("$defs", {}).get(name) or {}).get("description")
        return f"a {name}" + (f" ({desc})" if desc else "")
    if "enum" in sub:
        return "one of " + ", ".join(repr(v) for v in sub["enum"])
    kind = sub.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    words = {
        "null": "null",
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
        "object": "a mapping",
    }
    return " or ".join(words.get(str(k), str(k)) for k in kinds)
