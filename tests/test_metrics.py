"""Metric core: hand-computed cases, a slow per-query reference, and hypothesis properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats

import backretrieval.metrics as M
from backretrieval.metrics import _base as B
from backretrieval.metrics import corr_baseline as C
from backretrieval.metrics import kernels as K

# ---------------------------------------------------------------------------------------------
# slow references: one query at a time, written independently of the vectorised code


def cos(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return float(a @ b / (na * nb))


def slow_rank(query, candidates, true_j):
    scores = [cos(query, c) for c in candidates]
    return 1 + sum(1 for s in scores if s > scores[true_j])


def slow_xlr_ranks(src, tgt):
    return np.array([slow_rank(src[i], tgt, i) for i in range(len(src))])


def slow_bkr_ranks(src_text, tgt_text, src_img, tgt_img):
    ranks = []
    for q in range(len(src_text)):
        scores = [cos(src_text[q], t) for t in tgt_text]
        best = max(scores)
        t_star = scores.index(best)  # first occurrence = lowest index
        ranks.append(slow_rank(tgt_img[t_star], src_img, q))
    return np.array(ranks)


def slow_corr(src_text, tgt_text, src_img, tgt_img):
    dt, di = [], []
    for i in range(len(src_text)):
        for j in range(len(tgt_text)):
            dt.append(1 - cos(src_text[i], tgt_text[j]))
            di.append(1 - cos(src_img[i], tgt_img[j]))
    return stats.spearmanr(dt, di).statistic


# ---------------------------------------------------------------------------------------------
# hand-computed cases


def test_xlr_hand_computed():
    # 2-D unit vectors at angles; query i should find target i.
    src = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    tgt = np.array([[0.9, 0.1], [1.0, 0.05], [0.6, 0.8]])
    # q0 (angle 0): cos with t0 = .994, t1 = .9988, t2 = .6  -> true t0 has 1 better -> rank 2
    # q1 (angle 90): cos with t0 = .110, t1 = .0499, t2 = .8 -> true t1 has 2 better -> rank 3
    # q2 (angle 45): cos with t0 = .781, t1 = .740, t2 = .990 -> rank 1
    ranks = M.xlr_ranks(src, tgt)
    assert ranks.tolist() == [2, 3, 1]
    assert M.xlr(src, tgt, k=1) == pytest.approx(1 / 3)
    assert M.xlr(src, tgt, k=2) == pytest.approx(2 / 3)
    assert M.mrr(ranks) == pytest.approx((1 / 2 + 1 / 3 + 1) / 3)
    assert M.mean_rank(ranks) == pytest.approx(2.0)


def test_rank_convention_ties_favour_true():
    src = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    tgt = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])  # t0 and t1 identical direction
    assert M.xlr_ranks(src, tgt).tolist() == [1, 1, 1]
    # a strictly better distractor does count
    assert M.xlr_ranks(src, np.array([[1.0, 0.1], [1.0, 0.0], [0.0, 1.0]])).tolist() == [2, 1, 1]


def test_bkr_hand_computed_four_steps():
    # source texts / images (2 queries), target texts / images (3 non-matching items)
    src_text = np.array([[1.0, 0.0], [0.0, 1.0]])
    tgt_text = np.array([[0.0, 1.0], [1.0, 0.1], [1.0, 0.1]])  # t1 and t2 tie for q0
    src_img = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    tgt_img = np.array([[0.0, 1.0, 0.2], [0.9, 0.3, 0.0], [0.0, 0.0, 1.0]])
    # q0 -> nearest text: t1 (tie with t2 -> lowest index) -> image [0.9,.3,0]
    #   source images by cosine with it: s0 = .949, s1 = .316 -> q0's own image s0 rank 1
    # q1 -> nearest text: t0 -> image [0,1,.2]; s0 = 0, s1 = .98 -> q1's own image rank 1
    assert M.backretrieve(src_text, tgt_text).tolist() == [1, 0]
    assert M.bkr_ranks(src_text, tgt_text, src_img, tgt_img).tolist() == [1, 1]
    # swap the images of the target items: now retrieved images point to the wrong source
    tgt_img2 = tgt_img[[1, 0, 2]]
    assert M.bkr_ranks(src_text, tgt_text, src_img, tgt_img2).tolist() == [2, 2]
    assert M.bkr(src_text, tgt_text, src_img, tgt_img2, k=1) == 0.0
    assert M.bkr(src_text, tgt_text, src_img, tgt_img2, k=2) == 1.0


def test_corr_hand_computed():
    # 2x2 pairs: text distances ordered exactly like image distances -> rho = 1
    src_text = np.array([[1.0, 0.0], [0.0, 1.0]])
    tgt_text = np.array([[1.0, 0.2], [0.3, 1.0]])
    src_img = np.array([[1.0, 0.0], [0.0, 1.0]])
    tgt_img = np.array([[1.0, 0.1], [0.5, 1.0]])
    # text distances: (0,0)=.0194 (0,1)=.7127 (1,0)=.8039 (1,1)=.0422
    # image distances: (0,0)=.0050 (0,1)=.5528 (1,0)=.9005 (1,1)=.1056 -> same order
    assert M.corr(src_text, tgt_text, src_img, tgt_img) == pytest.approx(1.0)
    assert M.corr(src_text, tgt_text, src_img, tgt_img[::-1]) == pytest.approx(-0.8, abs=0.21)


def test_zero_rows_and_bad_input():
    assert np.allclose(M.normalize(np.zeros((2, 3))), 0)
    with pytest.raises(ValueError, match="NaN"):
        M.xlr(np.array([[np.nan, 1.0]]), np.array([[1.0, 0.0]]), k=1)
    with pytest.raises(ValueError, match="dimension"):
        M.xlr(np.ones((2, 3)), np.ones((2, 4)), k=1)
    with pytest.raises(ValueError, match="aligned"):
        M.xlr(np.ones((2, 3)), np.ones((3, 3)), k=1)
    with pytest.raises(ValueError, match="src_img"):
        M.bkr(np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 3)), np.ones((2, 3)), k=1)


# ---------------------------------------------------------------------------------------------
# vectorised == slow reference, including tiny blocks and float32 / float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block", [1, 7, M.DEFAULT_BLOCK_ELEMS])
def test_against_slow_reference(dtype, block):
    rng = np.random.default_rng(1)
    n, m, d, di = 23, 19, 5, 4
    shared = rng.normal(size=(n, d))
    src = (shared + 0.8 * rng.normal(size=(n, d))).astype(dtype)
    tgt = (shared + 0.8 * rng.normal(size=(n, d))).astype(dtype)
    assert M.xlr_ranks(src, tgt, block_elems=block).tolist() == slow_xlr_ranks(src, tgt).tolist()

    tgt2 = rng.normal(size=(m, d)).astype(dtype)
    simg = rng.normal(size=(n, di)).astype(dtype)
    timg = rng.normal(size=(m, di)).astype(dtype)
    fast = M.bkr_ranks(src, tgt2, simg, timg, block_elems=block)
    assert fast.tolist() == slow_bkr_ranks(src, tgt2, simg, timg).tolist()
    index = M.BkrImageIndex.build(simg, timg, k=3, block_elems=block)
    assert index.recall(src, tgt2) == pytest.approx(np.mean(fast <= 3))
    assert M.corr(src, tgt2, simg, timg) == pytest.approx(slow_corr(src, tgt2, simg, timg), abs=1e-6)


def test_index_handles_ties_at_boundary():
    # integer-valued vectors make many exact ties in image similarity
    rng = np.random.default_rng(5)
    n = 40
    simg = rng.integers(0, 2, size=(n, 3)).astype(np.float64) + 0.0
    simg[simg.sum(1) == 0] = 1
    timg = rng.integers(0, 2, size=(n, 3)).astype(np.float64)
    timg[timg.sum(1) == 0] = 1
    src = rng.normal(size=(n, 4))
    tgt = rng.normal(size=(n, 4))
    ranks = slow_bkr_ranks(src, tgt, simg, timg)
    for k in (1, 3, 10):
        idx = M.BkrImageIndex.build(simg, timg, k=k)
        assert idx.recall(src, tgt) == pytest.approx(np.mean(ranks <= k))


def test_corr_subsample_is_close_and_seeded():
    rng = np.random.default_rng(0)
    n, d = 200, 8
    shared = rng.normal(size=(n, d))
    st_, tt_ = shared + rng.normal(size=(n, d)), rng.normal(size=(n, d))
    si, ti = shared + rng.normal(size=(n, d)), tt_ + 0.5 * rng.normal(size=(n, d))
    full = M.corr(st_, tt_, si, ti)
    sub = M.corr(st_, tt_, si, ti, max_pairs=20000, seed=3)
    assert sub == M.corr(st_, tt_, si, ti, max_pairs=20000, seed=3)
    assert abs(sub - full) < 0.03
    assert full > 0.2  # text and image distances share structure here


def test_evaluate_sample_matches_individual_functions():
    rng = np.random.default_rng(2)
    n, d = 30, 6
    simg, timg = rng.normal(size=(n, 5)), rng.normal(size=(n, 5))
    encs = {
        f"e{i}": {
            "xlr_src": rng.normal(size=(n, d)),
            "xlr_tgt": rng.normal(size=(n, d)),
            "bkr_src": rng.normal(size=(n, d)),
            "bkr_tgt": rng.normal(size=(n, d)),
        }
        for i in range(3)
    }
    out = M.evaluate_sample(encs, None, simg, timg, k=5)
    for name, e in encs.items():
        r = M.bkr_ranks(e["bkr_src"], e["bkr_tgt"], simg, timg)
        assert out[name]["bkr_recall"] == pytest.approx(M.recall_at_k(r, 5))
        assert out[name]["bkr_mrr"] == pytest.approx(M.mrr(r))
        assert out[name]["xlr_recall"] == pytest.approx(M.xlr(e["xlr_src"], e["xlr_tgt"], k=5))
        assert out[name]["corr"] == pytest.approx(M.corr(e["bkr_src"], e["bkr_tgt"], simg, timg))
    sub = M.evaluate_sample(encs, None, simg, timg, k=5, corr_max_pairs=300, corr_seed=4)
    for name, e in encs.items():  # the shared image side of a subsample = a fresh one
        assert sub[name]["corr"] == M.corr(e["bkr_src"], e["bkr_tgt"], simg, timg, max_pairs=300, seed=4)


# ---------------------------------------------------------------------------------------------
# hypothesis properties

small = st.integers(min_value=3, max_value=25)


@settings(max_examples=40, deadline=None)
@given(n=small, d=st.integers(2, 8), seed=st.integers(0, 2**32 - 1))
def test_perfect_encoders_score_one(n, d, seed):
    """Perfect text and image encoders → XLR = BkR = 1.0 (Recall@1).

    Every item gets a distinct content code (random part + a one-hot part). A perfect text
    encoder maps a caption to its item's code in every language; a perfect image encoder maps
    the image to the same code. The target set holds the same scenes in another order, with
    tiny noise, so the nearest target of q depicts q's scene and its image points back to q.
    """
    rng = np.random.default_rng(seed)
    codes = np.hstack([rng.normal(size=(n, d)), 5 * np.eye(n)])
    perm = rng.permutation(n)
    tgt = codes[perm] + 1e-3 * rng.normal(size=codes.shape)
    assert M.xlr(codes, codes + 1e-3 * rng.normal(size=codes.shape), k=1) == 1.0
    assert M.bkr(codes, tgt, codes, tgt, k=1) == 1.0


@settings(max_examples=25, deadline=None)
@given(n=small, seed=st.integers(0, 2**32 - 1))
def test_permuting_rows_consistently_is_invariant(n, seed):
    rng = np.random.default_rng(seed)
    d = 6
    src, tgt = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    simg, timg = rng.normal(size=(n, 4)), rng.normal(size=(n, 4))
    p = rng.permutation(n)  # permute queries (source rows with their images)
    q = rng.permutation(n)  # permute targets (target rows with their images)
    r = M.xlr_ranks(src, tgt)
    assert np.array_equal(M.xlr_ranks(src[p], tgt[p]), r[p])
    # bkr ranks per query are invariant to both permutations (barring exact text ties,
    # which continuous random data does not produce)
    b = M.bkr_ranks(src, tgt, simg, timg)
    assert np.array_equal(M.bkr_ranks(src[p], tgt[q], simg[p], timg[q]), b[p])
    assert M.corr(src[p], tgt[q], simg[p], timg[q]) == pytest.approx(M.corr(src, tgt, simg, timg), abs=1e-9)


# rows with entries in {-1, 0, 1} and 1 or 4 non-zeros have norm 1 or 2, so every cosine is an
# exact binary fraction: mathematical ties are ties in floating point too, in both the fast
# path and the reference loop, and the tie conventions can be compared exactly.
_exact_row = st.one_of(
    st.tuples(st.integers(0, 3), st.sampled_from([-1.0, 1.0])).map(
        lambda t: [t[1] if i == t[0] else 0.0 for i in range(4)]
    ),
    st.lists(st.sampled_from([-1.0, 1.0]), min_size=4, max_size=4),
)
_exact_matrix = st.lists(_exact_row, min_size=6, max_size=6).map(lambda rows: np.array(rows, dtype=np.float64))


@settings(max_examples=60, deadline=None)
@given(x=_exact_matrix, y=_exact_matrix)
def test_vectorised_equals_reference_with_exact_ties(x, y):
    """Rows with many exact ties and duplicates: fast ranks equal the reference loop, so the
    tie conventions (strictly-greater count; lowest index on argmax) agree."""
    assert M.xlr_ranks(x, y).tolist() == slow_xlr_ranks(x, y).tolist()
    assert M.bkr_ranks(x, y, y, x).tolist() == slow_bkr_ranks(x, y, y, x).tolist()
    idx = M.BkrImageIndex.build(y, x, k=2)
    assert idx.recall(x, y) == pytest.approx(np.mean(slow_bkr_ranks(x, y, y, x) <= 2))


def test_normalize_tiny_and_huge_rows():
    out = M.normalize(np.array([[1e-300, 0.0], [1e300, 1e300], [0.0, 0.0]]))
    assert np.allclose(out, [[1, 0], [2**-0.5, 2**-0.5], [0, 0]])


def test_independent_random_is_near_chance():
    """Independent random text and image encoders → Recall@k ≈ k/N."""
    rng = np.random.default_rng(11)
    n, k, reps = 200, 10, 20
    x = [M.xlr(rng.normal(size=(n, 16)), rng.normal(size=(n, 16)), k=k) for _ in range(reps)]
    b = [
        M.bkr(
            rng.normal(size=(n, 16)), rng.normal(size=(n, 16)), rng.normal(size=(n, 16)), rng.normal(size=(n, 16)), k=k
        )
        for _ in range(reps)
    ]
    # expected k/N = 0.05; sd of the mean over 20 reps of a mean of 200 Bernoullis ~ 0.0035
    assert abs(np.mean(x) - k / n) < 0.015
    assert abs(np.mean(b) - k / n) < 0.015


@settings(max_examples=50, deadline=None)
@given(
    x=hnp.arrays(np.float32, st.integers(1, 60), elements=st.sampled_from([0.0, 0.5, 1.0, -2.0, 3.25, np.float32(0.1)]))
)
def test_average_ranks_equals_scipy_with_ties(x):
    assert np.array_equal(M.average_ranks(x), stats.rankdata(x))


def test_average_ranks_equals_scipy_continuous():
    x = np.random.default_rng(3).normal(size=100_000).astype(np.float32)
    assert np.array_equal(M.average_ranks(x), stats.rankdata(x))


def test_inplace_gives_identical_results_and_overwrites_inputs():
    rng = np.random.default_rng(4)
    a, b, c, d = (rng.normal(size=(50, 8)).astype(np.float32) for _ in range(4))
    ref_x, ref_b = M.xlr_ranks(a, b), M.bkr_ranks(a, b, c, d)
    a2, b2, c2, d2 = a.copy(), b.copy(), c.copy(), d.copy()
    assert np.array_equal(M.xlr_ranks(a2, b2, inplace=True), ref_x)
    assert np.array_equal(a2, M.normalize(a))  # overwritten with the normalised rows
    a3, b3 = a.copy(), b.copy()
    assert np.array_equal(M.bkr_ranks(a3, b3, c2, d2, inplace=True), ref_b)
    with pytest.raises(ValueError, match="writeable float32"):
        M.normalize(np.ones((2, 2), dtype=np.int64), inplace=True)


@pytest.mark.parametrize("block, gather", [(1, 1), (5, 7), (64, 40), (M.DEFAULT_BLOCK_ELEMS, B.GATHER_BLOCK_ELEMS)])
def test_image_pass_ranks_every_encoder_as_the_formula(block, gather):
    """BkR's image steps for several encoders in one pass over the image score blocks: each
    query's rank is 1 + #{source images scoring strictly higher against its back-retrieved
    target's image than its own image}, written as a loop per query; on pivots with heavy
    repetition (one hub taken by half the queries, unused targets), several row blocks and
    gather chunks. The ranks of one encoder do not depend on the others in the pass, and the
    hits (rank <= k) are the index's membership."""
    rng = np.random.default_rng(11)
    n_src, n_tgt, d, k = 37, 23, 6, 3
    s_img = M.normalize(rng.standard_normal((n_src, d)))
    t_img = M.normalize(rng.standard_normal((n_tgt, d)))
    stars = []
    for _ in range(3):
        t_star = rng.integers(0, n_tgt, size=n_src)
        t_star[rng.permutation(n_src)[: n_src // 2]] = 4  # hub
        stars.append(t_star)
    index, ranks = M.bkr_image_pass(s_img, t_img, stars, k, block_elems=block, gather_elems=gather)
    for t_star, got in zip(stars, ranks, strict=True):
        assert got.tolist() == [slow_rank(t_img[t_star[q]], s_img, q) for q in range(n_src)]
        assert np.array_equal(got <= k, index.hits(t_star))
        alone = M.bkr_image_pass(s_img, t_img, [t_star], k, block_elems=block, with_index=False)
        assert alone[0] is None and np.array_equal(alone[1][0], got)
    assert np.array_equal(index.codes, M.BkrImageIndex.build(s_img, t_img, k, block_elems=block).codes)
    with pytest.raises(ValueError, match="one entry per source query"):
        M.bkr_image_pass(s_img, t_img, [stars[0][:-1]], k)
    with pytest.raises(ValueError, match="index the 23 target images"):
        M.bkr_image_pass(s_img, t_img, [np.full(n_src, n_tgt)], k)


@settings(max_examples=80, deadline=None)
@given(
    scores=hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, 6), st.integers(1, 300)),
        elements=st.sampled_from([-1.0, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(-1, 1, width=32),
    ),
    k=st.integers(1, 12),
    groups=st.sampled_from([1, 4, 64]),
)
def test_top_k_members_equals_partition(scores, k, groups):
    """The group-maximum shortcut selects exactly the entries >= each row's k-th largest value,
    ties at the boundary included (compared with the plain np.partition formulation)."""
    k = min(k, scores.shape[1])
    kth = np.partition(scores, scores.shape[1] - k, axis=1)[:, scores.shape[1] - k]
    want = set(zip(*np.nonzero(scores >= kth[:, None])))
    rows, cols = K._top_k_members(scores, k, groups=groups)
    assert set(zip(rows.tolist(), cols.tolist())) == want
    assert len(rows) == len(want)


# ---------------------------------------------------------------------------------------------
# CORR: exact ranks and sums, counting of float32 distance codes, the band pair sample


def exact_spearman(x, y):
    """Spearman's rho from scipy's average ranks with exact rational sums (50-digit sqrt)."""
    from decimal import Decimal, getcontext
    from fractions import Fraction

    rx, ry = stats.rankdata(x), stats.rankdata(y)
    mean = Fraction(len(rx) + 1, 2)
    cx, cy = [Fraction(v) - mean for v in rx], [Fraction(v) - mean for v in ry]
    sxy, sxx, syy = sum(a * b for a, b in zip(cx, cy)), sum(a * a for a in cx), sum(b * b for b in cy)
    if sxx == 0 or syy == 0:
        return float("nan")
    getcontext().prec = 50
    dec = lambda f: Decimal(f.numerator) / Decimal(f.denominator)  # noqa: E731
    return float(dec(sxy) / (dec(sxx) * dec(syy)).sqrt())


def _distances_of_unit_rows(a, b):
    """1 - a_i·b_j for rows that are already unit vectors with exact binary-fraction cosines."""
    return (1 - np.asarray(a, np.float64) @ np.asarray(b, np.float64).T).ravel()


# rows with entries in {-1, 0, 1} and 1 or 4 non-zeros (norm 1 or 2): every cosine is a multiple
# of 1/4, exact in float32 and float64 and in any summation order, with many ties
_tie_matrix = lambda rows: st.lists(_exact_row, min_size=rows, max_size=rows).map(  # noqa: E731
    lambda r: np.array(r, dtype=np.float64)
)


@settings(max_examples=60, deadline=None)
@given(
    x=hnp.arrays(
        st.sampled_from([np.float32, np.float64]),
        st.integers(0, 400),
        elements=st.sampled_from([0.0, -0.0, 0.5, -2.0, 3.25, 1e-30, -1e-30, 7.0]) | st.floats(-5, 5, width=32),
    ),
)
def test_doubled_ranks_equal_scipy_with_ties(x):
    """Doubled average ranks are exactly 2·scipy.stats.rankdata (ties, ±0.0), float32 (packed
    integer sort) and float64 (argsort), with the tie term Σ(t³ − t)."""
    ranks, ties = C._doubled_ranks(x)
    assert ranks.dtype == np.int64
    assert np.array_equal(ranks, 2 * stats.rankdata(x))
    _, counts = np.unique(x, return_counts=True)
    assert ties == sum(int(t) ** 3 - int(t) for t in counts)


@settings(max_examples=60, deadline=None)
@given(
    x=hnp.arrays(
        st.sampled_from([np.float32, np.float64]),
        st.integers(0, 300),
        elements=st.sampled_from([0.0, -0.0, 0.5, -2.0, 3.25, 1e-30]) | st.floats(-5, 5, width=32),
    ),
    seed=st.integers(0, 2**32 - 1),
    big=st.booleans(),
)
def test_rank_dot_equals_ranks_times_payload(x, seed, big):
    """Σ 2·rank(x)·other via one sort with ``other`` as payload = the same sum over the ranks in
    the original order (float32: packed uint64 sort; float64 or payloads ≥ 2^32: argsort)."""
    other = np.random.default_rng(seed).integers(0, 2**33 if big else 2 * x.size + 1, x.size)
    ranks, ties = C._doubled_ranks(x)
    assert C._rank_dot(x, other) == (sum(int(r) * int(o) for r, o in zip(ranks.tolist(), other.tolist())), ties)


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(0, 3000),
    bits_a=st.integers(1, 40),
    bits_b=st.integers(1, 56),
    signed=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_exact_dot_equals_python_integers(n, bits_a, bits_b, signed, seed):
    rng = np.random.default_rng(seed)
    low = (lambda bits: -(1 << bits)) if signed else (lambda bits: 0)
    a = rng.integers(low(bits_a), 1 << bits_a, n)
    b = rng.integers(low(bits_b), 1 << bits_b, n)
    want = sum(int(p) * int(q) for p, q in zip(a.tolist(), b.tolist()))
    assert C._exact_dot(a, b) == want == C._exact_dot(b, a)
    big = a << (61 - bits_a)  # |values| up to 2^61
    assert C._exact_sum(big) == sum(big.tolist())


@settings(max_examples=40, deadline=None)
@given(
    st_=_tie_matrix(9),
    tt=_tie_matrix(7),
    si=_tie_matrix(9),
    ti=_tie_matrix(7),
    dtype=st.sampled_from([np.float32, np.float64]),
    block=st.sampled_from([1, 5, M.DEFAULT_BLOCK_ELEMS]),
)
def test_corr_equals_exact_spearman_with_ties(st_, tt, si, ti, dtype, block):
    """All pairs, many exact ties: CORR is the exactly computed Spearman of scipy's average ranks
    (to 1 ulp) and scipy.stats.spearmanr (to rounding)."""
    args = [M.normalize(v).astype(dtype) for v in (st_, tt, si, ti)]
    d_text, d_img = _distances_of_unit_rows(args[0], args[1]), _distances_of_unit_rows(args[2], args[3])
    want = exact_spearman(d_text, d_img)
    got = M.corr(*args, block_elems=block)
    if np.isnan(want):
        assert np.isnan(got)
        return
    assert abs(got - want) <= np.spacing(abs(want)) + 1e-300
    assert got == pytest.approx(stats.spearmanr(d_text, d_img).statistic, rel=1e-12, abs=1e-15)


def _near_rows(rng, n, d, dup_every):
    """float32 unit rows close to one direction (cosines ≈ 1: a narrow range of distance codes,
    so counting is cheap here) with exact duplicates (ties)."""
    x = np.ones((n, d)) + 0.05 * rng.normal(size=(n, d))
    x[::dup_every] = x[0]
    return M.normalize(x.astype(np.float32))


@pytest.mark.parametrize("block", [7, 10_000])
def test_counting_ranks_equal_sorted_ranks(block, monkeypatch):
    """The counting path (float32) gives exactly the ranks, tie term and rank sums of sorting
    the same float32 distances; the nearest texts read from its products are _nearest's."""
    rng = np.random.default_rng(7)
    a, b = _near_rows(rng, 70, 5, 4), _near_rows(rng, 90, 5, 3)
    d = C._all_distances(a, b, block)
    want_ranks, want_ties = C._doubled_ranks(d)
    assert want_ties > 0
    ranks, ties = C._all_pairs_ranks_counting(a, b, block)
    assert ranks.dtype == np.int32
    assert np.array_equal(ranks, want_ranks) and ties == want_ties
    other = rng.permutation(want_ranks)
    side = M.CorrImageSide(70, 90, None, other, 0)
    want_rho = C._rho(other.size, C._exact_dot(want_ranks, other), want_ties, 0)
    for counting in (False, True):
        monkeypatch.setattr(C, "_COUNTING_MIN_PAIRS", 0 if counting else 1 << 40)
        t_star, rho = side.nearest_and_spearman(a, b, block, assume_normalized=True)
        assert np.array_equal(t_star, B._nearest(a, b, block)) and rho == want_rho
        assert side.spearman(a, b, block, assume_normalized=True) == rho


def test_corr_by_counting_equals_exact_spearman(monkeypatch):
    """CORR through the counting path (forced for this small sample) for the image side, the text
    side or both: the exact Spearman of the float32 distances, equal to the sorting path."""
    rng = np.random.default_rng(8)
    st_, tt, si = _near_rows(rng, 30, 6, 5), _near_rows(rng, 25, 6, 4), _near_rows(rng, 30, 4, 3)
    ti = rng.normal(size=(25, 4)).astype(np.float32)  # wide range of image distances
    n = M.normalize  # the inputs as corr sees them (it normalises them)
    d_text, d_img = C._all_distances(n(st_), n(tt), 40), C._all_distances(n(si), n(ti), 40)
    want = exact_spearman(d_text.astype(np.float64), d_img.astype(np.float64))
    sorted_side = M.CorrImageSide.build(si, ti, block_elems=40)
    by_sorting = sorted_side.spearman(st_, tt, block_elems=40)
    monkeypatch.setattr(C, "_COUNTING_MIN_PAIRS", 0)
    counted_side = M.CorrImageSide.build(si, ti, block_elems=40)
    assert counted_side.img_ranks.dtype == np.int32
    assert np.array_equal(counted_side.img_ranks, sorted_side.img_ranks)
    assert counted_side.img_ties == sorted_side.img_ties > 0
    by_counting = counted_side.spearman(st_, tt, block_elems=40)
    assert by_counting == sorted_side.spearman(st_, tt, block_elems=40) == by_sorting  # same integers
    assert abs(by_counting - want) <= np.spacing(abs(want))


def test_distance_codes_are_exact():
    """2^24·fl32(1 − s) is an integer for every float32 s (the counting path's premise), here
    for every float32 cosine in [-1, 1] near 0, ±1/2, ±1 and random ones."""
    rng = np.random.default_rng(0)
    near = [
        np.float32(c) + np.arange(-3000, 3000, dtype=np.float32) * np.spacing(np.float32(c or 2**-100))
        for c in (0.0, 0.25, 0.5, -0.5, 1.0, -1.0)
    ]
    s = np.concatenate([rng.uniform(-1, 1, 200_000).astype(np.float32), *near])
    assert s.dtype == np.float32
    d = np.float32(1) - s
    scaled = d.astype(np.float64) * 2**24
    assert np.array_equal(scaled, np.round(scaled))
    out = np.empty((1, s.size), np.int32)
    ((_, codes),) = C._code_blocks(np.ones((1, 1), np.float32), s[:, None], 1 << 30, out=out)
    assert np.array_equal(codes, scaled.astype(np.int64))


def test_counting_rejects_unnormalised_rows(monkeypatch):
    monkeypatch.setattr(C, "_COUNTING_MIN_PAIRS", 0)
    a = np.full((40, 3), 0.7, np.float32)  # cosine 1.47
    with pytest.raises(ValueError, match="L2-normalised"):
        M.CorrImageSide.build(a, a, assume_normalized=True, block_elems=100)


def test_corr_constant_side_is_nan():
    rng = np.random.default_rng(3)
    img = rng.normal(size=(30, 4)).astype(np.float32)
    zeros = np.zeros((30, 6), np.float32)  # every text distance is 1: no ranking at all
    for block in (M.DEFAULT_BLOCK_ELEMS, 50):
        assert np.isnan(M.corr(zeros, zeros, img, img, block_elems=block))
        assert np.isnan(M.corr(zeros, zeros, img, img, max_pairs=300, block_elems=block))


def test_too_many_pairs_is_a_clear_error():
    x = np.ones((1 << 16, 1), np.float32)
    with pytest.raises(ValueError, match="max_pairs"):
        M.CorrImageSide.build(x, x)
    with pytest.raises(ValueError, match="max_pairs"):
        M.CorrImageSide.build(x, x, max_pairs=1 << 31)


@settings(max_examples=60, deadline=None)
@given(
    n_s=st.integers(1, 40),
    n_t=st.integers(1, 40),
    frac=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**32 - 1),
)
def test_band_pairs_are_distinct_and_balanced(n_s, n_t, frac, seed):
    m = 1 + int(frac * (n_s * n_t - 1))
    if m >= n_s * n_t:
        return
    pairs = C.BandPairs.draw(n_s, n_t, m, seed)
    i, j = pairs.pairs()
    assert len(i) == m and len(set(zip(i.tolist(), j.tolist()))) == m  # m distinct pairs
    per_row = np.bincount(i, minlength=n_s)
    assert set(per_row.tolist()) <= {m // n_s, -(-m // n_s)}
    per_col = np.bincount(j, minlength=n_t)
    assert per_col.max() - per_col.min() <= 2
    again = C.BandPairs.draw(n_s, n_t, m, seed).pairs()
    assert np.array_equal(again[0], i) and np.array_equal(again[1], j)


@settings(max_examples=40, deadline=None)
@given(
    st_=_tie_matrix(11),
    tt=_tie_matrix(8),
    si=_tie_matrix(11),
    ti=_tie_matrix(8),
    m=st.integers(2, 87),
    seed=st.integers(0, 2**32 - 1),
    block=st.sampled_from([1, 30, M.DEFAULT_BLOCK_ELEMS]),
)
def test_subsample_corr_is_spearman_of_the_sampled_pairs(st_, tt, si, ti, m, seed, block):
    """max_pairs: the band sample's distances are those of its pairs (any tile size) and CORR is
    the exact Spearman over them; shared image side = fresh computation."""
    args = [M.normalize(v).astype(np.float32) for v in (st_, tt, si, ti)]
    i, j = C.BandPairs.draw(11, 8, m, seed).pairs()
    d_text = 1 - np.sum(args[0][i].astype(np.float64) * args[1][j], axis=1)
    d_img = 1 - np.sum(args[2][i].astype(np.float64) * args[3][j], axis=1)
    sample = C.BandPairs.draw(11, 8, m, seed)
    assert np.array_equal(sample.distances(args[0], args[1], block), d_text.astype(np.float32))
    got = M.corr(*args, max_pairs=m, seed=seed, block_elems=block)
    want = exact_spearman(d_text, d_img)
    assert (np.isnan(got) and np.isnan(want)) or abs(got - want) <= np.spacing(abs(want)) + 1e-300
