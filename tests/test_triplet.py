"""TRIPLET / TRIPLETXL heads: hand-computed losses, the XL term's behaviour, training on a
SYNTHETIC toy problem, determinism, persistence."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from backretrieval.errors import ConfigError, InputError  # noqa: E402
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


# --------------------------------------------------------------------------- slow loops (Eq. 1, Eq. 2)


def cos_dist(a, b):
    """d = 1 - cos, one pair, straight from the definition (torch, differentiable)."""
    return 1 - (a @ b) / (torch.linalg.vector_norm(a) * torch.linalg.vector_norm(b))


def triplet_reference(x_rt, x_rb, neg, alpha):
    """Eq. 1 item by item: mean_r max(0, d(x_rb, x_rt) - d(x_rb, x_nt) + alpha)."""
    terms = [
        torch.clamp(cos_dist(x_rb[r], x_rt[r]) - cos_dist(x_rb[r], x_rt[int(neg[r])]) + alpha, min=0)
        for r in range(len(x_rt))
    ]
    return torch.stack(terms).mean()


def xl_reference(x_rt, x_rb, langs, k, form="abs"):
    """Eq. 2 as printed, item by item, mean over r:

        L_XL(r) = sum_{l != l_r} | (1/K) sum_{n in N_l} d(x_rb, x_nt) - (1/K) sum_{n in N_{l_r}} d(x_rb, x_nt) |

    N_l(r): the min(K, available) items n != r of language l with the smallest d(x_rb, x_nt),
    ties to the lower position; the 1/K of the formula is the mean over that set.
    ``form="signed"``: the same without the bars (the option, not the paper's formula).
    Returns a differentiable torch scalar."""
    bars = torch.abs if form == "abs" else (lambda v: v)
    n = len(langs)
    per_item = []
    for r in range(n):

        def knn_mean(lang):
            cand = sorted((cos_dist(x_rb[r], x_rt[j]).item(), j) for j in range(n) if langs[j] == lang and j != r)[:k]
            return torch.stack([cos_dist(x_rb[r], x_rt[j]) for _, j in cand]).mean()

        own = knn_mean(langs[r])
        per_item.append(sum(bars(knn_mean(lang) - own) for lang in sorted(set(langs)) if lang != langs[r]))
    return torch.stack(per_item).mean()


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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_triplet_loss_matches_slow_loop(seed):
    rng = np.random.default_rng(seed)
    x_rt = torch.from_numpy(rng.normal(size=(17, 5))).requires_grad_()
    x_rb = torch.from_numpy(rng.normal(size=(17, 5))).requires_grad_()
    neg = sample_negatives(17, torch.Generator().manual_seed(seed))
    for alpha in (0.0, 0.1, 1.0):
        fast = triplet_loss(x_rt, x_rb, neg, alpha)
        slow = triplet_reference(x_rt, x_rb, neg, alpha)
        assert fast.item() == pytest.approx(slow.item(), abs=1e-12)
        g_fast = torch.autograd.grad(fast, (x_rt, x_rb))
        g_slow = torch.autograd.grad(slow, (x_rt, x_rb))
        for a, b in zip(g_fast, g_slow):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


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


# --------------------------------------------------------------------------- XL term (Eq. 2)

# en: items 0, 1; de: items 2, 3; each item's title and body are the same 2-d vector
HAND = t([[1, 0], [0, 1], [1, 1], [-1, 0]])
HAND_CODES = torch.tensor([0, 0, 1, 1])


def test_xl_loss_hand_computed_k1():
    # K=1; L_XL(r) = d(body_r, nearest other-language title) - d(body_r, nearest own title):
    # r=0 [1,0]:  de titles at 1-1/sqrt2 and 2, en title [0,1] at 1       -> -1/sqrt2
    # r=1 [0,1]:  de titles at 1-1/sqrt2 and 1, en title [1,0] at 1       -> -1/sqrt2
    # r=2 [1,1]:  en titles both at 1-1/sqrt2, de title [-1,0] at 1+1/sqrt2 -> -sqrt2
    # r=3 [-1,0]: en titles at 2 and 1, de title [1,1] at 1+1/sqrt2       -> -1/sqrt2
    # Eq. 2 as printed takes the absolute value of each difference: mean +5 / (4 sqrt2) = +0.884
    got = float(xl_loss(HAND, HAND, HAND_CODES, k=1))
    assert got == pytest.approx(5 / (4 * math.sqrt(2)), abs=1e-12)
    assert float(xl_reference(HAND, HAND, HAND_CODES.tolist(), 1)) == pytest.approx(got, abs=1e-12)
    # the signed option (not the paper's) keeps the signs: -0.884
    signed = float(xl_loss(HAND, HAND, HAND_CODES, k=1, form="signed"))
    assert signed == pytest.approx(-5 / (4 * math.sqrt(2)), abs=1e-12)


def test_xl_loss_fewer_than_k_neighbours_use_the_available_ones():
    # K=5 but a language has 2 items here: N_l(r) holds the min(K, available) nearest and the
    # 1/K of Eq. 2 is the mean over that set (1/|N_l(r)|), not 1/5:
    # r=0: de mean (1-1/sqrt2 + 2)/2, own (en) 1          -> 1/2 - 1/(2 sqrt2)
    # r=1: de mean (1-1/sqrt2 + 1)/2, own 1               -> -1/(2 sqrt2)
    # r=2: en mean 1-1/sqrt2, own 1+1/sqrt2               -> -sqrt2
    # r=3: en mean (2 + 1)/2, own 1+1/sqrt2               -> 1/2 - 1/sqrt2
    # the terms have mixed signs, so |.| is neither the signed mean nor its negation:
    # Eq. 2 (absolute values) -> (sqrt2 + 1/sqrt2) / 4 = 3 / (4 sqrt2); signed -> (1 - 2 sqrt2) / 4
    expected = 3 / (4 * math.sqrt(2))
    assert float(xl_loss(HAND, HAND, HAND_CODES, k=5)) == pytest.approx(expected, abs=1e-12)
    assert float(xl_reference(HAND, HAND, HAND_CODES.tolist(), 5)) == pytest.approx(expected, abs=1e-12)
    signed = (1 - 2 * math.sqrt(2)) / 4
    assert float(xl_loss(HAND, HAND, HAND_CODES, k=5, form="signed")) == pytest.approx(signed, abs=1e-12)
    assert float(xl_reference(HAND, HAND, HAND_CODES.tolist(), 5, "signed")) == pytest.approx(signed, abs=1e-12)


def _random_batch(seed, n=26, dim=6, n_langs=4):
    """Random titles/bodies in several languages; language 3 has only 2 items (< K = 5), and
    a few titles are exact copies of others (tied distances)."""
    rng = np.random.default_rng(seed)
    langs = rng.integers(0, n_langs - 1, size=n)
    langs[rng.choice(n, size=2, replace=False)] = n_langs - 1
    x_rt = rng.normal(size=(n, dim))
    x_rb = rng.normal(size=(n, dim))
    for a, b in rng.choice(n, size=(3, 2), replace=False):
        x_rt[b] = x_rt[a]
    return x_rt, x_rb, langs


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_xl_loss_matches_slow_loop(seed, k):
    x_rt, x_rb, langs = _random_batch(seed)
    assert np.bincount(langs).min() < k or k < 5  # some language has fewer than K items at K=5
    rt = torch.from_numpy(x_rt).requires_grad_()
    rb = torch.from_numpy(x_rb).requires_grad_()
    values = {}
    for form in ("abs", "signed"):
        fast = xl_loss(rt, rb, torch.from_numpy(langs), k=k, form=form)
        slow = xl_reference(rt, rb, langs.tolist(), k, form)
        assert fast.item() == pytest.approx(slow.item(), abs=1e-12)
        for a, b in zip(torch.autograd.grad(fast, (rt, rb)), torch.autograd.grad(slow, (rt, rb))):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)
        values[form] = fast.item()
    # the default is the printed (absolute) form, and on these batches the two forms differ
    assert xl_loss(rt, rb, torch.from_numpy(langs), k=k).item() == values["abs"]
    assert values["abs"] > abs(values["signed"]) + 1e-3


def test_xl_form_is_a_config_option():
    assert TripletConfig().xl_form == "abs"
    with pytest.raises(ConfigError, match="xl_form"):
        TripletConfig(xl_form="absolute").validate()
    with pytest.raises(InputError, match="form"):
        xl_loss(HAND, HAND, HAND_CODES, k=1, form="square")


def test_relu_reading_is_a_config_option():
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(50, 10)).astype(np.float32))
    hidden = build_head(10, TripletConfig(hidden=16, out_dim=8))
    both = build_head(10, TripletConfig(hidden=16, out_dim=8, relu="both"))
    assert TripletConfig().relu == "hidden"
    # same seed, same weights: "both" is "hidden" followed by a ReLU on the output
    assert torch.equal(both(x), hidden(x).relu())
    assert bool((hidden(x) < 0).any())  # Linear -> ReLU -> Linear: outputs of either sign
    with pytest.raises(ConfigError, match="relu"):
        TripletConfig(relu="all").validate()


def test_xl_loss_ties_go_to_the_lower_position():
    # unit vectors with dyadic entries: every cosine is exact, so the ties below are exact.
    # Items 1, 2 and 3 (de) have the same title: for r=0 they tie at the same distance; with
    # K=1 the gradient of the de term must reach only the title of item 1 (lower position).
    half = [0.5, 0.5, 0.5, 0.5]
    x_rt = t([[1, 0, 0, 0], half, half, half, [0, 1, 0, 0], [0, 0, 1, 0]]).requires_grad_()
    x_rb = t([[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0]]).requires_grad_()
    langs = [0, 1, 1, 1, 0, 0]
    fast = xl_loss(x_rt, x_rb, torch.tensor(langs), k=1)
    slow = xl_reference(x_rt, x_rb, langs, 1)
    assert fast.item() == slow.item()
    g_fast = torch.autograd.grad(fast, x_rt)[0]
    g_slow = torch.autograd.grad(slow, x_rt)[0]
    np.testing.assert_allclose(g_fast.numpy(), g_slow.numpy(), atol=1e-15)
    # the same call twice gives the same gradient bit for bit
    again = torch.autograd.grad(xl_loss(x_rt, x_rb, torch.tensor(langs), k=1), x_rt)[0]
    assert torch.equal(g_fast, again)


def test_xl_loss_single_language_and_lonely_item():
    z = torch.eye(6, dtype=torch.float64)
    # a single-language batch has no other-language term: 0
    assert float(xl_loss(z, z, torch.zeros(6, dtype=torch.long), k=5)) == 0.0
    # an item alone in its language has no own-language neighbour: L_XL(r) is undefined
    with pytest.raises(InputError, match="single item"):
        xl_loss(z, z, torch.tensor([0, 0, 0, 1, 1, 2]), k=5)


def test_xl_larger_when_one_language_sits_apart():
    rng = np.random.default_rng(0)
    n = 60
    langs = np.repeat([0, 1, 2], n // 3)
    base_t = rng.normal(size=(n, 8))
    base_b = base_t + 0.3 * rng.normal(size=(n, 8))
    codes = torch.from_numpy(langs)
    far = np.zeros((n, 8))
    far[langs == 2, 0] = 10.0
    for form in ("abs", "signed"):
        # mixed: the three languages are samples of one distribution
        mixed = float(xl_loss(torch.from_numpy(base_t), torch.from_numpy(base_b), codes, k=5, form=form))
        # apart: language 2 (titles and bodies) is moved far away along a new axis
        apart = float(xl_loss(torch.from_numpy(base_t + far), torch.from_numpy(base_b + far), codes, k=5, form=form))
        assert apart > mixed + 0.4, form
        assert apart > 2.5 * abs(mixed), form
    # signed, the sampling noise of the neighbour means cancels; with |.| it adds up (still small)
    assert abs(float(xl_loss(torch.from_numpy(base_t), torch.from_numpy(base_b), codes, k=5, form="signed"))) < 0.2


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
        xl_loss(x_rt, x_rb, codes, k=3),
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
    # the validation split is stratified by language: ceil(10 %) of each language
    n_val = sum(math.ceil(0.1 * np.sum(langs == lang)) for lang in ("en", "de"))
    assert res.n_val == n_val and res.n_train == 240 - n_val
    assert len(res.history["val_loss"]) == 12
    assert res.best_val_loss == min(res.history["val_loss"])
    assert res.history["val_loss"][res.best_epoch - 1] == res.best_val_loss
    assert res.best_val_loss < 0.5 * res.initial_val_loss


def test_tripletxl_mixes_languages_more_than_triplet():
    title, body, langs = synthetic_toy(seed=1)
    cfg = TripletConfig(seed=0, beta=1.0, **SMALL)
    plain = train_heads(title, body, langs, cfg, xl=False)
    mixed = train_heads(title, body, langs, cfg, xl=True)
    codes = torch.from_numpy((langs == "en").astype(np.int64))

    def xl_of(res):  # L_XL of the whole (train + validation) set in the head's output space
        z = torch.from_numpy(encode(res, title, body))
        return float(xl_loss(z[:, :16], z[:, 16:], codes, 5))

    print("L_XL plain", xl_of(plain), "mixed", xl_of(mixed))
    assert xl_of(mixed) < xl_of(plain) - 0.1


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
    # 60 items (32 de, 28 en): validation ceil(3.2) + ceil(2.8) = 7 items in one batch; the 53
    # training items make ceil(53 / 32) = 2 stratified batches of 27 and 26 items per epoch
    assert sorted(set(calls)) == [7, 26, 27]
    assert len(calls) == 1 + 2 * 2
    assert not torch.equal(a.state_dict["layer1.weight"], b.state_dict["layer1.weight"])


def test_batches_hold_every_language(monkeypatch):
    """Every training and validation batch of TRIPLETXL holds every language with its share
    (floor or ceil of n_l / n_batches), so every term of Eq. 2 exists."""
    from backretrieval.study import triplet as tr

    rng = np.random.default_rng(0)
    langs = np.array(["en"] * 50 + ["de"] * 30 + ["ru"] * 12)[rng.permutation(92)]
    title = rng.normal(size=(92, 10)).astype(np.float32)
    body = rng.normal(size=(92, 10)).astype(np.float32)
    seen = []
    real = tr.xl_loss

    def spy(x_rt, x_rb, codes, *args):  # records the language codes of every batch the XL term sees
        seen.append(tuple(np.bincount(codes.numpy(), minlength=3)))
        return real(x_rt, x_rb, codes, *args)

    monkeypatch.setattr(tr, "xl_loss", spy)
    cfg = TripletConfig(seed=0, **{**SMALL, "epochs": 2, "batch_size": 32})
    res = train_heads(title, body, langs, cfg, xl=True)
    # validation: ceil(10 %) per language = 5 en + 3 de + 2 ru in one batch; training: 45 en,
    # 27 de, 10 ru in ceil(82 / 32) = 3 batches of 15 en, 9 de and 4/3/3 ru
    assert (res.n_train, res.n_val) == (82, 10)
    val, train = (3, 5, 2), [(9, 15, 4), (9, 15, 3), (9, 15, 3)]  # (de, en, ru)
    assert seen == [val] + (train + [val]) * 2
    # with batch_size 8 there would be 11 batches for 10 ru items: refused before training
    with pytest.raises(InputError, match=r"language 'ru' has 10 training item\(s\).*11 language-stratified"):
        train_heads(title, body, langs, TripletConfig(seed=0, **{**SMALL, "batch_size": 8}), xl=True)
    # TRIPLET has no per-language term: the same data trains (some batches lack ru)
    train_heads(title, body, langs, TripletConfig(seed=0, **{**SMALL, "epochs": 1, "batch_size": 8}), xl=False)


def test_stratified_batches_partition_the_items():
    from backretrieval.study.triplet import _stratified_batches

    groups = [np.arange(0, 45), np.arange(100, 127), np.arange(200, 210)]
    batches = _stratified_batches(groups, 20)  # 82 items -> 5 batches
    assert len(batches) == 5
    assert sorted(np.concatenate(batches).tolist()) == sorted(np.concatenate(groups).tolist())
    for b in batches:
        per_lang = [np.isin(b, g).sum() for g in groups]
        assert per_lang[0] == 9 and per_lang[1] in (5, 6) and per_lang[2] == 2
        assert len(b) <= 20 + len(groups) - 1


def test_early_stopping_keeps_best_state():
    title, body, langs = synthetic_toy(n=120)
    # a huge lr with a large margin makes the validation loss bounce, so patience=1 stops early
    res = train_heads(
        title,
        body,
        langs,
        TripletConfig(seed=0, patience=1, **{**SMALL, "lr": 0.5, "epochs": 30, "alpha": 1.0}),
        xl=False,
    )
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
    # the same head saved again (another temporary file name) gives the same bytes
    path2 = tmp_path / "again" / "tripletxl.pt"
    save_head(res, path2)
    assert path2.read_bytes() == path.read_bytes()
    assert path2.with_suffix(".json").read_bytes() == path.with_suffix(".json").read_bytes()
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
    with pytest.raises(InputError, match="at least 2"):  # 1 train / 2 validation items
        train_heads(title[:3], body[:3], np.array(["en", "en", "de"]), TripletConfig(**SMALL), xl=False)
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
