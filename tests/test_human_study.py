"""Blinded human-study material: blinding, escaping, self-containment, languages, tally
(pooled and per-query paired tests, raters, key hash), simulated rater."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from backretrieval.errors import InputError
from backretrieval.study.human_study import (
    HTML_NAME,
    KEY_FORMAT,
    KEY_NAME,
    RATING_DEFINITIONS,
    TEMPLATE_NAME,
    make_sheets,
    top_k_suggestions,
)
from backretrieval.study.human_tally import paired_query_tests, tally, tally_markdown
from backretrieval.study.simulated_rater import relevance_to_rating, simulate_ratings

HOSTILE = '<script>alert(1)</script> & "quoted" <img src=x onerror=alert(2)>'
NAMES = ("SecretModelAlpha", "SecretModelBeta")


def _png(path: Path, size=(600, 400), color=(200, 30, 30)) -> str:
    Image.new("RGB", size, color).save(path)
    return path.name


@pytest.fixture()
def study(tmp_path):
    """3 queries; per query 5 suggestions from each model; q1 shares 2 candidates."""
    img_dir = tmp_path / "imgs"
    img_dir.mkdir()
    queries = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q3"],
            "text": ["Tomato soup\nwith basil", HOSTILE, "Pancakes"],
            "image_path": [_png(img_dir / "q1.png"), "", None],
        }
    )
    sa = {
        "q1": [
            ("c1", "cand 1", _png(img_dir / "c1.png", (300, 900))),
            ("c2", "cand 2"),
            ("c3", "cand 3"),
            ("c4", "cand 4"),
            ("c5", "cand 5"),
        ],
        "q2": [(f"a2_{i}", f"A text {i}") for i in range(5)],
        "q3": [(f"a3_{i}", f"A text {i}") for i in range(5)],
    }
    sb = {
        "q1": [
            ("c4", "cand 4"),
            ("c1", "cand 1", _png(img_dir / "c1.png", (300, 900))),
            ("b1", HOSTILE),
            ("b2", "cand b2"),
            ("b3", "cand b3"),
        ],
        "q2": [(f"b2_{i}", f"B text {i}") for i in range(5)],
        "q3": [(f"b3_{i}", f"B text {i}") for i in range(5)],
    }
    out = tmp_path / "sheets"
    sheets = make_sheets(
        queries,
        sa,
        sb,
        out,
        seed=11,
        model_names=NAMES,
        image_root=img_dir,
        show_images=True,
        query_lang="en",
        suggestion_lang="ar",
    )
    return dict(queries=queries, sa=sa, sb=sb, out=out, sheets=sheets, img_dir=img_dir)


# --------------------------------------------------------------------------- top-k


def test_top_k_suggestions_hand_case_and_ties():
    q = np.array([[1.0, 0.0], [0.0, 1.0]])
    c = np.array([[0.0, 2.0], [1.0, 0.0], [1.0, 1.0], [3.0, 0.0], [-1.0, 0.0]])
    idx = top_k_suggestions(q, c, k=3)
    # query 0: cos = [0, 1, .707, 1, -1] -> 1 and 3 tie (lowest index first), then 2
    # query 1: cos = [1, 0, .707, 0, 0]  -> 0, 2, then ties 1/3/4 -> 1
    np.testing.assert_array_equal(idx, [[1, 3, 2], [0, 2, 1]])
    assert idx.dtype == np.int64
    with pytest.raises(InputError, match="k="):
        top_k_suggestions(q, c, k=6)
    with pytest.raises(InputError, match="zero"):
        top_k_suggestions(np.zeros((1, 2)), c, k=1)


# --------------------------------------------------------------------------- sheets


def test_files_written_and_key_hash(study):
    out, sheets = study["out"], study["sheets"]
    assert sorted(p.name for p in out.iterdir()) == sorted([TEMPLATE_NAME, HTML_NAME, KEY_NAME])
    key = json.loads((out / KEY_NAME).read_text())
    assert key["format"] == KEY_FORMAT and key["model_names"] == list(NAMES)
    sha = hashlib.sha256((out / KEY_NAME).read_bytes()).hexdigest()
    assert sheets.key_sha256 == sha
    tpl = pd.read_csv(out / TEMPLATE_NAME, dtype=str, keep_default_na=False)
    assert list(tpl.columns) == [
        "suggestion_id",
        "query_id",
        "query_text",
        "suggestion_text",
        "rating",
        "rater",
        "key_sha256",
    ]
    assert set(tpl["key_sha256"]) == {sha}
    assert (tpl["rating"] == "").all()
    assert sha in (out / HTML_NAME).read_text()
    # texts round-trip through the CSV (newline and hostile markup preserved verbatim)
    assert "Tomato soup\nwith basil" in set(tpl["query_text"])
    assert HOSTILE in set(tpl["suggestion_text"])
    assert set(tpl["suggestion_id"]) == set(key["suggestions"])


def test_blinding(study, tmp_path):
    out, sheets = study["out"], study["sheets"]
    for name in (TEMPLATE_NAME, HTML_NAME):
        text = (out / name).read_text().lower()
        for m in NAMES:
            assert m.lower() not in text, f"{name} leaks model name {m}"
    key = json.loads((out / KEY_NAME).read_text())
    per_query: dict[str, list] = {}
    for sid, ent in key["suggestions"].items():
        assert re.fullmatch(r"[0-9a-f]{16}", sid)
        per_query.setdefault(ent["query_id"], []).append(ent)
    # pooled: <= 10 unique per query; q1 has 2 shared candidates -> 8 rows, keyed to both models
    assert {q: len(v) for q, v in per_query.items()} == {"q1": 8, "q2": 10, "q3": 10}
    shared = {e["candidate_id"]: e for e in per_query["q1"] if len(e["models"]) == 2}
    assert set(shared) == {"c1", "c4"}
    assert shared["c4"]["ranks"] == {NAMES[0]: 4, NAMES[1]: 1}
    assert sheets.n_shared == 2 and sheets.n_suggestions == 28
    # the same seed gives identical files; another seed gives other ids and another order
    again = make_sheets(
        study["queries"],
        study["sa"],
        study["sb"],
        tmp_path / "again",
        seed=11,
        model_names=NAMES,
        image_root=study["img_dir"],
        show_images=True,
        query_lang="en",
        suggestion_lang="ar",
    )
    for name in (TEMPLATE_NAME, HTML_NAME, KEY_NAME):
        assert (out / name).read_bytes() == (again.html.parent / name).read_bytes()
    firsts = set()
    for seed in range(8):
        other = make_sheets(
            study["queries"],
            study["sa"],
            study["sb"],
            tmp_path / f"s{seed}",
            seed=seed,
            model_names=NAMES,
            image_root=study["img_dir"],
        )
        okey = json.loads(other.key.read_text())
        if seed != 11:
            assert not set(okey["suggestions"]) & set(key["suggestions"])
        tpl = pd.read_csv(other.template, dtype=str, keep_default_na=False)
        first_q2 = tpl[tpl["query_id"] == "q2"]["suggestion_id"].iloc[0]
        firsts.add(tuple(okey["suggestions"][first_q2]["models"]))
    assert len(firsts) == 2  # the first shown suggestion comes from either model


def test_html_escapes_hostile_text(study):
    page = (study["out"] / HTML_NAME).read_text()
    assert "alert(1)</script>" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;" in page
    assert page.count("<script") == 1  # only the page's own inline script
    assert "onerror=" not in page.replace("onerror=alert(2)&gt;", "")


def test_html_is_self_contained(study):
    page = (study["out"] / HTML_NAME).read_text()
    low = page.lower()
    for bad in ('src="http', "src='http", "<link", "<script src", "@import", 'href="http', "//cdn", "<iframe"):
        assert bad not in low, bad
    assert not re.search(r"(?<![a-z])url\(", low)  # no CSS url(...) (createObjectURL is fine)
    assert not re.search(r"\b(fetch|xmlhttprequest|websocket|eventsource|sendbeacon)\b", low)
    srcs = re.findall(r'src="([^"]*)"', page)
    assert len(srcs) == 2  # q1's image + c1's (c1 is shared by both models: shown once)
    sizes = set()
    for src in srcs:
        assert src.startswith("data:image/jpeg;base64,")
        sizes.add(Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).size)
    assert sizes == {(256, 171), (85, 256)}  # 600x400 and 300x900 downscaled to max 256 px
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # the page has a radio group with 1..4 per suggestion, a legend, a save button and counter
    assert page.count('type="radio"') == 4 * 28
    assert "1</b> = very relevant" in page and "4</b> = not relevant" in page
    assert 'id="save"' in page and 'id="counter"' in page and "ratings.csv" in page


def test_page_defines_scale_marks_languages_and_asks_rater(study):
    page = (study["out"] / HTML_NAME).read_text()
    for level, definition in RATING_DEFINITIONS.items():  # every level is defined on the page
        assert html.escape(definition) in page, level
    # every query text is marked English / left-to-right, every suggestion Arabic / right-to-left
    assert page.count('class="qtext" lang="en" dir="ltr"') == 3
    assert page.count('class="stext" lang="ar" dir="rtl"') == 28
    assert 'class="stext">' not in page and 'class="qtext">' not in page
    assert 'id="rater"' in page and "rater,key_sha256" in page


def test_texts_only_by_default(study, tmp_path):
    # the same inputs with image paths, without show_images: no image on the page (the image
    # files are not even opened: a missing one is no error), no language given: dir="auto"
    sheets = make_sheets(
        study["queries"],
        study["sa"],
        study["sb"],
        tmp_path / "plain",
        seed=11,
        model_names=NAMES,
        image_root=tmp_path / "nowhere",
    )
    page = sheets.html.read_text()
    assert "<img" not in page and "data:image" not in page
    assert page.count('class="qtext" dir="auto"') == 3
    key = json.loads(sheets.key.read_text())
    assert key["show_images"] is False and key["query_lang"] is None
    assert json.loads(study["sheets"].key.read_text())["show_images"] is True


def test_make_sheets_bad_inputs(study, tmp_path):
    q, sa, sb = study["queries"], study["sa"], study["sb"]
    with pytest.raises(InputError, match="no suggestions for query_id 'q3'"):
        make_sheets(q, sa, {k: v for k, v in sb.items() if k != "q3"}, tmp_path / "x", seed=0)
    with pytest.raises(InputError, match="unknown query_id"):
        make_sheets(q, sa, {**sb, "q9": [("z", "z")]}, tmp_path / "x", seed=0)
    with pytest.raises(InputError, match="not found"):
        make_sheets(q, sa, sb, tmp_path / "x", seed=0, image_root=tmp_path / "nowhere", show_images=True)
    with pytest.raises(InputError, match="suggestion_lang"):
        make_sheets(q, sa, sb, tmp_path / "x", seed=0, suggestion_lang="Arabic")
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


# --------------------------------------------------------------------------- tally


def _hand_key(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A hand-made key: A proposes 12 + 1 shared, B proposes 10 + 1 shared, over 2 queries."""
    a_ratings = [1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 4]  # 7 ones
    b_ratings = [1, 1, 1, 2, 2, 3, 3, 3, 4, 4]  # 3 ones
    sugg, ratings = {}, {}
    for i, r in enumerate(a_ratings):
        sugg[f"a{i:02d}"] = {"query_id": f"q{i % 2}", "candidate_id": f"ca{i}", "models": ["A"]}
        ratings[f"a{i:02d}"] = r
    for i, r in enumerate(b_ratings):
        sugg[f"b{i:02d}"] = {"query_id": f"q{i % 2}", "candidate_id": f"cb{i}", "models": ["B"]}
        ratings[f"b{i:02d}"] = r
    sugg["shared"] = {"query_id": "q0", "candidate_id": "cs", "models": ["A", "B"]}
    ratings["shared"] = 1
    key = {"format": KEY_FORMAT, "version": 1, "model_names": ["A", "B"], "suggestions": sugg}
    path = tmp_path / KEY_NAME
    path.write_text(json.dumps(key))
    return path, ratings


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_ratings(
    path: Path,
    rows: list[tuple[str, str]],
    extra: dict | None = None,
    rater: str | None = "r1",
    key_path: Path | None = None,
) -> Path:
    """rows of (suggestion_id, rating) by one rater; ``key_path`` adds that key's sha256."""
    df = pd.DataFrame(rows, columns=["suggestion_id", "rating"])
    if rater is not None:
        df["rater"] = rater
    if key_path is not None:
        df["key_sha256"] = _sha(key_path)
    for k, v in (extra or {}).items():
        df[k] = v
    df.to_csv(path, index=False)
    return path


def fisher_two_sided_by_hand(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher p: sum of hypergeometric table probabilities <= the observed one."""
    row1, col1, n = a + b, a + c, a + b + c + d

    def p(x: int) -> float:
        return math.comb(col1, x) * math.comb(n - col1, row1 - x) / math.comb(n, row1)

    p_obs = p(a)
    lo, hi = max(0, row1 + col1 - n), min(row1, col1)
    return sum(p(x) for x in range(lo, hi + 1) if p(x) <= p_obs * (1 + 1e-7))


def test_tally_hand_computed(tmp_path):
    key_path, ratings = _hand_key(tmp_path)
    csv = _write_ratings(tmp_path / "ratings.csv", [(k, str(v)) for k, v in ratings.items()], key_path=key_path)
    res = tally(csv, key_path, ("A", "B"))
    # A: 12 own + shared(1) -> ones 8, twos 3, threes 1, fours 1; B: 10 own + shared
    assert res.counts["A"] == {1: 8, 2: 3, 3: 1, 4: 1}
    assert res.counts["B"] == {1: 4, 2: 2, 3: 3, 4: 2}
    assert res.n_ratings == {"A": 13, "B": 11}
    assert res.ratio_very_relevant == pytest.approx(2.0)
    assert res.share_very_relevant["A"] == pytest.approx(8 / 13)
    assert res.mean_rating["B"] == pytest.approx((4 + 4 + 9 + 8) / 11)
    assert res.fisher_p == pytest.approx(fisher_two_sided_by_hand(8, 5, 4, 7), rel=1e-9)
    assert res.fisher_odds_ratio == pytest.approx((8 * 7) / (5 * 4))
    ra = [1] * 8 + [2] * 3 + [3, 4]
    rb = [1] * 4 + [2] * 2 + [3] * 3 + [4] * 2
    u_by_pairs = sum((x > y) + 0.5 * (x == y) for x in ra for y in rb)
    assert res.mannwhitney_u == pytest.approx(u_by_pairs)
    assert 0 < res.mannwhitney_p < 1
    assert res.n_suggestions == 23 and res.n_shared == 1 and res.n_queries == 2
    assert not res.simulated and res.key_verified and res.raters == ["r1"]
    # per query (the shared suggestion, rated 1, counts for both): q0: A 4 + 1, B 2 + 1;
    # q1: A 3, B 1 -> A more in both queries
    assert res.per_query == [
        {"query_id": "q0", "very_relevant_a": 5, "very_relevant_b": 3},
        {"query_id": "q1", "very_relevant_a": 3, "very_relevant_b": 1},
    ]
    assert (res.queries_a_more, res.queries_b_more, res.queries_equal) == (2, 0, 0)
    # two tied differences (2, 2): exhaustive sign flips give T+ = 0, 1.5, 1.5, 3 (midranks
    # 1.5, 1.5): P(T+ <= 0) = 1/4, two-sided 1/2; sign test: 2 of 2 positive, p = 2/4
    assert res.wilcoxon_p == pytest.approx(0.5) and res.sign_test_p == pytest.approx(0.5)
    # swapping the model order swaps the ratio and leaves the p-values
    swapped = tally(csv, key_path, ("B", "A"))
    assert swapped.ratio_very_relevant == pytest.approx(0.5)
    assert swapped.fisher_p == pytest.approx(res.fisher_p)
    assert swapped.mannwhitney_p == pytest.approx(res.mannwhitney_p)
    assert swapped.wilcoxon_p == pytest.approx(res.wilcoxon_p) and swapped.queries_b_more == 2
    md = tally_markdown(res)
    assert "2.00×" in md and "SIMULATED" not in md and "| A | 13 | 8 | 3 | 1 | 1 |" in md
    assert "counts for both models" in md and "Wilcoxon signed-rank" in md and "| q0 | 5 | 3 |" in md
    assert "1 rater(s) (r1)" in md and "verified against every row" in md
    assert "SIMULATED" in tally_markdown(res, simulated=True)
    with pytest.raises(InputError, match="model_names"):
        tally(csv, key_path, ("A", "C"))


def signed_rank_p_by_enumeration(d: list[float]) -> float:
    """Two-sided Wilcoxon p from all 2^n sign flips of the midranks of |d| (zeros dropped):
    2 * min(P(T+ <= t), P(T+ >= t)), capped at 1."""
    d = [x for x in d if x != 0]
    absd = sorted(abs(x) for x in d)
    rank = {v: np.mean([i + 1 for i, w in enumerate(absd) if w == v]) for v in set(absd)}
    ranks = [rank[abs(x)] for x in d]
    t_obs = sum(r for r, x in zip(ranks, d) if x > 0)
    sums = [sum(r for r, bit in zip(ranks, range(len(ranks))) if (mask >> bit) & 1) for mask in range(2 ** len(ranks))]
    sums = np.array(sums)
    eps = 1e-9
    return min(1.0, 2 * min(np.mean(sums <= t_obs + eps), np.mean(sums >= t_obs - eps)))


def signed_rank_p_normal(d: list[float]) -> float:
    """Normal approximation with tie correction, no continuity correction (zeros dropped)."""
    from scipy.stats import norm

    d = np.array([x for x in d if x != 0])
    n = len(d)
    absd = np.abs(d)
    ranks = np.array([np.mean(np.flatnonzero(np.sort(absd) == v) + 1) for v in absd])
    t_plus = ranks[d > 0].sum()
    _, t = np.unique(absd, return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24 - (t**3 - t).sum() / 48
    z = (t_plus - n * (n + 1) / 4) / math.sqrt(var)
    return float(2 * norm.sf(abs(z)))


def sign_test_p_by_hand(k: int, n: int) -> float:
    probs = [math.comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(p for p in probs if p <= probs[k] * (1 + 1e-9)))


@pytest.mark.parametrize(
    "a, b",
    [
        ([5, 3, 4, 0, 2, 1, 3, 5, 2, 4], [1, 3, 0, 0, 1, 2, 0, 1, 0, 2]),  # ties and zeros, 8 nonzero
        ([9, 1, 7, 2, 8, 0, 3, 6], [0, 3, 1, 1, 1, 4, 0, 1]),  # distinct |d|: exact distribution
        (
            [3, 0, 2, 5, 1, 4, 2, 3, 0, 1, 5, 4, 2, 3, 1, 0, 2, 4, 5, 3],  # 20 queries with ties
            [1, 0, 2, 1, 0, 2, 3, 1, 1, 0, 2, 1, 0, 1, 2, 0, 1, 1, 2, 0],
        ),
    ],
)
def test_paired_query_tests_against_slow_references(a, b):
    stat, p, method, sign_p = paired_query_tests(a, b)
    d = [x - y for x, y in zip(a, b)]
    nz = [x for x in d if x != 0]
    ties = len(set(map(abs, nz))) < len(nz)
    if len(nz) <= 13:
        assert method == ("exact (exhaustive sign-flip permutation, tied differences)" if ties else "exact")
        assert p == pytest.approx(signed_rank_p_by_enumeration(d), rel=1e-9), method
    else:
        assert "normal approximation" in method
        assert p == pytest.approx(signed_rank_p_normal(d), rel=1e-9)
    assert sign_p == pytest.approx(sign_test_p_by_hand(sum(x > 0 for x in nz), len(nz)), rel=1e-9)
    assert paired_query_tests([1, 2], [1, 2]) == (0.0, 1.0, "all differences zero", 1.0)


def test_tally_multiple_raters(tmp_path):
    key_path, ratings = _hand_key(tmp_path)
    rows1 = [(k, str(v)) for k, v in ratings.items()]
    rows2 = [(k, "2" if k.startswith("a") else str(v)) for k, v in ratings.items()]  # r2: A's own never 1
    df = pd.concat(
        [
            pd.DataFrame(rows1, columns=["suggestion_id", "rating"]).assign(rater="r1"),
            pd.DataFrame(rows2, columns=["suggestion_id", "rating"]).assign(rater="r2"),
        ]
    )
    df["key_sha256"] = _sha(key_path)
    df.to_csv(tmp_path / "two.csv", index=False)
    res = tally(tmp_path / "two.csv", key_path, ("A", "B"))
    assert res.raters == ["r1", "r2"]
    assert res.n_ratings == {"A": 26, "B": 22}  # every rater's rating counts
    assert res.very_relevant == {"A": 8 + 1, "B": 4 + 4}
    # per query, summed over raters: q0 A (4+1) + (0+1), B 3 + 3; q1 A 3 + 0, B 1 + 1
    assert [(r["very_relevant_a"], r["very_relevant_b"]) for r in res.per_query] == [(6, 6), (3, 2)]
    assert "2 rater(s) (r1, r2)" in tally_markdown(res) and "summed over raters" in tally_markdown(res)
    # a rater who skipped a suggestion is named
    df[~((df.rater == "r2") & (df.suggestion_id == "b03"))].to_csv(tmp_path / "gap.csv", index=False)
    with pytest.raises(InputError, match=r"rater 'r2': 1 suggestion\(s\) of the key have no row"):
        tally(tmp_path / "gap.csv", key_path)
    # the SIMULATED rater is never pooled with humans
    df.assign(rater=df.rater.replace("r2", "simulated")).to_csv(tmp_path / "mix.csv", index=False)
    with pytest.raises(InputError, match="SIMULATED rater"):
        tally(tmp_path / "mix.csv", key_path)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda rows: rows[1:], r"rater 'r1': 1 suggestion\(s\) of the key have no row"),
        (
            lambda rows: [(rows[0][0], "5")] + rows[1:],
            r"row 2 \(suggestion_id 'a00', rater 'r1'\): rating 5 outside 1-4",  # line 2: after the header
        ),
        (lambda rows: [(rows[0][0], "0")] + rows[1:], "rating 0 outside 1-4"),
        (lambda rows: [(rows[0][0], "2.5")] + rows[1:], "'2.5' is not an integer"),
        (lambda rows: [(rows[0][0], "very")] + rows[1:], "'very' is not an integer"),
        (lambda rows: [(rows[0][0], "")] + rows[1:], "no rating"),
        (lambda rows: rows + [("deadbeef", "1")], "'deadbeef'.*not in the key"),
        (lambda rows: rows + [rows[3]], r"row 25 .*duplicate suggestion_id for this rater \(first at row 5\)"),
    ],
)
def test_tally_validation_errors(tmp_path, mutate, message):
    key_path, ratings = _hand_key(tmp_path)
    rows = [(k, str(v)) for k, v in ratings.items()]
    csv = _write_ratings(tmp_path / "bad.csv", mutate(rows), key_path=key_path)
    with pytest.raises(InputError, match=message) as exc:
        tally(csv, key_path, ("A", "B"))
    assert "bad.csv" in str(exc.value) and "nothing tallied" in str(exc.value)


def test_tally_row_numbers_are_the_file_line_numbers(tmp_path):
    """A problem's row number is the line of the ratings file that holds it (header: line 1)."""
    import re

    key_path, ratings = _hand_key(tmp_path)
    rows = [(k, str(v)) for k, v in ratings.items()]
    rows[6] = (rows[6][0], "7")
    csv = _write_ratings(tmp_path / "bad.csv", rows, key_path=key_path)
    with pytest.raises(InputError, match="rating 7 outside 1-4") as exc:
        tally(csv, key_path, ("A", "B"))
    n = int(re.search(r"row (\d+) \(suggestion_id '([^']+)'", str(exc.value)).group(1))
    line = csv.read_text().splitlines()[n - 1]
    assert line.startswith(f"{rows[6][0]},") and ",7," in f"{line},", (n, line)


def test_tally_requires_rater_ids(tmp_path):
    key_path, ratings = _hand_key(tmp_path)
    rows = [(k, str(v)) for k, v in ratings.items()]
    with pytest.raises(InputError, match="missing column 'rater'"):
        tally(_write_ratings(tmp_path / "a.csv", rows, rater=None, key_path=key_path), key_path)
    with pytest.raises(InputError, match="rater id must be"):
        tally(_write_ratings(tmp_path / "b.csv", rows, rater="a,b", key_path=key_path), key_path)


def test_filled_template_tallies(study):
    sheets = study["sheets"]
    tpl = pd.read_csv(sheets.template, dtype=str, keep_default_na=False)
    tpl["rating"] = "2"
    tpl["rater"] = "ana"
    tpl.to_csv(sheets.template.with_name("filled.csv"), index=False)
    res = tally(sheets.template.with_name("filled.csv"), sheets.key)
    assert res.key_verified and res.model_names == NAMES and res.raters == ["ana"]
    assert res.counts[NAMES[0]][2] == 15 and res.counts[NAMES[1]][2] == 15
    assert math.isnan(res.ratio_very_relevant) and res.mannwhitney_p == 1.0 and res.fisher_p == 1.0
    assert res.wilcoxon_p == 1.0 and res.queries_equal == 3
    assert "n/a" in tally_markdown(res)
    # the untouched template is refused: no rater id and no rating on any row
    with pytest.raises(InputError, match="28 problem"):
        tally(sheets.template, sheets.key)


def test_tally_rejects_ratings_for_another_key(tmp_path):
    key_path, ratings = _hand_key(tmp_path)
    rows = [(k, str(v)) for k, v in ratings.items()]
    csv = _write_ratings(tmp_path / "r.csv", rows, {"key_sha256": "0" * 64})
    with pytest.raises(InputError, match="does not match the key"):
        tally(csv, key_path)
    with pytest.raises(InputError, match="does not match the key"):  # the flag never excuses a wrong hash
        tally(csv, key_path, allow_unverified_key=True)
    csv = _write_ratings(tmp_path / "r.csv", rows, key_path=key_path)
    assert tally(csv, key_path).key_verified
    pd.DataFrame({"suggestion_id": ["a00"]}).to_csv(tmp_path / "r3.csv", index=False)
    with pytest.raises(InputError, match="missing column 'rating'"):
        tally(tmp_path / "r3.csv", key_path)
    with pytest.raises(InputError, match="not found"):
        tally(tmp_path / "absent.csv", key_path)


def test_tally_refuses_an_unverifiable_key_unless_allowed(tmp_path, capsys):
    from backretrieval.cli import main

    key_path, ratings = _hand_key(tmp_path)
    rows = [(k, str(v)) for k, v in ratings.items()]
    no_hash = _write_ratings(tmp_path / "nohash.csv", rows)  # no key_sha256 column at all
    with pytest.raises(InputError, match="no column key_sha256.*--allow-unverified-key"):
        tally(no_hash, key_path)
    partial = _write_ratings(tmp_path / "partial.csv", rows, key_path=key_path)
    df = pd.read_csv(partial, dtype=str, keep_default_na=False)
    df.loc[2, "key_sha256"] = ""
    df.to_csv(partial, index=False)
    with pytest.raises(InputError, match="1 row\\(s\\) without key_sha256"):
        tally(partial, key_path)
    res = tally(no_hash, key_path, allow_unverified_key=True)
    assert not res.key_verified and res.counts["A"][1] == 8
    assert "not verified" in tally_markdown(res)
    # the CLI: refused (exit 2, nothing written) without the flag, tallied with it
    out = tmp_path / "report.md"
    argv = ["step", "human-tally", "--ratings", str(no_hash), "--key", str(key_path), "--out-tally-md", str(out)]
    argv += ["--out-tally-json", str(tmp_path / "report.json")]
    assert main(argv) == 2
    assert "--allow-unverified-key" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--allow-unverified-key"]) == 0
    assert "not verified" in out.read_text()


# --------------------------------------------------------------------------- simulated rater


def test_relevance_to_rating_thresholds():
    assert [relevance_to_rating(s) for s in (1.0, 0.75, 0.7499, 0.5, 0.3, 0.25, 0.2, 0.0)] == [1, 1, 2, 2, 3, 3, 4, 4]


def test_simulated_ratings_round_trip(study, tmp_path):
    sheets = study["sheets"]
    a_cands = {c[0] for v in study["sa"].values() for c in v}
    b_cands = {c[0] for v in study["sb"].values() for c in v}

    def relevance(qid: str, cid: str) -> float:  # SIMULATED ground truth for the test
        return 0.9 if cid in a_cands else 0.6 if cid in b_cands else 0.0

    out = tmp_path / "sim.csv"
    df = simulate_ratings(sheets.template, relevance, out, seed=0)
    assert (df["rater"] == "simulated").all()
    res = tally(out, sheets.key, NAMES)
    assert res.simulated and res.key_verified and res.raters == ["simulated"]
    # A: 15 suggestions all rated 1; B: 15 of which 2 shared with A (rated 1), 13 rated 2
    assert res.counts[NAMES[0]] == {1: 15, 2: 0, 3: 0, 4: 0}
    assert res.counts[NAMES[1]] == {1: 2, 2: 13, 3: 0, 4: 0}
    assert res.ratio_very_relevant == pytest.approx(7.5)
    md = tally_markdown(res)
    assert "SIMULATED RATINGS" in md
    # noisy simulation is seeded: same seed -> same file, and ratings move away from 1/2 only
    simulate_ratings(sheets.template, relevance, tmp_path / "n1.csv", seed=5, noise_sd=0.3)
    simulate_ratings(sheets.template, relevance, tmp_path / "n2.csv", seed=5, noise_sd=0.3)
    assert (tmp_path / "n1.csv").read_bytes() == (tmp_path / "n2.csv").read_bytes()
    noisy = pd.read_csv(tmp_path / "n1.csv")
    assert set(noisy["rating"]) - {1, 2} and noisy["rating"].between(1, 4).all()
    with pytest.raises(InputError, match=r"expected a value in \[0, 1\]"):
        simulate_ratings(sheets.template, lambda q, c: 1.5, tmp_path / "bad.csv", seed=0)
    assert not (tmp_path / "bad.csv").exists()


def _ratings_text(key_path: Path, ratings: dict[str, int], sep: str = ",", decimal: str = "") -> str:
    sha = _sha(key_path)
    lines = [sep.join(["suggestion_id", "rating", "rater", "key_sha256"])]
    lines += [sep.join([sid, f"{r}{decimal}", "r1", sha]) for sid, r in ratings.items()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("sep", [";", "\t"])
def test_ratings_with_semicolons_or_tabs_are_read(tmp_path, sep):
    key_path, ratings = _hand_key(tmp_path)
    csv = tmp_path / "ratings.csv"
    csv.write_text(_ratings_text(key_path, ratings, sep=sep), encoding="utf-8")
    res = tally(csv, key_path, ("A", "B"))
    assert res.counts["A"] == {1: 8, 2: 3, 3: 1, 4: 1} and res.key_verified


def test_ratings_saved_as_utf16_are_read(tmp_path):
    key_path, ratings = _hand_key(tmp_path)
    csv = tmp_path / "ratings.csv"
    csv.write_bytes(_ratings_text(key_path, ratings, sep="\t").encode("utf-16"))  # Excel "Unicode text"
    assert tally(csv, key_path, ("A", "B")).counts["B"] == {1: 4, 2: 2, 3: 3, 4: 2}
    csv.write_bytes(_ratings_text(key_path, ratings).encode("utf-16-le"))  # no byte-order mark
    with pytest.raises(InputError, match="UTF-16 without a byte-order mark.*CSV UTF-8"):
        tally(csv, key_path, ("A", "B"))
    csv.write_bytes(_ratings_text(key_path, ratings).replace("rater", "räter", 1).encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8.*CSV UTF-8"):
        tally(csv, key_path, ("A", "B"))


def test_ratings_with_decimal_commas_say_so(tmp_path):
    key_path, ratings = _hand_key(tmp_path)
    csv = tmp_path / "ratings.csv"
    csv.write_text(_ratings_text(key_path, ratings, sep=";", decimal=",0"), encoding="utf-8")
    with pytest.raises(InputError, match=r"rating '1,0' is not an integer 1-4 \(a decimal comma"):
        tally(csv, key_path, ("A", "B"))


def test_key_and_tally_name_the_rated_training_run(study, tmp_path):
    # the case study trains each head once per training seed but rates ONE sheet: the key
    # records which run of a trained model was rated, the tally says so
    s = study
    q, sa, sb = s["queries"], s["sa"], s["sb"]
    sheets = make_sheets(q, sa, sb, tmp_path / "ts", seed=11, model_names=NAMES, training_seeds={NAMES[0]: 0})
    key = json.loads(sheets.key.read_text())
    assert key["training_seeds"] == {NAMES[0]: 0}
    plain = json.loads(s["sheets"].key.read_text())
    assert "training_seeds" not in plain  # a key without trained runs is unchanged
    rows = [(sid, "1") for sid in key["suggestions"]]
    res = tally(_write_ratings(tmp_path / "r.csv", rows, key_path=sheets.key), sheets.key)
    assert res.training_seeds == {NAMES[0]: 0} and res.to_dict()["training_seeds"] == {NAMES[0]: 0}
    assert f"{NAMES[0]} of training seed 0 (the first of case_study.training_seeds)" in tally_markdown(res)
    rows = [(sid, "1") for sid in plain["suggestions"]]
    res = tally(_write_ratings(tmp_path / "p.csv", rows, key_path=s["sheets"].key), s["sheets"].key)
    assert "training seed" not in tally_markdown(res)


GOLDEN_PAGE = Path(__file__).parent / "data" / "rating_sheet.golden.html"


def test_page_bytes_for_fixed_inputs(tmp_path):
    """The page of fixed inputs is byte for byte the committed one (rendered before the page
    moved into package templates): texts with quotes, apostrophes, template-like braces and
    markup are escaped as html.escape does, the CSS and JS are inlined unchanged, and a line
    holding only a template tag leaves no line. A deliberate change of the page regenerates
    tests/data/rating_sheet.golden.html with these inputs."""
    queries = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["Tomato soup\nwith basil", HOSTILE]})
    braces = "it's {{ not }} a {% tag %}"
    sa = {"q1": [("c1", "شوربة طماطم"), ("c2", braces)], "q2": [("c3", HOSTILE)]}
    sb = {"q1": [("c2", braces), ("c4", "خبز")], "q2": [("c5", "x & y")]}
    sheets = make_sheets(
        queries,
        sa,
        sb,
        tmp_path,
        seed=5,
        model_names=("A", "B"),
        title='Rate "it" & <go>',
        query_lang="en",
        suggestion_lang="ar",
    )
    assert sheets.html.read_bytes() == GOLDEN_PAGE.read_bytes()


def test_page_templates_ship_with_the_package():
    """Every file of study/templates/ is package data (pyproject.toml), so an installed
    package renders the page."""
    import fnmatch

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    root = Path(__file__).resolve().parents[1]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "backretrieval"
    ]
    folder = root / "src/backretrieval/study/templates"
    files = sorted(p.relative_to(root / "src/backretrieval").as_posix() for p in folder.iterdir())
    assert files == [
        "study/templates/rating_sheet.css",
        "study/templates/rating_sheet.html",
        "study/templates/rating_sheet.js",
    ]
    assert all(any(fnmatch.fnmatch(f, pat) for pat in patterns) for f in files)


def test_one_sheet_holds_every_training_seeds_heads_and_the_tally_averages_over_them(study, tmp_path):
    """Model A trained once per seed: every seed's top-k on one sheet (each candidate shown
    once); the tally scores each seed's head from the same ratings, A's headline numbers are
    means over the seeds, and the per-query test compares A's seed-averaged count with B's,
    checked here against a count made by hand from the key."""
    from backretrieval.study.human_study import SeedRuns

    s = study
    q, sa, sb = s["queries"], s["sa"], s["sb"]
    # seed 1's head proposes two other candidates for q2 and shares c4 with seed 0 for q1
    seed1 = {**sa, "q2": [(f"a2_{i}", f"A text {i}") for i in range(3)] + [("x1", "X 1"), ("x2", "X 2")]}
    sheets = make_sheets(q, SeedRuns({0: sa, 1: seed1}), sb, tmp_path / "multi", seed=11, model_names=NAMES)
    key = json.loads(sheets.key.read_text())
    a, b = NAMES
    assert key["runs"] == {a: [f"{a}@0", f"{a}@1"], b: [b]}
    shown = pd.read_csv(sheets.template)
    assert len(shown) == len(key["suggestions"]) == len(shown["suggestion_id"].unique())
    assert sum(r["query_id"] == "q2" for r in key["suggestions"].values()) == 5 + 2 + 5  # x1, x2 once
    # rate: "very relevant" exactly for the candidates whose id ends in an even digit
    rows = [(sid, "1" if e["candidate_id"][-1] in "02468" else "3") for sid, e in key["suggestions"].items()]
    res = tally(_write_ratings(tmp_path / "r.csv", rows, key_path=sheets.key), sheets.key)
    vr = {}
    for e in key["suggestions"].values():
        for run in e["runs"]:
            vr.setdefault(run, {}).setdefault(e["query_id"], 0)
            vr[run][e["query_id"]] += int(e["candidate_id"][-1] in "02468")
    seed_vr = [sum(vr[f"{a}@{t}"].values()) for t in (0, 1)]
    assert [r["very_relevant_a"] for r in res.per_training_seed] == seed_vr
    assert res.very_relevant[a] == pytest.approx(np.mean(seed_vr)) and res.very_relevant[b] == sum(vr[b].values())
    per_q = {r["query_id"]: r for r in res.per_query}
    for qid in ("q1", "q2", "q3"):
        assert per_q[qid]["very_relevant_a"] == pytest.approx((vr[f"{a}@0"][qid] + vr[f"{a}@1"][qid]) / 2)
        assert per_q[qid]["very_relevant_b"] == vr[b][qid]
    d = res.to_dict()
    assert d["training_spread"]["very_relevant_a"] == {"per_seed": seed_vr, "training_seeds": [0, 1]}
    assert res.training_seeds == {a: [0, 1]}
    md = tally_markdown(res)
    assert "every training seed (0, 1: R = 2 heads)" in md and "Per training seed" in md
    # one run per model: the key and tally of before (no runs, no per-seed block)
    plain = json.loads(s["sheets"].key.read_text())
    assert (
        "runs" not in plain
        and "training_spread"
        not in tally(
            _write_ratings(tmp_path / "p.csv", [(sid, "2") for sid in plain["suggestions"]], key_path=s["sheets"].key),
            s["sheets"].key,
        ).to_dict()
    )
