"""The Snakemake report's captions (workflow/report/*.rst) rendered from the config actually
used: every shipped config and configs that leave the optional keys out. Rendered as
Snakemake renders them (Jinja2 with trim_blocks/lstrip_blocks and a ``snakemake`` object whose
``config`` is the validated config), but with StrictUndefined, so a key no config sets (the
old ``config["k"]``) fails instead of rendering as an empty string; then through docutils, as
Snakemake does, to catch invalid reStructuredText and text that docutils turns into a link
(reStructuredText reads ``Recall@10`` as an e-mail address: the captions write ``Recall\\@10``)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from backretrieval.config import load_config
from backretrieval.steps.settings import report_settings

jinja2 = pytest.importorskip("jinja2")
docutils_core = pytest.importorskip("docutils.core")

ROOT = Path(__file__).resolve().parents[1]
CAPTIONS = sorted((ROOT / "workflow/report").glob("*.rst"))
CONFIGS = [ROOT / "params.yaml", *sorted((ROOT / "config").glob("*.yaml"))]


def render(caption: Path, cfg: dict, *, strict: bool = True) -> str:
    env = jinja2.Environment(
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined if strict else jinja2.Undefined
    )
    return env.from_string(caption.read_text()).render(snakemake=SimpleNamespace(config=cfg), categories={}, files={})


def to_html(text: str) -> str:
    """The caption's HTML body, as Snakemake's report makes it (docutils' HTML writer)."""
    return docutils_core.publish_parts(text, writer="html")["body"]


def shown(body: str) -> str:
    """The text a reader sees in an HTML body: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def _want(cfg: dict) -> dict:
    """The values the report states: its settings, and N and k as the metrics files record them
    (the sample and metrics steps get the config's sample_size and recall_k)."""
    return {**report_settings(cfg), "sample_size": cfg["sample_size"], "recall_k": cfg["recall_k"]}


def _check(cfg: dict) -> dict[str, str]:
    want = _want(cfg)
    out = {}
    for cap in CAPTIONS:
        text = render(cap, cfg)
        assert "{{" not in text and "{%" not in text, cap.name
        # Recall\@<k>: always followed by the configured k
        assert re.findall(r"Recall\\@(\S*?)[,).\s]", text) == [str(want["recall_k"])] * text.count("Recall\\@"), (
            cap.name,
            text,
        )
        assert not re.search(r"=[,).\s]|\(\)|``\s*``", text), (cap.name, text)  # nothing empty after '=' or in ``
        body = to_html(text)
        assert "system-message" not in body, (cap.name, body)
        assert "mailto:" not in body and "<a " not in body, (cap.name, body)  # no text made a link
        assert shown(body).count(f"Recall@{want['recall_k']}") == text.count("Recall\\@"), (cap.name, body)
        out[cap.name] = text
    return out


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_captions_render_every_shipped_config(path):
    cfg = load_config(path)
    out = _check(cfg)
    want = _want(cfg)
    assert f"Recall\\@{want['recall_k']}" in out["workflow.rst"] and f"Recall\\@{want['recall_k']}" in out["table1.rst"]
    assert f"N={want['sample_size']}," in out["workflow.rst"] and f"N={want['sample_size']})" in out["table1.rst"]
    assert f"{want['n_seeds']} seeds" in out["table1.rst"]


def test_captions_follow_the_config_and_the_report_steps_defaults(tmp_path):
    """k, N, seeds, B and the figure seed come from the config; where it leaves the optional ones
    out, the captions state the values the report step uses (report_settings)."""
    cfg = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg.update(recall_k=5, sample_size=321, seeds=[3, 4, 5])
    cfg.pop("stats", None)
    cfg.pop("figure_seed", None)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    cfg = load_config(tmp_path / "c.yaml")
    want = report_settings(cfg)
    out = _check(cfg)
    assert "Recall\\@5" in out["table1.rst"] and "Recall\\@10" not in "".join(out.values())
    assert "(N=321, 3 seeds, Recall\\@5, image backbone ``effnet-lite0``)" in out["workflow.rst"]
    assert f"B={want['bootstrap_B']} resamples, bootstrap seed {want['bootstrap_seed']};" in out["ci.rst"]
    assert f"for seed {want['figure_seed']}," in out["fig2.rst"] and want["figure_seed"] == 3
    cfg["stats"] = {"bootstrap_B": 77, "bootstrap_seed": 9}
    cfg["figure_seed"] = 4
    out = _check(cfg)
    assert "B=77 resamples, bootstrap seed 9;" in out["ci.rst"] and "for seed 4," in out["fig2.rst"]
    assert report_settings(cfg)["bootstrap_B"] == 77 and report_settings(cfg)["figure_seed"] == 4


def test_recall_at_k_renders_as_text_not_an_e_mail_link():
    """docutils makes ``Recall@10`` a ``mailto:`` link; the escaped ``Recall\\@10`` of the
    captions renders as the text ``Recall@10``."""
    assert 'href="mailto:' in to_html("XLR (Recall@10, N=500)")  # what the escape prevents
    body = to_html("XLR (Recall\\@10, N=500)")
    assert "mailto:" not in body and shown(body).strip() == "XLR (Recall@10, N=500)"
    # every caption that names Recall@k escapes it, in the file itself (not only when rendered)
    for cap in CAPTIONS:
        raw = cap.read_text()
        assert re.search(r"(?<!\\)@", raw) is None, cap.name
