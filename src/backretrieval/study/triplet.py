"""TRIPLET / TRIPLETXL heads on frozen base-encoder embeddings (the paper's case study, Sec. 3.2).

A *Siamese* two-layer MLP ``f`` (weights shared between the two inputs) maps a frozen title embedding and a frozen body embedding of the same item to
``x_rt = f(title)`` and ``x_rb = f(body)`` (``out_dim`` = 300, as in the paper; the hidden
width is not given in the paper, we use ``hidden`` = 512 by default). The evaluated
representation is ``concat(x_rt, x_rb)``. ``d`` is the cosine distance ``1 - cos``.

The paper's "two dense layers with ReLU activations" has two readings (``relu``):

* ``hidden`` (default): Linear → ReLU → Linear, the usual MLP head; the 300-d outputs are
  unconstrained, so cosine distances span [0, 2];
* ``both``: Linear → ReLU → Linear → ReLU, a ReLU after each dense layer; the outputs are
  non-negative, so every cosine distance lies in [0, 1] (and a unit that is negative for
  every input is dead in the representation).

TRIPLET (Eq. 1), averaged over the items ``r`` of a mini-batch::

    L_triplet = mean_r max(0, d(x_rb, x_rt) - d(x_rb, x_nt) + alpha)

with ``n = neg[r]`` a random *other* item of the same mini-batch (never ``r``; see
:func:`sample_negatives`).

TRIPLETXL (Eq. 2) adds a language-mixing term, ``L = L_triplet + beta * L_XL`` with, for an
item ``r`` of language ``l_r``::

    L_XL(r) = sum_{l != l_r} | (1/K) sum_{n in N_l(r)} d(x_rb, x_nt)
                               - (1/K) sum_{n in N_{l_r}(r)} d(x_rb, x_nt) |

``N_l(r)``: the ``K`` items of language ``l`` whose *titles* ``x_nt`` are nearest (by ``d``)
to ``r``'s *body* ``x_rb``; ``r`` itself is never its own neighbour. ``L_XL(r)`` is large when
r's nearest titles of other languages are much farther than its nearest titles of its own
language (languages form separate clusters), and, by the absolute value printed in Eq. 2, also
when they are much nearer: it is zero only when every language's neighbours are as near as
r's own. ``xl_form: signed`` (off by default, not the paper's) drops the absolute value, so a
term is negative when the other language's neighbours are the nearer ones and only separated
languages are penalised. Choices where the paper leaves the details open (:func:`xl_loss`):

* neighbours are searched **within the mini-batch**, and batches are **language-stratified**
  (every batch holds a share of every training language, :func:`train_heads`), so every term
  of the sum exists;
* the batch loss is the **mean of L_XL(r) over the batch items r** (as L_triplet is a mean);
* a language with fewer than ``K`` candidates in the batch uses all of them: the ``1/K`` of
  the formula is the mean over the neighbour set, so it becomes ``1/|N_l(r)|`` with
  ``|N_l(r)| = min(K, candidates)``;
* ties among distances are broken by the lower batch position (stable sort). The loss value
  does not depend on it; it fixes which tied item receives the gradient.

Training (:func:`train_heads`) follows the paper: Adam, lr 0.01, 40 epochs, alpha 0.1,
batch 128, beta 0.01, K 5; a seeded 90/10 train/validation split (stratified by language);
the state with the lowest validation loss (same objective, fixed validation negatives) is
kept (checkpointing), with optional early stopping (``patience``). On CPU, the same seed gives
a bit-identical state dict.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._util.device import resolve_device
from .._util.hashing import sha256_file
from .._util.io import atomic_path, write_json
from ..errors import ConfigError, InputError

if TYPE_CHECKING:  # pragma: no cover
    import torch

HEAD_FORMAT_VERSION = 1

#: readings of "two dense layers with ReLU activations": ReLU after the hidden layer only, or after both
RELU_FORMS = ("hidden", "both")
#: L_XL with the absolute value printed in Eq. 2 (default) or without it
XL_FORMS = ("abs", "signed")


@dataclass(frozen=True)
class TripletConfig:
    """Hyper-parameters of the TRIPLET / TRIPLETXL heads (defaults = the paper's)."""

    epochs: int = 40
    lr: float = 0.01
    alpha: float = 0.1  # triplet margin
    beta: float = 0.01  # weight of L_XL (TRIPLETXL only)
    k: int = 5  # neighbours in L_XL
    batch_size: int = 128
    hidden: int = 512  # hidden width of the 2-layer MLP (not stated in the paper)
    relu: str = "hidden"  # "hidden": Linear-ReLU-Linear; "both": a ReLU after each layer
    xl_form: str = "abs"  # "abs": Eq. 2 as printed; "signed": without the absolute value
    out_dim: int = 300  # per-field output; the evaluated representation is 2 * out_dim
    val_fraction: float = 0.1
    seed: int = 0
    patience: int | None = None  # early stopping after this many epochs w/o val improvement
    device: str = "auto"  # "auto" (CUDA if available), "cpu", "cuda", "cuda:1", ...

    def validate(self) -> None:
        checks = [
            (self.epochs >= 1, "epochs must be >= 1"),
            (self.lr > 0, "lr must be > 0"),
            (self.alpha >= 0, "alpha must be >= 0"),
            (self.beta >= 0, "beta must be >= 0"),
            (self.k >= 1, "k must be >= 1"),
            (self.batch_size >= 2, "batch_size must be >= 2 (in-batch negatives)"),
            (self.hidden >= 1 and self.out_dim >= 1, "hidden and out_dim must be >= 1"),
            (0 < self.val_fraction < 1, "val_fraction must be in (0, 1)"),
            (self.patience is None or self.patience >= 1, "patience must be >= 1 or None"),
            (self.relu in RELU_FORMS, f"relu must be one of {RELU_FORMS}"),
            (self.xl_form in XL_FORMS, f"xl_form must be one of {XL_FORMS}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ConfigError(f"TripletConfig: {msg} (got {self})")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TripletConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ConfigError(f"TripletConfig: unknown field(s) {sorted(unknown)}")
        return cls(**d)


@dataclass
class TrainResult:
    """Best (lowest validation loss) head state plus the training history."""

    state_dict: dict[str, Any]  # CPU tensors of the best epoch
    config: TripletConfig
    in_dim: int
    xl: bool
    history: dict[str, list[float]] = field(default_factory=dict)
    # keys: epoch, train_loss, val_loss, val_triplet, val_xl
    best_epoch: int = 0  # 1-based epoch whose state is kept
    best_val_loss: float = math.inf
    n_train: int = 0
    n_val: int = 0
    initial_val_loss: float = math.nan  # validation loss of the untrained (seeded) head

    def model(self) -> torch.nn.Module:
        """A fresh :class:`SiameseHead` (CPU, eval mode) loaded with the best state."""
        m = _build_head(self.in_dim, self.config)
        m.load_state_dict(self.state_dict)
        m.eval()
        return m


# --------------------------------------------------------------------------- model + losses


def _build_head(in_dim: int, config: TripletConfig) -> torch.nn.Module:
    from torch import nn

    class SiameseHead(nn.Module):
        """Two-layer MLP with ReLU (after the hidden layer, or after both), shared by title and body."""

        def __init__(self) -> None:
            super().__init__()
            self.layer1 = nn.Linear(in_dim, config.hidden)
            self.layer2 = nn.Linear(config.hidden, config.out_dim)

        def forward(self, x):  # type: ignore[no-untyped-def]
            out = self.layer2(self.layer1(x).relu())
            return out.relu() if config.relu == "both" else out

    return SiameseHead()


def build_head(in_dim: int, config: TripletConfig | None = None, seed: int | None = None):
    """A freshly initialised Siamese head (seeded with ``seed`` or ``config.seed``)."""
    import torch

    config = config or TripletConfig()
    torch.manual_seed(config.seed if seed is None else seed)
    return _build_head(in_dim, config)


def cosine_distance_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``1 - cos(a_i, b_j)`` for all pairs (rows normalised with eps 1e-8)."""
    import torch.nn.functional as F

    return 1.0 - F.normalize(a, dim=1, eps=1e-8) @ F.normalize(b, dim=1, eps=1e-8).T


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise ``1 - cos(a_i, b_i)``."""
    import torch.nn.functional as F

    return 1.0 - F.cosine_similarity(a, b, dim=1, eps=1e-8)


def sample_negatives(n: int, generator: torch.Generator) -> torch.Tensor:
    """For each of ``n`` batch positions a uniformly random *other* position (never itself)."""
    import torch

    if n < 2:
        raise InputError(f"in-batch negatives need a batch of at least 2 items, got {n}")
    offset = torch.randint(1, n, (n,), generator=generator)
    return (torch.arange(n) + offset) % n


def triplet_loss(x_rt: torch.Tensor, x_rb: torch.Tensor, neg_index: torch.Tensor, alpha: float) -> torch.Tensor:
    """Eq. 1: ``mean_i max(0, d(x_rb_i, x_rt_i) - d(x_rb_i, x_rt_neg[i]) + alpha)``."""
    import torch

    neg_index = neg_index.to(x_rt.device)
    if bool((neg_index == torch.arange(len(neg_index), device=x_rt.device)).any()):
        raise InputError("triplet_loss: neg_index must never point an item to itself")
    pos = cosine_distance(x_rb, x_rt)
    neg = cosine_distance(x_rb, x_rt[neg_index])
    return torch.clamp(pos - neg + alpha, min=0.0).mean()


def xl_loss(
    x_rt: torch.Tensor, x_rb: torch.Tensor, lang_codes: torch.Tensor, k: int, form: str = "abs"
) -> torch.Tensor:
    """Eq. 2: ``mean_r L_XL(r)`` over the batch (see the module docstring for the formula).

    ``form``: ``"abs"`` (default) is Eq. 2 as printed, the sum over other languages of the
    absolute difference of the two neighbour means; ``"signed"`` drops the absolute value.

    ``x_rt``/``x_rb``: (n, dim) title/body outputs of the head for the n batch items;
    ``lang_codes``: (n,) integer language of each item. Neighbours are searched among the
    batch's titles; a language absent from the batch has no term. Every language present
    needs at least 2 items when the batch has two or more languages (otherwise an item has
    no own-language neighbour and its ``L_XL(r)`` is undefined): :class:`InputError`.
    A single-language batch has no other-language term: ``L_XL = 0``.
    """
    import torch

    n = x_rt.shape[0]
    if x_rb.shape != x_rt.shape or lang_codes.shape != (n,):
        raise InputError(
            f"xl_loss: x_rt {tuple(x_rt.shape)}, x_rb {tuple(x_rb.shape)} and lang_codes "
            f"{tuple(lang_codes.shape)} must describe the same n items"
        )
    if k < 1:
        raise InputError(f"xl_loss: k must be >= 1, got {k}")
    if form not in XL_FORMS:
        raise InputError(f"xl_loss: form must be one of {XL_FORMS}, got {form!r}")
    codes_cpu = lang_codes.detach().to("cpu", torch.int64)
    langs, counts = torch.unique(codes_cpu, sorted=True, return_counts=True)
    if len(langs) < 2:
        return (x_rt.sum() + x_rb.sum()) * 0.0  # keeps the graph; no other-language term
    if int(counts.min()) < 2:
        lonely = int(langs[int(torch.argmin(counts))])
        raise InputError(
            f"xl_loss: language code {lonely} has a single item in this batch, so it has no "
            "own-language neighbour; every language in a batch needs at least 2 items"
        )
    device = x_rt.device
    dist = cosine_distance_matrix(x_rb, x_rt)  # row r: body of r, column j: title of j
    pos = torch.arange(n, device=device)
    codes = codes_cpu.to(device)
    inf = torch.tensor(float("inf"), dtype=dist.dtype, device=device)
    means = []  # per language l: (n,) mean distance from x_rb to the titles of N_l(r)
    for lang, n_l in zip(langs.tolist(), counts.tolist()):
        cols = torch.nonzero(codes == lang).flatten()  # ascending batch positions
        is_self = cols[None, :] == pos[:, None]  # r is never its own neighbour
        cand = torch.where(is_self, inf, dist[:, cols])
        # stable sort: among equal distances the lower batch position comes first
        vals = torch.sort(cand, dim=1, stable=True).values[:, : min(k, n_l)]
        n_nb = torch.clamp(n_l - is_self.sum(dim=1), max=k)  # |N_l(r)| = min(K, candidates)
        take = torch.arange(vals.shape[1], device=device)[None, :] < n_nb[:, None]
        means.append(torch.where(take, vals, torch.zeros_like(vals)).sum(dim=1) / n_nb.to(dist.dtype))
    m = torch.stack(means, dim=1)  # (n, L): column j = language langs[j]
    own_col = torch.searchsorted(langs.to(device), codes)
    own = m.gather(1, own_col[:, None])
    other = torch.arange(len(langs), device=device)[None, :] != own_col[:, None]
    diff = m - own
    if form == "abs":
        diff = diff.abs()
    per_item = torch.where(other, diff, torch.zeros_like(m)).sum(dim=1)  # L_XL(r)
    return per_item.mean()


def _objective(model, t, b, codes, neg, config: TripletConfig, xl: bool):  # type: ignore[no-untyped-def]
    x_rt, x_rb = model(t), model(b)
    lt = triplet_loss(x_rt, x_rb, neg, config.alpha)
    lx = xl_loss(x_rt, x_rb, codes, config.k, config.xl_form) if xl else lt.new_zeros(())
    return lt + config.beta * lx, lt, lx


# --------------------------------------------------------------------------- training


@contextlib.contextmanager
def _deterministic() -> Iterator[None]:
    import torch

    prev = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev, warn_only=prev_warn)


def _check_inputs(title_emb: np.ndarray, body_emb: np.ndarray, langs: np.ndarray) -> None:
    for name, arr in (("title_emb", title_emb), ("body_emb", body_emb)):
        if not isinstance(arr, np.ndarray) or arr.ndim != 2:
            raise InputError(f"{name}: expected a 2-D numpy array (n, dim), got {getattr(arr, 'shape', type(arr))}")
        if not np.isfinite(arr).all():
            raise InputError(f"{name}: contains NaN or inf")
    if title_emb.shape != body_emb.shape:
        raise InputError(
            f"title_emb {title_emb.shape} and body_emb {body_emb.shape} must have the same shape "
            "(one row per item, same base encoder)"
        )
    if len(langs) != len(title_emb):
        raise InputError(f"langs: expected {len(title_emb)} entries (one per item), got {len(langs)}")


def _split_by_language(
    codes: np.ndarray, n_langs: int, val_fraction: float, seed: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Seeded train/validation split stratified by language: per language (in code order) a
    permutation from one ``default_rng(seed)``; its last ``ceil(val_fraction * n_l)`` items
    are validation. Returns sorted index arrays per language (train, validation)."""
    rng = np.random.default_rng(seed)
    train, val = [], []
    for c in range(n_langs):
        idx = np.flatnonzero(codes == c)
        perm = idx[rng.permutation(len(idx))]
        n_val = int(math.ceil(val_fraction * len(idx)))
        train.append(np.sort(perm[: len(idx) - n_val]))
        val.append(np.sort(perm[len(idx) - n_val :]))
    return train, val


def _n_batches(groups: list[np.ndarray], batch_size: int) -> int:
    return max(1, int(math.ceil(sum(len(g) for g in groups) / batch_size)))


def _stratified_batches(groups: list[np.ndarray], batch_size: int) -> list[np.ndarray]:
    """Language-stratified batches: ``nb = ceil(total / batch_size)`` batches, batch ``b`` is
    chunk ``b`` of every language's index array (``np.array_split`` into ``nb`` chunks), so a
    batch holds ``floor`` or ``ceil`` of ``n_l / nb`` items of each language ``l`` and at most
    ``batch_size + n_languages - 1`` items."""
    nb = _n_batches(groups, batch_size)
    parts = [np.array_split(g, nb) for g in groups]
    return [np.concatenate([p[b] for p in parts]) for b in range(nb)]


def _check_batches(groups: list[np.ndarray], names: np.ndarray, batch_size: int, xl: bool, what: str) -> None:
    """Fail before training when a batch would lack the items its losses need."""
    nb = _n_batches(groups, batch_size)
    sizes = np.array([[len(c) for c in np.array_split(np.empty(len(g)), nb)] for g in groups])
    if int(sizes.sum(axis=0).min()) < 2:
        raise InputError(
            f"train_heads: {sizes.sum()} {what} items in {nb} batch(es) give a batch of fewer than 2 "
            "items (in-batch negatives need 2); add items or change batch_size"
        )
    present = [i for i, g in enumerate(groups) if len(g)]
    if xl and len(present) >= 2:
        for i in present:
            if int(sizes[i].min()) < 2:
                raise InputError(
                    f"train_heads: language {str(names[i])!r} has {len(groups[i])} {what} item(s), fewer "
                    f"than 2 for each of the {nb} language-stratified batch(es); TRIPLETXL needs 2 "
                    "per language and batch (own-language neighbours); add items or raise batch_size"
                )


def train_heads(
    title_emb: np.ndarray,
    body_emb: np.ndarray,
    langs: np.ndarray,
    config: TripletConfig,
    xl: bool,
    negative_sampler: Callable[[int, torch.Generator], torch.Tensor] | None = None,
) -> TrainResult:
    """Train a TRIPLET (``xl=False``) or TRIPLETXL (``xl=True``) head.

    Rows of ``title_emb``/``body_emb``/``langs`` are items (title and body of the same item).
    Split: per language, a seeded permutation whose last ``ceil(val_fraction * n_l)`` items
    are validation. Batches are language-stratified (:func:`_stratified_batches`) for both
    heads, so TRIPLET and TRIPLETXL see the same batches and negatives for a given seed and
    differ only by ``beta * L_XL``; every batch holds every training language, so every term
    of Eq. 2 exists. Each epoch shuffles every language's training items (torch generator
    seeded with ``config.seed``) and draws fresh in-batch negatives; the validation loss uses
    negatives drawn once, so epochs are comparable. The returned state is the epoch with the
    lowest validation loss.
    ``negative_sampler(batch_len, generator) -> LongTensor`` replaces :func:`sample_negatives`
    (for tests / other negative schemes); it must never map a position to itself.
    Bit-identical results need the same seed, device and torch thread count.
    """
    import torch

    config.validate()
    title_emb = np.asarray(title_emb)
    body_emb = np.asarray(body_emb)
    langs = np.asarray(langs).astype(str)
    _check_inputs(title_emb, body_emb, langs)
    n, in_dim = title_emb.shape
    names, codes_np = np.unique(langs, return_inverse=True)
    train_groups, val_groups = _split_by_language(codes_np, len(names), config.val_fraction, config.seed)
    n_train = sum(len(g) for g in train_groups)
    n_val = sum(len(g) for g in val_groups)
    if n_val < 2 or n_train < 2:
        raise InputError(
            f"train_heads: {n} items give {n_train} train / {n_val} validation items with "
            f"val_fraction={config.val_fraction}; both need at least 2 (in-batch negatives)"
        )
    _check_batches(train_groups, names, config.batch_size, xl, "training")
    _check_batches(val_groups, names, config.batch_size, xl, "validation")
    device = resolve_device(config.device, "TripletConfig.device")
    sampler = negative_sampler or sample_negatives

    T = torch.from_numpy(np.ascontiguousarray(title_emb, dtype=np.float32)).to(device)
    B = torch.from_numpy(np.ascontiguousarray(body_emb, dtype=np.float32)).to(device)
    C = torch.from_numpy(codes_np.astype(np.int64)).to(device)

    history: dict[str, list[float]] = {k: [] for k in ("epoch", "train_loss", "val_loss", "val_triplet", "val_xl")}
    with _deterministic():
        torch.manual_seed(config.seed)
        model = _build_head(in_dim, config).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=config.lr)
        gen = torch.Generator().manual_seed(config.seed)
        val_gen = torch.Generator().manual_seed(config.seed + 1)
        val_batches = [(vb, sampler(len(vb), val_gen)) for vb in _stratified_batches(val_groups, config.batch_size)]

        def val_losses() -> tuple[float, float, float]:
            model.eval()
            vt = vl = vx = 0.0
            with torch.no_grad():
                for vb, neg in val_batches:
                    vi = torch.from_numpy(vb).to(device)
                    loss, lt, lx = _objective(model, T[vi], B[vi], C[vi], neg, config, xl)
                    vl += float(loss) * len(vb)
                    vt += float(lt) * len(vb)
                    vx += float(lx) * len(vb)
            return vl / n_val, vt / n_val, vx / n_val

        initial_val = val_losses()[0]
        best_state: dict[str, Any] | None = None
        best_val, best_epoch, since_best = math.inf, 0, 0
        for epoch in range(1, config.epochs + 1):
            model.train()
            shuffled = [g[torch.randperm(len(g), generator=gen).numpy()] for g in train_groups]
            tot, cnt = 0.0, 0
            for bi in _stratified_batches(shuffled, config.batch_size):
                neg = sampler(len(bi), gen)
                ti = torch.from_numpy(bi).to(device)
                loss, _, _ = _objective(model, T[ti], B[ti], C[ti], neg, config, xl)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                tot += float(loss.detach()) * len(bi)
                cnt += len(bi)
            val_loss, val_t, val_x = val_losses()
            history["epoch"].append(float(epoch))
            history["train_loss"].append(tot / cnt)
            history["val_loss"].append(val_loss)
            history["val_triplet"].append(val_t)
            history["val_xl"].append(val_x)
            if val_loss < best_val:
                best_val, best_epoch, since_best = val_loss, epoch, 0
                best_state = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}
            else:
                since_best += 1
                if config.patience is not None and since_best >= config.patience:
                    break
    if best_state is None:
        raise InputError(
            f"train_heads: the validation loss was never finite ({history['val_loss'][:3]}...); "
            "training diverged - check the embeddings or lower lr"
        )
    return TrainResult(
        state_dict=best_state,
        config=config,
        in_dim=in_dim,
        xl=xl,
        history=history,
        best_epoch=best_epoch,
        best_val_loss=best_val,
        n_train=n_train,
        n_val=n_val,
        initial_val_loss=initial_val,
    )


def encode(
    head: TrainResult | torch.nn.Module,
    title_emb: np.ndarray,
    body_emb: np.ndarray,
    batch_size: int = 4096,
) -> np.ndarray:
    """Evaluated representation ``concat(f(title), f(body))``: float32 ``(n, 2 * out_dim)``."""
    import torch

    model = head.model() if isinstance(head, TrainResult) else head
    title_emb, body_emb = np.asarray(title_emb), np.asarray(body_emb)
    if title_emb.ndim != 2 or title_emb.shape != body_emb.shape:
        raise InputError(f"encode: title_emb {title_emb.shape} and body_emb {body_emb.shape} must be 2-D and equal")
    first = next(model.parameters())
    if title_emb.shape[1] != first.shape[1]:
        raise InputError(f"encode: embeddings have dim {title_emb.shape[1]} but the head expects {first.shape[1]}")
    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(title_emb), batch_size):
            t = torch.from_numpy(np.ascontiguousarray(title_emb[i : i + batch_size], dtype=np.float32)).to(first.device)
            b = torch.from_numpy(np.ascontiguousarray(body_emb[i : i + batch_size], dtype=np.float32)).to(first.device)
            out.append(torch.cat([model(t), model(b)], dim=1).cpu().numpy())
    model.train(was_training)
    if not out:
        return np.zeros((0, 2 * model.layer2.out_features), dtype=np.float32)
    return np.concatenate(out).astype(np.float32, copy=False)


# --------------------------------------------------------------------------- persistence


def _meta_path(path: Path) -> Path:
    return path.with_suffix(".json")


def save_head(result: TrainResult, path: str | Path) -> None:
    """Write ``<path>`` (torch state dict) and ``<path minus suffix>.json`` (config, history,
    sha256 of the weights file), both atomically. Use a ``.pt`` path, e.g. ``head.pt``."""
    import torch

    path = Path(path)
    if path.suffix == ".json":
        raise InputError(f"{path}: the weights path must not end in .json (the metadata goes there)")
    with atomic_path(path) as tmp:
        # an open file, not a path: torch names the zip's root folder after a path argument,
        # which would put the random temporary name into the bytes
        with open(tmp, "wb") as fh:
            torch.save({k: v.detach().cpu() for k, v in result.state_dict.items()}, fh)
        digest = sha256_file(tmp)
    meta = {
        "format_version": HEAD_FORMAT_VERSION,
        "weights_file": path.name,
        "weights_sha256": digest,
        "config": asdict(result.config),
        "in_dim": result.in_dim,
        "xl": result.xl,
        "history": result.history,
        "best_epoch": result.best_epoch,
        "best_val_loss": result.best_val_loss,
        "n_train": result.n_train,
        "n_val": result.n_val,
        "initial_val_loss": result.initial_val_loss,
    }
    write_json(_meta_path(path), meta)


def load_head(path: str | Path) -> TrainResult:
    """Inverse of :func:`save_head`; checks the weights' sha256 against the metadata."""
    import torch

    path = Path(path)
    meta_path = _meta_path(path)
    for p in (path, meta_path):
        if not p.is_file():
            raise InputError(f"{p}: missing (a saved head is <name>.pt + <name>.json from save_head)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{meta_path}: not valid JSON ({exc})") from exc
    for key in ("config", "in_dim", "xl", "weights_sha256"):
        if key not in meta:
            raise InputError(f"{meta_path}: field '{key}' is required")
    digest = sha256_file(path)
    if digest != meta["weights_sha256"]:
        raise InputError(
            f"{path}: sha256 {digest} does not match weights_sha256 in {meta_path.name} "
            f"({meta['weights_sha256']}); the files do not belong together"
        )
    state = torch.load(path, map_location="cpu", weights_only=True)
    res = TrainResult(
        state_dict=state,
        config=TripletConfig.from_dict(meta["config"]),
        in_dim=int(meta["in_dim"]),
        xl=bool(meta["xl"]),
        history={k: [float(x) for x in v] for k, v in meta.get("history", {}).items()},
        best_epoch=int(meta.get("best_epoch", 0)),
        best_val_loss=float(meta.get("best_val_loss", math.inf)),
        n_train=int(meta.get("n_train", 0)),
        n_val=int(meta.get("n_val", 0)),
        initial_val_loss=float(meta.get("initial_val_loss", math.nan)),
    )
    try:
        res.model()
    except RuntimeError as exc:
        raise InputError(f"{path}: state dict does not fit the head in {meta_path.name}: {exc}") from exc
    return res
