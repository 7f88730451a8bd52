"""``python -m backretrieval``: the same CLI as the ``backretrieval`` command."""

from .cli import run

run()
