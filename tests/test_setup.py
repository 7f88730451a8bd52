"""scripts/setup.sh: where torch comes from. The CPU wheel index is used when it answers and
the configured pip index otherwise (an unreachable or silent index costs at most the probe
timeout); a CUDA build is asked for with TORCH_BUILD=cuda. The functions are sourced from the
script (it runs nothing when sourced); the index is a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import re
import socket
import subprocess
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup.sh"


def _run(snippet: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    import os

    full = {**os.environ, **(env or {})}
    return subprocess.run(
        ["bash", "-c", f"source {SETUP}; set +e; {snippet}"],
        capture_output=True,
        text=True,
        env=full,
        timeout=timeout,
        cwd=ROOT,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cpu_index(tmp_path):
    """A PEP 503-style index on 127.0.0.1 with a ``torch/`` page, as download.pytorch.org/whl/cpu."""
    (tmp_path / "whl/cpu/torch").mkdir(parents=True)
    (tmp_path / "whl/cpu/torch/index.html").write_text("<a href='torch-2.13.0+cpu-cp311-none-linux_x86_64.whl'>t</a>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path), **kw)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_sourcing_the_script_runs_nothing():
    r = _run("echo sourced")
    assert r.returncode == 0 and r.stdout == "sourced\n" and "setup:" not in r.stderr


def test_cpu_build_comes_from_the_cpu_index_when_it_answers(cpu_index):
    r = _run("torch_pip_args cpu", {"TORCH_CPU_INDEX": cpu_index})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["--index-url", cpu_index]
    assert f"CPU wheel index {cpu_index}" in r.stderr


def test_unreachable_cpu_index_falls_back_to_the_configured_index():
    url = f"http://127.0.0.1:{_free_port()}/whl/cpu"  # nothing listens there
    r = _run("torch_pip_args cpu", {"TORCH_CPU_INDEX": url, "TORCH_PROBE_TIMEOUT": "2"})
    assert r.returncode == 0 and r.stdout == ""  # no --index-url: pip's configured index
    assert f"{url} unreachable" in r.stderr and "configured pip index" in r.stderr


def test_a_silent_cpu_index_costs_only_the_probe_timeout():
    """A host that accepts the connection and never answers (a firewall that drops): the probe
    gives up after TORCH_PROBE_TIMEOUT seconds and setup falls back."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # never accepted, never answered
        url = f"http://127.0.0.1:{s.getsockname()[1]}/whl/cpu"
        # a probe that ignored its timeout would hang on the silent host until _run's 15 s limit
        r = _run("torch_pip_args cpu", {"TORCH_CPU_INDEX": url, "TORCH_PROBE_TIMEOUT": "1"}, timeout=15)
    assert r.returncode == 0 and r.stdout == "" and "unreachable (1s)" in r.stderr


def test_cuda_build_switch(cpu_index):
    r = _run("torch_pip_args cuda", {"TORCH_CPU_INDEX": cpu_index, "TORCH_CUDA_INDEX": ""})
    assert r.returncode == 0 and r.stdout == "" and "CUDA build from the configured pip index" in r.stderr
    cu = "https://download.pytorch.org/whl/cu126"
    r = _run("torch_pip_args cuda", {"TORCH_CUDA_INDEX": cu})
    assert r.stdout.split() == ["--index-url", cu]
    r = _run("torch_pip_args rocm")
    assert r.returncode == 2 and "TORCH_BUILD must be cpu or cuda; got 'rocm'" in r.stderr
    r = subprocess.run(
        ["bash", str(SETUP)], env={"TORCH_BUILD": "gpu", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert r.returncode == 2 and "got 'gpu'" in r.stderr  # refused before anything is installed


def test_installed_build_is_read_from_the_metadata():
    """The idempotence check (no torch import): cpu/cuda and the version of the venv's torch."""
    import sys

    torch = pytest.importorskip("torch")
    r = _run(f"PATH={Path(sys.executable).parent}:$PATH; installed_torch_build")
    build, version = r.stdout.split("\n")
    assert build == ("cuda" if torch.version.cuda else "cpu")
    assert version == torch.__version__.split("+")[0]


# ---------------------------------------------------------------------- the environment lock


def _venv_path() -> str:
    import sys

    return f"PATH={Path(sys.executable).parent}:$PATH"


def test_lock_args_constrain_pip_to_the_lock_unless_opted_out(tmp_path):
    r = _run("lock_args")
    assert r.returncode == 0 and r.stdout.split() == ["-c", "requirements.lock"], r.stderr
    r = _run("lock_args", {"LOCK": "none"})
    assert r.returncode == 0 and r.stdout == "" and "LOCK=none" in r.stderr
    r = _run("lock_args", {"LOCK": str(tmp_path / "missing.lock")})
    assert r.returncode == 2 and "no environment lock" in r.stderr and "make lock" in r.stderr


def test_make_lock_writes_the_committed_lock_from_the_venv(tmp_path):
    """The writer `make lock` runs (bash scripts/setup.sh lock) gives the committed file: the
    lock is the current .venv's (a package upgraded without `make lock` fails here)."""
    out = tmp_path / "requirements.lock"
    r = _run(f"{_venv_path()}; write_lock {out}")
    assert r.returncode == 0, r.stderr
    assert out.read_text() == (ROOT / "requirements.lock").read_text()
    pins = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9._-]+==[^+\s]+", p) for p in pins)
    assert not [p for p in pins if p.lower().startswith("backretrieval==")]


def test_a_package_off_its_locked_version_makes_setup_install(tmp_path):
    """The idempotence check: with the committed lock everything matches (a re-run installs
    nothing); a lock pinning another version of an installed package makes setup reinstall
    with the lock, and a locked package that nothing installed is no reason to."""
    lock = (ROOT / "requirements.lock").read_text()
    r = _run(f"{_venv_path()}; requirements_met; echo rc=$?")
    assert r.stdout.strip().endswith("rc=0"), r.stdout + r.stderr
    other = tmp_path / "other.lock"
    other.write_text(re.sub(r"^numpy==\S+$", "numpy==0.0.1", lock, flags=re.M))
    r = _run(f"{_venv_path()}; requirements_met; echo rc=$?", {"LOCK": str(other)})
    assert r.stdout.strip().endswith("rc=1"), r.stdout + r.stderr
    extra = tmp_path / "extra.lock"
    extra.write_text(lock + "not-a-package-here==1.0\n")
    r = _run(f"{_venv_path()}; requirements_met; echo rc=$?", {"LOCK": str(extra)})
    assert r.stdout.strip().endswith("rc=0"), r.stdout + r.stderr
    r = _run(f"{_venv_path()}; requirements_met; echo rc=$?", {"LOCK": "none"})
    assert r.stdout.strip().endswith("rc=0"), r.stdout + r.stderr


def test_unknown_argument_is_refused_before_anything_is_installed():
    r = subprocess.run(["bash", str(SETUP), "lokc"], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert r.returncode == 2 and "unknown argument 'lokc'" in r.stderr
