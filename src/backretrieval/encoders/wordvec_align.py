"""Cross-lingual maps for the word-vector family (:mod:`.wordvec`): Procrustes, CCA and RCSLS.

Pure functions of the seed-dictionary pairs (rows of ``X`` and ``Y`` are translation pairs),
each run with BLAS/LAPACK on one thread (see "Determinism" in :mod:`.wordvec`'s docstring).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from ..errors import InputError

# --------------------------------------------------------------------------------------------
# alignment (pure functions; rows of X and Y are translation pairs)


def _one_blas_thread(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn`` with BLAS/LAPACK on one thread, so that its result does not depend on the
    core count the step runs with (see "Determinism" in :mod:`.wordvec`'s docstring)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper


def _check_pairs(X: np.ndarray, Y: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0] or X.shape[0] == 0:
        raise InputError(
            f"{what}: X and Y must be 2-D with the same (non-zero) number of rows; got {X.shape} and {Y.shape}"
        )
    return X, Y


@_one_blas_thread
def align_procrustes(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Orthogonal ``W`` (d, d) minimising ``||X W - Y||_F`` (scipy's orthogonal Procrustes)."""
    X, Y = _check_pairs(X, Y, "align_procrustes")
    if X.shape[1] != Y.shape[1]:
        raise InputError(f"align_procrustes: X and Y need the same dimension, got {X.shape[1]} and {Y.shape[1]}")
    W, _ = scipy.linalg.orthogonal_procrustes(X, Y)
    return W


def _inv_sqrt(c: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(c)
    vals = np.maximum(vals, 1e-12)
    return (vecs / np.sqrt(vals)) @ vecs.T


@_one_blas_thread
def align_cca(X: np.ndarray, Y: np.ndarray, dim: int, reg: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """CCA projections ``(Wx (dx, dim), Wy (dy, dim))``: the columns of ``X Wx`` and ``Y Wy``
    are the canonical variates, ordered by canonical correlation.

    Covariances are estimated from the (centred) pairs, with a ridge of ``reg`` times the mean
    variance on the diagonal; ``Wx = Cxx^-1/2 U``, ``Wy = Cyy^-1/2 V`` for the SVD
    ``Cxx^-1/2 Cxy Cyy^-1/2 = U S V^T``. Callers project (globally centred) vectors with them.
    """
    X, Y = _check_pairs(X, Y, "align_cca")
    if not 1 <= dim <= min(X.shape[1], Y.shape[1]):
        raise InputError(f"align_cca: dim must be in [1, {min(X.shape[1], Y.shape[1])}], got {dim}")
    n = X.shape[0]
    Xc = X - X.mean(axis=0)
    Yc = Y - Y.mean(axis=0)
    cxx = Xc.T @ Xc / max(n - 1, 1)
    cyy = Yc.T @ Yc / max(n - 1, 1)
    cxy = Xc.T @ Yc / max(n - 1, 1)
    cxx += reg * max(np.trace(cxx) / cxx.shape[0], 1e-12) * np.eye(cxx.shape[0])
    cyy += reg * max(np.trace(cyy) / cyy.shape[0], 1e-12) * np.eye(cyy.shape[0])
    ix, iy = _inv_sqrt(cxx), _inv_sqrt(cyy)
    U, _, Vt = np.linalg.svd(ix @ cxy @ iy, full_matrices=False)
    return ix @ U[:, :dim], iy @ Vt.T[:, :dim]


def _topk_means(
    q: np.ndarray, keys: np.ndarray, values: np.ndarray, k: int, chunk: int = 1024
) -> tuple[float, np.ndarray]:
    """For every row of ``q``, its ``k`` rows of ``keys`` with the largest dot products:
    returns (sum over rows of the mean top-k score, per row the mean of the matching rows of
    ``values``). Chunked, so the (n, N) score matrix is never held in memory at once."""
    k = min(k, keys.shape[0])
    total = 0.0
    means = np.empty((q.shape[0], values.shape[1]), dtype=np.float64)
    for s in range(0, q.shape[0], chunk):
        sc = q[s : s + chunk] @ keys.T
        idx = np.argpartition(sc, -k, axis=1)[:, -k:]
        total += float(np.take_along_axis(sc, idx, axis=1).sum()) / k
        means[s : s + chunk] = values[idx].mean(axis=1)
    return total, means


@_one_blas_thread
def rcsls_loss_grad(
    X: np.ndarray, Y: np.ndarray, Zs: np.ndarray, Zt: np.ndarray, W: np.ndarray, k: int = 10
) -> tuple[float, np.ndarray]:
    """RCSLS loss (Joulin et al. 2018, eq. 3) and its (sub)gradient with respect to ``W``.

    ``loss = 1/n sum_i [ -2 (x_i W).y_i + 1/k sum_{y in N_k(x_i W)} (x_i W).y
                         + 1/k sum_{z in N_k(y_i)} (z W).y_i ]``
    with ``N_k(x_i W)`` the k nearest target words (rows of ``Zt``) of the mapped source
    word and ``N_k(y_i)`` the k nearest mapped source words (rows of ``Zs W``) of ``y_i``.
    Rows are assumed unit length (the CSLS relaxation of cosine). The neighbour sets are
    held fixed when differentiating (a subgradient, as in the official implementation).
    """
    n = X.shape[0]
    XW = X @ W
    f0, nn_t = _topk_means(XW, Zt, Zt, k)  # mean target neighbour of each x_i W
    f1, nn_s = _topk_means(Y, Zs @ W, Zs, k)  # mean (unmapped) source neighbour of each y_i
    loss = (-2.0 * float(np.sum(XW * Y)) + f0 + f1) / n
    grad = (-2.0 * X.T @ Y + X.T @ nn_t + nn_s.T @ Y) / n
    return loss, grad


def _proj_spectral(W: np.ndarray) -> np.ndarray:
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    return (U * np.clip(s, 0.0, 1.0)) @ Vt


@_one_blas_thread
def align_rcsls(
    X: np.ndarray,
    Y: np.ndarray,
    Z_src_all: np.ndarray,
    Z_tgt_all: np.ndarray,
    k: int = 10,
    epochs: int = 10,
    lr: float = 25.0,
    seed: int = 0,
    spectral: bool = False,
    batch_size: int | None = None,
) -> np.ndarray:
    """RCSLS map ``W`` (d, d) with ``X W ≈ Y``, initialised with :func:`align_procrustes`.

    Full-batch gradient descent on :func:`rcsls_loss_grad` for ``epochs`` steps; a step that
    increases the loss is rejected and the learning rate halved (as the official ``align.py``;
    stop when ``lr < 1e-4``), so the loss never exceeds the Procrustes initialisation's. ``spectral`` clips the singular values of ``W`` to [0, 1] after each
    step. ``batch_size`` (with ``seed``) switches to seeded minibatch SGD without
    backtracking. ``Z_src_all``/``Z_tgt_all`` are the candidate neighbours (whole
    vocabularies, or their most frequent words), unit-length rows.
    """
    X, Y = _check_pairs(X, Y, "align_rcsls")
    Zs = np.asarray(Z_src_all, dtype=np.float64)
    Zt = np.asarray(Z_tgt_all, dtype=np.float64)
    if Zs.ndim != 2 or Zs.shape[1] != X.shape[1] or Zt.ndim != 2 or Zt.shape[1] != Y.shape[1]:
        raise InputError(
            f"align_rcsls: Z_src_all/Z_tgt_all must be 2-D with {X.shape[1]}/{Y.shape[1]} "
            f"columns, got {Zs.shape}/{Zt.shape}"
        )
    if X.shape[1] != Y.shape[1]:
        raise InputError("align_rcsls: source and target dimensions differ")
    if k < 1 or epochs < 0 or lr <= 0:
        raise InputError(f"align_rcsls: need k >= 1, epochs >= 0, lr > 0 (got {k}, {epochs}, {lr})")
    W = align_procrustes(X, Y)
    if batch_size is not None and batch_size < X.shape[0]:
        rng = np.random.default_rng(seed)
        for _ in range(epochs):
            idx = np.sort(rng.choice(X.shape[0], size=batch_size, replace=False))
            _, g = rcsls_loss_grad(X[idx], Y[idx], Zs, Zt, W, k)
            W = W - lr * g
            if spectral:
                W = _proj_spectral(W)
        return W
    f, g = rcsls_loss_grad(X, Y, Zs, Zt, W, k)
    for _ in range(epochs):
        if lr < 1e-4:
            break
        W_new = W - lr * g
        if spectral:
            W_new = _proj_spectral(W_new)
        f_new, g_new = rcsls_loss_grad(X, Y, Zs, Zt, W_new, k)
        if f_new > f:  # the step made things worse: reject it and halve the step
            lr /= 2.0
            continue
        W, f, g = W_new, f_new, g_new
    return W
