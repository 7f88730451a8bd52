"""DVC versions the Snakemake DAG (docs/ARCHITECTURE.md, "One DAG"): dvc.yaml is generated
from the Snakemake workflow by scripts/dvc_stages.py, one stage per run config, each stage
running Snakemake. Tested end to end with the default local remote on tests/data/tiny.yaml
(SYNTHETIC data, model-free encoders, case study included) in fresh copies of this checkout:
`dvc repro` → status clean → `dvc push` → a second clone `dvc pull` → status clean, and
Snakemake's own run of the config (the session's tiny reference run, conftest.py) gives the
same bytes and, placed in a third clone, `dvc commit` there leaves the first clone's dvc.lock
unchanged, and the status is clean; then the same through a real remote, an
S3 server on loopback (moto, started and stopped by a fixture): `dvc push` and `dvc pull` into
a fresh clone.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import snake
from backretrieval._util.code_version import VERSIONS_FILE
from snake import BIN, ROOT, run_snakemake

TINY = "tests/data/tiny.yaml"
RUN_FILES = ("artifacts/tiny", "data/prepared/synthetic-tiny", "reports/tiny")
needs_dvc = pytest.mark.skipif(shutil.which("dvc", path=str(BIN)) is None, reason="dvc not installed")


def _env(repo: Path) -> dict[str, str]:
    """The environment of a command in ``repo``: that copy's own source tree."""
    return snake.env(repo / "src")


def _run(cmd: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_env(cwd), timeout=timeout)


def _ok(cmd: list[str], cwd: Path, timeout: int = 600) -> str:
    res = _run(cmd, cwd, timeout)
    assert res.returncode == 0, f"{' '.join(cmd)} in {cwd}:\n{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
    return res.stdout


def _git(cwd: Path, *args: str) -> str:
    return _ok(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd)


def _fresh_copy(dst: Path) -> Path:
    """This checkout's files as a clone of it would have them (tracked + new, not ignored),
    committed to a new git repository."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, (f.decode() for f in listed)):
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    _git(dst, "init", "-q")
    _git(dst, "add", "-A")
    _git(dst, "commit", "-qm", "fresh clone")
    return dst


def _only_the_generated_dvc_yaml(repo: Path) -> None:
    """A project whose one pipeline is the dvc.yaml just generated for the test's configs: without
    the listed real-data runs' runs/dvc.yaml (whose stages would overlap or need data/raw), the
    raw data's data.dvc, and the committed dvc.lock, whose entries are the replaced stages' (DVC
    would keep them and parse and rewrite all of them at each stage it runs)."""
    shutil.rmtree(repo / "runs")
    (repo / "data.dvc").unlink()
    (repo / "dvc.lock").unlink()


def _tree(repo: Path) -> dict[str, str]:
    out = {}
    for rel in RUN_FILES:
        for p in sorted((repo / rel).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(repo))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _artifacts(clone: Path) -> list[str]:
    """The files of the tiny run's artifacts in ``clone``."""
    return sorted(p.relative_to(clone).as_posix() for p in (clone / "artifacts/tiny").rglob("*") if p.is_file())


def _dvc(repo: Path, *args: str) -> str:
    return _ok(["dvc", *args], repo)


def _status(repo: Path) -> dict:
    return json.loads(_dvc(repo, "status", "--json"))


# ---------------------------------------------------------------------------------- fast


def test_committed_dvc_yaml_is_a_fresh_generation():
    res = subprocess.run(
        [sys.executable, "scripts/dvc_stages.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(ROOT),
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_every_named_config_is_a_stage_or_listed_with_a_reason():
    runs = yaml.safe_load((ROOT / "scripts/dvc_runs.yaml").read_text())
    stages, others = list(runs["stages"]), dict(runs["not_stages"])
    named = {f"config/{p.name}" for p in (ROOT / "config").glob("*.yaml")}
    assert "params.yaml" in stages
    assert not set(stages) & set(others)
    assert set(stages) | set(others) == named | {"params.yaml"}
    for cfg, reason in others.items():
        assert isinstance(reason, str) and len(reason) > 20, cfg
    for cfg in stages:
        assert (ROOT / cfg).is_file(), cfg
    assert set(runs.get("findings") or []) <= set(stages)  # a findings stage follows its run's stage


@needs_dvc
def test_a_few_stages_per_run_each_running_snakemake_until_its_rules():
    """A stage per kind of output (data, embeddings, metrics, report, case study), each
    `snakemake --until` its rules (Snakemake decides which jobs run); no stage lists a source
    file: the code is the steps' versions (workflow/code_versions.yaml); outs are folders where
    every file in them is the stage's; the committed reports and the training curves' data are
    git files; the DVC files of every configuration are short."""
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    stages = doc["stages"]
    assert list(stages) == [f"default-{s}" for s in ("data", "embeddings", "metrics", "report", "case_study")]
    for name, stage in stages.items():
        assert stage["cmd"].startswith("snakemake --cores all --quiet --until "), name
        assert not any(d.startswith(("src/", "workflow/", "Snakefile")) for d in stage.get("deps", [])), name
        (versions,) = [p for p in stage["params"] if VERSIONS_FILE in p]
        assert set(versions[VERSIONS_FILE]) <= set(yaml.safe_load((ROOT / VERSIONS_FILE).read_text())), name
    assert stages["default-metrics"]["cmd"].endswith("--until metrics")  # sample runs before it
    assert stages["default-metrics"]["params"][0] == {
        "params.yaml": ["sample_size", "seeds", "directions", "recall_k", "corr_max_pairs", "dataset.name"]
    }
    embed = stages["default-embeddings"]
    assert embed["outs"] == ["artifacts/default/image", "artifacts/default/text"]
    assert "sample_size" not in embed["params"][0]["params.yaml"]
    assert set(stages["default-report"]["deps"]) >= {"artifacts/default/metrics", "artifacts/default/samples"}
    report_outs = [o for o in stages["default-report"]["outs"] if isinstance(o, dict)]
    assert {"reports/default/table1.md": {"cache": False}} in report_outs
    assert not any("logs/" in str(o) for s in stages.values() for o in s.get("outs", []))
    # the declared metrics: the run's headline numbers (metrics.json and the case study's files
    # stay versioned outs of their stages)
    assert doc["metrics"] == ["reports/default/headline.json"]
    # the heads' training curves: git files (not cached), so the plots render without the cache
    (curves,) = [p["default training loss"] for p in doc["plots"] if "default training loss" in p]
    histories = set(curves["y"])
    assert histories == {
        f"artifacts/default/case/heads/seed{s}/{h}.history.csv" for h in ("triplet", "tripletxl") for s in range(8)
    }
    assert all({h: {"cache": False}} in stages["default-case_study"]["outs"] for h in histories)
    lines = sum(len((ROOT / f).read_text().splitlines()) for f in ("dvc.yaml", "dvc.lock", "runs/dvc.yaml"))
    lines += sum(len(p.read_text().splitlines()) for p in [ROOT / "runs/dvc.lock"] if p.is_file())
    assert lines <= 5000, lines


@needs_dvc
def test_committed_dvc_lock_records_this_trees_code_config_and_params():
    """dvc.lock attests which code, workflow and params made the committed outputs: a change to
    any of them without `make run` + `dvc commit default` (or `dvc repro`) leaves a lock that
    `dvc status` reports as changed deps. Outputs missing here (a fresh clone) are not checked.
    The default run's lock (dvc.yaml); a real-data run's (runs/dvc.yaml) records the code of the
    run that made its committed reports, until that run is made again (`make run CONFIG=...`)."""
    res = _run(["dvc", "status", "--json", "dvc.yaml"], ROOT, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    # A dep reported "deleted" is absent from this checkout: another stage's output that a fresh
    # clone has not pulled or produced. Only a dep that is present and differs makes the lock stale.
    changed = {
        stage: stale
        for stage, entries in json.loads(res.stdout or "{}").items()
        for entry in entries
        if isinstance(entry, dict)
        and (stale := {p: s for p, s in entry.get("changed deps", {}).items() if s != "deleted"})
    }
    assert not changed, (
        f"dvc.lock is stale for {changed}: run `make run` (then `dvc commit` the stage) and commit dvc.lock"
    )


REAL_RUNS = ("config/multi30k.yaml", "config/multi30k_task2.yaml", "config/multi30k_flickr8k.yaml")
SHARED = ROOT.parent / "shared" / "datasets"


def test_real_data_runs_are_stages_on_versioned_raw_data():
    """Each Multi30K config is a stage set in dvc.yaml whose prepare jobs depend on the raw files
    they name, all inside data/raw/, which data.dvc versions (a frozen import of the mirror)."""
    listed = yaml.safe_load((ROOT / "scripts/dvc_runs.yaml").read_text())["stages"]
    assert set(REAL_RUNS) <= set(listed)
    raw = yaml.safe_load((ROOT / "data.dvc").read_text())
    assert raw["frozen"] is True
    assert [d["path"] for d in raw["deps"]] == ["../shared/datasets"]
    assert [o["path"] for o in raw["outs"]] == ["data/raw"] and raw["outs"][0]["md5"].endswith(".dir")
    # apart from the default run's dvc.yaml, so `dvc repro` / `dvc exp run` never need the real data
    assert not [n for n in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"] if not n.startswith("default-")]
    # so `make run` commits and pushes the default run's stages as one target, the file
    assert _ok([sys.executable, "scripts/dvc_stages.py", "--targets", "params.yaml"], ROOT).split() == ["dvc.yaml"]
    stages = yaml.safe_load((ROOT / "runs/dvc.yaml").read_text())["stages"]
    assert all(s["wdir"] == ".." for s in stages.values())  # run in the repository root
    for cfg in REAL_RUNS:
        qualified = _ok([sys.executable, "scripts/dvc_stages.py", "--targets", cfg], ROOT).split()
        names = [n.removeprefix("runs/dvc.yaml:") for n in qualified]
        run = yaml.safe_load((ROOT / cfg).read_text())["run_name"]
        assert all(n.startswith("runs/dvc.yaml:") for n in qualified), cfg
        assert names and all(n.startswith(f"{run}-") for n in names), cfg
        assert f" --configfile {cfg} " in stages[f"{run}-data"]["cmd"]
        raw_deps = [d for d in stages[f"{run}-data"]["deps"] if d.startswith("data/raw/")]
        assert raw_deps, stages[f"{run}-data"]["deps"]
        assert not any(d.startswith("..") for s in names for d in stages[s].get("deps", [])), cfg  # nothing outside


@needs_dvc
def test_status_names_the_raw_input_and_outputs_a_clone_lacks(tmp_path):
    """In a clone without data/raw/ and the run's outputs, `dvc status` of a real-data run names
    the missing raw input of its prepare stage and data.dvc's missing folder."""
    repo = _fresh_copy(tmp_path / "repo")
    assert not (repo / "data" / "raw").exists()
    status = json.loads(_dvc(repo, "status", "--json", "data.dvc", "runs/dvc.yaml:multi30k-data"))
    (deps,) = [e["changed deps"] for e in status["runs/dvc.yaml:multi30k-data"] if "changed deps" in e]
    assert deps["data/raw/multi30k"] == "deleted"
    assert deps["data/raw/multi30k-resnet50/test_2016_flickr-resnet50-avgpool.npy"] == "deleted"
    (outs,) = [e["changed outs"] for e in status["data.dvc"] if "changed outs" in e]
    assert set(outs) == {"data/raw"}


@needs_dvc
@pytest.mark.skipif(not SHARED.is_dir(), reason=f"the local mirror {SHARED} is absent")
def test_raw_data_reaches_a_collaborator_through_the_remote_without_the_mirror(tmp_path):
    """`make raw-data` where the mirror is (`dvc update data.dvc`: the same hash as committed),
    `dvc push`; a collaborator's clone with no mirror beside it restores data/raw/ byte for byte
    with `dvc pull data.dvc`, and its status is clean."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "shared").symlink_to(SHARED.parent)
    c1 = _fresh_copy(tmp_path / "a" / "c1")
    remote = tmp_path / "remote"
    _dvc(c1, "remote", "modify", "--local", "storage", "url", str(remote))
    _dvc(c1, "update", "--quiet", "data.dvc")
    _git(c1, "diff", "--exit-code", "--", "data.dvc")  # the mirror is the versioned raw data
    _dvc(c1, "push", "data.dvc")
    (tmp_path / "b").mkdir()
    _git(tmp_path / "b", "clone", "-q", str(c1), "c2")
    c2 = tmp_path / "b" / "c2"
    assert not (tmp_path / "b" / "shared").exists()  # neither the mirror nor upstream
    _dvc(c2, "remote", "modify", "--local", "storage", "url", str(remote))
    _dvc(c2, "pull", "data.dvc")
    files = {p.relative_to(SHARED).as_posix() for p in SHARED.rglob("*") if p.is_file()}
    assert files and files == {
        p.relative_to(c2 / "data/raw").as_posix() for p in (c2 / "data/raw").rglob("*") if p.is_file()
    }
    for rel in files:
        assert (c2 / "data/raw" / rel).read_bytes() == (SHARED / rel).read_bytes(), rel
    assert json.loads(_dvc(c2, "status", "--json", "data.dvc")) == {}


ARTIFACT = b"the artifact's bytes\n"


def _corruption_repo(tmp_path: Path) -> Path:
    """A small DVC project with this checkout's .dvc/config (its default remote's settings): a
    file and a folder tracked, committed to git."""
    repo = tmp_path / "c1"
    repo.mkdir()
    _git(repo, "init", "-q")
    _ok(["dvc", "init", "-q"], repo)
    shutil.copy(ROOT / ".dvc/config", repo / ".dvc/config")
    (repo / "artifacts/d").mkdir(parents=True)
    (repo / "artifacts/x.npz").write_bytes(ARTIFACT)
    (repo / "artifacts/d/a.txt").write_text("one\n")
    (repo / "artifacts/d/b.txt").write_text("two\n")
    _ok(["dvc", "add", "-q", "artifacts/x.npz", "artifacts/d"], repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "outputs")
    return repo


def _clone(repo: Path, name: str, *local_url: str) -> Path:
    _git(repo.parent, "clone", "-q", str(repo), name)
    clone = repo.parent / name
    if local_url:
        _ok(["dvc", "remote", "modify", "--local", *local_url], clone)
    return clone


def _pull_names_the_corrupted_file(clone: Path) -> None:
    """`make pull`'s script in ``clone``: exit 1 naming artifacts/x.npz, its md5 and the way
    out; the file is not checked out, the intact folder is."""
    res = _run([sys.executable, str(ROOT / "scripts/dvc_pull.py")], clone, timeout=120)
    said = res.stdout + res.stderr
    assert res.returncode == 1, said[-3000:]
    md5 = hashlib.md5(ARTIFACT).hexdigest()
    assert re.search(
        rf"artifacts/x\.npz: the remote's copy is corrupted \(md5 [0-9a-f]{{32}}, expected {md5}\): "
        r"rerun `make run` and `dvc push` from a machine that has it",
        said,
    ), said[-3000:]
    assert said.count("corrupted") == 1, said[-3000:]
    assert not (clone / "artifacts/x.npz").exists()  # never checked out
    assert (clone / "artifacts/d/b.txt").read_text() == "two\n"


@needs_dvc
def test_a_corrupted_object_in_the_default_remote_is_caught(tmp_path):
    """The default remote re-hashes what it downloads (`verify = true`): plain `dvc pull` fails
    instead of checking out a corrupted object, and `make pull` names the file and what to do."""
    repo = _corruption_repo(tmp_path)
    remote = tmp_path / "remote"
    _ok(["dvc", "remote", "modify", "--local", "storage", "url", str(remote)], repo)
    _ok(["dvc", "push", "-q"], repo)
    md5 = hashlib.md5(ARTIFACT).hexdigest()
    obj = remote / "files/md5" / md5[:2] / md5[2:]
    obj.chmod(0o644)
    obj.write_bytes(ARTIFACT.replace(b"a", b"A", 1))  # the same size: only a hash tells
    obj.chmod(0o444)  # as DVC left it (bit rot keeps the mode: DVC's status trusts such a file)
    _pull_names_the_corrupted_file(_clone(repo, "c2", "storage", "url", str(remote)))
    # (DVC's own check may then remove the bad copy from a folder remote: the file is "missing")
    plain = _clone(repo, "plain", "storage", "url", str(remote))
    res = _run(["dvc", "pull"], plain, timeout=120)
    assert res.returncode != 0 and not (plain / "artifacts/x.npz").exists(), res.stdout + res.stderr


@needs_dvc
def test_a_corrupted_object_in_an_s3_remote_is_caught(tmp_path, s3_remote):
    """A team's S3 remote (added as the README says, without `verify`) on loopback: the object
    corrupted in the bucket is named by `make pull` and not checked out."""
    endpoint, s3 = s3_remote
    repo = _corruption_repo(tmp_path)
    _ok(["dvc", "remote", "add", "-d", "team", "s3://team-bucket/corrupt"], repo)
    _ok(["dvc", "remote", "modify", "team", "endpointurl", endpoint], repo)
    _git(repo, "add", ".dvc/config")
    _git(repo, "commit", "-qm", "the team's S3 remote")
    _ok(["dvc", "push", "-q"], repo)
    md5 = hashlib.md5(ARTIFACT).hexdigest()
    key = f"corrupt/files/md5/{md5[:2]}/{md5[2:]}"
    assert s3.get_object(Bucket="team-bucket", Key=key)["Body"].read() == ARTIFACT
    s3.put_object(Bucket="team-bucket", Key=key, Body=ARTIFACT.replace(b"a", b"A", 1))
    _pull_names_the_corrupted_file(_clone(repo, "c2"))


# ---------------------------------------------------------------------------------- slow


@pytest.mark.slow
@needs_dvc
def test_every_named_config_runs_under_both_runners(tmp_path):
    """Every config's DAG builds (snakemake --summary inside the generator) and becomes a DVC
    stage that runs Snakemake on it; `dvc repro --dry` resolves each stage."""
    repo = _fresh_copy(tmp_path / "repo")
    configs = ["params.yaml", *sorted(f"config/{p.name}" for p in (ROOT / "config").glob("*.yaml"))]
    _ok([sys.executable, "scripts/dvc_stages.py", *configs], repo, timeout=600)
    _only_the_generated_dvc_yaml(repo)
    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    runs = {yaml.safe_load((ROOT / c).read_text())["run_name"]: c for c in configs}
    # a stage belongs to the longest run name it starts with (run names hold hyphens:
    # multi30k-task2's stages also start with "multi30k-")
    owner = {name: max((r for r in runs if name.startswith(f"{r}-")), key=len, default=None) for name in stages}
    assert set(owner.values()) >= set(runs)
    for run, cfg in runs.items():
        want = "snakemake --cores all --quiet" + ("" if cfg == "params.yaml" else f" --configfile {cfg}") + " --until "
        own = [s for name, s in stages.items() if owner[name] == run]
        assert own and all(s["cmd"].startswith(want) for s in own), run
        files = {next(iter(p)) for s in own for p in s.get("params", [])}
        assert cfg in files and files <= {cfg, "params.yaml", VERSIONS_FILE}, run
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "all stages")
    dag = _dvc(repo, "dag", "--md")
    for name in runs:
        assert name in dag


@pytest.mark.slow
@needs_dvc
def test_dvc_repro_push_pull_and_snakemake_give_the_same_bytes(tmp_path, s3_remote, tiny_reference_run):
    c1 = _fresh_copy(tmp_path / "c1")
    _ok([sys.executable, "scripts/dvc_stages.py", TINY], c1)
    assert all(n.startswith("tiny-") for n in yaml.safe_load((c1 / "dvc.yaml").read_text())["stages"])
    _only_the_generated_dvc_yaml(c1)
    assert list(yaml.safe_load((c1 / "dvc.yaml").read_text())["stages"]) == [
        f"tiny-{s}" for s in ("data", "embeddings", "metrics", "report", "case_study")
    ]
    _git(c1, "add", "-A")
    _git(c1, "commit", "-qm", "a DVC stage for tests/data/tiny.yaml")
    _git(tmp_path, "clone", "-q", str(c1), "c3")
    c3 = tmp_path / "c3"

    # c1 runs the stages through DVC (per stage, Snakemake runs its one job in its shadow
    # directory in Snakemake's own process); Snakemake's own run of the same config on one core,
    # in another folder, is the session's tiny reference run (running in the background since the
    # session started): the bytes must not depend on the runner, the core count or the folder
    repro = subprocess.Popen(
        ["dvc", "repro"], cwd=c1, env=_env(c1), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    reference = tiny_reference_run.path(repro)
    out, _ = repro.communicate(timeout=1800)
    assert repro.returncode == 0, f"dvc repro:\n{out[-5000:]}"
    assert _status(c1) == {}
    # DVC stored each stage's outputs after it ran, rewriting them out of the DAG's order; the
    # inputs' checksums Snakemake recorded (profiles/default: up to 2 GB) show no byte changed,
    # so Snakemake has nothing to do either, with no `snakemake --touch`
    dry = run_snakemake(None, "--dry-run", configfile=TINY, snakefile=None, environ=_env(c1), cwd=c1)
    assert "Nothing to be done" in dry.stdout, dry.stdout[-3000:]
    # `dvc checkout` restores a deleted output (the embeddings: newer now than everything they
    # feed) with the same bytes: again nothing to do for either tool
    emb = next(
        next(iter(o)) if isinstance(o, dict) else o
        for o in yaml.safe_load((c1 / "dvc.yaml").read_text())["stages"]["tiny-embeddings"]["outs"]
        if not (isinstance(o, dict) and next(iter(o.values())).get("cache") is False)
    )
    shutil.rmtree(c1 / emb) if (c1 / emb).is_dir() else (c1 / emb).unlink()
    _dvc(c1, "checkout")
    assert _status(c1) == {}
    dry = run_snakemake(None, "--dry-run", configfile=TINY, snakefile=None, environ=_env(c1), cwd=c1)
    assert "Nothing to be done" in dry.stdout, dry.stdout[-3000:]
    expected = _tree(c1)
    assert len(expected) > 60 and any(k.startswith("reports/tiny/case_study/") for k in expected)
    assert _tree(reference) == expected

    # the lock, the committed reports and the training curves' data (cache: false outs live in
    # git; .gitignore lets only those in from artifacts/) + the cached outs pushed
    _git(c1, "add", "dvc.lock", "reports/tiny", "artifacts/tiny")
    seeds = yaml.safe_load((c1 / TINY).read_text())["case_study"]["training_seeds"]
    curves = sorted(
        f"artifacts/tiny/case/heads/seed{s}/{h}.history.csv" for h in ("triplet", "tripletxl") for s in seeds
    )
    assert _ok(["git", "ls-files", "artifacts/tiny"], c1).split() == curves
    _git(c1, "commit", "-qm", "dvc.lock + reports")
    _dvc(c1, "push")
    assert list((tmp_path / "backretrieval-dvc-storage").rglob("*"))  # the default remote, beside the clones

    # a second clone restores the cached outputs from the remote
    _git(tmp_path, "clone", "-q", str(c1), "c2")
    c2 = tmp_path / "c2"
    assert _artifacts(c2) == curves  # before the pull: the plot data only (git files)
    _dvc(c2, "pull")
    assert _status(c2) == {}
    assert _tree(c2) == expected
    # DVC wrote the files in no particular order, and this clone has no Snakemake records of the
    # inputs' checksums: `snakemake --touch --forceall` (what `make pull` ends with) gives them
    # the DAG's order, and then Snakemake has nothing to do either
    run_snakemake(
        None, "--touch", "--forceall", "--quiet", cores=1, configfile=TINY, snakefile=None, environ=_env(c2), cwd=c2
    )
    dry = run_snakemake(None, "--dry-run", configfile=TINY, snakefile=None, environ=_env(c2), cwd=c2)
    assert "Nothing to be done" in dry.stdout, dry.stdout[-3000:]
    assert _status(c2) == {}

    # Snakemake's own run, its working folder (outputs, flags, Snakemake's records) placed in a
    # clone (c3), matches the lock of the DVC run byte for byte: `dvc commit --no-relink` (what
    # `make run` does after Snakemake) stores the outputs in DVC's cache, leaves the committed lock
    # unchanged and every file as Snakemake wrote it (no modification time moves); then the
    # status is clean
    shutil.copytree(reference, c3, symlinks=True, dirs_exist_ok=True)
    _git(c3, "fetch", "-q", "origin")
    _git(c3, "checkout", "FETCH_HEAD", "--", "dvc.lock")
    assert _tree(c3) == expected
    assert _status(c3) != {}  # the outputs are there, but not in this clone's DVC cache
    assert all(n.startswith("tiny-") for n in yaml.safe_load((c3 / "dvc.yaml").read_text())["stages"])
    mtimes = {p: p.stat().st_mtime_ns for p in (c3 / "artifacts").rglob("*") if p.is_file()}
    _dvc(c3, "commit", "--force", "--no-relink", "--quiet", "dvc.yaml")  # the tiny stages only: as make run does
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
    _git(c3, "diff", "--exit-code", "FETCH_HEAD", "--", "dvc.lock")
    assert _status(c3) == {}

    # nothing to do for either runner now
    assert "didn't change" in _dvc(c1, "repro")
    dry = run_snakemake(None, "--dry-run", cores=1, configfile=TINY, snakefile=None, environ=_env(c3), cwd=c3)
    assert "Nothing to be done" in dry.stdout

    # a real remote: S3 on loopback (moto), as a team would share results
    _push_to_s3_and_pull_into_a_fresh_clone(c1, tmp_path, *s3_remote, expected)

    # an experiment on one parameter, then the two commits compared as DVC users do
    _experiment_reruns_only_what_depends_on_sample_size_and_diffs_between_commits(c1)


# ------------------------------------------------------------------- a real remote: S3 on loopback


@pytest.fixture
def s3_remote(monkeypatch):
    """A moto S3 server on 127.0.0.1 (a free port) with one bucket, stopped afterwards; the AWS
    credentials DVC's S3 client needs (moto accepts any) in the environment of every command."""
    pytest.importorskip("dvc_s3", reason="dvc-s3 not installed (the workflow extra)")
    server_mod = pytest.importorskip(
        "moto.server", reason="moto[s3] with flask and flask-cors not installed (the test extra)"
    )
    import socket

    import boto3

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(key, raising=False)
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="team-bucket")
        yield endpoint, boto3.client("s3", endpoint_url=endpoint)
    finally:
        server.stop()


def _push_to_s3_and_pull_into_a_fresh_clone(c1: Path, tmp_path: Path, endpoint: str, s3, expected: dict) -> None:
    """The README's team remote: `dvc remote add -d` an s3:// url (+ endpointurl for a non-AWS
    server) committed to git, `dvc push` from c1, `dvc pull` in a fresh clone: every artifact and
    report byte for byte, `dvc status` clean, and the training curves readable as plot data."""
    _dvc(c1, "remote", "add", "-d", "team", "s3://team-bucket/backretrieval")
    _dvc(c1, "remote", "modify", "team", "endpointurl", endpoint)
    _git(c1, "add", ".dvc/config")
    _git(c1, "commit", "-qm", "the team's S3 remote")
    _dvc(c1, "push")
    assert s3.list_objects_v2(Bucket="team-bucket", Prefix="backretrieval/").get("KeyCount", 0) > 0

    _git(tmp_path, "clone", "-q", str(c1), "c4")
    c4 = tmp_path / "c4"
    assert all(p.endswith(".history.csv") for p in _artifacts(c4))  # the plot data only (git files)
    _dvc(c4, "pull")
    assert _tree(c4) == expected
    assert _status(c4) == {}
    plots = json.loads(_dvc(c4, "plots", "show", "--json"))
    assert not plots.get("errors"), plots.get("errors")
    assert "tiny training loss" in plots["data"]


def _experiment_reruns_only_what_depends_on_sample_size_and_diffs_between_commits(c1: Path) -> None:
    """`dvc exp run -S sample_size=...` runs the stages that track sample_size and those fed by
    their outputs, never an embedding or the case study (whose N is its own key); the result,
    committed, gives `dvc metrics diff` and `dvc plots diff` (training curves included) between
    two commits."""
    params_file = next(iter(next(iter(yaml.safe_load((c1 / "dvc.yaml").read_text())["stages"].values()))["params"][0]))
    out = _dvc(c1, "exp", "run", "-S", f"{params_file}:sample_size=24")
    ran = sorted(set(re.findall(r"Running stage '([^']+)'", out)))
    # the stages that track sample_size (the dataset check reads it too) and the report after them
    assert set(ran) == {"tiny-data", "tiny-metrics", "tiny-report"}, out[-3000:]
    assert _status(c1) == {}
    _git(c1, "add", "-A")
    _git(c1, "commit", "-qm", "sample_size 24")

    metrics = json.loads(_dvc(c1, "metrics", "diff", "HEAD~1", "HEAD", "--json"))
    # the declared metrics: the run's headline.json (the case study has none: it did not change)
    assert set(metrics) == {"reports/tiny/headline.json"}, metrics
    changed = metrics["reports/tiny/headline.json"]
    assert changed["sample_size"] == {"old": 20, "new": 24, "diff": 4}
    assert {"bkr_r", "corr_r"} & set(changed), sorted(changed)

    plots = json.loads(_dvc(c1, "plots", "diff", "HEAD~1", "HEAD", "--json"))
    assert not plots.get("errors"), plots.get("errors")
    for name in ("tiny training loss", "reports/tiny/plots/fig2_xlr_vs_bkr.csv"):
        (entry,) = plots["data"][name]
        values = entry["content"]["data"]["values"]
        assert entry["revisions"] == ["HEAD~1", "HEAD"] and {v["rev"] for v in values} == {"HEAD~1", "HEAD"}, name


@needs_dvc
def test_exp_show_lists_the_compared_parameters_and_summary_metrics():
    """`make exp-show`: `dvc exp show` cut to the parameters and headline metrics a person
    compares, the seeds as a count, one row in at most 120 columns (plain `dvc exp show` lists
    every key and dep)."""
    out = _ok(["make", "-s", "exp-show", "EXP_ARGS=--csv"], ROOT, timeout=300)
    header = out.splitlines()[0].split(",")
    assert {"sample_size", "seeds", "recall_k", "bkr_r", "corr_r", "bkr_rho", "corr_rho"} <= set(header), header
    row = dict(zip(header, out.splitlines()[1].split(",")))
    assert int(row["seeds"]) == len(yaml.safe_load((ROOT / "params.yaml").read_text())["seeds"])
    text = _ok(["make", "-s", "exp-show"], ROOT, timeout=300)
    assert max(len(line) for line in text.splitlines()) <= 120, text


@needs_dvc
def test_dvc_metrics_show_fits_a_terminal():
    """The declared metrics are each run's headline.json (N, seeds, encoders, BkR's and CORR's
    correlations with XLR): `dvc metrics show` fits in 120 columns."""
    out = _ok(["dvc", "metrics", "show"], ROOT, timeout=300)
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines and max(len(line) for line in lines) <= 120, out
    assert "reports/default/headline.json" in out and "bkr_r" in out
