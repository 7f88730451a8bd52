"""TRIPLET / TRIPLETXL heads: hand-computed losses, the XL term's behaviour, training on a
SYNTHETIC toy problem, determinism, persistence."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from backretrieval.errors import InputError  # noqa: E402
from backretrieval.reporting.figures import plot_loss_curves  # noqa: E402
from backretrieval.study.triplet import (  # noqa: E402
    TripletConfig,
    build_head,
    encode,
    load_head,
    sample_negatives,
    save_head,
    train_heads,
    triplet_loss,
    xl_loss,
)

R2 = 1 / math.sqrt(2)


def t(x):
    return torch.tensor(x, dtype=torch.float64)


# --------------------------------------------------------------------------- triplet loss


def test_triplet_loss_hand_computed():
    x_rt = t([[1, 0], [0, 1], [1, 1]])
    x_rb = t([[1, 0], [1, 0], [-1, 0]])
    neg = torch.tensor([1, 2, 1])
    # i=0: d(rb0,rt0)=0, d(rb0,rt1)=1              -> max(0, 0-1+0.1) = 0
    # i=1: d(rb1,rt1)=1, d(rb1,rt2)=1-1/sqrt2      -> 0.1 + 1/sqrt2
    # i=2: d(rb2,rt2)=1+1/sqrt2, d(rb2,rt1)=1      -> 0.1 + 1/sqrt2
    expected = 2 * (0.1 + R2) / 3
    assert float(triplet_loss(x_rt, x_rb, neg, alpha=0.1)) == pytest.approx(expected, abs=1e-12)
    # a larger margin activates the first item too: max(0, 0 - 1 + 1.5) = 0.5
    expected_big = (0.5 + 2 * (1.5 + R2)) / 3
    assert float(triplet_loss(x_rt, x_rb, neg, alpha=1.5)) == pytest.approx(expected_big, abs=1e-12)


def test_triplet_loss_rejects_self_negative():
    x = t([[1, 0], [0, 1]])
    with pytest.raises(InputError, match="itself"):
        triplet_loss(x, x, torch.tensor([0, 0]), alpha=0.1)


def test_sample_negatives_never_self_and_covers_others():
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([sample_negatives(5, g) for _ in range(400)])
    assert not (draws == torch.arange(5)).any()
    for i in range(5):  # every other position is drawn for every i
        assert set(draws[:, i].tolist()) == set(range(5)) - {i}
    with pytest.raises(InputError):
        sample_negatives(1, g)


# --------------------------------------------------------------------------- XL term


def xl_reference(z: np.ndarray, langs: np.ndarray, k: int) -> float:
    """Slow loop version of the L_XL definition in the module docstring."""
    zn = z / np.linalg.norm(z, axis=1, keepdims=True)
    vals = []
    for i in range(len(z)):
        d_other = sorted(1 - zn[i] @ zn[j] for j in range(len(z)) if langs[j] != langs[i])
        d_own = sorted(1 - zn[i] @ zn[j] for j in range(len(z)) if langs[j] == langs[i] and j != i)
        if not d_other or not d_own:
            continue
        vals.append(abs(np.mean(d_other[:k]) - np.mean(d_own[:k])))
    return float(np.mean(vals)) if vals else 0.0


def test_xl_loss_hand_computed_k1():
    # en: a=[1,0], b=[0,1]; de: c=[1,1], d=[-1,0]
    z = t([[1, 0], [0, 1], [1, 1], [-1, 0]])
    codes = torch.tensor([0, 0, 1, 1])
    # K=1 per point |nearest other - nearest own|:
    # a: |(1-1/sqrt2) - 1| = 1/sqrt2; b: same; c: |(1-1/sqrt2) - (1+1/sqrt2)| = sqrt2;
    # d: |1 - (1+1/sqrt2)| = 1/sqrt2            -> mean = 5 / (4 sqrt2)
    assert float(xl_loss(z, codes, k=1)) == pytest.approx(5 / (4 * math.sqrt(2)), abs=1e-12)
    # K=5 is capped by the neighbours available (1 own, 2 other); check against the loop
    assert float(xl_loss(z, codes, k=5)) == pytest.approx(
        xl_reference(z.numpy(), np.array([0, 0, 1, 1]), 5), abs=1e-12
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_xl_loss_matches_reference_loop(seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(23, 6))
    langs = rng.integers(0, 3, size=23)
    got = float(xl_loss(torch.from_numpy(z), torch.from_numpy(langs), k=5))
    assert got == pytest.approx(xl_reference(z, langs, 5), abs=1e-10)


def test_xl_zero_when_languages_indistinguishable():
    # equidistant points (orthonormal basis): every neighbour is at distance 1 whatever its
    # language, so the languages are perfectly mixed and L_XL is exactly 0
    z = torch.eye(12, dtype=torch.float64)
    codes = torch.tensor([0, 1] * 6)
    assert float(xl_loss(z, codes, k=5)) == pytest.approx(0.0, abs=1e-12)
    # a single-language batch has no cross-language pair: defined as 0
    assert float(xl_loss(z, torch.zeros(12, dtype=torch.long), k=5)) == 0.0


def test_xl_positive_and_larger_when_languages_separated():
    rng = np.random.default_rng(0)
    cloud = rng.normal(size=(40, 8))
    mixed_langs = torch.tensor([0] * 20 + [1] * 20)
    # same distribution for both languages (interleaved samples of one cloud): mixed
    mixed = float(xl_loss(torch.from_numpy(cloud), mixed_langs, k=5))
    # languages pushed apart by a large language-specific offset: separated
    sep = cloud.copy()
    sep[:20, 0] += 10.0
    sep[20:, 0] -= 10.0
    separated = float(xl_loss(torch.from_numpy(sep), mixed_langs, k=5))
    assert separated > 0.5
    assert separated > 10 * mixed


def test_gradients_reach_both_layers():
    rng = np.random.default_rng(0)
    cfg = TripletConfig(hidden=16, out_dim=8)
    head = build_head(10, cfg).double()
    tt = torch.from_numpy(rng.normal(size=(12, 10)))
    bb = torch.from_numpy(rng.normal(size=(12, 10)))
    codes = torch.tensor([0, 1] * 6)
    neg = sample_negatives(12, torch.Generator().manual_seed(0))
    x_rt, x_rb = head(tt), head(bb)
    for loss in (
        triplet_loss(x_rt, x_rb, neg, alpha=0.5),
        xl_loss(torch.cat([x_rt, x_rb], dim=1), codes, k=3),
    ):
        head.zero_grad()
        loss.backward(retain_graph=True)
        for name in ("layer1.weight", "layer1.bias", "layer2.weight", "layer2.bias"):
            g = dict(head.named_parameters())[name].grad
            assert g is not None and float(g.abs().sum()) > 0, name


# --------------------------------------------------------------------------- training (SYNTHETIC toy)


def synthetic_toy(n=240, in_dim=24, seed=0):
    """SYNTHETIC toy data: title and body are two different noisy linear views of the same
    latent item vector; each of two languages adds its own offset (separated languages)."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 6))
    langs = np.array(["en", "de"])[rng.integers(0, 2, size=n)]
    A, B = rng.normal(size=(6, in_dim)), rng.normal(size=(6, in_dim))
    offset = {"en": rng.normal(size=in_dim) * 2, "de": rng.normal(size=in_dim) * 2}
    off = np.stack([offset[lang] for lang in langs])
    title = latent @ A + off + 0.3 * rng.normal(size=(n, in_dim))
    body = latent @ B + off + 0.3 * rng.normal(size=(n, in_dim))
    return title.astype(np.float32), body.astype(np.float32), langs


SMALL = dict(epochs=12, hidden=32, out_dim=16, batch_size=32, lr=0.01, device="cpu")


def test_training_reduces_validation_loss_on_synthetic_toy():
    title, body, langs = synthetic_toy()
    res = train_heads(title, body, langs, TripletConfig(seed=3, **SMALL), xl=False)
    assert res.n_train == 216 and res.n_val == 24
    assert len(res.history["val_loss"]) == 12
    assert res.best_val_loss == min(res.history["val_loss"])
    assert res.history["val_loss"][res.best_epoch - 1] == res.best_val_loss
    assert res.best_val_loss < 0.5 * res.initial_val_loss


def test_tripletxl_mixes_languages_more_than_triplet():
    title, body, langs = synthetic_toy(seed=1)
    cfg = TripletConfig(seed=0, beta=1.0, **SMALL)
    plain = train_heads(title, body, langs, cfg, xl=False)
    mixed = train_heads(title, body, langs, cfg, xl=True)
    z_plain = torch.from_numpy(encode(plain, title, body))
    z_mixed = torch.from_numpy(encode(mixed, title, body))
    codes = torch.from_numpy((langs == "en").astype(np.int64))
    assert float(xl_loss(z_mixed, codes, 5)) < 0.5 * float(xl_loss(z_plain, codes, 5))


def test_training_is_deterministic_and_seed_dependent():
    title, body, langs = synthetic_toy(n=120)
    cfg = TripletConfig(seed=7, **{**SMALL, "epochs": 3})
    a = train_heads(title, body, langs, cfg, xl=True)
    b = train_heads(title, body, langs, cfg, xl=True)
    assert a.state_dict.keys() == b.state_dict.keys()
    for k in a.state_dict:
        assert torch.equal(a.state_dict[k], b.state_dict[k]), k
    assert a.history == b.history
    c = train_heads(title, body, langs, TripletConfig(seed=8, **{**SMALL, "epochs": 3}), xl=True)
    assert not torch.equal(a.state_dict["layer1.weight"], c.state_dict["layer1.weight"])


def test_injected_negative_sampler_is_used():
    title, body, langs = synthetic_toy(n=60)
    calls = []

    def shift_by_one(n, generator):  # deterministic "next item" negatives
        calls.append(n)
        return (torch.arange(n) + 1) % n

    cfg = TripletConfig(seed=0, **{**SMALL, "epochs": 2})
    a = train_heads(title, body, langs, cfg, xl=False, negative_sampler=shift_by_one)
    b = train_heads(title, body, langs, cfg, xl=False)
    assert sorted(set(calls)) == [6, 22, 32]  # val batch (6) + train batches (32 + 22) per epoch
    assert not torch.equal(a.state_dict["layer1.weight"], b.state_dict["layer1.weight"])


def test_early_stopping_keeps_best_state():
    title, body, langs = synthetic_toy(n=120)
    # a huge lr makes the validation loss bounce, so patience=1 stops early
    res = train_heads(title, body, langs, TripletConfig(seed=0, patience=1, **{**SMALL, "lr": 0.5, "epochs": 30}), xl=False)
    n_epochs = len(res.history["val_loss"])
    assert n_epochs < 30
    assert n_epochs == res.best_epoch + 1  # stopped one epoch after the best
    # the kept state reproduces the best validation loss, not the last one
    head = res.model()
    assert res.history["val_loss"][-1] > res.best_val_loss
    assert isinstance(head, torch.nn.Module)


def test_encode_600d_float32_save_load_roundtrip(tmp_path):
    title, body, langs = synthetic_toy(n=60)
    cfg = TripletConfig(epochs=1, hidden=16, device="cpu")  # default out_dim = 300
    res = train_heads(title, body, langs, cfg, xl=True)
    emb = encode(res, title, body)
    assert emb.shape == (60, 600) and emb.dtype == np.float32
    path = tmp_path / "heads" / "tripletxl.pt"
    save_head(res, path)
    loaded = load_head(path)
    assert loaded.config == cfg and loaded.xl and loaded.best_epoch == res.best_epoch
    np.testing.assert_array_equal(encode(loaded, title, body), emb)
    # tampered weights are detected
    path.write_bytes(path.read_bytes() + b"x")
    with pytest.raises(InputError, match="sha256"):
        load_head(path)
    with pytest.raises(InputError, match="missing"):
        load_head(tmp_path / "nope.pt")


def test_bad_inputs_raise():
    title, body, langs = synthetic_toy(n=40)
    with pytest.raises(InputError, match="same shape"):
        train_heads(title, body[:, :5], langs, TripletConfig(**SMALL), xl=False)
    with pytest.raises(InputError, match="langs"):
        train_heads(title, body, langs[:3], TripletConfig(**SMALL), xl=False)
    with pytest.raises(InputError, match="at least 2"):
        train_heads(title[:5], body[:5], langs[:5], TripletConfig(**SMALL), xl=False)
    bad = title.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InputError, match="NaN"):
        train_heads(bad, body, langs, TripletConfig(**SMALL), xl=False)


def test_plot_loss_curves(tmp_path):
    hist = {"epoch": [1.0, 2.0, 3.0], "train_loss": [0.3, 0.2, 0.1], "val_loss": [0.35, 0.25, 0.3]}
    out = tmp_path / "loss.png"
    plot_loss_curves(hist, out, title="TRIPLETXL")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == [out]  # no temporary left behind
