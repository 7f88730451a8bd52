"""Correlation step, Table 1 rendering, significance table and CI helpers."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as ss

from backretrieval.reporting import tables
from backretrieval.reporting.significance import significance_table
from backretrieval.stats import correlate
from backretrieval.steps import layout


def _metrics(seed_count=4, encoders=("a", "b", "c", "d", "e"), directions=("en-de", "de-en")):
    rng = np.random.default_rng(0)
    rows = []
    for d in directions:
        for s in range(seed_count):
            xlr = np.linspace(0.1, 0.9, len(encoders))
            bkr = xlr * 0.5 + rng.normal(0, 0.02, len(encoders))  # tracks XLR
            cor = rng.normal(0, 0.1, len(encoders))  # does not
            for e, x, b, c in zip(encoders, xlr, bkr, cor):
                for m, v in (("xlr_recall", x), ("bkr_recall", b), ("corr", c)):
                    rows.append(
                        dict(
                            dataset="t",
                            backbone="b",
                            text_field="title",
                            direction=d,
                            seed=s,
                            n=10,
                            encoder=e,
                            metric=m,
                            value=v,
                        )
                    )
    return pd.DataFrame(rows)


def test_correlate_matches_scipy():
    m = _metrics()
    c = correlate(m)
    g = m[(m.direction == "en-de") & (m.seed == 2)].pivot(index="encoder", columns="metric", values="value")
    row = c[(c.direction == "en-de") & (c.seed == 2) & (c.method == "bkr_recall")]
    assert row[row.stat == "pearson"].value.iloc[0] == pytest.approx(ss.pearsonr(g.bkr_recall, g.xlr_recall).statistic)
    assert row[row.stat == "spearman"].value.iloc[0] == pytest.approx(
        ss.spearmanr(g.bkr_recall, g.xlr_recall).statistic
    )
    assert set(c.n_encoders) == {5}
    assert len(c) == 2 * 4 * 2 * 2  # directions x seeds x methods x stats


def test_correlate_needs_three_encoders():
    from backretrieval.errors import InputError

    with pytest.raises(InputError, match=">= 3 encoders"):
        correlate(_metrics(encoders=("a", "b")))


def test_table1_bold_marks_better_method_and_sd():
    c = correlate(_metrics())
    md = tables.table1_markdown(c, "T", "cap", marks={("en-de", "pearson"): "*"})
    line = next(l for l in md.splitlines() if l.startswith("| en→de"))
    cells = [x.strip() for x in line.strip("|").split("|")]
    assert cells[1].startswith("**") and cells[1].endswith("*")  # BkR Pearson bold + mark
    assert not cells[2].startswith("**")
    t = tables.table1_frame(c)
    r = t[(t.direction == "en-de") & (t.method == "bkr_recall") & (t.stat == "pearson")].iloc[0]
    vals = c[(c.direction == "en-de") & (c.method == "bkr_recall") & (c.stat == "pearson")].value
    assert r["sd"] == pytest.approx(np.std(vals, ddof=1))
    assert f"{r['mean']:.3f} ± {r['sd']:.3f}" in cells[1]
    tex = tables.table1_latex(c, "a_b 50%")
    assert "\\toprule" in tex and "\\textbf{" in tex and "a\\_b 50\\%" in tex


def test_significance_table_prefers_bkr_here():
    m = _metrics(seed_count=8)
    sig = significance_table(correlate(m), m)
    w = sig[(sig.test.str.contains("Wilcoxon", case=False)) & (sig["stat"] == "pearson")]
    assert len(w) == 2
    assert (w.mean_bkr > w.mean_corr).all()
    assert (w.p < 0.05).all()
    # Bonferroni over 2 directions = min(1, 2p)
    assert np.allclose(w.p_bonferroni, np.minimum(1, 2 * w.p))
    assert "steiger_share_p05" in sig.columns


def test_seed_cis_contains_mean_and_is_seeded():
    m = _metrics(seed_count=6)
    a = tables.seed_cis(m, ["direction", "encoder", "metric"], "value", B=200, seed=1)
    b = tables.seed_cis(m, ["direction", "encoder", "metric"], "value", B=200, seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert ((a.ci_low <= a["mean"] + 1e-12) & (a["mean"] <= a.ci_high + 1e-12)).all()


def test_metrics_json_shape():
    m = _metrics()
    mj = tables.metrics_json(correlate(m), m, {"run_name": "x"})
    json.dumps(mj)
    assert set(mj["correlation_with_xlr"]) == {"bkr_pearson", "bkr_spearman", "corr_pearson", "corr_spearman"}
    assert mj["encoders"]["e"]["xlr_recall"] == pytest.approx(0.9)


def test_report_marks_significant_cells(tmp_path, monkeypatch):
    """build_report puts the Wilcoxon (Bonferroni) marker on the better cell of Table 1."""
    from backretrieval._util import io
    from backretrieval.steps.report import build_report
    from backretrieval.steps.settings import report_settings

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
        "seeds": list(range(8)),
        "recall_k": 10,
        "encoders": {},
        "figure_seed": 0,
    }
    (tmp_path / "data/prepared/d").mkdir(parents=True)
    (tmp_path / "data/prepared/d/dataset.json").write_text(
        '{"name": "d", "languages": ["en", "de"], "synthetic": true}'
    )
    m = _metrics(seed_count=8)
    for d in cfg["directions"]:
        io.write_csv(layout.metrics_path(cfg, d), m[m.direction == d])
    build_report(
        metrics_files=[layout.metrics_path(cfg, d) for d in cfg["directions"]],
        dataset=layout.dataset_root(cfg),
        text_files={},
        settings=report_settings(cfg),
        correlations_out=layout.correlations_path(cfg),
        out=layout.report_paths(cfg),
    )
    table = (tmp_path / "reports/table1.md").read_text()
    line = next(l for l in table.splitlines() if l.startswith("| en→de"))
    import re

    cells = [c.strip() for c in line.strip("|").split("|")]
    assert re.fullmatch(r"\*\*[0-9.]+ ± [0-9.]+\*\*\*{1,3}", cells[1]), cells[1]  # bold BkR + marker
    assert "SYNTHETIC" in table
