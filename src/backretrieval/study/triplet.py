"""TRIPLET / TRIPLETXL heads on frozen base-encoder embeddings (the paper's case study, Sec. 3.2).

A *Siamese* two-layer MLP ``f`` (Linear → ReLU → Linear, weights shared between the two
inputs) maps a frozen title embedding and a frozen body embedding of the same item to
``x_rt = f(title)`` and ``x_rb = f(body)`` (``out_dim`` = 300, as in the paper; the hidden
width is not given in the paper, we use ``hidden`` = 512 by default).

TRIPLET (Eq. 1), ``d`` = cosine distance ``1 - cos``::

    L_triplet = mean_i max(0, d(x_rb[i], x_rt[i]) - d(x_rb[i], x_rt[neg[i]]) + alpha)

with ``neg[i]`` a random *other* item of the same mini-batch (never ``i``; see
:func:`sample_negatives`).

TRIPLETXL (Eq. 2) adds a language-mixing term, ``L = L_triplet + beta * L_XL``. It is computed
in-batch on the evaluated representation ``z_i = concat(x_rt[i], x_rb[i])`` (cosine distance);
for every point ``i`` of the batch::

    other_i = mean cosine distance from z_i to its K nearest neighbours among the batch
              points whose language differs from lang_i
    own_i   = mean cosine distance from z_i to its K nearest neighbours among the *other*
              batch points (i itself excluded) with language lang_i
    L_XL    = mean_i | other_i - own_i |

``K`` is capped by the number of available neighbours (``min(K, n_other)``, ``min(K, n_own)``);
points with no other-language point or no same-language neighbour in the batch are skipped,
and a batch with no such point has ``L_XL = 0``. ``L_XL`` is small when a point's nearest
other-language points are as close as its nearest same-language points, i.e. when languages
mix in the space; it is large when languages form separate clusters. (It is exactly 0 when
all points are equidistant; for two *identical* per-language point clouds it equals the mean
of d_K / K, d_K the K-th own-language neighbour distance, because the twin at distance 0 is
an other-language neighbour while the point itself is excluded from its own neighbours.)

Training (:func:`train_heads`) follows the paper: Adam, lr 0.01, 40 epochs, alpha 0.1,
batch 128, beta 0.01, K 5, a seeded 90/10 train/validation split; the state with the lowest
validation loss (same objective, fixed validation negatives) is kept (checkpointing), with
optional early stopping (``patience``). On CPU, the same seed gives a bit-identical state dict.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from ..errors import ConfigError, InputError
from .._util.device import resolve_device
from .._util.hashing import sha256_file
from .._util.io import atomic_path, write_json

if TYPE_CHECKING:  # pragma: no cover
    import torch

HEAD_FORMAT_VERSION = 1


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
        ]
        for ok, msg in checks:
            if not ok:
                raise ConfigError(f"TripletConfig: {msg} (got {self})")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TripletConfig":
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

    def model(self) -> "torch.nn.Module":
        """A fresh :class:`SiameseHead` (CPU, eval mode) loaded with the best state."""
        m = _build_head(self.in_dim, self.config)
        m.load_state_dict(self.state_dict)
        m.eval()
        return m


# --------------------------------------------------------------------------- model + losses


def _build_head(in_dim: int, config: TripletConfig) -> "torch.nn.Module":
    from torch import nn

    class SiameseHead(nn.Module):
        """Two-layer MLP with ReLU, shared by title and body inputs."""

        def __init__(self) -> None:
            super().__init__()
            self.layer1 = nn.Linear(in_dim, config.hidden)
            self.layer2 = nn.Linear(config.hidden, config.out_dim)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.layer2(self.layer1(x).relu())

    return SiameseHead()


def build_head(in_dim: int, config: TripletConfig | None = None, seed: int | None = None):
    """A freshly initialised Siamese head (seeded with ``seed`` or ``config.seed``)."""
    import torch

    config = config or TripletConfig()
    torch.manual_seed(config.seed if seed is None else seed)
    return _build_head(in_dim, config)


def cosine_distance_matrix(a: "torch.Tensor", b: "torch.Tensor") -> "torch.Tensor":
    """``1 - cos(a_i, b_j)`` for all pairs (rows normalised with eps 1e-8)."""
    import torch.nn.functional as F

    return 1.0 - F.normalize(a, dim=1, eps=1e-8) @ F.normalize(b, dim=1, eps=1e-8).T


def cosine_distance(a: "torch.Tensor", b: "torch.Tensor") -> "torch.Tensor":
    """Row-wise ``1 - cos(a_i, b_i)``."""
    import torch.nn.functional as F

    return 1.0 - F.cosine_similarity(a, b, dim=1, eps=1e-8)


def sample_negatives(n: int, generator: "torch.Generator") -> "torch.Tensor":
    """For each of ``n`` batch positions a uniformly random *other* position (never itself)."""
    import torch

    if n < 2:
        raise InputError(f"in-batch negatives need a batch of at least 2 items, got {n}")
    offset = torch.randint(1, n, (n,), generator=generator)
    return (torch.arange(n) + offset) % n


def triplet_loss(
    x_rt: "torch.Tensor", x_rb: "torch.Tensor", neg_index: "torch.Tensor", alpha: float
) -> "torch.Tensor":
    """Eq. 1: ``mean_i max(0, d(x_rb_i, x_rt_i) - d(x_rb_i, x_rt_neg[i]) + alpha)``."""
    import torch

    neg_index = neg_index.to(x_rt.device)
    if bool((neg_index == torch.arange(len(neg_index), device=x_rt.device)).any()):
        raise InputError("triplet_loss: neg_index must never point an item to itself")
    pos = cosine_distance(x_rb, x_rt)
    neg = cosine_distance(x_rb, x_rt[neg_index])
    return torch.clamp(pos - neg + alpha, min=0.0).mean()


def xl_loss(z: "torch.Tensor", lang_codes: "torch.Tensor", k: int) -> "torch.Tensor":
    """Eq. 2's language-mixing term ``L_XL`` on batch points ``z`` (see module docstring)."""
    import torch

    n = z.shape[0]
    dist = cosine_distance_matrix(z, z)
    codes = lang_codes.to(z.device)
    same = codes[:, None] == codes[None, :]
    eye = torch.eye(n, dtype=torch.bool, device=z.device)
    own_mask = same & ~eye
    other_mask = ~same
    inf = torch.tensor(float("inf"), dtype=dist.dtype, device=z.device)

    def knn_mean(mask: "torch.Tensor") -> tuple["torch.Tensor", "torch.Tensor"]:
        counts = mask.sum(dim=1)
        kk = min(k, int(counts.max().item())) if n else 0
        if kk == 0:
            return torch.zeros(n, dtype=dist.dtype, device=z.device), counts > 0
        masked = torch.where(mask, dist, inf)
        vals = torch.topk(masked, kk, dim=1, largest=False).values  # ascending distances
        per_row_k = torch.clamp(counts, max=k)
        take = torch.arange(kk, device=z.device)[None, :] < per_row_k[:, None]
        summed = torch.where(take, vals, torch.zeros_like(vals)).sum(dim=1)
        return summed / torch.clamp(per_row_k, min=1).to(dist.dtype), counts > 0

    other_mean, has_other = knn_mean(other_mask)
    own_mean, has_own = knn_mean(own_mask)
    valid = has_other & has_own
    if not bool(valid.any()):
        return z.sum() * 0.0  # keeps the graph; no mixed-language pair in this batch
    return (other_mean[valid] - own_mean[valid]).abs().mean()


def _objective(model, t, b, codes, neg, config: TripletConfig, xl: bool):  # type: ignore[no-untyped-def]
    import torch

    x_rt, x_rb = model(t), model(b)
    lt = triplet_loss(x_rt, x_rb, neg, config.alpha)
    lx = xl_loss(torch.cat([x_rt, x_rb], dim=1), codes, config.k) if xl else lt.new_zeros(())
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


def _batches(idx: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Consecutive batches; a trailing batch of a single item is merged into the previous one."""
    out = [idx[i : i + batch_size] for i in range(0, len(idx), batch_size)]
    if len(out) > 1 and len(out[-1]) < 2:
        out[-2] = np.concatenate([out[-2], out.pop()])
    return out


def train_heads(
    title_emb: np.ndarray,
    body_emb: np.ndarray,
    langs: np.ndarray,
    config: TripletConfig,
    xl: bool,
    negative_sampler: "Callable[[int, torch.Generator], torch.Tensor] | None" = None,
) -> TrainResult:
    """Train a TRIPLET (``xl=False``) or TRIPLETXL (``xl=True``) head.

    Rows of ``title_emb``/``body_emb``/``langs`` are items (title and body of the same item).
    Split: a seeded permutation, the last ``ceil(val_fraction * n)`` items are validation.
    Each epoch shuffles the training items (torch generator seeded with ``config.seed``) and
    draws fresh in-batch negatives; the validation loss uses negatives drawn once, so epochs
    are comparable. The returned state is the epoch with the lowest validation loss.
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
    n_val = int(math.ceil(config.val_fraction * n))
    n_train = n - n_val
    if n_val < 2 or n_train < 2:
        raise InputError(
            f"train_heads: {n} items give {n_train} train / {n_val} validation items with "
            f"val_fraction={config.val_fraction}; both need at least 2 (in-batch negatives)"
        )
    device = resolve_device(config.device, "TripletConfig.device")
    sampler = negative_sampler or sample_negatives
    _, codes_np = np.unique(langs, return_inverse=True)

    perm = np.random.default_rng(config.seed).permutation(n)
    train_idx, val_idx = np.sort(perm[:n_train]), np.sort(perm[n_train:])

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
        val_batches = [(vb, sampler(len(vb), val_gen)) for vb in _batches(val_idx, config.batch_size)]

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
            order = train_idx[torch.randperm(n_train, generator=gen).numpy()]
            tot, cnt = 0.0, 0
            for bi in _batches(order, config.batch_size):
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
    head: "TrainResult | torch.nn.Module",
    title_emb: np.ndarray,
    body_emb: np.ndarray,
    batch_size: int = 4096,
) -> np.ndarray:
    """Evaluated representation ``concat(f(title), f(body))``: float32 ``(n, 2 * out_dim)``."""
    import torch

    model = head.model() if isinstance(head, TrainResult) else head
    title_emb, body_emb = np.asarray(title_emb), np.asarray(body_emb)
    if title_emb.ndim != 2 or title_emb.shape != body_emb.shape:
        raise InputError(
            f"encode: title_emb {title_emb.shape} and body_emb {body_emb.shape} must be 2-D and equal"
        )
    first = next(model.parameters())
    if title_emb.shape[1] != first.shape[1]:
        raise InputError(
            f"encode: embeddings have dim {title_emb.shape[1]} but the head expects {first.shape[1]}"
        )
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
        torch.save({k: v.detach().cpu() for k, v in result.state_dict.items()}, tmp)
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
