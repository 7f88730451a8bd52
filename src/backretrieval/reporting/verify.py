"""Compare a run's reports with reference reports field by field, within stated tolerances.

The contract (README, "Reproducing the results"): on the machine that made the committed
results a run reproduces every report byte for byte; on another machine every number is within
the tolerance stated here for its kind of field. :data:`TOLERANCES` is the one place that states
them, each with its reason; ``backretrieval verify --tolerances`` prints the table.

What is compared (the union of the files of both folders; a file on one side only is a
failure): ``.json`` files leaf by leaf and ``.csv`` files cell by cell (rows matched by their
text columns), numbers within the tolerance of their field, everything else exactly. Other
files (Markdown/LaTeX tables, figures, HTML) render the checked numbers; they are compared
byte for byte and a difference is listed as a note, not a failure.

Why tolerances are needed at all: PyTorch's CPU kernels (MKL, oneDNN, ATen) pick code paths by
instruction set, so a torch encoder (MiniLM) gives other last bits on an AVX2-only CPU than on
an AVX-512 one (measured: ar-en CORR 0.006902859362 vs 0.00690284618, and one BkR retrieval
of 25,000 flipped: de-en BkR recall 0.03568 vs 0.03572). Every other encoder and the image
features were bit-identical across those CPUs. ``benchmarks/bench_cpu_independence.py``
measures what pinning the code paths would cost.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

# Retrieval flips allowed per reported value: one flip of 25,000 BkR queries was measured
# between an AVX-512 and an AVX2-only CPU (MiniLM); two leave room for a second one.
FLIPS = 2
# files in a reports folder that are not reports (`make report`'s HTML, Snakemake markers)
IGNORED = ("report.html", ".snakemake_timestamp")


@dataclass(frozen=True)
class Tolerance:
    """|run - reference| <= abs_ + abs_per_n / N + rel * |reference| for the fields it matches.

    ``pattern`` is searched in a field's descriptor (``<file> <json path or column> <the row's
    text cells>``, lower case); the first matching row of :data:`TOLERANCES` applies, and a
    numeric field no row matches must be equal. N is the run's sample size (``meta.sample_size``
    of the nearest ``metrics.json``)."""

    name: str
    pattern: str
    abs_: float = 0.0
    abs_per_n: float = 0.0
    rel: float = 0.0
    why: str = ""

    def bound(self, reference: float, n: int | None) -> float:
        per_n = self.abs_per_n / n if n else 0.0  # N unknown: no per-N allowance
        return self.abs_ + per_n + self.rel * abs(reference)


TOLERANCES: tuple[Tolerance, ...] = (
    Tolerance(
        "counts and settings",
        r"(^|[ /_])(n_[a-z_]+|counts|k|sample_size|n_seeds|seed|n)( |$)",
        why="integers and settings of the run (sizes, seeds, k): equal on every machine",
    ),
    Tolerance(
        "test statistics and p-values",
        r"significance|wilcoxon|mannwhitney|fisher|steiger|statistic|(^| )p(_| |$)|effect",
        abs_=1e-3,
        rel=5e-2,
        why="tests over the per-seed correlations: they follow the correlations (1e-3) and p-values are "
        "steep in them; 5% relative is far below any change of a conclusion at the 0.05 level",
    ),
    Tolerance(
        "correlations across encoders",
        r"pearson|spearman|correlation",
        abs_=1e-3,
        why="means over seeds of a correlation across encoders; one flip moves one encoder's recall in "
        "one seed by 1/N, which moves these means by < 1e-4 (Pearson); a Spearman that moves by more "
        "had two encoders swap ranks: a real change to look at",
    ),
    Tolerance(
        "recall and MRR",
        r"recall|mrr",
        abs_per_n=FLIPS,
        why=f"a flipped retrieval moves one query's hit (and reciprocal rank) by at most 1, a recall or "
        f"MRR by 1/N: {FLIPS} flips (measured: 1 in 25,000 queries)",
    ),
    Tolerance(
        "mean rank",
        r"mean_rank",
        abs_=FLIPS,
        why=f"a flipped BkR step-1 neighbour moves one query's rank by at most N, the mean rank by <= 1: {FLIPS} flips",
    ),
    Tolerance(
        "CORR",
        r"(^|[ /_=])corr( |$)",
        abs_=1e-5,
        why="Spearman of distance codes over N^2/2 pairs: measured 1.3e-8 (ar-en, MiniLM); 1e-5 leaves "
        "three orders of magnitude and is still far below the differences between encoders",
    ),
)


@dataclass
class Report:
    """The verdict: failures name each field outside its tolerance; notes are informational."""

    files: int = 0
    identical: int = 0
    checked_fields: int = 0
    within: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        lines = [f"FAIL  {f}" for f in self.failures] + [f"note  {n}" for n in self.notes]
        verdict = "PASS" if self.ok else "FAIL"
        lines.append(
            f"verify: {verdict}: {self.files} files, {self.identical} byte-identical, "
            f"{self.checked_fields} numeric fields compared, {len(self.within)} differ within tolerance, "
            f"{len(self.failures)} outside tolerance or missing"
        )
        return "\n".join(lines)


def tolerance_for(descriptor: str) -> Tolerance | None:
    d = descriptor.lower()
    for tol in TOLERANCES:
        if re.search(tol.pattern, d):
            return tol
    return None


def tolerance_table() -> str:
    rows = ["| field | matches | tolerance | why |", "|---|---|---|---|"]
    for t in TOLERANCES:
        parts = [f"{t.abs_:g}" if t.abs_ else "", f"{t.abs_per_n:g}/N" if t.abs_per_n else ""]
        parts += [f"{t.rel:g} relative" if t.rel else ""]
        bound = " + ".join(p for p in parts if p) or "exact"
        pattern = t.pattern.replace("|", r"\|")
        rows.append(f"| {t.name} | `{pattern}` | {bound} | {t.why} |")
    rows.append("| anything else | | exact | no measured reason to differ |")
    return "\n".join(rows)


# ------------------------------------------------------------------------------------ sources


def read_folder(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative posix path -> bytes), the ignored ones left out."""
    if not root.is_dir():
        raise InputError(f"{root}: no such reports folder")
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in IGNORED
    }


def read_git_tree(repo: Path, rev: str, folder: str) -> dict[str, bytes]:
    """The files of ``folder`` (relative to the repository root) as commit ``rev`` has them."""
    folder = folder.strip("/")
    ls = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--name-only", rev, "--", folder],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    if ls.returncode != 0:
        raise InputError(f"git ls-tree {rev} {folder}: {ls.stderr.decode(errors='replace').strip()}")
    out = {}
    for name in filter(None, ls.stdout.decode().split("\0")):
        rel = name[len(folder) + 1 :] if folder else name
        if Path(rel).name in IGNORED:
            continue
        show = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=repo, capture_output=True, check=True)
        out[rel] = show.stdout
    if not out:
        raise InputError(f"{folder}: no files in git revision {rev}")
    return out


# ---------------------------------------------------------------------------------- comparing


def _number(v) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _flatten(obj, prefix: str = "") -> dict[str, object]:
    if isinstance(obj, dict):
        out: dict[str, object] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}/{k}" if prefix else str(k)))
        return out
    if isinstance(obj, list):
        out = {}
        for i, v in enumerate(obj):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: obj}


def _csv_fields(name: str, data: bytes) -> dict[str, object]:
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    if not rows:
        return {}
    header, body = rows[0], rows[1:]
    numeric = [
        all(_number(r[i]) is not None or r[i] == "" for r in body if i < len(r)) and any(r[i] != "" for r in body)
        for i in range(len(header))
    ]
    out: dict[str, object] = {}
    seen: dict[str, int] = {}
    for r in body:
        key = " ".join(f"{h}={v}" for h, v, num in zip(header, r, numeric) if not num)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key += f" #{seen[key]}"
        for h, v, num in zip(header, r, numeric):
            if num:
                out[f"{key} {h}"] = v
        if len(r) != len(header):
            out[f"{key} <columns>"] = len(r)
    return out


def _fields(name: str, data: bytes) -> dict[str, object] | None:
    if name.endswith(".json"):
        return _flatten(json.loads(data.decode("utf-8")))
    if name.endswith(".csv"):
        return _csv_fields(name, data)
    return None


def _sample_size(name: str, files: dict[str, bytes]) -> int | None:
    """meta.sample_size of the nearest metrics.json at or above ``name``'s folder."""
    parts = Path(name).parent.parts
    for i in range(len(parts), -1, -1):
        cand = "/".join([*parts[:i], "metrics.json"])
        if cand in files:
            try:
                n = json.loads(files[cand]).get("meta", {}).get("sample_size")
            except (ValueError, AttributeError):
                n = None
            if isinstance(n, int) and n > 0:
                return n
    return None


def _is_environment(key: str) -> bool:
    """A field of a report's ``environment`` block (reporting.environment): neither a failure
    nor a difference within tolerance, whatever its value."""
    return key == "environment" or key.startswith("environment/")


def compare(run: dict[str, bytes], reference: dict[str, bytes]) -> Report:
    """Field-by-field verdict of ``run`` against ``reference`` (relative path -> bytes)."""
    rep = Report()
    for name in sorted(set(run) | set(reference)):
        rep.files += 1
        if name not in run:
            rep.failures.append(f"{name}: missing from the run (in the reference)")
            continue
        if name not in reference:
            rep.failures.append(f"{name}: not in the reference (new in the run)")
            continue
        if run[name] == reference[name]:
            rep.identical += 1
            continue
        try:
            got, want = _fields(name, run[name]), _fields(name, reference[name])
        except (ValueError, UnicodeDecodeError) as exc:
            rep.failures.append(f"{name}: cannot be parsed ({exc})")
            continue
        if got is None or want is None:
            rep.notes.append(f"{name}: differs (rendered from the compared data; not compared itself)")
            continue
        n = _sample_size(name, reference)
        for key in sorted(set(got) | set(want)):
            if _is_environment(key):  # where the run was made: shown by environment_diff, never compared
                continue
            where = f"{name}: {key}"
            if key not in got or key not in want:
                rep.failures.append(f"{where}: {'missing from the run' if key not in got else 'not in the reference'}")
                continue
            a, b = got[key], want[key]
            fa, fb = _number(a), _number(b)
            if fa is None or fb is None:
                if a != b:
                    rep.failures.append(f"{where}: {a!r} != reference {b!r}")
                continue
            rep.checked_fields += 1
            if fa == fb or (math.isnan(fa) and math.isnan(fb)):
                continue
            tol = tolerance_for(f"{name} {key}")
            bound = tol.bound(fb, n) if tol else 0.0
            diff = abs(fa - fb)
            label = tol.name if tol else "exact"
            if diff <= bound * (1 + 1e-9):  # the decimal text of both numbers: 0.45 - 0.35 is 2/20
                rep.within.append(f"{where}: {a} vs {b} (|diff| {diff:.3g} <= {bound:.3g}, {label})")
            else:
                rep.failures.append(f"{where}: {a} vs reference {b} (|diff| {diff:.3g} > {bound:.3g}, {label})")
    return rep


def verify(run_dir: Path, *, reference_dir: Path | None = None, rev: str = "HEAD") -> Report:
    """Verdict of the reports in ``run_dir`` against ``reference_dir``, or else against the
    same folder in git revision ``rev`` of the repository that holds ``run_dir``."""
    return compare(*sources(run_dir, reference_dir=reference_dir, rev=rev))


def sources(
    run_dir: Path, *, reference_dir: Path | None = None, rev: str = "HEAD"
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The files of the run and of the reference (:func:`verify`'s two sides)."""
    run = read_folder(run_dir)
    if reference_dir is not None:
        reference = read_folder(reference_dir)
    else:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=run_dir, capture_output=True, text=True, check=False
        )
        if top.returncode != 0:
            raise InputError(f"{run_dir}: not in a git repository (give a reference folder instead)")
        root = Path(top.stdout.strip())
        try:
            folder = run_dir.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise InputError(f"{run_dir}: not inside the git repository {root} (give a reference folder)") from None
        reference = read_git_tree(root, rev, folder)
    return run, reference
