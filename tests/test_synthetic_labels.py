"""Every table and figure made from SYNTHETIC data says so (the README's promise), and none
made from real data does: each producing step run on the same inputs with the dataset's
``synthetic`` flag on and off. Tables: their caption (Markdown) or ``\\caption`` (LaTeX);
figures: their title or suptitle, read from the figure as it is saved.

Producers covered: the report step (Table 1 .md/.tex, Figure 2), the case study's report
step (Table 2 .md/.tex, Figure 3) and its train step (each head's loss curve). Not here: the
BkR report of data without parallel texts (its Markdown: test_nonparallel.py) and the
findings (their records' answers: test_findings_steps.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from backretrieval._util import io
from backretrieval.data.prepared import load_items
from backretrieval.steps import case_study as case_steps
from backretrieval.steps import layout
from backretrieval.study import case_study as cs

LABEL = "SYNTHETIC"


@pytest.fixture
def saved_titles(monkeypatch) -> list[tuple[Path, list[str]]]:
    """(path written, the title and suptitle texts of the figure) of every figure saved
    (saved as usual); the path is the atomic write's temporary: :func:`titles_of` finds a file's."""
    saved: list[tuple[Path, list[str]]] = []
    savefig = Figure.savefig

    def record(self, fname, *args, **kwargs):
        found = [self.get_suptitle()] + [ax.get_title(loc) for ax in self.axes for loc in ("left", "center", "right")]
        saved.append((Path(fname), [t for t in found if t]))
        return savefig(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return saved


def titles_of(saved: list[tuple[Path, list[str]]], final: Path) -> str:
    """The titles of the figure saved as ``final`` (directly or through a temporary
    ``.<name>.<host>-….tmp.<ext>`` beside it: backretrieval._util.io.atomic_path)."""
    found = [
        " ".join(titles)
        for p, titles in saved
        if p.parent.resolve() == final.parent.resolve()
        and (p.name == final.name or p.name.startswith(f".{final.name}."))
    ]
    assert len(found) == 1, (final, saved)
    assert found[0], f"{final.name}: no title"
    return found[0]


def _says_synthetic(text: str) -> bool:
    return LABEL in text


def _latex_caption(tex: str) -> str:
    m = re.search(r"\\caption\{(.*)\}\s*$", tex, re.M)
    assert m, tex
    return m.group(1)


def _md_caption(md: str) -> str:
    """A Markdown table's heading and caption: the lines before the table itself."""
    return md.split("\n|", 1)[0]


def _with_flag(dataset: Path, synthetic: bool, where: Path) -> Path:
    """A copy of a prepared dataset whose dataset.json says ``synthetic``."""
    out = where / f"ds-{synthetic}"
    shutil.copytree(dataset, out)
    meta = json.loads((out / "dataset.json").read_text())
    meta["synthetic"] = synthetic
    (out / "dataset.json").write_text(json.dumps(meta))
    return out


@pytest.mark.parametrize("synthetic", [True, False])
def test_report_step_labels_table1_and_figure2(synthetic, tmp_path, monkeypatch, saved_titles):
    from backretrieval.steps.report import build_report
    from backretrieval.steps.settings import report_settings
    from test_reporting import _metrics

    monkeypatch.chdir(tmp_path)
    cfg = {
        "run_name": "r",
        "dataset": {"name": "d", "source": "synthetic"},
        "directions": ["en-de", "de-en"],
        "languages": ["en", "de"],
        "reports_dir": "reports",
        "image_backbone": "b",
        "text_field": "title",
        "sample_size": 10,
        "seeds": list(range(3)),
        "recall_k": 10,
        "encoders": {},
        "figure_seed": 0,
    }
    io.write_json(
        tmp_path / "data/prepared/d/dataset.json", {"name": "d", "languages": ["en", "de"], "synthetic": synthetic}
    )
    m = _metrics(seed_count=3)
    for d in cfg["directions"]:
        io.write_csv(layout.metrics_path(cfg, d), m[m.direction == d])
    out = layout.report_paths(cfg)
    build_report(
        metrics_files=[layout.metrics_path(cfg, d) for d in cfg["directions"]],
        dataset=layout.dataset_root(cfg),
        text_files={},
        settings=report_settings(cfg),
        correlations_out=layout.correlations_path(cfg),
        out=out,
    )
    assert _says_synthetic(_md_caption(out["table1"].read_text())) is synthetic
    assert _says_synthetic(_latex_caption(out["table1_tex"].read_text())) is synthetic
    for fig in ("fig2_png", "fig2_svg", "fig2_pdf"):
        assert _says_synthetic(titles_of(saved_titles, out[fig])) is synthetic


def _case_run(dataset: Path, synthetic: bool, tmp_path: Path):
    """The case study's report-step inputs on constructed results (test_case_study's)."""
    from test_case_study import _cfg, _fake_results

    c = cs.case_cfg(_cfg(bootstrap={"B": 50, "seed": 0}, training_seeds=[0, 1]))
    df, _ = _fake_results(c)
    root = tmp_path / f"case-{synthetic}"
    io.write_csv(root / "bkr.csv", df)
    io.write_json(root / "chosen.json", {"chosen": "e5", "rule": "highest mean BkR", "mean_bkr": {"e5": 0.5}})
    out = {name: root / "reports" / rel for name, rel in layout.CASE_REPORT_FILES.items()}
    return c, out


@pytest.mark.parametrize("synthetic", [True, False])
def test_case_report_step_labels_table2_and_figure3(synthetic, tmp_path, saved_titles):
    ds = tmp_path / "ds"
    io.write_json(ds / "dataset.json", {"name": "toy", "languages": ["en", "de", "fr"], "synthetic": synthetic})
    c, out = _case_run(ds, synthetic, tmp_path)
    root = out["table2"].parents[1]
    case_steps.report_step(ds, c, root / "chosen.json", root / "bkr.csv", out)
    assert _says_synthetic(_md_caption(out["table2"].read_text())) is synthetic
    assert _says_synthetic(_latex_caption(out["table2_tex"].read_text())) is synthetic
    for fig in ("fig3_png", "fig3_svg", "fig3_pdf"):
        assert _says_synthetic(titles_of(saved_titles, out[fig])) is synthetic


@pytest.mark.parametrize("synthetic", [True, False])
def test_case_train_step_labels_the_loss_curve(synthetic, synthetic_dataset, tmp_path, saved_titles):
    """A TRIPLETXL head trained for two epochs on random field embeddings of a small
    generated dataset: its loss curve's title."""
    ds = _with_flag(synthetic_dataset(60, ["en", "de"]), synthetic, tmp_path)
    c = cs.case_cfg(
        {
            "languages": ["en", "de"],
            "encoders": {"cg": {"type": "char_ngram"}, "random": {"type": "random"}},
            "case_study": {
                "languages": ["en", "de"],
                "base_encoders": ["cg"],
                "seeds": [0],
                "training_seeds": [0],
                "triplet": {"epochs": 2, "batch_size": 8, "hidden": 8, "out_dim": 4, "k": 2},
            },
        }
    )
    items = load_items(ds)
    rng = np.random.default_rng(0)
    fields: dict = {"cg": {}}
    for lang in c["languages"]:
        ids = np.array(items.loc[items["lang"] == lang, "item_id"].tolist(), dtype=str)
        fields["cg"][lang] = {}
        for field in ("title", "body"):
            p = tmp_path / "fields" / f"{lang}.{field}.npz"
            io.save_npz(p, emb=rng.normal(size=(len(ids), 6)).astype(np.float32), ids=ids)
            fields["cg"][lang][field] = p
    io.write_json(tmp_path / "chosen.json", {"chosen": "cg"})
    heads = tmp_path / "heads"
    out = {
        "head": heads / "tripletxl.pt",
        "meta": heads / "tripletxl.json",
        "history": heads / "tripletxl.history.csv",
        "curve": tmp_path / "figures" / "loss_tripletxl_seed0.png",
    }
    reprs = {lang: heads / f"repr.{lang}.npz" for lang in c["languages"]}
    case_steps.train_step(ds, c, "tripletxl", 0, tmp_path / "chosen.json", fields, out, reprs)
    assert _says_synthetic(titles_of(saved_titles, out["curve"])) is synthetic
    assert len(pd.read_csv(out["history"])) == 2  # the head did train (two epochs)
