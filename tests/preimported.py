"""The fork server behind ``snake.run_snakemake``: Snakemake imported once per test process,
each run a fork of it (about 1 CPU-second less per run; tests/README.md has the measurement).

``Server`` (tests/snake.py owns the one instance) starts this file as a process that imports
``snakemake.cli`` and collects its plugins, then listens on a Unix socket in a private folder.
A request is one JSON line: argv, working directory, environment, and the files for the run's
stdout and stderr. For each request the server forks a child, and that child is the run: a
session of its own, the request's folder, environment, argv and streams, and a ``sys.path``
built as a new interpreter builds it (the run's PYTHONPATH first, not the server's); it calls
``snakemake.cli.main`` and exits with its code, which the server sends back. Nothing of the
workflow or of ``backretrieval`` is imported before the fork.

A timeout kills the run's process group (the run and the jobs it started); every run still
going is killed when the test process ends (the server's stdin closes). Only the standard
library and Snakemake are imported here.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path


# ----------------------------------------------------------------------------------- the caller
def _reply(sock: socket.socket) -> dict:
    """One JSON line from the server, read a byte at a time: nothing after it leaves the socket
    (a buffered read could take the exit code with the pid, and the wait for it would not see it)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError("the pre-imported server closed the connection")
        data += chunk
    return json.loads(data)


class Server:
    """One server per test process, started on first use (and again if it died)."""

    def __init__(self, python: str = sys.executable) -> None:
        self._python = python
        self._proc: subprocess.Popen | None = None
        self._folder: tempfile.TemporaryDirectory | None = None
        self._lock = threading.Lock()

    def _address(self) -> str:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._folder = tempfile.TemporaryDirectory(prefix="preimported-")
                address = str(Path(self._folder.name) / "socket")
                env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                self._proc = subprocess.Popen(
                    [self._python, __file__, address], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
                )
                assert self._proc.stdout.readline() == b"ready\n", "the pre-imported Snakemake did not start"
            return str(Path(self._folder.name) / "socket")

    def run(
        self, argv: list[str], env: Mapping[str, str], cwd: Path | None, timeout: float
    ) -> subprocess.CompletedProcess:
        """Runs the ``snakemake`` command ``argv`` to the end, its stdout and stderr captured as
        text; a timeout kills the run's process group and raises ``subprocess.TimeoutExpired``."""
        assert Path(argv[0]).name == "snakemake", f"the pre-imported server runs snakemake, not {argv[0]}"
        address = self._address()
        with tempfile.TemporaryDirectory(prefix="run-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            request = {
                "argv": list(argv),
                "cwd": str(cwd or Path.cwd()),
                "env": dict(env),
                "out": str(out),
                "err": str(err),
            }
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(address)
                sock.sendall(json.dumps(request).encode() + b"\n")
                pid = _reply(sock)["pid"]
                timed_out = not select.select([sock], [], [], timeout)[0]
                if timed_out:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                rc = _reply(sock)["rc"]
            stdout, stderr = (p.read_text(encoding="utf-8", errors="replace") if p.exists() else "" for p in (out, err))
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr)
        return subprocess.CompletedProcess(argv, rc, stdout, stderr)


# ----------------------------------------------------------------------------------- the server
def _serve(address: str) -> None:
    import snakemake.cli

    snakemake.cli.get_argument_parser()  # collects the installed plugins once
    site_path = [p for p in sys.path[1:] if p]  # without this script's folder (no PYTHONPATH here)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    sys.stdout.buffer.write(b"ready\n")
    sys.stdout.buffer.flush()
    runs: dict[int, tuple[int, socket.socket]] = {}  # pidfd of a run -> (its pid, its caller's connection)
    stdin = sys.stdin.buffer.fileno()
    try:
        while True:
            ready = select.select([listener, stdin, *runs], [], [])[0]
            if stdin in ready:  # the test process ended
                return
            for fd in ready:
                if fd in runs:  # a run ended: its exit code to its caller
                    pid, conn = runs.pop(fd)
                    os.close(fd)
                    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                    try:
                        conn.sendall(json.dumps({"rc": code}).encode() + b"\n")
                    except OSError:  # the caller went away
                        pass
                    conn.close()
            if listener in ready:
                conn, _ = listener.accept()
                request = json.loads(conn.makefile("rb").readline())
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for pidfd, (_, other) in runs.items():
                        os.close(pidfd)
                        other.close()
                    _child(request, snakemake.cli.main, site_path)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                runs[os.pidfd_open(pid)] = (pid, conn)
    finally:
        for pid, _ in runs.values():
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _child(request: dict, main, site_path: list[str]) -> None:
    """The forked run: a session of its own, the request's streams, folder, environment,
    ``sys.path`` and argv, then Snakemake's entry point; never returns."""
    import atexit
    import traceback

    code = 1
    try:
        os.setsid()
        streams = [os.open(os.devnull, os.O_RDONLY)]
        streams += [os.open(request[k], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for k in ("out", "err")]
        for target, fd in enumerate(streams):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        pythonpath = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [os.path.dirname(request["argv"][0]), *pythonpath, *site_path]
        sys.argv = list(request["argv"])
        main()
        code = 0
    except SystemExit as exc:  # as the interpreter ends on it: a non-integer code is printed, exit 1
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


if __name__ == "__main__":
    _serve(sys.argv[1])
