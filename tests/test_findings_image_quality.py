"""Question 2 (image quality): degradations, concept precision, the perfect-encoder oracle on
SYNTHETIC scenes, and known answers on a constructed world (good images → BkR orders the
encoders as XLR; shuffled images → BkR at chance k/N)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from backretrieval.cli import main
from backretrieval.data.synthetic import sample_scene, scene_similarity
from backretrieval.errors import InputError
from backretrieval.findings import image_quality as iq
from backretrieval.findings.record import read_record
from worlds import make_world, metrics_files, views, write_world


def test_degradations_are_seeded_and_do_what_they_say():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 12)).astype(np.float32)
    sh = iq.degrade(x, "shuffle", None, 3)
    assert sorted(map(bytes, sh)) == sorted(map(bytes, x))  # the same rows, permuted
    assert not np.array_equal(sh, x)
    assert iq.degrade(x, "shuffle", None, 3).tobytes() == sh.tobytes()
    assert iq.degrade(x, "shuffle", None, 4).tobytes() != sh.tobytes()
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(iq.degrade(x, "noise", 0.0, 1), xn, atol=1e-6)
    noisy = iq.degrade(x, "noise", 2.0, 1) - xn
    assert np.linalg.norm(noisy, axis=1).mean() == pytest.approx(2.0, rel=0.25)  # noise/signal ~ level
    pr = iq.degrade(x, "project", 3, 1)
    assert pr.shape == (50, 3) and pr.dtype == np.float32
    for kind, level in (("blur", 1), ("noise", -1), ("project", 0), ("project", 2.5)):
        with pytest.raises(InputError):
            iq.degrade(x, kind, level, 0)
    assert [iq.variant_name(*v) for v in (("noise", 0.5), ("project", 16), ("shuffle", None))] == [
        "noise-0.5",
        "project-16",
        "shuffle",
    ]


def test_concept_precision_hand_computed_and_extremes():
    # 1-D features: images 0,1 close (label a), 2,3 close (label b), 4 (label a) far away
    f = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.1, 0.99], [-1.0, 0.0]])
    labels = np.array(["a", "a", "b", "b", "a"])
    # k=1: 0->1 (a, hit), 1->0 (hit), 2->3 (hit), 3->2 (hit), 4: all others have cosine <= 0;
    # its nearest by cosine is 2 (cos 0) vs 3 (cos -0.1) vs 0 (-1) -> 2 (label b, miss)
    assert iq.concept_precision(f, labels, k=1) == pytest.approx(4 / 5)
    items, texts, img, concept = make_world(n_items=300)
    assert iq.concept_precision(img[1], concept, 5) > 0.95
    shuffled = iq.degrade(img[1], "shuffle", None, 0)
    _, counts = np.unique(concept, return_counts=True)  # P(another image shares the label)
    chance = float(np.sum(counts * (counts - 1)) / (counts.sum() * (counts.sum() - 1)))
    assert abs(iq.concept_precision(shuffled, concept, 5) - chance) < 0.03
    with pytest.raises(InputError):
        iq.concept_precision(f, labels[:3], 1)


def test_scene_similarity_matrix_equals_the_generator_function():
    scenes = [sample_scene(random.Random(f"t{i}")) for i in range(60)]
    m = iq.scene_similarity_matrix(scenes[:25], scenes[25:])
    ref = np.array([[scene_similarity(a, b) for b in scenes[25:]] for a in scenes[:25]])
    np.testing.assert_allclose(m, ref, atol=1e-12)
    assert {len(s["objects"]) for s in scenes} == {1, 2}  # both shapes were exercised
    oracle = iq.scene_oracle_targets(scenes[:25], scenes[25:])
    assert oracle.tolist() == np.argmax(ref, axis=1).tolist()


def test_good_images_agree_shuffled_images_score_chance():
    items, texts, img, _ = make_world(n_items=500)
    vs = views(items, texts, n=100, seeds=(0, 1, 2, 3))
    variants = {"base": img, "shuffle": (img[0], iq.degrade(img[1], "shuffle", None, 0))}
    per_enc, per_sample = iq.image_quality_metrics(vs, variants, k=10)
    summary = iq.summarize_image_quality(per_enc, per_sample, 10).set_index("variant")
    # good images: BkR orders the graded encoders exactly as XLR does
    assert summary.loc["base", "pairwise_mean"] == 1.0
    assert summary.loc["base", "bkr[good]"] > 0.7
    # shuffled images: every encoder's BkR ~ k/N = 0.1 (400 queries per encoder)
    for enc in texts:
        assert abs(summary.loc["shuffle", f"bkr[{enc}]"] - 0.1) < 0.05
    assert summary.loc["shuffle", "chance_k_over_n"] == pytest.approx(0.1)
    assert summary.loc["shuffle", "spearman_mean"] < 0.5
    assert summary.loc["base", "best_encoder"] in ("good", "mid")  # both XLR ~ 1
    text = iq.answer(summary.reset_index(), base="base", dataset="world", synthetic=False, k=10, n=100, n_encoders=4)
    assert "shuffled features" in text and "0.100" in text


def test_step_and_cli_write_outputs_deterministically(tmp_path):
    ds, text_files, img, samples = write_world(tmp_path / "w")
    args = [
        "step",
        "findings",
        "--analysis",
        "image_quality",
        "--dataset",
        str(ds),
        "--samples",
        *map(str, samples),
        "--text-emb",
        *[f"{e}:{lang}={p}" for (e, lang), p in text_files.items()],
        "--image-emb",
        str(img),
        "--base",
        "bb",
        "--noise",
        "1",
        "--project",
        "4",
        "--shuffle",
        "--max-seeds",
        "2",
        "--metrics",
        *metrics_files(tmp_path / "w"),
        "--run-name",
        "world",
        "--out-dir",
    ]
    assert main(args + [str(tmp_path / "a")]) == 0
    assert main(args + [str(tmp_path / "b")]) == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert {
        "image_quality.csv",
        "image_quality.md",
        "image_quality.json",
        "image_quality.samples.csv",
        "figures/image_quality.png",
        "figures/image_quality.svg",
        "figures/image_quality.pdf",
    } <= set(map(str, files))
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    doc = json.loads((tmp_path / "a" / "image_quality.json").read_text())
    rec = read_record(tmp_path / "a" / "image_quality.json")  # document.py's schema
    assert rec.analysis == "image_quality" and rec.run.run_name == "world" and rec.run.dataset == "world"
    assert rec.run.synthetic is False and rec.verdict and rec.answer.startswith(rec.verdict[:-1])
    assert set(rec.outputs) == {
        "image_quality.md",
        "image_quality.csv",
        "image_quality.samples.csv",
        "figures/image_quality.png",
        "figures/image_quality.svg",
        "figures/image_quality.pdf",
    }
    assert set(doc["numbers"]["per_variant"]) == {"bb", "bb:noise-1", "bb:project-4", "bb:shuffle"}
    assert doc["settings"]["samples"] == 4  # 2 directions x first 2 seeds


def test_cli_bad_input_is_a_clear_error_without_outputs(tmp_path, capsys):
    ds, text_files, img, samples = write_world(tmp_path / "w")
    out = tmp_path / "out"
    base = [
        "step",
        "findings",
        "--analysis",
        "image_quality",
        "--dataset",
        str(ds),
        "--samples",
        *map(str, samples),
        "--image-emb",
        str(img),
        "--metrics",
        *metrics_files(tmp_path / "w"),
        "--run-name",
        "w",
        "--out-dir",
        str(out),
    ]
    texts = [f"{e}:{lang}={p}" for (e, lang), p in text_files.items()]
    # --image-emb: the base backbone's features (named by --base) without a name, the others NAME=FILE
    assert main(base + ["--text-emb", *texts, "--base", "bb", "--image-emb", str(img), f"bb={img}"]) == 2
    assert "--image-emb bb=...: the run's backbone is the file without a name" in capsys.readouterr().err
    assert main(base + ["--text-emb", "good-en.npz", "--base", "bb"]) == 2
    assert "ENCODER:LANG=PATH" in capsys.readouterr().err
    assert main(base + ["--text-emb", *texts[:2], "--base", "bb"]) == 2  # one encoder only
    assert ">= 3 encoders" in capsys.readouterr().err
    assert not out.exists()
