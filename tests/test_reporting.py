"""Correlation step, Table 1 rendering, significance table and CI helpers."""

import json
from pathlib import Path

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


def _world(rs: int, signal: bool = False, E: int = 6, n_items: int = 80, n: int = 60, n_seeds: int = 10):
    """Per-query outcomes of one direction: every seed re-splits the same 80 items (60 queries
    each). Without ``signal`` BkR and CORR are XLR plus equally large noise (no true difference);
    with it BkR is XLR plus little noise and CORR pure noise."""
    from backretrieval.findings.inference import SeedOutcomes

    rng = np.random.default_rng(rs)
    q = np.linspace(0.2, 0.8, E)[:, None]
    xlr = (rng.random((E, n_items)) < q).astype(float)
    bkr = xlr + (0.2 if signal else 1.5) * rng.normal(size=(E, n_items))
    cor = (0 if signal else 1) * xlr + 1.5 * rng.normal(size=(E, n_items))
    seeds = []
    for s in range(n_seeds):
        idx = np.random.default_rng(1000 + s).permutation(n_items)[:n]
        seeds.append(
            SeedOutcomes(seed=s, query_items=idx, xlr=xlr[:, idx], per_query={"bkr": bkr[:, idx], "corr": cor[:, idx]})
        )
    return seeds, [f"img{j}" for j in range(n_items)], [f"e{j}" for j in range(E)]


def test_table1_test_uses_items_and_encoders_not_seeds():
    """No true difference, seeds re-splitting the same items: the over-seeds paired tests call
    most such worlds significant (the seeds share the sample's idiosyncrasies), the items ×
    encoders test (item bootstrap + encoder jackknife) almost none; with a real difference it
    detects it."""
    from backretrieval import stats
    from backretrieval.findings.inference import ITEMS_UNIT, corr_rows, table1_tests
    from backretrieval.reporting.significance import table1_marks

    seeds_sig = items_sig = 0
    n_worlds = 12
    for rs in range(n_worlds):
        seeds, keys, encs = _world(rs)
        rb = np.array([corr_rows(s.per_query["bkr"].mean(1), s.xlr.mean(1), "pearson") for s in seeds])
        rc = np.array([corr_rows(s.per_query["corr"].mean(1), s.xlr.mean(1), "pearson") for s in seeds])
        seeds_sig += stats.paired_tests(rb, rc)["ttest"].pvalue < 0.05
        t = table1_tests({"en-de": (seeds, keys, encs)}, B=200, seed=0)
        r = t[t["stat"] == "pearson"].iloc[0]
        assert r["estimate"] == pytest.approx(float(np.mean(rb - rc)))
        assert r["unit"] == ITEMS_UNIT and r["se"] ** 2 == pytest.approx(r["se_items"] ** 2 + r["se_encoders"] ** 2)
        items_sig += r["p"] < 0.05
    assert seeds_sig >= n_worlds / 2, seeds_sig
    assert items_sig <= 1, items_sig
    seeds, keys, encs = _world(0, signal=True, E=14, n_items=300, n=200)
    t = table1_tests({"en-de": (seeds, keys, encs), "de-en": (seeds, keys, encs)}, B=200, seed=0)
    assert (t["estimate"] > 0).all() and (t.loc[t["stat"] == "pearson", "p_holm"] < 0.05).all()
    assert table1_marks(t)[("en-de", "pearson")].startswith("*")


def test_table1_test_needs_four_encoders_for_its_jackknife():
    from backretrieval.findings.inference import SeedOutcomes, table1_tests
    from backretrieval.reporting.significance import table1_marks

    seeds, keys, encs = _world(0, signal=True, E=6)
    three = [SeedOutcomes(s.seed, s.query_items, s.xlr[:3], {m: v[:3] for m, v in s.per_query.items()}) for s in seeds]
    t = table1_tests({"en-de": (three, keys, encs[:3])}, B=50, seed=0)
    assert t["p"].isna().all() and set(table1_marks(t).values()) == {""}


def test_degenerate_probability_is_exact():
    """P(fewer than 3 distinct encoders in one draw): Poisson weights, binomial count; the
    multinomial formula checked by enumerating every draw of 5 encoders."""
    import itertools
    import math

    from backretrieval.findings.inference import degenerate_probability

    p = 1 - math.exp(-1)
    want14 = sum(math.comb(14, j) * p**j * (1 - p) ** (14 - j) for j in range(3))
    assert degenerate_probability(14) == pytest.approx(want14) and 2.4e-4 < want14 < 2.5e-4
    assert degenerate_probability(5) == pytest.approx(0.2636, abs=1e-4)
    draws = list(itertools.product(range(5), repeat=5))
    assert degenerate_probability(5, scheme="multinomial") == pytest.approx(
        sum(len(set(d)) < 3 for d in draws) / len(draws)
    )


def _marks_md(md: str) -> dict[str, list[str]]:
    import re

    out = {}
    for line in md.splitlines():
        if line.startswith("| ") and "→" in line:
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[cells[0]] = [m.group(1) if (m := re.fullmatch(r"\*\*.*?\*\*(\**)", c)) else "" for c in cells[1:]]
    return out


def _marks_tex(tex: str) -> dict[str, list[str]]:
    import re

    out = {}
    for line in tex.splitlines():
        if "$\\to$" in line:
            cells = [c.strip() for c in line.rstrip("\\ ").split(" & ")]
            out[cells[0].replace("$\\to$", "→")] = [
                (m.group(1) if (m := re.search(r"\$\^\{(\*+)\}\$$", c)) else "") for c in cells[1:]
            ]
    return out


def test_table1_markdown_and_latex_carry_the_same_marks():
    c = correlate(_metrics())
    marks = {("en-de", "pearson"): "**", ("de-en", "pearson"): "*"}
    md = tables.table1_markdown(c, "T", "cap", marks=marks)
    tex = tables.table1_latex(c, "cap", marks=marks)
    assert _marks_md(md) == _marks_tex(tex)
    assert _marks_md(md)["en→de"][0] == "**" and _marks_md(md)["de→en"][0] == "*"


def test_report_marks_come_from_the_items_test(tmp_path):
    """build_report on a small constructed run (ranks, samples, image and text embeddings): the
    marks of table1.md and table1.tex are identical and equal to significance.csv's items ×
    encoders test; the over-seeds tests stay in significance.csv labelled with their unit."""
    from backretrieval.findings.inference import ITEMS_UNIT
    from backretrieval.reporting.significance import SEEDS_UNIT, table1_marks
    from backretrieval.steps.report import build_report
    from test_findings_steps import _make_run

    f = _make_run(tmp_path, seeds=(0, 1, 2, 3))
    text: dict[str, list] = {}
    for p in f["text"]:
        text.setdefault(Path(p).parent.name, []).append(Path(p))
    settings = {
        "run_name": "r",
        "sample_size": 30,
        "n_seeds": 4,
        "recall_k": 5,
        "image_backbone": "bb",
        "text_field": "title",
        "figure_seed": 0,
        "bootstrap_B": 100,
        "bootstrap_seed": 0,
    }
    out = {k: tmp_path / "rep" / Path(v).name for k, v in layout.report_paths({"reports_dir": "x"}, True).items()}
    build_report(
        metrics_files=[Path(p) for p in f["metrics"]],
        dataset=Path(f["dataset"]),
        text_files=text,
        settings=settings,
        correlations_out=tmp_path / "rep" / "correlations.csv",
        out=out,
        samples_files=[Path(p) for p in f["samples"]],
        image_file=Path(f["image"]),
    )
    md, tex = out["table1"].read_text(), out["table1_tex"].read_text()
    assert _marks_md(md) == _marks_tex(tex) and _marks_md(md)
    sig = pd.read_csv(out["significance"], keep_default_na=False)
    items = sig[sig["unit"] == ITEMS_UNIT]
    assert len(items) == 4 and set(sig["unit"]) == {ITEMS_UNIT, SEEDS_UNIT}
    for (direction, stat), mark in table1_marks(items.astype({"p_holm": float})).items():
        got = _marks_md(md)[direction.replace("-", "→")]
        pair = got[:2] if stat == "pearson" else got[2:]
        assert "".join(pair) == mark, (got, mark)
    assert "items and encoders as the units" in md and "not independent: re-splits of the same items" in md
