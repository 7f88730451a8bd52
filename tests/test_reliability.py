"""Bad input fails early and clearly: one test per case, each asserting the exit
code, that the message names the file or field, and that no partial artifact is left.

Most cases run the real CLI in a temporary working directory on a tiny hand-made prepared
dataset (``source: prepared``, precomputed image features, model-free encoders): config checks
through ``validate-config``, single steps in-process through the commands the workflow itself
renders for the config (``rendered_step`` in tests/snake.py: a Snakemake dry run). The Snakemake cases (core counts, a shared cache, an
interrupted run, the dataset check before any model) use tests/data/tiny.yaml.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tarfile
import time
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import backretrieval._util.cache as emb_mod
import snake
from backretrieval.cli import main
from backretrieval.data import archive
from backretrieval.data.sources import ikea
from backretrieval.errors import InputError
from snake import BIN, ROOT, rendered_step, run_snakemake
from worlds import make_prepared

TINY = ROOT / "tests/data/tiny.yaml"


# --------------------------------------------------------------------------- helpers


def base_cfg(data: Path) -> dict:
    return {
        "run_name": "rel",
        "dataset": {"name": "hand", "source": "prepared", "options": {"path": str(data)}},
        "languages": ["en", "de"],
        "directions": ["en-de", "de-en"],
        "text_field": "title",
        "sample_size": 10,
        "seeds": [0, 1],
        "recall_k": 3,
        "figure_seed": 0,
        "image_backbone": "fake",
        "backbones": {"fake": {"type": "precomputed", "name": "fake"}},
        "encoders": {
            "char": {"type": "char_ngram", "dim": 128},
            "char3": {"type": "char_ngram", "dim": 32, "n": [3]},
            "random": {"type": "random", "dim": 16, "seed": 0},
        },
        "cache_dir": ".cache/embeddings",
        "reports_dir": "reports/hand",
    }


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working directory with the hand-made dataset (under src/) and a valid config."""
    monkeypatch.chdir(tmp_path)
    data = make_prepared(tmp_path / "src" / "hand")
    return tmp_path, data, base_cfg(data)


def run_cli(capsys, cfg: dict | None, *argv: str, path: str = "cfg.yaml") -> tuple[int, str]:
    """``backretrieval <argv> --config cfg.yaml`` in-process: (exit code, stderr + stdout)."""
    capsys.readouterr()
    args = list(argv)
    if cfg is not None:
        Path(path).write_text(yaml.safe_dump(cfg))
        args += ["--config", path]
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.err + out.out


def created(tmp_path: Path) -> set[str]:
    """Top-level entries a step created in the working directory (inputs excluded)."""
    return {p.name for p in tmp_path.iterdir()} - {"src", "cfg.yaml", "mirror"}


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file under artifacts/, reports/ and data/ of a working directory."""
    out = {}
    for sub in ("artifacts", "reports", "data"):
        for p in sorted((root / sub).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# --------------------------------------------------------------------------- 1. chained symlinks


def _tar_links(path: Path, links: list[tuple[str, str]]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, target in links:
            ti = tarfile.TarInfo(name)
            ti.type, ti.linkname = tarfile.SYMTYPE, target
            tf.addfile(ti)
    return path


def _zip_links(path: Path, links: list[tuple[str, str]], files=(("f.txt", b"x"),)) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files:
            zf.writestr(name, data)
        for name, target in links:
            zi = zipfile.ZipInfo(name)
            zi.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(zi, target)
    return path


CHAIN = [("sub/a/up2", "../.."), ("x", "sub/a/up2/../../..")]  # each link checked alone stays inside


@pytest.mark.parametrize("kind", ["tar", "zip"])
@pytest.mark.parametrize("links", [CHAIN, CHAIN[::-1]], ids=["in-order", "reversed"])
def test_chained_symlinks_are_refused(tmp_path, kind, links):
    arc = (_tar_links if kind == "tar" else _zip_links)(tmp_path / f"chain.{kind}", links)
    with pytest.raises(InputError, match=r"refused symlink 'x'.*outside the destination") as exc:
        archive.safe_extract(arc, tmp_path / "out")
    assert str(arc) in str(exc.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == [arc.name]  # no dest, no temp folder


def test_links_inside_still_extract(tmp_path):
    links = [("sub/a/up1", ".."), ("y", "sub/a/up1/b.txt")]
    z = _zip_links(tmp_path / "ok.zip", links, files=(("sub/b.txt", b"bee"),))
    out = archive.safe_extract(z, tmp_path / "out")
    assert (out / "y").read_bytes() == b"bee"


# --------------------------------------------------------------------------- archives via prepare


def _ikea_cfg(tmp_path: Path) -> dict:
    cfg = yaml.safe_load((ROOT / "config/ikea.yaml").read_text())
    cfg["dataset"]["options"].update(
        mirror=str(tmp_path / "mirror"), pairs=["en-de"], splits=["test"], download="archive"
    )
    cfg.update(languages=["en", "de"], directions=["en-de"], sample_size=2, recall_k=1)
    return cfg


def _liar_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("IKEA-Dataset-master/big.bin", b"\0" * 200_000)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        lh = zf.infolist()[0].header_offset
    raw[lh + 22 : lh + 26] = (10).to_bytes(4, "little")  # local header: uncompressed size 10
    cd = raw.rfind(b"PK\x01\x02")
    raw[cd + 24 : cd + 28] = (10).to_bytes(4, "little")  # central directory: the same lie
    path.write_bytes(bytes(raw))


ARCHIVES = {
    "chained-symlink": (
        lambda p: _zip_links(p, [(f"IKEA-Dataset-master/{a}", b) for a, b in CHAIN]),
        "refused symlink",
    ),
    "zip-slip": (lambda p: _zip_links(p, [], files=(("IKEA-Dataset-master/../../evil", b"x"),)), "'..' path component"),
    "absolute": (lambda p: _zip_links(p, [], files=(("/tmp/evil-backretrieval", b"x"),)), "absolute path"),
    "lying-header": (_liar_zip, "corrupt archive|possible zip bomb"),
}


@pytest.mark.parametrize("case", sorted(ARCHIVES))
@pytest.mark.filterwarnings("ignore::backretrieval.data.UnpinnedDownloadWarning")
def test_unsafe_archive_refused_by_prepare(tmp_path, monkeypatch, capsys, case):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mirror").mkdir()
    build, message = ARCHIVES[case]
    build(tmp_path / "mirror" / "master.zip")
    rc, err = run_cli(capsys, None, *rendered_step(_ikea_cfg(tmp_path), "prepare_dataset"))
    assert rc == 2 and "IKEA-Dataset-master.zip" in err
    assert pd.Series([err]).str.contains(message).iloc[0], err
    dl = tmp_path / "data" / "downloads" / "ikea"
    assert sorted(p.name for p in dl.iterdir()) == ["IKEA-Dataset-master.zip"]  # nothing extracted
    assert not (tmp_path / "data" / "prepared").exists()
    assert not Path("/tmp/evil-backretrieval").exists()


def test_wrong_sha256_pin_leaves_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mirror").mkdir()
    _zip_links(tmp_path / "mirror" / "master.zip", [])
    monkeypatch.setitem(ikea.PINS, "master.zip", "0" * 64)
    rc, err = run_cli(capsys, None, *rendered_step(_ikea_cfg(tmp_path), "prepare_dataset"))
    assert rc == 2 and "sha256 mismatch" in err and "IKEA-Dataset-master.zip" in err
    assert list((tmp_path / "data" / "downloads" / "ikea").iterdir()) == []  # no file, no .part


# --------------------------------------------------------------------------- 2. damaged cache shard


def _damage(shard: Path, how: str) -> None:
    raw = bytearray(shard.read_bytes())
    if how == "truncated":
        shard.write_bytes(bytes(raw[: len(raw) // 2]))
    else:  # one flipped bit in the middle of the stored arrays
        raw[len(raw) // 2] ^= 0x10
        shard.write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["truncated", "bitflip"])
def test_damaged_cache_shard_is_named_and_recomputed(work, capsys, caplog, how):
    tmp_path, _, cfg = work
    assert run_cli(capsys, None, *rendered_step(cfg, "prepare_dataset"))[0] == 0
    assert run_cli(capsys, None, *rendered_step(cfg, "embed_text", encoder="char"))[0] == 0
    out = tmp_path / "artifacts/rel/text/char/en.title.npz"
    before = {p: p.read_bytes() for p in out.parent.iterdir()}
    shards = sorted((tmp_path / ".cache").rglob("shard-*.npz"))
    assert shards
    for s in shards:
        _damage(s, how)
    caplog.clear()
    rc, _ = run_cli(capsys, None, *rendered_step(cfg, "embed_text", encoder="char"))
    assert rc == 0
    assert all(s.name in caplog.text for s in shards) and "recomputed" in caplog.text
    assert not any(s.exists() for s in shards)
    assert {p: p.read_bytes() for p in out.parent.iterdir()} == before  # same bytes as before
    assert run_cli(capsys, None, *rendered_step(cfg, "embed_text", encoder="char"))[0] == 0  # the new shard reads


def test_compaction_drops_a_damaged_shard(tmp_path, caplog):
    cache = emb_mod.EmbeddingCache(tmp_path, "text", "fp")
    for i in range(3):
        cache.add([f"k{i}"], np.full((1, 4), i, np.float32))
    bad = cache.shards()[1]
    _damage(bad, "truncated")
    cache.compact()
    assert len(cache.shards()) == 1 and bad.name in caplog.text
    got = cache.lookup(["k0", "k1", "k2"])
    assert sorted(got) == ["k0", "k2"]  # k1 is a miss now: the caller recomputes it


def test_killed_writers_temporary_shard_is_removed_by_the_next_write(tmp_path):
    """A writer killed while writing its shard leaves an unlocked temporary; the next shard
    written to the folder removes it (not only a compaction at 64 shards), a live one stays."""
    import fcntl
    import tempfile

    from backretrieval._util.tempfiles import temp_prefix

    cache = emb_mod.EmbeddingCache(tmp_path, "text", "fp")
    cache.add(["k0"], np.zeros((1, 4), np.float32))

    def temporary() -> Path:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(cache.dir / "shard-1-2-x.npz"), suffix=".tmp.npz", dir=cache.dir)
        os.close(fd)
        return Path(tmp)

    dead, live = temporary(), temporary()
    held = os.open(live, os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)  # a writer still running
    try:
        cache.add(["k1"], np.ones((1, 4), np.float32))
        assert not dead.exists() and live.exists()
    finally:
        os.close(held)
    assert len(cache.shards()) == 2


def test_killed_jobs_shadow_folder_is_removed_before_the_next_run(tmp_path):
    """A job killed in its shadow folder leaves it; the next run (its first job) removes it,
    unless another Snakemake instance holds a lock in the working directory."""
    from backretrieval.steps.cleanup import remove_abandoned_shadows

    dead = tmp_path / ".snakemake/shadow/tmpdead/artifacts"
    dead.mkdir(parents=True)
    (dead / "part.npz").write_bytes(b"partial")
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "0.input.lock").write_text("x\n")
    mine = locks / "1.input.lock"
    mine.write_text("y\n")
    removed, why = remove_abandoned_shadows(tmp_path / ".snakemake/shadow", locks, [mine])
    assert removed == [] and "another Snakemake instance" in why and dead.exists()
    r = run_snakemake(tmp_path, "prepare_dataset", "--configfile", str(TINY), cores=1, timeout=300)
    assert "removed 1 shadow folder(s) of killed jobs" in r.stdout + r.stderr, (r.stdout + r.stderr)[-2000:]
    assert list((tmp_path / ".snakemake/shadow").iterdir()) == []


# --------------------------------------------------------------------------- 3 + 6. config relations


def _case(cfg):
    cfg["case_study"] = {
        "languages": ["en", "de"],
        "base_encoders": ["char", "char3"],
        "baseline": "random",
        "eval_splits": ["val", "test"],
        "train_splits": ["train"],
        "sample_size": 5,
        "recall_k": 2,
        "seeds": [0],
    }
    return cfg


HUMAN = {"source_lang": "en", "target_lang": "de", "n_queries": 2, "top_k": 2}


def _human(cfg):
    _case(cfg)["human_study"] = dict(HUMAN)
    return cfg


def _wordvec(cfg, **over):
    spec = {
        "type": "wordvec",
        "method": "procrustes",
        "dict_size": 10,
        "corpus": "data/prepared/corp",
        "languages": ["de"],
    }
    cfg["encoders"]["wv"] = {**spec, **over}
    cfg["corpora"] = {"corp": {"source": "prepared", "options": {"path": "src/hand"}}}
    return cfg


RELATIONS = {
    # the example: k=100 with N=30
    "k-ge-N": (lambda c: c.update(recall_k=100, sample_size=30), "field 'recall_k'"),
    "k-eq-N": (lambda c: c.update(recall_k=10), "field 'recall_k'"),
    "removed-k": (lambda c: (c.pop("recall_k"), c.update(k=10)), "'recall_k' is a required property"),
    "two-encoders": (lambda c: c["encoders"].pop("random"), "field 'encoders'"),
    "unknown-encoder-type": (lambda c: c["encoders"].update(x={"type": "no-such-model"}), "field 'encoders.x.type'"),
    "unknown-encoder-key": (lambda c: c["encoders"]["char"].update(ngram=[2, 3]), r"field 'encoders.char'.*'ngram'"),
    "missing-required-key": (
        lambda c: c["encoders"].update(st={"type": "sentence-transformers"}),
        r"encoders.st'.*\['model'\]",
    ),
    "muse-needs-vectors": (lambda c: c["encoders"].update(m={"type": "muse"}), r"encoders.m'.*vectors"),
    "figure-seed": (lambda c: c.update(figure_seed=7), "field 'figure_seed'"),
    "direction-language": (lambda c: c.update(directions=["en-fr"]), "field 'directions'"),
    "image-backbone": (lambda c: c.update(image_backbone="none"), "field 'image_backbone'"),
    "synthetic-too-small": (
        lambda c: c.update(dataset={"name": "s", "source": "synthetic", "synthetic": {"n_items": 15}}),
        "field 'dataset.synthetic.n_items'",
    ),
    "prepared-needs-path": (lambda c: c["dataset"].update(options={}), "field 'dataset.options.path'"),
    "corpus-needs-path": (lambda c: c.update(corpora={"t": {"source": "prepared"}}), "field 'corpora.t.options.path'"),
    "wordvec-languages": (lambda c: _wordvec(c, languages=["fr"]), r"field 'encoders.wv.languages'.*\['de'\]"),
    "corpus-not-configured": (lambda c: _wordvec(c, corpus="data/prepared/elsewhere"), "field 'encoders.wv.corpus'"),
    "case-k-ge-N": (lambda c: _case(c)["case_study"].update(recall_k=5), "field 'case_study.recall_k'"),
    "case-language": (lambda c: _case(c)["case_study"].update(languages=["en", "ru"]), "field 'case_study.languages'"),
    "case-base-encoder": (
        lambda c: _case(c)["case_study"].update(base_encoders=["nope"]),
        "field 'case_study.base_encoders'",
    ),
    "case-baseline-is-base": (lambda c: _case(c)["case_study"].update(baseline="char"), "field 'case_study.baseline'"),
    "case-head-base": (lambda c: _case(c)["case_study"].update(head_base="random"), "field 'case_study.head_base'"),
    "case-splits-overlap": (
        lambda c: _case(c)["case_study"].update(train_splits=["val"]),
        "field 'case_study.train_splits'",
    ),
    "case-triplet-k": (
        lambda c: _case(c)["case_study"].update(triplet={"k": 8, "batch_size": 8}),
        "field 'case_study.triplet.k'",
    ),
    "human-without-case": (lambda c: c.update(human_study={"n_queries": 2}), "field 'human_study'"),
    "human-language": (lambda c: _human(c)["human_study"].update(target_lang="fr"), "field 'human_study.target_lang'"),
    "human-same-language": (
        lambda c: _human(c)["human_study"].update(target_lang="en"),
        "field 'human_study.target_lang'",
    ),
    "human-model": (lambda c: _human(c)["human_study"].update(model_a="gpt"), "field 'human_study.model_a'"),
    "human-same-model": (
        lambda c: _human(c)["human_study"].update(model_a="base", model_b="base"),
        "field 'human_study.model_b'",
    ),
    "human-ratings-missing": (
        lambda c: _human(c)["human_study"].update(ratings="no/such.csv"),
        "field 'human_study.ratings'",
    ),
}


@pytest.mark.parametrize("case", sorted(RELATIONS))
def test_config_relation_refused_before_any_work(work, capsys, case):
    tmp_path, _, cfg = work
    mutate, field = RELATIONS[case]
    mutate(cfg)
    rc, err = run_cli(capsys, cfg, "validate-config")
    assert rc == 2, err
    assert "cfg.yaml" in err and pd.Series([err]).str.contains(field).iloc[0], err
    assert len(err.strip().splitlines()) == 1
    assert created(tmp_path) == set()  # nothing written: no data/, artifacts/, .cache/


def test_all_shipped_configs_pass_the_relations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no prepared data here: the config checks only
    for p in [
        ROOT / "params.yaml",
        *sorted((ROOT / "config").glob("*.yaml")),
        *sorted((ROOT / "tests/data").glob("*.yaml")),
    ]:
        assert main(["validate-config", "--config", str(p)]) == 0, p


def test_encoder_spec_table_covers_the_registry():
    from dataclasses import fields

    from backretrieval import encoders
    from backretrieval.encoders.wordvec import WordVecSpec

    assert set(encoders.ENCODER_SPEC_KEYS) == set(encoders.ENCODER_TYPES)
    wv = encoders.ENCODER_SPEC_KEYS["wordvec"]
    spec_fields = {f.name for f in fields(WordVecSpec)} - {"extra"}
    assert set(wv["required"]) | set(wv["optional"]) == spec_fields | {"normalize", "device"}


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda c: c["encoders"].update(x={"type": "no-such-model"}), "encoders.x.type"),
        (lambda c: c["encoders"].pop("random"), "'encoders'"),
    ],
    ids=["unknown-type", "two-encoders"],
)
def test_snakemake_refuses_bad_encoders_before_any_job(tmp_path, mutate, field):
    cfg = yaml.safe_load((ROOT / "tests/data/tiny.yaml").read_text())
    mutate(cfg)
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    res = run_snakemake(tmp_path / "wd", cores=1, configfile=tmp_path / "bad.yaml", timeout=300, check=False)
    assert res.returncode != 0
    assert field in res.stdout + res.stderr and "bad.yaml" in res.stdout + res.stderr
    assert not (tmp_path / "wd" / "data").exists() and not (tmp_path / "wd" / "artifacts").exists()


# --------------------------------------------------------------------------- 3. relations needing the data

DATA_RELATIONS = {
    "N-too-large": (lambda c: c.update(sample_size=16), r"field 'sample_size'.*N=16.*has 30 items"),
    "language-without-texts": (
        lambda c: c.update(languages=["en", "de", "fr"]),
        r"field 'languages': 'fr' has no texts",
    ),
    "no-such-features": (
        lambda c: c["backbones"]["fake"].update(name="resnet"),
        r"field 'image_backbone'.*resnet\.ids\.txt",
    ),
    "image-files-needed": (
        lambda c: c.update(backbones={"fake": {"type": "efficientnet-lite"}}),
        r"field 'image_backbone'.*no images\.csv",
    ),
    "case-eval-too-small": (
        lambda c: _case(c)["case_study"].update(sample_size=16, train_corpus="src/hand"),
        "field 'case_study.sample_size'",
    ),
    "case-no-train-items": (lambda c: _case(c), "field 'case_study.train_splits'"),
    "human-too-many-queries": (
        lambda c: (_human(c), c["case_study"].update(train_corpus="src/hand"), c["human_study"].update(n_queries=31)),
        "field 'human_study.n_queries'",
    ),
}


@pytest.mark.parametrize("case", sorted(DATA_RELATIONS))
def test_dataset_relation_refused_by_check(work, capsys, case):
    """prepare copies the dataset; check-dataset (the rule before any model) refuses the config
    it does not fit, names the field, and records nothing."""
    tmp_path, _, cfg = work
    mutate, field = DATA_RELATIONS[case]
    mutate(cfg)
    if "case_study" in cfg and "human_study" not in cfg:  # the workflow refuses the default
        cfg["human_study"] = dict(HUMAN)  # human study (en -> ru) outside these languages
    assert run_cli(capsys, None, *rendered_step(cfg, "prepare_dataset"))[0] == 0
    rc, err = run_cli(capsys, None, *rendered_step(cfg, "check_dataset"))
    assert rc == 2 and pd.Series([err]).str.contains(field).iloc[0], err
    assert not (tmp_path / "artifacts").exists()


def test_validate_config_checks_a_prepared_dataset(work, capsys):
    """A dataset prepared under one config, a larger N later: validate-config names the field."""
    tmp_path, _, cfg = work
    assert run_cli(capsys, None, *rendered_step(cfg, "prepare_dataset"))[0] == 0
    assert run_cli(capsys, cfg, "validate-config")[0] == 0
    cfg["sample_size"] = 16
    rc, err = run_cli(capsys, cfg, "validate-config")
    assert rc == 2 and "field 'sample_size'" in err, err


def test_snakemake_dry_run_refuses_what_validate_config_refuses_on_a_prepared_dataset(work, capsys):
    """One check for both doors: a language without texts in the prepared dataset (a config
    that inherits languages it lacks) is refused by validate-config and by `snakemake -n`."""
    tmp_path, _, cfg = work
    assert run_cli(capsys, None, *rendered_step(cfg, "prepare_dataset"))[0] == 0
    cfg["languages"] = ["en", "de", "fr"]
    rc, err = run_cli(capsys, cfg, "validate-config")
    assert rc == 2 and "field 'languages': 'fr' has no texts" in err, err
    res = run_snakemake(tmp_path, "-n", configfile=tmp_path / "cfg.yaml", timeout=300, check=False)
    assert res.returncode != 0 and "field 'languages': 'fr' has no texts" in res.stdout + res.stderr


def test_synthetic_dataset_that_does_not_fit_is_refused_by_check(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = yaml.safe_load((ROOT / "tests/data/tiny.yaml").read_text())
    cfg.update(sample_size=10, recall_k=3, languages=["en", "de"], directions=["en-de"])
    cfg["dataset"]["synthetic"].update(n_items=24, image_size=32)
    cfg = _human(cfg)  # a human study in the case study's languages (the workflow refuses one outside)
    cfg["case_study"].update(base_encoders=["char-ngram", "char-ngram-3"], sample_size=6)  # > eval items / 2
    assert run_cli(capsys, None, *rendered_step(cfg, "prepare_dataset"))[0] == 0
    rc, err = run_cli(capsys, None, *rendered_step(cfg, "check_dataset"))
    assert rc == 2 and "field 'case_study.sample_size'" in err, err
    assert not (tmp_path / "artifacts").exists()


# --------------------------------------------------------------------------- 4. non-UTF-8 items.csv


def test_non_utf8_items_csv_one_error_path(work, capsys):
    tmp_path, data, cfg = work
    raw = (data / "items.csv").read_bytes().splitlines(keepends=True)
    assert raw[2].startswith(b"i000,de,img000,de item 0")
    raw[2] = raw[2].replace(b"de item", "de itém".encode("latin-1"))  # Latin-1, not UTF-8
    (data / "items.csv").write_bytes(b"".join(raw))
    where = "not UTF-8 (byte 0xe9 at line 3, column 21)"
    rc, out = run_cli(capsys, None, "validate-dataset", str(data))
    assert rc == 1 and "items.csv" in out and where in out, out
    rc, err = run_cli(capsys, None, *rendered_step(cfg, "prepare_dataset"))
    assert rc == 2 and f"{data / 'items.csv'}: items table is {where}" in err, err
    assert created(tmp_path) == set()


# --------------------------------------------------------------------------- 5. NaN / inf features


def test_nonfinite_feature_rows_are_named(work, capsys):
    tmp_path, data, cfg = work
    feats = np.load(data / "features/fake.npy")
    feats[3, 1], feats[7, 0] = np.nan, np.inf
    np.save(data / "features/fake.npy", feats)
    rc, out = run_cli(capsys, None, "validate-dataset", str(data))
    assert rc == 1 and "features/fake.npy" in out and "rows [3, 7]" in out and "img003" in out, out
    rc, err = run_cli(capsys, None, *rendered_step(cfg, "prepare_dataset"))
    assert rc == 2 and str(data / "features/fake.npy") in err and "rows [3, 7]" in err and "'img007'" in err, err
    assert created(tmp_path) == set()
    # a dataset prepared before the features went bad: embed-images refuses, writes nothing
    Path("data/prepared").mkdir(parents=True)
    shutil.copytree(data, "data/prepared/hand")
    rc, err = run_cli(capsys, None, *rendered_step(cfg, "embed_images"))
    assert rc == 2 and "rows [3, 7]" in err
    assert not (tmp_path / "artifacts").exists()


# --------------------------------------------------------------------------- 9. disk full


def _no_space(*_a, **_k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_disk_full_names_the_path_being_written(work, capsys, monkeypatch):
    tmp_path, _, cfg = work
    assert run_cli(capsys, None, *rendered_step(cfg, "prepare_dataset"))[0] == 0
    with monkeypatch.context() as m:
        m.setattr(Path, "write_text", _no_space)
        rc, err = run_cli(capsys, None, *rendered_step(cfg, "sample"))
    samples = tmp_path / "artifacts/rel/samples"
    assert rc == 2 and "artifacts/rel/samples/en-de.json: cannot be written: No space left on device" in err, err
    assert list(samples.iterdir()) == []  # no file, no temporary sibling
    assert run_cli(capsys, None, *rendered_step(cfg, "sample"))[0] == 0

    def savez_then_full(fh, **arrays):
        fh.write(b"PK partial")
        _no_space()

    with monkeypatch.context() as m:
        m.setattr(np, "savez", savez_then_full)
        rc, err = run_cli(capsys, None, *rendered_step(cfg, "embed_images"))
    assert rc == 2 and "artifacts/rel/image/fake.npz: cannot be written" in err, err
    assert list((tmp_path / "artifacts/rel/image").iterdir()) == []


def test_disk_full_elsewhere_is_one_line_exit_2(work, capsys, monkeypatch):
    _, _, cfg = work
    from backretrieval.steps import sample as sample_mod

    monkeypatch.setattr(sample_mod, "sample_step", _no_space)
    rc, err = run_cli(capsys, None, *rendered_step(cfg, "sample"))
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "errno 28" in err and "backretrieval step sample" in err


# --------------------------------------------------------------------------- 11 + 12. Makefile, git


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")
def test_make_report_output_is_ignored():
    res = subprocess.run(["git", "check-ignore", "-q", "reports/default/report.html"], cwd=ROOT)
    assert res.returncode == 0, "reports/default/report.html (make report) is neither ignored nor committed"


# --------------------------------------------------------------------------- keep passing


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


PAYLOADS = [
    "</script><script>alert(1)</script>",
    '"><svg onload=alert(2)>',
    "' onfocus='alert(3)' autofocus x='",
    '<iframe src="javascript:alert(4)"></iframe>',
    "</div></form><img src=x onerror=alert(5)>",
]


def test_rating_page_escapes_xss_payloads(tmp_path):
    from backretrieval.study.human_study import HTML_NAME, make_sheets

    queries = pd.DataFrame({"query_id": ["q1", PAYLOADS[1]], "text": [PAYLOADS[0], PAYLOADS[4]]})
    sugg = {q: [(f"c{i}", p) for i, p in enumerate(PAYLOADS)] for q in queries.query_id}
    make_sheets(queries, sugg, sugg, tmp_path / "s", seed=0, model_names=("A", PAYLOADS[2]))
    page = (tmp_path / "s" / HTML_NAME).read_text()
    parser = _Tags()
    parser.feed(page)
    names = [t for t, _ in parser.tags]
    assert names.count("script") == 1 and not {"svg", "iframe", "img"} & set(names)
    assert not [a for _, attrs in parser.tags for a in attrs if a.startswith("on") or a == "autofocus"]
    for p in PAYLOADS[:2] + PAYLOADS[3:]:
        assert p not in page
    assert PAYLOADS[2] not in page and "A" not in {a.get("data-model") for _, a in parser.tags}


def _key_and_ratings(tmp_path: Path) -> tuple[Path, Path]:
    from backretrieval.study.human_study import KEY_FORMAT

    sugg = {f"s{i}": {"query_id": "q0", "candidate_id": f"c{i}", "models": ["A" if i % 2 else "B"]} for i in range(6)}
    key = tmp_path / "key.sealed.json"
    key.write_text(json.dumps({"format": KEY_FORMAT, "model_names": ["A", "B"], "suggestions": sugg}))
    sha = hashlib.sha256(key.read_bytes()).hexdigest()
    ratings = tmp_path / "ratings.csv"
    pd.DataFrame({"suggestion_id": list(sugg), "rating": [1, 2, 3, 4, 1, 2], "key_sha256": sha, "rater": "r1"}).to_csv(
        ratings, index=False
    )
    return key, ratings


@pytest.mark.parametrize(
    "tamper, message",
    [
        (lambda k, r: r.write_text(r.read_text().replace(",3,", ",7,")), "rating 7 outside 1-4"),
        (
            lambda k, r: r.write_text(r.read_text() + f"s9,1,{r.read_text().splitlines()[1].split(',')[2]},r1\n"),
            "'s9'.*not in the key",
        ),
        (lambda k, r: k.write_text(k.read_text().replace('"c1"', '"c1x"')), "does not match the key"),
    ],
    ids=["rating-out-of-range", "unknown-suggestion", "key-edited"],
)
def test_tampered_ratings_or_key_refused(tmp_path, capsys, tamper, message):
    key, ratings = _key_and_ratings(tmp_path)
    out = tmp_path / "tally.md"
    assert (
        run_cli(
            capsys,
            None,
            "step",
            "human-tally",
            "--ratings",
            str(ratings),
            "--key",
            str(key),
            "--out-tally-md",
            str(out),
            "--out-tally-json",
            str(out.with_suffix(".json")),
        )[0]
        == 0
    )
    out.unlink()
    tamper(key, ratings)
    rc, err = run_cli(
        capsys,
        None,
        "step",
        "human-tally",
        "--ratings",
        str(ratings),
        "--key",
        str(key),
        "--out-tally-md",
        str(out),
        "--out-tally-json",
        str(out.with_suffix(".json")),
    )
    assert rc == 2 and pd.Series([err]).str.contains(message).iloc[0], err
    assert ("ratings.csv" in err) or ("key.sealed.json" in err)
    assert not out.exists()


# --------------------------------------------------------------------------- Snakemake runs (slow)


def _smk(wd: Path, cores: int, *extra: str, check: bool = False) -> subprocess.CompletedProcess:
    return run_snakemake(wd, *extra, cores=cores, configfile=TINY, check=check)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory, tiny_reference_run):
    """tests/data/tiny.yaml three ways: A --cores 1 with its own cache (the session's shared
    ``tiny_reference_run``, a fresh working directory, running in the background since the
    session started); B and C --cores 2 sharing one cache directory, at the same time, without the
    sandbox (``sandbox: false``: no shadow directories, so A == B also shows the sandbox changes
    no byte).

    C is killed once its first artifact is written (SIGKILL to Snakemake and its running jobs,
    as ``kill -9`` or a power loss would), while B goes on writing to the shared cache; then it
    is recovered as docs/TROUBLESHOOTING.md says: a plain rerun (which must stop and name the
    way out), ``--unlock``, and ``--rerun-incomplete``, again beside B. Returns the folders by
    name (A read-only) and what C's interruption and plain rerun showed."""
    base = tmp_path_factory.mktemp("tiny")
    shared = base / "shared-cache"
    args = ("--config", f"cache_dir={shared}", "sandbox=False")
    b = snake.start(base / "b", *args, cores=2, configfile=TINY)
    # the killed Snakemake cannot remove its temporary folder: TMPDIR puts it in base
    c_tmp = base / "c-tmp"
    c_tmp.mkdir()
    c = snake.start(
        base / "c", *args, cores=2, configfile=TINY, quiet=True, new_session=True, environ=snake.env(TMPDIR=str(c_tmp))
    )
    try:
        deadline = time.time() + 300
        while not list((base / "c/artifacts").rglob("*.npz")) and time.time() < deadline and c.poll() is None:
            time.sleep(0.2)
        running_at_kill = c.poll() is None
        os.killpg(c.pid, signal.SIGKILL)  # snakemake and its running jobs
        c.wait()
        plain = run_snakemake(base / "c", *args, cores=2, configfile=TINY, check=False)
        run_snakemake(base / "c", *args, "--unlock", cores=1, configfile=TINY)
        c = snake.start(base / "c", *args, "--rerun-incomplete", cores=2, configfile=TINY)
    except BaseException:
        for p in (b, c):
            p.kill()
        raise
    a = tiny_reference_run.path(b, c)
    snake.finish({"b": b, "c (recovered)": c})
    return {
        "a": a,
        "b": base / "b",
        "c": base / "c",
        "shared-cache": shared,
        "c running when killed": running_at_kill,
        "c plain rerun": (plain.returncode, plain.stdout + plain.stderr),
    }


@pytest.mark.slow
def test_cores_1_and_cores_2_give_identical_files(tiny_runs):
    a, b = tree(tiny_runs["a"]), tree(tiny_runs["b"])
    assert len(a) > 40 and a == b


@pytest.mark.slow
def test_two_runs_sharing_one_cache_directory_agree(tiny_runs):
    assert tree(tiny_runs["b"]) == tree(tiny_runs["c"])
    assert list((tiny_runs["shared-cache"]).rglob("shard-*.npz"))


@pytest.mark.slow
def test_kill_9_then_unlock_rerun_is_byte_identical(tiny_runs):
    assert tiny_runs["c running when killed"], "the run finished before it could be interrupted"
    rc, said = tiny_runs["c plain rerun"]
    # the plain rerun stops and names the way out: the stale lock, or outputs of killed jobs
    assert rc != 0 and ("--unlock" in said or "--rerun-incomplete" in said), said[-3000:]
    # after the recovery documented in docs/TROUBLESHOOTING.md, the same bytes as a clean run
    assert tree(tiny_runs["c"]) == tree(tiny_runs["a"])


@pytest.mark.slow
def test_moved_working_directory_or_other_cache_reruns_nothing(tiny_runs, tmp_path):
    """Absolute locations (the embedding cache, downloads) reach the steps through derived
    params, not as settings: moving a finished run, or pointing cache_dir elsewhere, reruns
    no job."""
    moved = tmp_path / "moved"
    shutil.copytree(tiny_runs["a"], moved, symlinks=True)  # copy2: modification times kept
    for extra in ((), ("--config", f"cache_dir={tmp_path / 'other-cache'}")):
        res = _smk(moved, 1, "--dry-run", *extra)
        assert res.returncode == 0 and "Nothing to be done" in res.stdout + res.stderr, (res.stdout + res.stderr)[
            -3000:
        ]


def _venv(tmp_path: Path) -> Path:
    """A VENV for the Makefile: this interpreter's bin folder and this checkout's source."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "activate").write_text(f'export PATH="{BIN}:$PATH"\nexport PYTHONPATH="{ROOT / "src"}"\n')
    return venv


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_figures_reruns_only_the_reports_and_fails_on_a_missing_artifact(tiny_runs, tmp_path):
    wd = tmp_path / "wd"
    shutil.copytree(tiny_runs["a"], wd, symlinks=True)
    before = tree(wd)
    cmd = ["make", "-s", "figures", f"VENV={_venv(tmp_path)}", "CONFIG=tests/data/tiny.yaml", f"SNAKEMAKE_ARGS=-d {wd}"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    said = res.stdout + res.stderr
    assert res.returncode == 0, said[-4000:]
    assert set(re.findall(r"^(?:local)?rule (\w+):", said, re.M)) == {"report", "case_report", "human_tally", "all"}
    assert tree(wd) == before  # rebuilt, the same bytes
    (wd / "artifacts/tiny/case/bkr.csv").unlink()
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    said = res.stdout + res.stderr
    assert res.returncode != 0 and "bkr.csv" in said, said[-4000:]
    assert not (wd / "artifacts/tiny/case/bkr.csv").exists()  # nothing upstream recomputed
