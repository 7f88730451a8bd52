"""scripts/setup.sh: where torch comes from. The CPU wheel index is used when it answers and
the configured pip index otherwise (an unreachable or silent index costs at most the probe
timeout); a CUDA build is asked for with TORCH_BUILD=cuda. The functions are sourced from the
script (it runs nothing when sourced); the index is a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import socket
import subprocess
import threading
import time
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
        t0 = time.monotonic()
        r = _run("torch_pip_args cpu", {"TORCH_CPU_INDEX": url, "TORCH_PROBE_TIMEOUT": "1"})
        took = time.monotonic() - t0
    assert r.returncode == 0 and r.stdout == "" and "unreachable (1s)" in r.stderr
    assert took < 15, took


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
