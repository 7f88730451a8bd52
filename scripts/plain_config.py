"""Refuse a config file before Snakemake reads it (the Makefile's targets run this first):
Snakemake runs a YAML config whose top level says ``__use_yte__: true`` as a YTE template, i.e.
runs the Python of its ``__definitions__`` and ``?`` expressions, while it loads the file, before
the workflow's own checks. A backretrieval config is plain YAML and runs no code
(docs/SECURITY.md); this reads each file as the workflow does
(:func:`backretrieval.config.read_config_file`: safely, nothing run) and refuses, in one line,
a templated one, or one that is missing, not UTF-8, not YAML or not a mapping.

Usage: python scripts/plain_config.py FILE [FILE ...]. Exit 0 when every file is plain YAML,
2 (one line naming the file) when one is not.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from backretrieval.config import read_config_file
    from backretrieval.errors import ConfigError

    files = sys.argv[1:] if argv is None else argv
    try:
        for path in files:
            read_config_file(path)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
