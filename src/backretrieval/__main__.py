"""``python -m backretrieval``: the same CLI as the ``backretrieval`` command."""

from .cli import main

raise SystemExit(main())
