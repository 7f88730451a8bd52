"""Run a Snakemake command; when the run's artifacts are missing, say what to run in one line
(`make figures`, `make report`: they rerun only the report rules, so a fresh clone has nothing
to draw from). Every other line of Snakemake's output passes through as it comes.

Usage: python scripts/snakemake_hint.py TARGET -- snakemake ARGS...  (exit code: Snakemake's)
"""

from __future__ import annotations

import subprocess
import sys

HINT = (
    "make {target}: {n} of the run's artifacts are missing ({first}{more}): run `make run` to compute "
    "them, or `make pull` (`dvc pull`) to fetch them from your team's DVC remote"
)


#: Snakemake's warning for each output without its metadata record (non critical)
METADATA = "Missing metadata for file"


def hint(target: str, missing: list[str]) -> str:
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    return HINT.format(target=target, n=len(missing), first=missing[0] if missing else "?", more=more)


def main(argv: list[str]) -> int:
    target, sep, *cmd = argv
    if sep != "--" or not cmd:
        sys.exit(__doc__)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    assert proc.stdout is not None
    missing: list[str] | None = None  # the affected files, once Snakemake names missing inputs
    listing = False
    no_metadata = 0
    for line in proc.stdout:
        if missing is None and "MissingInputException" in line:
            missing = []
        if METADATA in line:  # one line per output: counted, said once at the end
            no_metadata += 1
        elif missing is None:
            sys.stdout.write(line)
            sys.stdout.flush()
        elif line.strip() == "affected files:":
            listing = True
        elif listing and line.startswith("        ") and line.strip():
            missing.append(line.strip())
        else:
            listing = False
    rc = proc.wait()
    if no_metadata:
        print(
            f"note: {no_metadata} outputs carry no Snakemake metadata (made by another Snakemake process, "
            "or restored by dvc pull/checkout): the report lists them without their provenance",
            file=sys.stderr,
        )
    if missing is not None:
        print(hint(target, sorted(set(missing))), file=sys.stderr)
        return rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
