"""The paper's CORR baseline: Spearman correlation between text and image cosine distances over
source×target pairs, as an exact integer Spearman of doubled average ranks (all pairs), or on a
seeded pair subsample (:class:`BandPairs`). :class:`CorrImageSide` holds a sample's image side,
shared by every encoder evaluated on it."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from ._base import DEFAULT_BLOCK_ELEMS, Columns, _as_pair, _block_rows, _check_bkr_shapes, _nearest, _score_buffer

# --------------------------------------------------------------------------------------------
# CORR
#
# Spearman's rho is Pearson's r of average ranks (ties share their mean rank, as in
# scipy.stats.rankdata / spearmanr). Ranks are held as *doubled* average ranks D = 2·rank =
# 2·below + ties + 1, which are integers, so every sum is exact:
#     rho = S_ti / sqrt(S_tt · S_ii),   S_xy = Σ_p (D_x[p] − (n+1))·(D_y[p] − (n+1))
#                                             = Σ_p D_x[p]·D_y[p] − n(n+1)²   (Σ_p D[p] = n(n+1)),
#     S_xx = (n³ − n − Σ_ties (t³ − t)) / 3.
# Only the final division is rounded: the value does not depend on block sizes, summation order
# or thread counts. (Float32 ranks would not do: average ranks are half-integers, exact in
# float32 only below 2^23, and N² = 10^8 at N = 10,000.)


def corr(
    src_text: np.ndarray,
    tgt_text: np.ndarray,
    src_img: np.ndarray,
    tgt_img: np.ndarray,
    max_pairs: int | None = None,
    seed: int = 0,
    block_elems: int = DEFAULT_BLOCK_ELEMS,
) -> float:
    """The paper's CORR baseline.

    Spearman correlation between text cosine distances 1 - cos(src_text_i, tgt_text_j) and
    image cosine distances 1 - cos(src_img_i, tgt_img_j) over all source×target pairs (i, j).
    Distances are computed in the input dtype (float32 stays float32), ties are average ranks.

    ``max_pairs``: if set and smaller than the number of pairs, use that many distinct pairs
    chosen by :class:`BandPairs` with ``np.random.default_rng(seed)`` (an estimate; see the
    benchmark for its error) instead of all N_src·N_tgt pairs.
    """
    _check_bkr_shapes(src_text, tgt_text, src_img, tgt_img)
    side = CorrImageSide.build(src_img, tgt_img, max_pairs=max_pairs, seed=seed, block_elems=block_elems)
    return side.spearman(src_text, tgt_text, block_elems=block_elems)


_SMALL_PRODUCT = 1 << 28  # multiply-adds of one tile below which BandPairs uses one BLAS thread
_CONTROLLER: list[ThreadpoolController] = []


def _blas_threads(limit: int | None):
    """``threadpool_limits(limit, user_api="blas")`` through one controller made on first use:
    a fresh ``threadpool_limits`` scans every loaded shared library (milliseconds in a process
    with torch loaded), which dominated many small subsampled CORRs (the bootstrap)."""
    if limit is None:
        return contextlib.nullcontext()
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=limit, user_api="blas")


@dataclass(frozen=True)
class BandPairs:
    """A seeded subsample of ``m`` distinct source×target pairs, laid out for block products.

    Rows and columns are put in random order (``row_perm``, ``col_perm``). Row r of that order
    is paired with the k_r consecutive columns c_r, c_r + 1, …, c_r + k_r − 1 (mod n_t) of the
    column order, where c_r = ⌊r·n_t/n_s⌋ and k_r = ⌊(r+1)·m/n_s⌋ − ⌊r·m/n_s⌋. So every pair
    has the same chance m/(n_s·n_t) to be chosen, none twice; each row is used ⌊m/n_s⌋ or
    ⌈m/n_s⌉ times and each column m/n_t times up to ±2. The pairs of a block of consecutive
    rows lie in a band of one small tile, so their cosines come from one matrix product per
    block instead of two gathered rows per pair. Pair p of the sample is the p-th pair of this
    enumeration (rows in order, columns in order within a row).
    """

    n_src: int
    n_tgt: int
    m: int
    row_perm: np.ndarray
    col_perm: np.ndarray

    @classmethod
    def draw(cls, n_src: int, n_tgt: int, m: int, seed: int) -> BandPairs:
        if not 0 < m < n_src * n_tgt:
            raise ValueError(f"max_pairs must be in [1, {n_src * n_tgt}) for a subsample, got {m}")
        rng = np.random.default_rng(seed)
        return cls(n_src, n_tgt, int(m), rng.permutation(n_src), rng.permutation(n_tgt))

    def _rows(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(first column c_r, number of pairs k_r) of rows r, in the permuted orders."""
        return r * self.n_tgt // self.n_src, (r + 1) * self.m // self.n_src - r * self.m // self.n_src

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(source index, target index) of every pair, in sample order."""
        first, per_row = self._rows(np.arange(self.n_src))
        rows = np.repeat(np.arange(self.n_src), per_row)
        cols = (np.repeat(first - (np.cumsum(per_row) - per_row), per_row) + np.arange(self.m)) % self.n_tgt
        return self.row_perm[rows], self.col_perm[cols]

    def distances(self, a: np.ndarray, b: np.ndarray, block_elems: int = DEFAULT_BLOCK_ELEMS) -> np.ndarray:
        """1 - <a_i, b_j> for the sampled pairs (rows normalised), in sample order."""
        n_s, n_t = self.n_src, self.n_tgt
        k_max = -(-self.m // n_s)
        width = lambda rows: ((rows - 1) * n_t) // n_s + 1 + k_max  # noqa: E731  tile columns
        # rows per tile: the band fills about half of a tile of R rows × (R·n_t/n_s + k_max)
        # columns; at least 32 rows so each product is a real sgemm
        step = min(n_s, max(32, k_max * n_s // n_t))
        while step > 1 and step * width(step) > block_elems:
            step //= 2
        dtype = np.result_type(a.dtype, b.dtype)
        out = np.empty(self.m, dtype=dtype)
        a_buf = np.empty((step, a.shape[1]), dtype=a.dtype)
        b_buf = np.empty((width(step), b.shape[1]), dtype=b.dtype)
        tile_buf = np.empty(step * width(step), dtype=dtype)
        pos = 0
        # small tiles: BLAS threads would only add synchronisation (one thread is faster)
        threads = 1 if step * width(step) * a.shape[1] < _SMALL_PRODUCT else None
        with _blas_threads(threads):
            for s in range(0, n_s, step):
                e = min(n_s, s + step)
                first, per_row = self._rows(np.arange(s, e))
                total = int(per_row.sum())
                c0, w = int(first[0]), int(first[-1] - first[0]) + k_max
                np.take(a, self.row_perm[s:e], axis=0, out=a_buf[: e - s])
                np.take(b, self.col_perm[(c0 + np.arange(w)) % n_t], axis=0, out=b_buf[:w])
                np.matmul(a_buf[: e - s], b_buf[:w].T, out=tile_buf[: (e - s) * w].reshape(e - s, w))
                # entry j of local row u sits at u·w + (c_r − c0) + j of the tile
                at = np.arange(e - s) * w + (first - c0) - (np.cumsum(per_row) - per_row)
                seg = out[pos : pos + total]
                np.take(tile_buf, np.repeat(at, per_row) + np.arange(total), out=seg)
                np.subtract(1, seg, out=seg)
                pos += total
        return out


@dataclass(frozen=True)
class CorrImageSide:
    """Image side of CORR for one sample, shared by every text encoder.

    Holds the doubled average ranks of the image cosine distances, one per pair (all pairs in
    row-major order, or the pairs of ``sample``), and their tie term, so each encoder only
    ranks its own text distances and forms one exact sum of products.
    """

    n_src: int
    n_tgt: int
    sample: BandPairs | None
    img_ranks: np.ndarray  # doubled average ranks (integers), one per pair
    img_ties: int  # Σ over tie groups of t³ − t

    @classmethod
    def build(
        cls,
        src_img: np.ndarray,
        tgt_img: np.ndarray,
        max_pairs: int | None = None,
        seed: int = 0,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        assume_normalized: bool = False,
    ) -> CorrImageSide:
        si, ti = (src_img, tgt_img) if assume_normalized else _as_pair(src_img, tgt_img, "corr image")
        n_s, n_t = si.shape[0], ti.shape[0]
        sample = None
        if max_pairs is not None and max_pairs < n_s * n_t:
            sample = BandPairs.draw(n_s, n_t, max_pairs, seed)
        _check_pair_count(sample.m if sample else n_s * n_t)
        if sample is not None:
            ranks, ties = _doubled_ranks(sample.distances(si, ti, block_elems))
        elif _use_counting(si, n_s * n_t):
            ranks, ties = _all_pairs_ranks_counting(si, ti, block_elems)
        else:
            ranks, ties = _doubled_ranks(_all_distances(si, ti, block_elems))
        return cls(n_s, n_t, sample, ranks, ties)

    def spearman(
        self,
        src_text: np.ndarray,
        tgt_text: np.ndarray,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        assume_normalized: bool = False,
    ) -> float:
        """CORR of one text encoder on this sample (NaN if either side's distances are all tied)."""
        return self.nearest_and_spearman(src_text, tgt_text, block_elems, assume_normalized, nearest=False)[1]

    def nearest_and_spearman(
        self,
        src_text: np.ndarray,
        tgt_text: np.ndarray,
        block_elems: int = DEFAULT_BLOCK_ELEMS,
        assume_normalized: bool = False,
        nearest: bool = True,
    ) -> tuple[np.ndarray | None, float]:
        """(BkR step 1: the nearest target text of every source text, CORR) of one encoder.

        Where CORR takes every pair, both come from one product ``src @ tgt.T``, computed in
        the blocks :func:`_nearest` uses (same shapes, so the same bits as its argmax) and
        turned into distances after the argmax; with a pair subsample the nearest texts need
        their own product. ``nearest=False``: CORR only (the first item is None)."""
        st, tt = (src_text, tgt_text) if assume_normalized else _as_pair(src_text, tgt_text, "corr text")
        if st.shape[0] != self.n_src or tt.shape[0] != self.n_tgt:
            raise ValueError("corr: text rows do not match the image side")
        n = self.img_ranks.size
        if self.sample is not None:
            t_star = _nearest(st, tt, block_elems) if nearest else None
            s_raw, ties = _rank_dot(self.sample.distances(st, tt, block_elems), self.img_ranks)
            return t_star, _rho(n, s_raw, ties, self.img_ties)
        t_star = np.empty(self.n_src, dtype=np.int64) if nearest else None
        if _use_counting(st, n):
            counts = _CodeCounts(weighted=True)
            for s, codes in _code_blocks(st, tt, block_elems, nearest_out=t_star):
                counts.add(codes, self.img_ranks[s * self.n_tgt : s * self.n_tgt + codes.size])
            s_raw, ties = counts.rank_sum_product(), counts.ties()
        else:
            s_raw, ties = _rank_dot(_all_distances(st, tt, block_elems, nearest_out=t_star), self.img_ranks)
        return t_star, _rho(n, s_raw, ties, self.img_ties)


def _check_pair_count(n: int) -> None:
    # doubled ranks up to 2n and their sums per distance value up to 2n² stay within int64
    if n >= 1 << 31:
        raise ValueError(f"corr: {n} pairs; at most 2^31 - 1 are supported (use max_pairs)")


def _rho(n: int, s_raw: int, ties_x: int, ties_y: int) -> float:
    """Spearman's rho from Σ D_x·D_y and the tie terms (see the section comment)."""
    s_xy = s_raw - n * (n + 1) ** 2
    s_xx, s_yy = (n**3 - n - ties_x) // 3, (n**3 - n - ties_y) // 3
    if s_xx <= 0 or s_yy <= 0:
        return float("nan")
    return float(np.clip(s_xy / math.sqrt(s_xx * s_yy), -1.0, 1.0))


def _exact_dot(a: np.ndarray, b: np.ndarray) -> int:
    """Σ a·b of two integer arrays, exactly (a Python int): one int64 dot product where no
    partial sum can overflow, else int64 products (a factor split into high and low bits where
    a product could overflow) summed in two halves."""
    a, b = np.asarray(a).ravel().astype(np.int64, copy=False), np.asarray(b).ravel().astype(np.int64, copy=False)
    if a.size == 0:
        return 0
    amax, bmax = int(np.abs(a).max()), int(np.abs(b).max())
    if amax * bmax * a.size < 1 << 63:  # every partial sum of the int64 dot is exact
        return int(np.dot(a, b))
    if amax * bmax >= 1 << 62:
        if amax < bmax:
            a, b, bmax = b, a, amax
        shift = 62 - bmax.bit_length()  # low bits · b < 2^62 (b, the smaller, is below 2^33 here)
        return (_exact_dot(a >> shift, b) << shift) + _exact_dot(a & ((1 << shift) - 1), b)
    return _exact_sum(a * b)


def _exact_sum(x: np.ndarray) -> int:
    """Σ x exactly for int64 |x| < 2^62 and fewer than 2^32 values: the high and low 31 bits
    are summed separately, neither sum can overflow."""
    return (int(np.sum(x >> 31)) << 31) + int(np.sum(x & ((1 << 31) - 1)))


def _tie_term(counts: np.ndarray) -> int:
    """Σ (t³ − t) over tie groups of sizes ``counts``."""
    t = counts[counts > 1].astype(np.int64)
    return _exact_dot(t, t * t) - int(t.sum())


def _doubled_ranks(x: np.ndarray) -> tuple[np.ndarray, int]:
    """(2·average ranks of x as int64, Σ (t³ − t) over its ties); 2·``scipy.stats.rankdata(x)``.

    scipy sorts with a stable mergesort; average ranks do not depend on the order within a
    tie, so any faster sort gives the same ranks (here numpy's vectorised sorts). Equal
    values (also -0.0 and 0.0) are ties, as in scipy.
    """
    x = np.asarray(x).ravel()
    n = x.size
    if x.dtype == np.float32 and n < 1 << 32:
        order, xs = _argsort_float32(x)
    else:
        order = np.argsort(x, kind="quicksort")
        xs = x[order]
    ranks = np.empty(n, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    if starts.size == n:  # no ties: rank = position in the sorted order
        ranks[order] = np.arange(2, 2 * n + 1, 2)
        return ranks, 0
    ends = np.concatenate((starts[1:], [n]))
    ranks[order] = np.repeat(starts + ends + 1, ends - starts)
    return ranks, _tie_term(ends - starts)


def _rank_dot(x: np.ndarray, other: np.ndarray) -> tuple[int, int]:
    """(Σ_p D[p]·other[p], Σ (t³ − t) over the ties of x), D = doubled average ranks of x,
    ``other`` non-negative integers. Sorts x with ``other`` as payload (packed into one uint64
    for float32), so neither ranks in the original order nor an index array are needed: each
    position in the sorted order carries its tie group's doubled rank."""
    x = np.asarray(x).ravel()
    n = x.size
    if n == 0:
        return 0, 0
    if x.dtype == np.float32 and int(other.max()) < 1 << 32 and int(other.min()) >= 0:
        packed, high, low = _packed(x, other)
        packed.sort()
        new_group = np.empty(n, dtype=bool)
        new_group[0] = True
        np.not_equal(high[1:], high[:-1], out=new_group[1:])
        payload = low.astype(np.int64)
    else:
        order = np.argsort(x, kind="quicksort")
        keys, payload = x[order], other[order].astype(np.int64)
        new_group = np.concatenate(([True], keys[1:] != keys[:-1]))
    starts = np.flatnonzero(new_group)
    if starts.size == n:  # no ties: D = 2, 4, …, 2n in sorted order
        return _exact_dot(np.arange(2, 2 * n + 1, 2), payload), 0
    ends = np.append(starts[1:], n)
    doubled = np.repeat(starts + ends + 1, ends - starts)  # D of every sorted position
    return _exact_dot(doubled, payload), _tie_term(ends - starts)


def _float32_keys(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """uint32 keys with the order of the float32 values x; equal keys ⇔ equal values (+ 0
    turns -0.0 into 0.0, so both zeros share one key): the sign bit is flipped for values >= 0,
    every bit for negative ones (XOR with 0x80000000 or 0xFFFFFFFF). Written into ``out``
    (any uint32 array of x's shape, e.g. a strided half of a uint64 array) if given."""
    bits = np.add(x, np.float32(0)).view(np.uint32)
    mask = (bits.view(np.int32) >> 31).view(np.uint32)  # arithmetic shift: 0 or 0xFFFFFFFF
    mask |= np.uint32(1 << 31)
    return np.bitwise_xor(bits, mask, out=out if out is not None else bits)


def _packed(x: np.ndarray, payload: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """uint64 values key(x)·2^32 + payload (payload: integers in [0, 2^32)), and their high
    (key) and low (payload) uint32 halves as views: sorting the packed values sorts x with its
    payload, and the halves read the sorted keys and payloads without shifts or copies."""
    packed = np.empty(x.size, dtype=np.uint64)
    halves = packed.view(np.uint32)
    low, high = (halves[0::2], halves[1::2]) if np.little_endian else (halves[1::2], halves[0::2])
    _float32_keys(x, out=high)
    np.copyto(low, payload, casting="unsafe")
    return packed, high, low


def _argsort_float32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(an argsort of x, integer keys of x in that order; equal keys ⇔ equal values).

    Packs an order-preserving 32-bit key of each value with its index into one uint64 and
    sorts those with numpy's vectorised integer sort, which is faster than ``np.argsort``.
    """
    packed, high, low = _packed(x, np.arange(x.size, dtype=np.uint32))
    packed.sort()
    return low.astype(np.intp), high


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based; ties share their mean rank), identical to
    ``scipy.stats.rankdata(x, method="average")``."""
    return _doubled_ranks(x)[0] / 2.0


def _all_distances(a: np.ndarray, b: np.ndarray, block_elems: int, nearest_out: np.ndarray | None = None) -> np.ndarray:
    """1 - <a_i, b_j> for all (row of a, row of b) pairs, row-major, in a's dtype; with
    ``nearest_out``, also argmax_j <a_i, b_j> of every row (ties → lowest), from the same
    block products as :func:`_nearest`."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.result_type(a.dtype, b.dtype))
    step = _block_rows(a.shape[0], b.shape[0], block_elems)
    cols = Columns.of(b)  # identical rows of b: equal distances (exact ties), as in _nearest
    for s in range(0, a.shape[0], step):
        e = min(a.shape[0], s + step)
        scores = cols.product(a[s:e], out[s:e])
        if nearest_out is not None:
            nearest_out[s:e] = np.argmax(scores, axis=1)
        np.subtract(1, scores, out=scores)
    return out.ravel()


# All pairs, float32, at least _COUNTING_MIN_PAIRS of them: ranks by counting, not sorting. The
# float32 distance fl(1 − s) of a float32 cosine s is always a multiple of 2^-24 (for
# |1 − s| < 1/2, s lies in (1/2, 3/2), where 1 − s is exact (Sterbenz) and s a multiple of
# ulp(s) ≥ 2^-24; otherwise |fl(1 − s)| ≥ 1/2, whose ulp is ≥ 2^-24). So code = 2^24·fl(1 − s)
# is an exact integer, equal codes are equal distances and the order is the same; for
# normalised rows |code| ≤ 2^25 + a few, a range small enough to count every code.
_CODE_SCALE = np.float32(1 << 24)
# Cosines of normalised rows are within [-1, 1] up to rounding (allowed: 2^-8), so their codes
# lie in [_CODE_MIN, _CODE_MAX]. Count tables span that range; np.zeros maps it lazily, so only
# the pages of the codes that occur (a few MB to ~100 MB) become resident.
_CODE_MIN, _CODE_MAX = -(1 << 16), (1 << 25) + (1 << 16)
_CHUNK = 1 << 20


# Below this many pairs, sorting them is cheaper than a pass over the ~2^25 possible codes;
# above, counting is faster and needs 4 bytes per pair instead of ~30.
_COUNTING_MIN_PAIRS = 1 << 24


def _use_counting(x: np.ndarray, n_pairs: int) -> bool:
    return x.dtype == np.float32 and n_pairs >= _COUNTING_MIN_PAIRS


def _code_blocks(
    a: np.ndarray,
    b: np.ndarray,
    block_elems: int,
    out: np.ndarray | None = None,
    nearest_out: np.ndarray | None = None,
):
    """Yield (start row, codes) per row block of the float32 distances 1 − a @ b.T: codes =
    2^24·fl(1 − s), exact integers. Written into ``out`` (n_a × n_b, integer) if given. With
    ``nearest_out``, also argmax_j <a_i, b_j> per row, from the same block products as
    :func:`_nearest`."""
    step = _block_rows(a.shape[0], b.shape[0], block_elems)
    score_buf = _score_buffer(step, a, b)
    code_buf: np.ndarray = np.empty(score_buf.shape, dtype=np.int32) if out is None else out
    cols = Columns.of(b)  # identical rows of b: equal codes (exact ties), as in _nearest
    for s in range(0, a.shape[0], step):
        e = min(a.shape[0], s + step)
        scores = cols.product(a[s:e], score_buf[: e - s])
        if nearest_out is not None:
            nearest_out[s:e] = np.argmax(scores, axis=1)
        codes = out[s:e] if out is not None else code_buf[: e - s]
        np.subtract(1, scores, out=scores)
        np.multiply(scores, _CODE_SCALE, out=codes, casting="unsafe")  # exact (see above)
        yield s, codes.reshape(-1)


class _CodeCounts:
    """Number of pairs (and optionally the sum of an integer weight) per distance code."""

    def __init__(self, weighted: bool):
        size = _CODE_MAX - _CODE_MIN + 1
        self.counts = np.zeros(size, np.int64)
        self.sums = np.zeros(size, np.int64) if weighted else None
        self.lo, self.hi = _CODE_MAX, _CODE_MIN  # range of the codes seen

    def add(self, codes: np.ndarray, weights: np.ndarray | None = None) -> None:
        lo, hi = int(codes.min()), int(codes.max())
        if lo < _CODE_MIN or hi > _CODE_MAX:
            raise ValueError("corr: cosine similarities outside [-1, 1] beyond rounding; rows must be L2-normalised")
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        for s in range(0, codes.size, _CHUNK):  # int64 operands: numpy's fast ufunc.at loop
            idx = codes[s : s + _CHUNK].astype(np.int64)
            idx -= _CODE_MIN
            np.add.at(self.counts, idx, 1)
            if self.sums is not None:
                assert weights is not None, "a weighted count needs weights"
                np.add.at(self.sums, idx, weights[s : s + _CHUNK].astype(np.int64))

    def _used(self, table: np.ndarray) -> np.ndarray:
        return table[self.lo - _CODE_MIN : self.hi - _CODE_MIN + 1]

    def doubled_ranks(self) -> np.ndarray:
        """Doubled average rank of every code from ``lo`` to ``hi`` (2·below + count + 1)."""
        counts = self._used(self.counts)
        ranks = np.cumsum(counts)  # in place from here: the range can span ~2^25 codes
        ranks -= counts
        ranks *= 2
        ranks += counts
        ranks += 1
        return ranks

    def rank_sum_product(self) -> int:
        """Σ over pairs of (doubled rank of the pair's code)·weight = Σ_code rank·sum."""
        assert self.sums is not None, "rank_sum_product needs a weighted count"
        return _exact_dot(self.doubled_ranks(), self._used(self.sums))

    def ties(self) -> int:
        return _tie_term(self._used(self.counts))


def _all_pairs_ranks_counting(a: np.ndarray, b: np.ndarray, block_elems: int) -> tuple[np.ndarray, int]:
    """Doubled average ranks of all distances 1 − <a_i, b_j> (row-major) and their tie term,
    by counting distance codes: one pass stores the codes and counts them, one replaces each
    code by its rank. int32 ranks (4 bytes per pair) where they fit."""
    n = a.shape[0] * b.shape[0]
    grid = np.empty((a.shape[0], b.shape[0]), dtype=np.int32 if 2 * n < 1 << 31 else np.int64)
    counts = _CodeCounts(weighted=False)
    for _, codes in _code_blocks(a, b, block_elems, out=grid):
        counts.add(codes)
    table = counts.doubled_ranks().astype(grid.dtype)  # ranks ≤ 2n fit
    ranks = grid.reshape(-1)
    buf = np.empty(min(n, _CHUNK), dtype=ranks.dtype)
    for s in range(0, n, _CHUNK):
        chunk = ranks[s : s + _CHUNK]
        chunk -= counts.lo
        chunk[...] = np.take(table, chunk, out=buf[: chunk.size])
    return ranks, counts.ties()
