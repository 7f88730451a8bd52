"""Numbers the hand-written docs state about the code are the code's: the dropped-draw
probability of the crossed bootstrap (FINDINGS_METHODS) and the findings' bootstrap settings
(DEVIATIONS, the inference analysis's defaults)."""

import re
from pathlib import Path

import pytest

from backretrieval.findings import inference
from backretrieval.stats.weighted import degenerate_probability

ROOT = Path(__file__).resolve().parents[1]


def _sci(x: float) -> str:
    """2.4e-4 (as the docs write it), not 2.4e-04."""
    mant, exp = f"{x:.1e}".split("e")
    return f"{mant}e{int(exp)}"


def test_degenerate_probabilities_in_findings_methods_are_computed():
    text = (ROOT / "docs/FINDINGS_METHODS.md").read_text()
    assert f"{_sci(degenerate_probability(14))} with 14 encoders" in text
    assert f"{degenerate_probability(5):.2f} with 5" in text
    # every probability the paragraph states is the function's (whatever its wording)
    para = text[text.index("`degenerate_probability`") :].split("\n\n")[0]
    stated = re.findall(r"(\d+(?:\.\d+)?(?:e-\d+)?) with (\d+)", para)
    assert len(stated) >= 2
    for value, n in stated:
        assert float(value) == pytest.approx(degenerate_probability(int(n)), rel=0.05), (value, n)
    from backretrieval.stats import crossed

    assert f"{_sci(degenerate_probability(14))} for 14 encoders" in (crossed.__doc__ or "")


def test_findings_bootstrap_settings_in_deviations_are_the_defaults():
    d = inference.Inference.defaults()
    row = next(
        line for line in (ROOT / "docs/DEVIATIONS.md").read_text().splitlines() if line.startswith("| findings |")
    )
    assert f"B = {d['bootstrap']}" in row and d["max_seeds"] is None and "every seed of the run" in row
    # any seed count or pair subsample the row or the docstring states is a default's
    for text in (row, inference.Inference.__doc__ or ""):
        for n in re.findall(r"first (\d+) seeds", text):
            assert d["max_seeds"] == int(n), text
    assert f"B = {d['bootstrap']}" in (inference.Inference.__doc__ or "")
    assert "over all N·M pairs" in row  # CORR's contributions: every pair, no subsample
