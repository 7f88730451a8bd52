"""Load and validate ``params.yaml`` (the one config of Snakemake and DVC), and a config file
laid over it (:func:`layered_config`, by the rule of :func:`overlay`): the workflow and
``validate-config`` build the same config the same way.

The JSON schema is one file shipped inside the package (:data:`SCHEMA_PATH`,
``src/backretrieval/data/config.schema.yaml``). Cross-field checks (:func:`check_relations`)
are done here too, so the CLI, Snakemake (``workflow/rules/common.smk`` calls
:func:`validate_config`) and DVC (whose stages call the CLI) refuse the same configs before any
work.

Modules: :mod:`.files` (read a config file, lay it over params.yaml, load and validate),
:mod:`.validation` (the schema, the validation entry point), :mod:`.relations` (the relations
between fields), :mod:`._messages` (how a check words its error). The names below are this
package's API (the workflow reads them as ``backretrieval.config.<name>``).
"""

from __future__ import annotations

from .files import (
    BASE_CONFIG,
    NOT_INHERITED,
    REPLACED_WHOLE,
    YTE_KEYS,
    layered_config,
    load_config,
    overlay,
    read_config_file,
    templating,
)
from .relations import (
    ALLOW_CODE,
    MIN_ENCODERS,
    MIN_ENCODERS_NONPARALLEL,
    RECALL_K,
    all_directions,
    check_relations,
    code_notice,
    pivot_directions,
)
from .validation import SCHEMA_PATH, overrides_from, schema, schema_problems, validate_config

__all__ = [
    "ALLOW_CODE",
    "BASE_CONFIG",
    "MIN_ENCODERS",
    "MIN_ENCODERS_NONPARALLEL",
    "NOT_INHERITED",
    "RECALL_K",
    "REPLACED_WHOLE",
    "SCHEMA_PATH",
    "YTE_KEYS",
    "all_directions",
    "check_relations",
    "code_notice",
    "layered_config",
    "load_config",
    "overlay",
    "overrides_from",
    "pivot_directions",
    "read_config_file",
    "schema",
    "schema_problems",
    "templating",
    "validate_config",
]
