"""Ties as documented: identical candidate vectors get bit-identical scores wherever they sit
(column positions inside and across a BLAS product's tiles, query blocks of any height, 1 or 2
BLAS threads), so "ties → lowest index" and "ties favour the true candidate" hold exactly; and
``validate-dataset`` reports duplicates of the text field the evaluation embeds.

A BLAS product gives identical columns bits that depend on where they sit (with 1 or 7 query
rows, OpenBLAS's small-matrix path differs by ~1e-8 between two copies of a 32-d row at
columns 0 and 149); the kernels take the product with the distinct rows only.
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import backretrieval.metrics as M
from backretrieval.metrics._base import Columns, distinct_rows

#: where copies of one row are put: micro-kernel edges (multiples of 4, 8, 16), the first and
#: last columns, and the boundaries of _top_k_members' column groups
POSITIONS = (0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 63, 64, 77, 127, 128, 148, 149)


def _with_copies(n: int, d: int, seed: int, dtype=np.float32) -> tuple[np.ndarray, dict[int, list[int]]]:
    """n random rows in which row POSITIONS[0] is copied to every other position and a second
    row to three more (groups: first index → all indices)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(dtype)
    pos = [p for p in POSITIONS if p < n]
    x[pos] = x[pos[0]]
    second = [2, n // 2 + 1, n - 3]
    x[second] = x[2]
    return x, {pos[0]: pos, 2: second}


def test_distinct_rows_groups_equal_rows_in_order_of_first_occurrence():
    x, groups = _with_copies(150, 32, 0)
    x[10] = -0.0  # -0.0 and 0.0 are equal values: one distinct row
    x[11] = 0.0
    first, inverse = distinct_rows(x)
    assert np.array_equal(x[first][inverse], np.where(x == 0, 0, x))
    assert np.all(np.diff(first) > 0)
    for lead, members in groups.items():
        assert set(np.flatnonzero(inverse == inverse[lead])) == set(members)
        assert first[inverse[lead]] == lead
    assert inverse[10] == inverse[11]
    assert first.size == 150 - (len([p for p in POSITIONS if p < 150]) - 1) - 2 - 1
    assert distinct_rows(np.random.default_rng(1).standard_normal((50, 8))) is None


def test_hash_collisions_do_not_merge_unequal_rows(monkeypatch):
    from backretrieval.metrics import _base

    x = np.random.default_rng(2).standard_normal((40, 16)).astype(np.float32)
    x[30] = x[5]
    monkeypatch.setattr(_base, "_row_hashes", lambda a: np.zeros(a.shape[0], np.uint64))  # every row collides
    first, inverse = distinct_rows(x)
    assert first.size == 39 and inverse[30] == inverse[5] == 5
    assert np.array_equal(x[first][inverse], x)


@pytest.mark.parametrize("n_queries", [1, 2, 7, 8, 33, 200])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_identical_candidates_get_bit_identical_scores(n_queries, dtype):
    """Every query's scores of copies of one candidate are equal bits, for query blocks of
    every height (block_elems small: blocks of 1, 3 and all rows)."""
    cand, groups = _with_copies(150, 32, 3, dtype)
    q = np.random.default_rng(4).standard_normal((n_queries, 32)).astype(dtype)
    for block in (150, 3 * 150, M.DEFAULT_BLOCK_ELEMS):
        s = M.retrieval_scores(q, cand, block_elems=block)
        for members in groups.values():
            assert (s[:, members] == s[:, members[:1]]).all()


@pytest.mark.parametrize("n_queries", [1, 7, 100])
def test_nearest_takes_the_first_of_identical_best_candidates(n_queries):
    """Queries equal to a duplicated candidate (cosine 1 with each copy): the nearest is its
    first copy, for every query block height, also among the m nearest (nearest_m)."""
    cand, groups = _with_copies(150, 32, 5)
    rng = np.random.default_rng(6)
    q = rng.standard_normal((n_queries, 32)).astype(np.float32)
    leads = list(groups)
    q[: min(n_queries, 2)] = cand[leads[: min(n_queries, 2)]]
    for block in (150, 7 * 150, M.DEFAULT_BLOCK_ELEMS):
        t = M.backretrieve(q, cand, block_elems=block)
        assert t[: min(n_queries, 2)].tolist() == leads[: min(n_queries, 2)]
        top = M.nearest_m(q, cand, 3, block_elems=block)
        assert np.array_equal(top[:, 0], t)
        if n_queries >= 2:  # the next nearest are the next copies, in index order
            assert top[0].tolist() == groups[leads[0]][:3] and top[1].tolist() == groups[leads[1]]
    for retrieval in ("csls", "margin"):
        t = M.backretrieve(q, cand, retrieval=retrieval)
        s = M.retrieval_scores(q, cand, retrieval)
        assert np.array_equal(t, np.argmax(s, axis=1))
        for members in groups.values():
            assert (s[:, members] == s[:, members[:1]]).all()


def test_a_true_candidate_with_identical_copies_ties_with_them():
    """XLR: a target with copies at other positions is tied with them, so no copy outranks it
    (rank = 1 + strictly higher scores), whichever copy is the true one."""
    rng = np.random.default_rng(7)
    n, d = 150, 32
    tgt, groups = _with_copies(n, d, 8)
    src = tgt + 0.3 * rng.standard_normal((n, d)).astype(np.float32)
    ranks = M.xlr_ranks(src, tgt)
    s = M.retrieval_scores(src, tgt)
    expected = 1 + np.sum(s > s[np.arange(n), np.arange(n)][:, None], axis=1)
    assert np.array_equal(ranks, expected)
    for members in groups.values():
        for i in members:  # the copies of i's target are never strictly above it
            assert not (s[i, members] > s[i, i]).any()


def test_bkr_image_step_ties_identical_source_images():
    """Copies of one source image tie in BkR's image ranking: their ranks are equal whichever
    copy is the query, for both the full ranks and the shared index."""
    rng = np.random.default_rng(9)
    n = 150
    s_img, groups = _with_copies(n, 24, 10)
    t_img = rng.standard_normal((n, 24)).astype(np.float32)
    for t_star in (np.zeros(n, np.int64), rng.integers(0, n, n)):
        _, (ranks,) = M.bkr_image_pass(s_img, t_img, [t_star], k=5, with_index=False)
        for members in groups.values():
            same_target = [q for q in members if t_star[q] == t_star[members[0]]]
            assert len(set(ranks[same_target])) == 1
    index = M.BkrImageIndex.build(s_img, t_img, k=5)
    lead = groups[0]
    hits = index.hits(np.zeros(n, np.int64))
    assert len(set(hits[lead])) == 1


def test_one_and_two_blas_threads_give_identical_results():
    """evaluate_sample on data with duplicated texts and images: every rank and metric equal
    with 1 and with 2 BLAS threads."""
    rng = np.random.default_rng(11)
    n = 300
    tgt, _ = _with_copies(n, 64, 12)
    src = tgt + 0.5 * rng.standard_normal((n, 64)).astype(np.float32)
    s_img, _ = _with_copies(n, 48, 13)
    t_img = s_img + 0.5 * rng.standard_normal((n, 48)).astype(np.float32)
    enc = {"a": {"xlr_src": src, "xlr_tgt": tgt, "bkr_src": src, "bkr_tgt": tgt}}
    out = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            kept: dict = {}
            res = M.evaluate_sample(enc, None, s_img, t_img, k=10, ranks_out=kept)
            out.append((res, {k: v.copy() for k, v in kept["a"].items()}))
    (r1, k1), (r2, k2) = out
    assert r1 == r2
    assert all(np.array_equal(k1[x], k2[x]) for x in k1)


def test_columns_product_equals_the_plain_product_without_duplicates():
    """No duplicates: the same sgemm as before (bit-identical)."""
    rng = np.random.default_rng(16)
    c = rng.standard_normal((90, 20)).astype(np.float32)
    q = rng.standard_normal((13, 20)).astype(np.float32)
    cols = Columns.of(c)
    assert cols.inverse is None and cols.n_duplicates == 0
    out = np.empty((13, 90), np.float32)
    assert np.array_equal(cols.product(q, out), np.matmul(q, c.T))


def test_validate_dataset_checks_the_text_field_it_is_given(tmp_path):
    """Duplicates are those of the text the evaluation embeds: equal titles with different
    bodies are duplicates for ``title`` (the default), not for ``title_body``; a per-language
    count says how many items repeat an earlier one."""
    import json

    from backretrieval.data.byo import validate_dataset

    root = tmp_path / "d"
    (root / "features").mkdir(parents=True)
    rows = ["item_id,lang,image_id,title,body"]
    for i in range(6):
        rows.append(f"e{i},en,img{i},Apfelkuchen,body {i}")  # one title, six bodies
        rows.append(f"g{i},de,img{i},Titel {i},Text")  # six titles, one body
    (root / "items.csv").write_text("\n".join(rows) + "\n")
    (root / "dataset.json").write_text(json.dumps({"name": "d", "languages": ["en", "de"], "parallel": False}))
    np.save(root / "features/pixels.npy", np.eye(6, dtype=np.float32))
    (root / "features/pixels.ids.txt").write_text("".join(f"img{i}\n" for i in range(6)))

    def dups(field):
        probs = validate_dataset(root, text_field=field) if field else validate_dataset(root)
        return [p for p in probs if "duplicate text" in p.message or "repeat the" in p.message]

    title = dups(None)
    assert [p.row for p in title if p.row is not None] == [4, 6, 8, 10, 12]  # e1..e5 repeat e0's title
    (summary,) = [p for p in title if p.row is None]
    assert "5 of 6 en items repeat the title" in summary.message and summary.field == "title"
    body = dups("body")
    assert "5 of 6 de items repeat the body" in [p for p in body if p.row is None][0].message
    assert dups("title_body") == []
    with pytest.raises(Exception, match="text field"):
        validate_dataset(root, text_field="caption")
