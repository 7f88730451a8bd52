"""The ``snakemake`` and ``dvc`` programs of the suite, started from an interpreter that imported
them once (imported by tests/snake.py, which owns the one instance; the server runs this file).

Each test process starts one server (``Server``), which imports ``snakemake.cli`` (collecting its
plugins) and ``dvc.cli`` with the modules DVC's commands load, then listens on a Unix socket in
a private folder. For each request it forks a child, and that child is the run: a process and
session of its own, the caller's standard streams (passed as file descriptors), working
directory, environment, argv, and a ``sys.path`` built as a new interpreter builds it (the run's
PYTHONPATH first, not the server's); it calls the program's entry point (``snakemake.cli.main``,
``dvc.cli.main``) and exits with its code. Nothing of the workflow or of ``backretrieval`` is
imported before the fork.

Two kinds of caller: ``Server.run`` (a test waiting for a finished run, with a timeout) and the
two stand-in programs the server's folder holds, ``bin/snakemake`` and ``bin/dvc``, for commands
that other programs start by name (a DVC stage's ``snakemake``). A stand-in is this file run by
``python -IS``: it passes its own streams, passes SIGTERM/SIGINT/SIGHUP on to the run's process,
and exits as the run did. A run whose caller goes away (a killed stand-in) is killed; so
is every run when the test process ends (the server's input closes).

Only the standard library is imported here, so that a stand-in starts in milliseconds.
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

PROGRAMS = ("snakemake", "dvc")


# ----------------------------------------------------------------------------------- the caller
def _send(sock: socket.socket, argv: list[str], cwd: str, environ: Mapping[str, str], fds: list[int]) -> int:
    """Sends a request (the streams as descriptors, then one JSON line); returns the run's pid."""
    socket.send_fds(sock, [b"R"], fds)
    sock.sendall(json.dumps({"argv": argv, "cwd": cwd, "env": dict(environ)}).encode() + b"\n")
    return int(json.loads(_line(sock))["pid"])


def _line(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError("the pre-imported server closed the connection")
        data += chunk
    return data


def _exit_code(sock: socket.socket) -> int:
    return int(json.loads(_line(sock))["rc"])


def stand_in(address: str, program: str) -> None:
    """A stand-in program: runs ``program`` with this process's argv, streams, folder and
    environment, and exits as it did."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(address)
        pid = _send(sock, [program, *sys.argv[1:]], os.getcwd(), os.environ, [0, 1, 2])

        def forward(signum: int, _frame: object) -> None:  # as a `kill` of the program's own pid
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, forward)
        rc = _exit_code(sock)  # a handled signal does not interrupt the wait (PEP 475)
    if rc < 0:  # ended by a signal: end the same way
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    sys.exit(rc)


class Server:
    """One server per test process, started on first use; ``bin`` holds the stand-ins."""

    def __init__(self, python: str = sys.executable) -> None:
        self._python = python
        self._proc: subprocess.Popen | None = None
        self._folder: tempfile.TemporaryDirectory | None = None
        self._lock = threading.Lock()

    @property
    def bin(self) -> Path:
        self._ensure()
        assert self._folder is not None
        return Path(self._folder.name) / "bin"

    def _ensure(self) -> str:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._folder = tempfile.TemporaryDirectory(prefix="preimported-")
                folder = Path(self._folder.name)
                address = str(folder / "socket")
                (folder / "bin").mkdir()
                programs = Path(self._python).parent
                for name in PROGRAMS:
                    shim = folder / "bin" / name
                    shim.write_text(
                        f"#!{self._python} -IS\nimport sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                        f"import preimported\npreimported.stand_in({address!r}, {str(programs / name)!r})\n",
                        encoding="utf-8",
                    )
                    shim.chmod(0o755)
                env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                self._proc = subprocess.Popen(
                    [self._python, __file__, "--serve", address], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
                )
                assert self._proc.stdout.readline() == b"ready\n", "the pre-imported server did not start"
            return str(Path(self._folder.name) / "socket")

    def run(
        self, argv: list[str], env: Mapping[str, str], cwd: Path | None, timeout: float
    ) -> subprocess.CompletedProcess:
        """Runs ``argv`` (its first item the program's path) to the end, its stdout and stderr
        captured as text; a timeout kills the run's process group and raises
        ``subprocess.TimeoutExpired``."""
        assert Path(argv[0]).name in PROGRAMS, f"the pre-imported server runs {PROGRAMS}, not {argv[0]}"
        address = self._ensure()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull, "rb") as nothing:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(address)
                pid = _send(
                    sock, list(argv), str(cwd or Path.cwd()), env, [nothing.fileno(), out.fileno(), err.fileno()]
                )
                timed_out = not select.select([sock], [], [], timeout)[0]
                if timed_out:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                rc = _exit_code(sock)
            for f in (out, err):
                f.seek(0)
            stdout, stderr = (f.read().decode("utf-8", "replace") for f in (out, err))
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr)
        return subprocess.CompletedProcess(argv, rc, stdout, stderr)


# ----------------------------------------------------------------------------------- the server
#: DVC loads most of its code when a command runs; the server loads what the suite's commands use
_DVC_MODULES = (
    "dvc.repo",
    "dvc.repo.index",
    "dvc.repo.status",
    "dvc.repo.reproduce",
    "dvc.repo.commit",
    "dvc.repo.push",
    "dvc.repo.pull",
    "dvc.repo.experiments",
    "dvc.repo.plots",
    "dvc.stage",
    "dvc.output",
    "dvc.dependency",
    "dvc.dvcfile",
    "dvc.commands.status",
    "dvc.commands.repro",
    "dvc.commands.commit",
    "dvc.commands.data_sync",
    "dvc.commands.experiments",
    "dvc.commands.plots",
    "dvc.commands.remote",
    "dvc.commands.dag",
    "dvc_data.hashfile.build",
    "dvc_data.index",
    "scmrepo.git",
)


def _serve(address: str) -> None:
    import importlib

    import dvc.cli
    import snakemake.cli

    snakemake.cli.get_argument_parser()  # collects the installed plugins once
    for name in _DVC_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # another DVC version: that command loads it itself
            pass
    entry = {"snakemake": snakemake.cli.main, "dvc": lambda: sys.exit(dvc.cli.main(sys.argv[1:]))}
    site_path = [p for p in sys.path[1:] if p]  # without this script's folder (no PYTHONPATH here)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    sys.stdout.buffer.write(b"ready\n")
    sys.stdout.buffer.flush()
    runs: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, the caller's connection)
    callers: dict[int, int] = {}  # a connection whose caller may still go away -> its run's pid
    stdin = sys.stdin.buffer.fileno()
    try:
        while True:
            ready = select.select([listener, stdin, *runs, *callers], [], [])[0]
            if stdin in ready:  # the test process ended
                return
            for fd in ready:
                if fd in runs:  # a run ended: its exit code to its caller
                    pid, conn = runs.pop(fd)
                    os.close(fd)
                    callers.pop(conn.fileno(), None)
                    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                    try:
                        conn.sendall(json.dumps({"rc": code}).encode() + b"\n")
                    except OSError:
                        pass
                    conn.close()
                elif fd in callers:  # the caller went away (it sends nothing more): end its run
                    try:
                        os.killpg(callers.pop(fd), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            if listener in ready:
                conn, _ = listener.accept()
                _, fds, _, _ = socket.recv_fds(conn, 1, 3)
                req = json.loads(conn.makefile("rb").readline())
                program = os.path.basename(req["argv"][0])
                pid = os.fork()
                if pid == 0:
                    for other in (listener, *(c for _, c in runs.values())):
                        other.close()
                    for pidfd in runs:
                        os.close(pidfd)
                    _child(req, fds, entry[program], site_path)
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                runs[os.pidfd_open(pid)] = (pid, conn)
                callers[conn.fileno()] = pid
    finally:
        for pid, _ in runs.values():
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _child(req: dict, fds: list[int], main, site_path: list[str]) -> None:
    """The forked run: a session of its own, the caller's streams, folder, environment,
    ``sys.path`` and argv, then the program's entry point; never returns."""
    import atexit
    import traceback

    code = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        pythonpath = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [os.path.dirname(req["argv"][0]), *pythonpath, *site_path]
        sys.argv = list(req["argv"])
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


if __name__ == "__main__" and sys.argv[1:2] == ["--serve"]:
    _serve(sys.argv[2])
