"""Short processes with and without ``gc.freeze()`` before exit: the CPU time of the processes
the workflow starts by the hundred (one Snakemake per DVC stage, cluster job or group
component; one ``backretrieval`` per step), side by side, alternated, median of ``--repeats``.

    python benchmarks/bench_startup.py                # 5 repeats
    python benchmarks/bench_startup.py --repeats 3

- ``snakemake`` (dry run): ``-n --forceall`` of tests/data/tiny.yaml with this Snakefile against
  a copy without its ``gc.freeze()`` line (in a scratch folder whose ``workflow`` links to this
  one's).
- ``backretrieval step embed-images``: EfficientNet-Lite0 features of a SYNTHETIC 20-item dataset
  (32 px, a cold embedding cache each time): the program (``backretrieval.cli.run``) against
  :func:`backretrieval.cli.main` called the same way without the freeze.

Each pair must give the same output (the dry run's job list; the feature file's bytes), else
the script exits 1. CPU seconds are the child's user + system time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import machine_info, md_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
NO_FREEZE_MAIN = "import sys; from backretrieval.cli import main; sys.exit(main())"


def _cpu(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """(user + system seconds of the finished child, its stdout); a failure stops the script."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {res.returncode}:\n{res.stderr[-3000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), res.stdout


def _snakefile_without_freeze(tmp: Path) -> Path:
    text = (ROOT / "Snakefile").read_text(encoding="utf-8")
    if "\ngc.freeze()\n" not in text:
        sys.exit("Snakefile: no `gc.freeze()` line to compare against")
    folder = tmp / "no-freeze"
    folder.mkdir()
    (folder / "workflow").symlink_to(ROOT / "workflow")
    (folder / "Snakefile").write_text(text.replace("\ngc.freeze()\n", "\n"), encoding="utf-8")
    return folder / "Snakefile"


def pairs(tmp: Path) -> dict[str, tuple[object, object]]:
    """name -> (with freeze, without): each a function of the repeat's index giving
    (CPU seconds, the output the two must agree on)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}
    smk = [
        str(BIN / "snakemake"),
        "-n",
        "--forceall",
        "--cores",
        "1",
        "--configfile",
        str(ROOT / "tests/data/tiny.yaml"),
    ]
    plain = _snakefile_without_freeze(tmp)

    def dry(snakefile: Path):
        def go(i: int) -> tuple[float, str]:
            cpu, out = _cpu([*smk, "-s", str(snakefile), "-d", str(tmp / f"wd-{snakefile.parent.name}")], ROOT, env)
            jobs = sorted(line for line in out.splitlines() if line.startswith(("rule ", "localrule ")))
            return cpu, "\n".join(jobs)

        return go

    spec = {
        "name": "syn",
        "options": {},
        "source": "synthetic",
        "synthetic": {"n_items": 20, "image_size": 32, "seed": 0},
    }
    _cpu(
        [sys.executable, "-m", "backretrieval", "step", "prepare", "--spec", json.dumps(spec)]
        + ["--languages", "en", "de", "--out-dir", str(tmp / "syn")],
        tmp,
        env,
    )
    backbone = json.dumps({"type": "efficientnet-lite", "variant": "lite0"})

    def embed(program: list[str], tag: str):
        def go(i: int) -> tuple[float, str]:
            out = tmp / f"{tag}-{i}.npz"
            argv = ["step", "embed-images", "--dataset", str(tmp / "syn"), "--image-backbone", "effnet-lite0"]
            argv += ["--spec", backbone]
            argv += ["--out", str(out), "--cache-dir", str(tmp / f"cache-{tag}-{i}"), "--threads", "1"]
            cpu, _ = _cpu([*program, *argv], tmp, env)
            return cpu, out.read_bytes().hex()

        return go

    return {
        "snakemake (dry run, 22 jobs)": (dry(ROOT / "Snakefile"), dry(plain)),
        "backretrieval step embed-images": (
            embed([sys.executable, "-m", "backretrieval"], "run"),
            embed([sys.executable, "-c", NO_FREEZE_MAIN], "main"),
        ),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rows, same = [], True
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as t:
        tmp = Path(t)
        for name, (with_freeze, without) in pairs(tmp).items():
            cpu: dict[str, list[float]] = {"with": [], "without": []}
            outputs = set()
            for i in range(args.repeats):  # alternated: the machine's drift hits both alike
                for key, fn in (("with", with_freeze), ("without", without)):
                    seconds, out = fn(i)
                    cpu[key].append(seconds)
                    outputs.add(out)
            same &= len(outputs) == 1
            a, b = statistics.median(cpu["with"]), statistics.median(cpu["without"])
            rows.append([name, f"{a:.2f}", f"{b:.2f}", f"{a / b:.2f}", "yes" if len(outputs) == 1 else "NO"])
    info = machine_info()
    print(
        f"machine: {info.get('Model name', '?')}, {info.get('CPU(s)', '?')} CPUs, load {info.get('loadavg', '?')}; median of {args.repeats}, CPU s\n"
    )
    print(md_table(["process", "gc.freeze()", "without", "ratio", "same output"], rows))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
