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
                            k=5,
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


def _blocks(c, core=None):
    blocks = [tables.Table1Block("all", "all 5 encoders", c)]
    if core is not None:
        blocks.append(tables.Table1Block("core", "core: 3 encoders, without random and English-only (d, e)", core))
    return blocks


def test_table1_bold_marks_better_method_and_sd():
    c = correlate(_metrics())
    md = tables.table1_markdown(_blocks(c), "T", "cap", marks={("all", "en-de", "pearson"): "*"})
    line = next(l for l in md.splitlines() if l.startswith("| en→de"))
    cells = [x.strip() for x in line.strip("|").split("|")]
    assert cells[1].startswith("**") and cells[1].endswith("*")  # BkR Pearson bold + mark
    assert not cells[2].startswith("**")
    t = tables.table1_frame(c)
    r = t[(t.direction == "en-de") & (t.method == "bkr_recall") & (t.stat == "pearson")].iloc[0]
    vals = c[(c.direction == "en-de") & (c.method == "bkr_recall") & (c.stat == "pearson")].value
    assert r["sd"] == pytest.approx(np.std(vals, ddof=1))
    assert f"{r['mean']:.3f} ± {r['sd']:.3f}" in cells[1]
    tex = tables.table1_latex(_blocks(c), "a_b 50%")
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


def test_headline_json_is_metrics_json_in_a_few_keys():
    """DVC's declared metrics: N, seeds and encoders as counts and the four mean-over-directions
    correlations with XLR, copied from metrics.json; on non-parallel data the best encoder."""
    m = _metrics()
    mj = tables.metrics_json(correlate(m), m, {"run_name": "x", "sample_size": 50, "n_seeds": 3})
    h = tables.headline_json(mj)
    assert h["sample_size"] == 50 and h["n_seeds"] == 3 and h["n_encoders"] == len(mj["encoders"])
    for key, short in tables.HEADLINE_KEYS.items():
        assert h[short] == mj["correlation_with_xlr"][key]["mean_over_directions"]
    assert set(h) == {"sample_size", "n_seeds", "n_encoders", *tables.HEADLINE_KEYS.values()}
    nonpar = {
        "meta": {"sample_size": 9, "n_seeds": 2},
        "encoders": {"a": {"bkr": 0.1}, "b": {"bkr": 0.3}},
        "ranking": ["b", "a"],
    }
    assert tables.headline_json(nonpar) == {
        "sample_size": 9,
        "n_seeds": 2,
        "n_encoders": 2,
        "best": "b",
        "best_bkr": 0.3,
    }


def _world(rs: int, signal: bool = False, E: int = 6, n_items: int = 80, n: int = 60, n_seeds: int = 10):
    """Per-query outcomes of one direction: every seed re-splits the same 80 items (60 queries
    each). Without ``signal`` BkR and CORR are XLR plus equally large noise (no true difference);
    with it BkR is XLR plus little noise and CORR pure noise."""
    from backretrieval.stats.crossed import SeedOutcomes

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
    encoder families test (item bootstrap + leave-one-family-out jackknife; here every encoder
    its own family) almost none; with a real difference it detects it."""
    from backretrieval import stats
    from backretrieval.reporting.significance import table1_marks
    from backretrieval.stats.table1 import ITEMS_UNIT, table1_tests
    from backretrieval.stats.weighted import corr_rows

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
    assert table1_marks(t)[("all", "en-de", "pearson")].startswith("*")


def _slow_table1_test(seeds, keys, encs, members, family, B, seed, stat):
    """Table 1's test by hand, one loop per replicate, per left-out item group and per left-out
    unit: per seed the item-weighted means of the per-query outcomes, scipy's correlation of BkR
    and of CORR with XLR across ``members``, their difference averaged over the seeds; the item
    variance = the larger of the item-bootstrap replicates' variance and the delete-a-group
    jackknife's (G = 20 groups); SE² = that + (U − 1)/U Σ_u (θ_(−u) − mean)² over the units u (the
    families of ``family``: encoder → unit); t = θ / SE, two-sided p on the Welch–Satterthwaite
    df (G − 1 and U − 1). Returns (θ, SE, p, df)."""
    from backretrieval.stats.questions import JACKKNIFE_GROUPS
    from backretrieval.stats.weighted import item_groups, unit_weights

    corr = {"pearson": ss.pearsonr, "spearman": ss.spearmanr}[stat]

    def theta(subset, w=None):
        rows = [encs.index(e) for e in subset]
        diffs = []
        for s in seeds:
            wq = np.ones(len(s.query_items)) if w is None else w[s.query_items]
            x = s.xlr[rows] @ wq / wq.sum()
            b = s.per_query["bkr"][rows] @ wq / wq.sum()
            c = s.per_query["corr"][rows] @ wq / wq.sum()
            diffs.append(corr(b, x).statistic - corr(c, x).statistic)
        return float(np.mean(diffs))

    est = theta(members)
    W = unit_weights(keys, B, seed, "item")
    var_boot = float(np.var([theta(members, W[:, b]) for b in range(B)], ddof=1))
    G = JACKKNIFE_GROUPS
    groups = item_groups(keys, G)
    jk = np.array([theta(members, (groups != g).astype(float)) for g in range(G)])
    var_jack = (G - 1) / G * float(np.sum((jk - jk.mean()) ** 2))
    var_items = max(var_boot, var_jack)
    units = sorted({family[e] for e in members})
    loo = np.array([theta([e for e in members if family[e] != u]) for u in units])
    U = len(units)
    var_units = (U - 1) / U * float(np.sum((loo - loo.mean()) ** 2))
    se = float(np.sqrt(var_items + var_units))
    df = (var_items + var_units) ** 2 / (var_items**2 / (G - 1) + var_units**2 / (U - 1))
    return est, se, float(2 * ss.t.sf(abs(est / se), df)), df


def _family_world(rs: int = 1, n_items: int = 40, n: int = 30, n_seeds: int = 3):
    """Six encoders of one direction, e3–e5 near copies of one encoder (built from the same base
    vectors): leaving one of them out barely moves the correlations, leaving the three out does."""
    from backretrieval.stats.crossed import SeedOutcomes

    rng = np.random.default_rng(rs)
    q = np.array([0.2, 0.35, 0.5, 0.7, 0.72, 0.74])[:, None]
    xlr = (rng.random((6, n_items)) < q).astype(float)
    bkr = xlr + 0.4 * rng.normal(size=(6, n_items))
    cor = xlr + 1.0 * rng.normal(size=(6, n_items))
    for j in (4, 5):
        xlr[j] = xlr[3]
        bkr[j] = bkr[3] + 0.05 * rng.normal(size=n_items)
        cor[j] = cor[3] + 0.05 * rng.normal(size=n_items)
    seeds = []
    for s in range(n_seeds):
        idx = np.random.default_rng(1000 + s).permutation(n_items)[:n]
        seeds.append(
            SeedOutcomes(seed=s, query_items=idx, xlr=xlr[:, idx], per_query={"bkr": bkr[:, idx], "corr": cor[:, idx]})
        )
    return seeds, [f"img{j}" for j in range(n_items)], [f"e{j}" for j in range(6)]


def test_table1_test_leaves_one_family_out_by_hand():
    """Three of six encoders form one family (near copies: they share their base vectors):
    Table 1's test leaves the family out as one unit (4 families); a slow hand computation gives
    the same estimate, SE, df and p, and the CI is the findings' encoders-random interval,
    estimate ± t·SE on the Welch–Satterthwaite df. Leaving one encoder out instead (6 units) gives a much smaller SE and another p
    here, so the test tells the two apart."""
    from backretrieval.stats.table1 import table1_tests

    seeds, keys, encs = _family_world()
    fam = {e: ("wv" if e in ("e3", "e4", "e5") else e) for e in encs}
    B = 40
    t = table1_tests({"en-de": (seeds, keys, encs)}, B=B, seed=0, families=fam)
    for stat in ("pearson", "spearman"):
        r = t[t["stat"] == stat].iloc[0]
        est, se, p, df = _slow_table1_test(seeds, keys, encs, encs, fam, B, 0, stat)
        assert (r["estimate"], r["se"], r["p"], r["df"]) == pytest.approx((est, se, p, df), rel=1e-9)
        assert r["n_families"] == 4 and r["why"] == "" and r["p_holm"] == pytest.approx(p)
        half = ss.t.ppf(0.975, df) * se
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((est - half, est + half), rel=1e-9)
        _, se_encoders, p_encoders, _ = _slow_table1_test(seeds, keys, encs, encs, {e: e for e in encs}, B, 0, stat)
        assert se > 1.5 * se_encoders and abs(p - p_encoders) > 0.1, (stat, se, se_encoders, p, p_encoders)


def test_table1_p_is_the_dual_of_the_encoders_random_interval():
    """Table 1's p-value and the findings' encoders-random interval (two_questions) use one
    reference: the 1 − p interval has a bound at 0, and p < .05 exactly where the 95 % one
    excludes 0 (fails if either changes its distribution alone)."""
    from backretrieval.stats.questions import random_question_test, two_questions

    rng = np.random.default_rng(1)
    for _ in range(20):
        est = float(rng.normal(0, 0.3))
        args = (
            [est],
            [est + rng.normal(0, 0.1, 200)],
            [est + rng.normal(0, 0.01, 20)],
            {f: [est + float(rng.normal(0, 0.1))] for f in "abcd"},
        )
        rn = two_questions(*args)["random"]
        _, p = random_question_test(rn)
        assert (p < 0.05) == (rn["low"] > 0 or rn["high"] < 0)
        at_p = two_questions(*args, alpha=p)["random"]
        assert min(abs(at_p["low"]), abs(at_p["high"])) == pytest.approx(0, abs=1e-9)


def test_table1_test_per_encoder_set_and_undefined_with_too_few_families():
    """One row per (direction, set, stat), Holm per set and stat; a set with fewer than 3
    families, or one that keeps fewer than 3 encoders without some family, has no test (NaN,
    no mark) and says why."""
    from backretrieval.reporting.significance import table1_marks
    from backretrieval.stats import adjust_pvalues
    from backretrieval.stats.table1 import table1_tests

    seeds, keys, encs = _world(0, signal=True, E=6)
    fam = {e: ("wv" if e in ("e3", "e4", "e5") else e) for e in encs}
    sets = {"all": encs, "two": ["e0", "e3", "e4", "e5"], "three": ["e0", "e1", "e2"]}
    out = {"en-de": (seeds, keys, encs), "de-en": (seeds, keys, encs)}
    t = table1_tests(out, B=50, seed=0, encoder_sets=sets, families=fam)
    assert len(t) == 2 * 3 * 2
    two, three, full = (t[t["set"] == n] for n in ("two", "three", "all"))
    assert two["p"].isna().all() and (two["why"].str.contains("2 encoder families")).all()
    assert three["p"].isna().all() and three["why"].str.contains("without the family 'e0' 2 encoders are left").all()
    assert (full["why"] == "").all() and full["p"].notna().all() and (full["n_families"] == 4).all()
    for _, g in full.groupby("stat"):
        assert g["p_holm"].to_numpy() == pytest.approx(adjust_pvalues(g["p"].to_numpy(), method="holm"))
    marks = table1_marks(t)
    assert {marks[("two", d, s)] for d in out for s in ("pearson", "spearman")} == {""}
    assert {marks[("three", d, s)] for d in out for s in ("pearson", "spearman")} == {""}


def test_degenerate_probability_is_exact():
    """P(fewer than 3 distinct encoders in one draw): Poisson weights, binomial count; the
    multinomial formula checked by enumerating every draw of 5 encoders."""
    import itertools
    import math

    from backretrieval.stats.weighted import degenerate_probability

    p = 1 - math.exp(-1)
    want14 = sum(math.comb(14, j) * p**j * (1 - p) ** (14 - j) for j in range(3))
    assert degenerate_probability(14) == pytest.approx(want14) and 2.4e-4 < want14 < 2.5e-4
    assert degenerate_probability(5) == pytest.approx(0.2636, abs=1e-4)
    draws = list(itertools.product(range(5), repeat=5))
    assert degenerate_probability(5, scheme="multinomial") == pytest.approx(
        sum(len(set(d)) < 3 for d in draws) / len(draws)
    )


def _marks_md(md: str) -> dict[tuple[str, str], list[str]]:
    """``{(block label, direction): [the four cells' marks]}`` of a Markdown Table 1."""
    import re

    out, block = {}, None
    for line in md.splitlines():
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if (m := re.fullmatch(r"\*([^*].*)\*", cells[0])) and not any(cells[1:]):
            block = m.group(1)
        elif "→" in cells[0]:
            out[(block, cells[0])] = [
                m.group(1) if (m := re.fullmatch(r"\*\*.*?\*\*(\**)", c)) else "" for c in cells[1:]
            ]
    return out


def _marks_tex(tex: str) -> dict[tuple[str, str], list[str]]:
    """The same of a LaTeX Table 1 (labels unescaped)."""
    import re

    out, block = {}, None
    for line in tex.splitlines():
        if m := re.fullmatch(r"\\multicolumn\{5\}\{l\}\{\\textit\{(.*)\}\} \\\\", line):
            block = m.group(1).replace("\\_", "_").replace("\\%", "%").replace("\\&", "&")
        elif "$\\to$" in line:
            cells = [c.strip() for c in line.rstrip("\\ ").split(" & ")]
            out[(block, cells[0].replace("$\\to$", "→"))] = [
                (m.group(1) if (m := re.search(r"\$\^\{(\*+)\}\$$", c)) else "") for c in cells[1:]
            ]
    return out


def test_table1_markdown_and_latex_carry_the_same_rows_and_marks():
    m = _metrics()
    c, core = correlate(m), correlate(m[m["encoder"].isin(["a", "b", "c"])])
    marks = {("all", "en-de", "pearson"): "**", ("all", "de-en", "pearson"): "*", ("core", "en-de", "pearson"): "***"}
    md = tables.table1_markdown(_blocks(c, core), "T", "cap", marks=marks)
    tex = tables.table1_latex(_blocks(c, core), "cap", marks=marks)
    got = _marks_md(md)
    assert got == _marks_tex(tex)
    all_, core_ = "all 5 encoders", "core: 3 encoders, without random and English-only (d, e)"
    assert set(got) == {(b, d) for b in (all_, core_) for d in ("en→de", "de→en")}
    assert got[(all_, "en→de")][0] == "**" and got[(all_, "de→en")][0] == "*" and got[(core_, "en→de")][0] == "***"
    assert got[(core_, "de→en")] == ["", "", "", ""]
    # the core block's cells are the core encoders' correlations, not the others'
    t = tables.table1_frame(core)
    r = t[(t.direction == "en-de") & (t.method == "corr") & (t.stat == "spearman")].iloc[0]
    line = [l for l in md.splitlines() if l.startswith("| en→de")][1]
    assert f"{r['mean']:.3f} ± {r['sd']:.3f}" in line.split("|")[5]


def _report(tmp_path, roles: dict) -> dict:
    """build_report on a small constructed run (ranks, samples, image and text embeddings; the
    encoders good, mid, weak, poor, random) with the encoder roles ``roles``."""
    from backretrieval.steps.report import build_report
    from test_findings_steps import _make_run

    f = _make_run(tmp_path, seeds=(0, 1, 2, 3))
    text: dict[str, list] = {}
    for p in f["text"]:
        text.setdefault(Path(p).parent.name, []).append(Path(p))
    settings = {
        "run_name": "r",
        "n_seeds": 4,
        "image_backbone": "bb",
        "text_field": "title",
        "figure_seed": 0,
        "bootstrap_B": 100,
        "bootstrap_seed": 0,
        "random_encoders": [],
        "english_only": [],
        "family": [],
        **roles,
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
    return out


def test_report_marks_come_from_the_items_test(tmp_path):
    """The marks of table1.md and table1.tex, in both blocks (all encoders; core: without the
    random and English-only ones), are identical and equal to significance.csv's items × encoder
    families test, whose families are the findings' (the ``family`` encoders one unit); the
    core block's cells are the core encoders' correlations; the over-seeds tests stay in
    significance.csv labelled with their unit."""
    from backretrieval.reporting.significance import SEEDS_UNIT, table1_marks
    from backretrieval.stats.table1 import ITEMS_UNIT

    out = _report(tmp_path, {"random_encoders": ["random"], "english_only": ["poor"], "family": ["mid", "weak"]})
    md, tex = out["table1"].read_text(), out["table1_tex"].read_text()
    got = _marks_md(md)
    assert got == _marks_tex(tex)
    all_, core = "all 5 encoders", "core: 3 encoders, without random and English-only (random, poor)"
    assert {b for b, _ in got} == {all_, core}
    sig = pd.read_csv(out["significance"])
    items = sig[sig["unit"] == ITEMS_UNIT].assign(why=lambda d: d["why"].fillna(""))
    assert len(items) == 8 and set(sig["unit"]) == {ITEMS_UNIT, SEEDS_UNIT}
    assert set(sig.loc[sig["unit"] == SEEDS_UNIT, "set"]) == {"all"}
    # all: good, the word-vector family (mid, weak), poor, random = 4 families; core: good and
    # the family = 2 families, no test
    a, c = items[items["set"] == "all"], items[items["set"] == "core"]
    assert set(a["n_families"]) == {4} and set(a["why"]) == {""}
    assert set(c["n_families"]) == {2} and c["p"].isna().all() and c["why"].str.contains("2 encoder families").all()
    labels = {"all": all_, "core": core}
    for (set_name, direction, stat), mark in table1_marks(items).items():
        cells = got[(labels[set_name], direction.replace("-", "→"))]
        pair = cells[:2] if stat == "pearson" else cells[2:]
        assert "".join(pair) == mark, (set_name, cells, mark)
    caption = md.split("\n|", 1)[0]
    assert "items and the encoder families as the units" in caption and "encoders-random question" in caption
    assert "the 2 word-vector encoders (mid, weak) are one family" in caption
    assert "All 5 encoders: 4 families." in caption
    assert (
        "Core: 3 encoders, without random and English-only (random, poor): no marks (3 encoders in 2 encoder families"
        in caption
    )
    assert "not independent: re-splits of the same items" in caption
    assert set(pd.read_csv(tmp_path / "rep" / "correlations.csv")["n_encoders"]) == {5}  # every encoder
    m = pd.concat(pd.read_csv(p) for p in sorted((tmp_path / "artifacts" / "metrics").glob("*.csv")))
    t = tables.table1_frame(correlate(m[m["encoder"].isin(["good", "mid", "weak"])]))
    r = t[(t.direction == "de-en") & (t.method == "bkr_recall") & (t.stat == "pearson")].iloc[0]
    line = [l for l in md.splitlines() if l.startswith("| de→en")][1]
    assert f"{r['mean']:.3f} ± {r['sd']:.3f}" in line.split("|")[2]


def test_report_says_why_there_is_no_core_block(tmp_path):
    """A run without random and English-only encoders has one block (core = all), and says so;
    so does one whose core would keep fewer than 3 encoders."""
    out = _report(tmp_path / "a", {})
    # metrics.json's meta spells the protocol as Protocol.record() does (N=30, k=5: _make_run's)
    meta = json.loads(out["metrics"].read_text())["meta"]
    assert (meta["sample_size"], meta["recall_k"], meta["text_field"]) == (30, 5, "title")
    assert not {"n", "k"} & set(meta)
    md, tex = out["table1"].read_text(), out["table1_tex"].read_text()
    assert {b for b, _ in _marks_md(md)} == {"all 5 encoders"} and _marks_md(md) == _marks_tex(tex)
    assert "No core block: the run has no random or English-only encoder (core = all encoders)." in md
    out = _report(tmp_path / "b", {"random_encoders": ["random"], "english_only": ["poor", "weak"]})
    md = out["table1"].read_text()
    assert {b for b, _ in _marks_md(md)} == {"all 5 encoders"}
    assert (
        "No core block: without the random and English-only encoders (random, poor, weak) 2 encoders are left; "
        "a correlation across encoders needs >= 3." in md
    )
    assert "core" not in set(pd.read_csv(out["significance"], keep_default_na=False)["set"])
