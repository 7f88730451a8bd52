"""How heavy DVC is at the user's door, before and after a change of design, side by side: two
revisions of this repository each cloned fresh (no outputs, no DVC cache, as a user's clone),
then in each, alternated, ``--repeats`` times:

- the lines of the DVC files (dvc.yaml, dvc.lock, runs/dvc.yaml, runs/dvc.lock),
- ``dvc status``: wall seconds (median) and the lines it prints,
- the stages `dvc status` calls changed by their code after a comment is added to
  ``backretrieval/metrics/kernels.py`` (their deps name a source file, or the code versions).

    python benchmarks/bench_dvc_light.py --before d17c941 [--after HEAD] [--repeats 3]

Prints a Markdown table and writes benchmarks/results/dvc_light.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import machine_info, md_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DVC_FILES = ("dvc.yaml", "dvc.lock", "runs/dvc.yaml", "runs/dvc.lock")


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(cwd / "src"), "HOME": str(cwd.parent)}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800)


def _clone(rev: str, dst: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(dst)], check=True)
    subprocess.run(["git", "-C", str(dst), "checkout", "-q", rev], check=True)
    return dst


def _lines(repo: Path) -> int:
    return sum(len((repo / f).read_text().splitlines()) for f in DVC_FILES if (repo / f).is_file())


def _status(repo: Path) -> tuple[float, int]:
    start = time.perf_counter()
    res = _run([str(BIN / "dvc"), "status"], repo)
    return time.perf_counter() - start, len((res.stdout + res.stderr).splitlines())


def _comment_stages(repo: Path) -> int:
    """Stages `dvc status` calls changed by their code after a comment-only edit of the metric
    kernels (a source file or the code versions among their changed deps)."""
    kernels = repo / "src/backretrieval/metrics/kernels.py"
    kernels.write_text("# a comment-only edit\n" + kernels.read_text())
    if (repo / "src/backretrieval/_util/code_version.py").is_file():  # what any snakemake call does
        code = "from pathlib import Path; from backretrieval._util.code_version import step_versions as s; s(Path('.'))"
        _run([sys.executable, "-c", code], repo)
    status = json.loads(_run([str(BIN / "dvc"), "status", "--json"], repo).stdout or "{}")
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=True)

    def by_code(entries: list) -> bool:
        deps = [e.get("changed deps", {}) for e in entries if isinstance(e, dict)]
        return any(p.startswith("src/") or p.endswith("code_versions.yaml") for d in deps for p in d)

    return sum(by_code(entries) for entries in status.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", default="HEAD")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        repos = {name: _clone(rev, Path(tmp) / name) for name, rev in (("before", args.before), ("after", args.after))}
        times: dict[str, list[float]] = {n: [] for n in repos}
        printed: dict[str, int] = {}
        for _ in range(args.repeats):
            for name, repo in repos.items():
                seconds, lines = _status(repo)
                times[name].append(seconds)
                printed[name] = lines
        rows = []
        for name, repo in repos.items():
            rev = _run(["git", "rev-parse", "--short", "HEAD"], repo).stdout.strip()
            rows.append(
                {
                    "revision": f"{name} ({rev})",
                    "DVC file lines": _lines(repo),
                    "dvc status s (median)": round(statistics.median(times[name]), 2),
                    "dvc status lines": printed[name],
                    "stages a comment marks changed": _comment_stages(repo),
                }
            )
    print(md_table(list(rows[0]), [list(r.values()) for r in rows]))
    print(
        f"\nratio of dvc status time, after/before: {rows[1]['dvc status s (median)'] / rows[0]['dvc status s (median)']:.2f}"
    )
    out = ROOT / "benchmarks" / "results" / "dvc_light.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine_info(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
