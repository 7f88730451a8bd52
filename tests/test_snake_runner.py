"""The tests' one Snakemake runner (tests/snake.py, tests/preimported.py): a run forked from the
server that imported Snakemake once (``run_snakemake``) behaves as the ``snakemake`` program
started afresh (what ``start`` runs): the same output and exit code, and the run's own working
directory, environment, PYTHONPATH, TMPDIR and argv; a timeout ends the run and the processes
it started."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

import snake
from snake import run_snakemake

# Printed while the Snakefile is parsed: what a run sees of its process.
PROBE = """
import importlib.util, os, sys, tempfile
import probe_module
print("tests", importlib.util.find_spec("snake") is not None)  # the runner's server's own folder
print("cwd", os.getcwd())
print("var", os.environ.get("PROBE_VAR"), "HOME" in os.environ)
print("module", probe_module.__file__)
print("tmp", tempfile.gettempdir())
print("argv", sys.argv[1:])
{extra}
rule all:
    output: "done.txt"
    shell: "echo $PROBE_VAR > {{output}}"
"""


def _world(tmp_path: Path, extra: str = "") -> tuple[Path, dict[str, str]]:
    """A Snakefile that prints what it sees, a module on the run's own PYTHONPATH, and that
    environment."""
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "Snakefile").write_text(PROBE.format(extra=extra), encoding="utf-8")
    (tmp_path / "pp").mkdir()
    (tmp_path / "pp" / "probe_module.py").write_text("", encoding="utf-8")
    (tmp_path / "tmp").mkdir()
    environ = snake.env(PROBE_VAR="from-the-run", TMPDIR=str(tmp_path / "tmp"))
    environ["PYTHONPATH"] = f"{tmp_path / 'pp'}:{environ['PYTHONPATH']}"
    return tmp_path / "wf" / "Snakefile", environ


def _program(cmd: list[str], environ: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, env=environ, cwd=cwd, timeout=300)


def _seen(stdout: str) -> list[str]:
    return [
        line
        for line in stdout.splitlines()
        if line.split(" ", 1)[0] in {"cwd", "var", "module", "tmp", "argv", "tests"}
    ]


def test_a_run_sees_what_the_program_sees_and_writes_the_same(tmp_path):
    snakefile, environ = _world(tmp_path)
    outputs = {}
    for how in ("program", "runner"):
        here, wd = tmp_path / f"cwd-{how}", Path(f"wd-{how}")  # -d relative to the run's folder
        here.mkdir()
        args = ("--cores", "1", "--config", "probe=1")
        if how == "program":
            res = _program(snake.command(wd, *args, snakefile=snakefile), environ, here)
        else:
            res = run_snakemake(wd, *args, snakefile=snakefile, environ=environ, cwd=here)
        assert res.returncode == 0, res.stderr[-3000:]
        seen = _seen(res.stdout)
        assert f"cwd {here / wd}" in seen and f"module {tmp_path / 'pp' / 'probe_module.py'}" in seen, seen
        assert "var from-the-run True" in seen and f"tmp {tmp_path / 'tmp'}" in seen and "tests False" in seen, seen
        outputs[how] = ([line.replace(f"-{how}", "") for line in seen], (here / wd / "done.txt").read_text())
    assert outputs["runner"] == outputs["program"] == (outputs["program"][0], "from-the-run\n")


@pytest.mark.parametrize(
    "args, extra, code, message",
    [
        (("--cores", "1", "--no-such-option"), "", 2, "unrecognized arguments: --no-such-option"),
        (("--cores", "1"), "raise ValueError('refused by the probe')", 1, "refused by the probe"),
        (("--cores", "1"), "sys.exit('stopped by the probe')", 1, "stopped by the probe"),
    ],
    ids=["bad-option", "error-in-the-snakefile", "exit-with-a-message"],
)
def test_a_failing_run_exits_and_says_what_the_program_does(tmp_path, args, extra, code, message):
    snakefile, environ = _world(tmp_path, extra)
    program = _program(snake.command(tmp_path / "wd", *args, snakefile=snakefile), environ, tmp_path)
    runner = run_snakemake(tmp_path / "wd", *args, snakefile=snakefile, environ=environ, check=False)
    assert runner.returncode == program.returncode == code
    assert message in runner.stderr and message in program.stderr, runner.stderr[-3000:]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_for(check, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)
    return check()


#: one job that starts a sleeper in the background, writes its pid and waits for it
SLEEPER = 'rule all:\n    output: "done"\n    shell: "sleep 60 & echo $! > sleeper.pid; wait; touch {output}"\n'


def test_a_timeout_ends_the_run_and_its_jobs_and_the_next_run_works(tmp_path):
    (tmp_path / "Snakefile").write_text(SLEEPER, encoding="utf-8")
    run_snakemake(None, "--version", snakefile=None)  # the server is up: the timeout is the run's alone
    (tmp_path / "tmp").mkdir()  # where the killed run leaves its temporary folder
    with pytest.raises(subprocess.TimeoutExpired):
        run_snakemake(
            tmp_path,
            "--cores",
            "1",
            snakefile=tmp_path / "Snakefile",
            env_extra={"TMPDIR": str(tmp_path / "tmp")},
            timeout=3,
        )
    sleeper = int((tmp_path / "sleeper.pid").read_text())
    assert _wait_for(lambda: not _alive(sleeper), 10), "the job the run started outlived the timeout"
    assert not (tmp_path / "done").exists()
    assert run_snakemake(None, "--version", snakefile=None).stdout.strip()
