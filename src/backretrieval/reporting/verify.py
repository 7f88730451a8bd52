"""Compare a run's reports with reference reports field by field, within derived tolerances.

The contract (README, "What reproduced means"): on the machine that made the committed results
a run reproduces every report byte for byte; on another machine every number is within the
tolerance of its class, and every decision is the same. :data:`.tolerances.TOLERANCES` is the one place
that states the classes, each with where its number comes from; ``backretrieval verify
--tolerances`` prints the table (:mod:`.tolerances`).

The classes of fields and their tolerances are described in :mod:`.tolerances`.
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
from .tolerances import (
    ALPHA,
    TRAINED_ALPHA,
    Context,
    Tolerance,
    measured,
    p_band,
    tolerance_for,
)

# files in a reports folder that are not reports (`make report`'s HTML, Snakemake markers)
IGNORED = ("report.html", ".snakemake_timestamp")
#: TRIPLETXL − TRIPLET, paired by training seed (the same seed: the same init, split and batches)
XL_MINUS_T = "tripletxl-triplet"
#: text cells that are outcomes, not row keys (the worst language pair of a model, a comparison's reading)
OUTCOME_TEXT = ("worst_pair", "decided")


@dataclass
class Report:
    """The verdict: failures name each field outside its tolerance; notes are informational."""

    files: int = 0
    identical: int = 0
    checked_fields: int = 0
    within: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    borderline: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        lines = [f"FAIL  {f}" for f in self.failures] + [f"borderline  {b}" for b in self.borderline]
        lines += [f"note  {n}" for n in self.notes]
        verdict = "PASS" if self.ok else "FAIL"
        lines.append(
            f"verify: {verdict}: {self.files} files, {self.identical} byte-identical, "
            f"{self.checked_fields} numeric fields compared, {len(self.within)} differ within tolerance, "
            f"{len(self.failures)} outside tolerance or missing, {len(self.borderline)} borderline decisions"
        )
        return "\n".join(lines)


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
        key = " ".join(f"{h}={v}" for h, v, num in zip(header, r, numeric) if not num and h not in OUTCOME_TEXT)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key += f" #{seen[key]}"
        for h, v, num in zip(header, r, numeric):
            if num or h in OUTCOME_TEXT:
                out[f"{key} {h}"] = v
        if len(r) != len(header):
            out[f"{key} <columns>"] = len(r)
    return out


def _fields(name: str, data: bytes) -> dict[str, object] | None:
    if name.endswith(".json"):
        doc = json.loads(data.decode("utf-8"))
        if Path(name).name == "metrics.json" and isinstance(doc, dict) and isinstance(doc.get("meta"), dict):
            from ..evaluation.protocol import read_record  # (pandas: only when a metrics.json differs)

            doc = {**doc, "meta": read_record(doc["meta"])}  # reports of an earlier release: meta.k is recall_k
        return _flatten(doc)
    if name.endswith(".csv"):
        return _csv_fields(name, data)
    return None


def _sample_size(name: str, files: dict[str, bytes], key: str = "sample_size") -> int | None:
    """meta.<key> (sample_size, n_seeds) of the nearest metrics.json at or above ``name``'s folder."""
    parts = Path(name).parent.parts
    for i in range(len(parts), -1, -1):
        cand = "/".join([*parts[:i], "metrics.json"])
        if cand in files:
            try:
                doc = json.loads(files[cand])
                n = doc.get("meta", {}).get(key, doc.get(key))
            except (ValueError, AttributeError):
                n = None
            if isinstance(n, int) and n > 0:
                return n
    return None


def _is_environment(key: str) -> bool:
    """A field of a report's ``environment`` block (reporting.environment): neither a failure
    nor a difference within tolerance, whatever its value."""
    return key == "environment" or key.startswith("environment/")


NO_SPREAD = "trained once, no training spread recorded"
#: a human study rated on one sheet of one training draw (reports before the multi-seed sheet)
ONE_DRAW = "a human study rated on one training draw on each side: no spread to compare it with, listed"
HUMAN = "case_study/human_study.json"


@dataclass(frozen=True)
class Trained:
    """One trained quantity: its values per training seed (in the order of ``seeds``)."""

    values: tuple[float, ...]
    seeds: tuple[int, ...]

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    @property
    def sd(self) -> float:
        r = len(self.values)
        if r < 2:
            return math.nan
        m = self.mean
        return math.sqrt(sum((v - m) ** 2 for v in self.values) / (r - 1))


def _training(files: dict[str, bytes]) -> dict[str, Trained] | None:
    """Every trained quantity a reports folder records per training seed, by name: each head's
    BkR×1000 (``case_study/metrics.json``), TRIPLETXL − TRIPLET paired by seed where both heads
    have the same seeds, and the human study's per-seed quantities (``human_study/<name>``).
    None where the case study records no spread (a head trained once, or no case study)."""
    raw = files.get("case_study/metrics.json")
    if raw is None:
        return None
    spread = json.loads(raw).get("training_spread")
    if not spread:
        return None
    out = {
        h: Trained(tuple(float(x) for x in v["per_seed_bkr_x1000"]), tuple(int(s) for s in v["training_seeds"]))
        for h, v in spread.items()
        if int(v["n_training_seeds"]) > 1  # one seed: no spread
    }
    t, xl = out.get("triplet"), out.get("tripletxl")
    if t is not None and xl is not None and t.seeds == xl.seeds:
        out[XL_MINUS_T] = Trained(tuple(b - a for a, b in zip(t.values, xl.values)), t.seeds)
    human = files.get(HUMAN)
    if human is not None:
        for name, v in (json.loads(human).get("training_spread") or {}).items():
            if len(v["per_seed"]) > 1:
                out[f"human_study/{name}"] = Trained(
                    tuple(float(x) for x in v["per_seed"]), tuple(int(s) for s in v["training_seeds"])
                )
    return out or None


def welch(run: Trained, ref: Trained) -> tuple[float, float, float]:
    """(t, degrees of freedom, two-sided p) of Welch's t test of two trained samples. Both sds
    zero: the values are compared exactly (p 1 when the means agree, else 0)."""
    from scipy import stats

    if run.sd == 0 and ref.sd == 0:
        same = run.mean == ref.mean
        return (0.0 if same else math.inf), math.nan, (1.0 if same else 0.0)
    res = stats.ttest_ind(run.values, ref.values, equal_var=False)
    return float(res.statistic), float(res.df), float(res.pvalue)


def compare_trained(run: dict[str, Trained], ref: dict[str, Trained], rep: Report) -> set[str]:
    """Each trained quantity in both runs by :func:`welch` at TRAINED_ALPHA / m, into ``rep``;
    returns the quantities compared (their fields follow them)."""
    names = sorted(set(run) & set(ref))
    level = TRAINED_ALPHA / max(len(names), 1)
    for name in names:
        a, b = run[name], ref[name]
        rep.checked_fields += 1
        if a == b:  # the same draws: nothing to test
            continue
        t, df, p = welch(a, b)
        line = (
            f"case_study: trained {name}: mean {a.mean:.4g} (sd {a.sd:.3g}, R {len(a.values)}) vs reference "
            f"{b.mean:.4g} (sd {b.sd:.3g}, R {len(b.values)}): Welch t {t:.3g}, df {df:.3g}, p {p:.3g} "
            f"(fails below {TRAINED_ALPHA:g}/{len(names)} = {level:.3g}, trained outcomes)"
        )
        (rep.failures if p < level else rep.within).append(line)
    return set(names)


def _named(descriptor: str, names) -> str | None:
    """The first of ``names`` that the descriptor names as a whole token (``char-ngram`` is not
    named by ``char-ngram-3``), or None."""
    for name in sorted(names, key=len, reverse=True):
        if re.search(rf"(^|[ /=\[]){re.escape(name)}($|[ /\]])", descriptor):
            return name
    return None


def _heads() -> tuple[str, ...]:
    from ..study.case_config import HEADS

    return HEADS


def _quantity(name: str, desc: str, compared: set[str]) -> str | None:
    """The trained quantity a case-study field follows: the human study's (any outcome of the
    sheet rated on the heads), TRIPLETXL − TRIPLET for a field naming both heads, else the head
    it names; None for a field of no trained head."""
    if name == HUMAN:
        return next((q for q in sorted(compared) if q.startswith("human_study/")), "human_study")
    heads = [h for h in _heads() if _named(desc, [h])]
    if len(heads) > 1:
        return XL_MINUS_T
    return heads[0] if heads else None


def _decision(where: str, a: object, b: object, rep: Report) -> None:
    lo, hi = p_band()
    fa, fb = float(a), float(b)  # type: ignore[arg-type]
    if (fa < ALPHA) == (fb < ALPHA):
        rep.within.append(f"{where}: {a} vs {b} (the same decision at α = {ALPHA:g}, decisions)")
    elif lo <= fa <= hi and lo <= fb <= hi:
        rep.borderline.append(
            f"{where}: {a} vs reference {b} (decision flips at α = {ALPHA:g}; both in the band {lo:.3g} to {hi:.3g})"
        )
    else:
        rep.failures.append(
            f"{where}: {a} vs reference {b} (the decision at α = {ALPHA:g} differs, outside "
            f"the band {lo:.3g} to {hi:.3g}, decisions)"
        )


def _compare_trained_field(
    where: str, a: object, b: object, quantity: str, tol: Tolerance | None, compared: set[str], rep: Report
) -> None:
    """A field that is a function of trained draws: it follows ``quantity``'s comparison."""
    if quantity not in compared:
        rep.failures.append(f"{where}: {a} vs reference {b} ({NO_SPREAD})")
        return
    fa, fb = _number(a), _number(b)
    decided = tol is not None and tol.kind == "decision" and fa is not None and fb is not None
    if decided and (fa < ALPHA) != (fb < ALPHA):  # type: ignore[operator]
        rep.borderline.append(
            f"{where}: {a} vs reference {b} (a decision over trained heads flips at α = {ALPHA:g}; "
            f"its draws are compared as the trained {quantity})"
        )
    elif fa is None and fb is None:  # a text outcome: the worst pair, a comparison's conclusion
        rep.borderline.append(
            f"{where}: {a} vs reference {b} (an outcome over trained heads; compared as the trained {quantity})"
        )
    else:
        rep.within.append(f"{where}: {a} vs {b} (follows the trained {quantity}, trained outcomes)")


def _compare_field(
    name: str,
    key: str,
    a: object,
    b: object,
    sizes: tuple[int | None, int | None],
    compared: set[str],
    one_draw: bool,
    rep: Report,
) -> None:
    """One field's verdict into ``rep``; ``sizes``: the run's (N, number of seeds); ``compared``:
    the trained quantities compared; ``one_draw``: the human study was rated on one training draw."""
    where = f"{name}: {key}"
    desc = f"{name} {key}".lower()
    fa, fb = _number(a), _number(b)
    if fa is not None and fb is not None:
        rep.checked_fields += 1
        if fa == fb or (math.isnan(fa) and math.isnan(fb)):
            return
    elif a == b:
        return
    tol = tolerance_for(desc) if fa is not None and fb is not None else None
    exact = tol is not None and tol.kind == "exact"
    if name == HUMAN and one_draw and not re.search(r"(^| )n_queries$", key):
        rep.notes.append(f"{where}: {a} vs {b} ({ONE_DRAW})")
        return
    quantity = _quantity(name, desc, compared) if name.startswith("case_study/") and not exact else None
    if quantity is not None:
        return _compare_trained_field(where, a, b, quantity, tol, compared, rep)
    if tol is not None and tol.kind == "decision":
        return _decision(where, a, b, rep)
    if tol is not None and tol.kind == "follows":
        rep.within.append(f"{where}: {a} vs {b} (follows its test's decision, {tol.name})")
        return
    if fa is None or fb is None:
        rep.failures.append(f"{where}: {a!r} != reference {b!r}")
        return
    if tol is None or exact:
        return _within(where, a, b, 0.0, tol.name if tol else "exact", rep)
    assert tol.bound is not None
    enc = _named(desc, measured()["propagated"]["per_encoder"])
    bound = tol.bound(Context(enc, sizes[0], desc, sizes[1]))
    if "x1000" in desc or name.startswith("case_study/table2"):  # Table 2's BkR and CIs are ×1000
        bound *= 1000
    _within(where, a, b, bound, tol.name, rep)


def _within(where: str, a: object, b: object, bound: float, label: str, rep: Report) -> None:
    """``a`` and ``b`` as the files write them (numbers or their text)."""
    diff = abs(float(a) - float(b))  # type: ignore[arg-type]
    if diff <= bound * (1 + 1e-9):  # the decimal text of both numbers: 0.45 - 0.35 is 2/20
        rep.within.append(f"{where}: {a} vs {b} (|diff| {diff:.3g} <= {bound:.3g}, {label})")
    else:
        rep.failures.append(f"{where}: {a} vs reference {b} (|diff| {diff:.3g} > {bound:.3g}, {label})")


def _one_draw(files: dict[str, bytes]) -> bool:
    """The human study was rated on one training draw (no per-seed spread in its tally)."""
    raw = files.get(HUMAN)
    return raw is not None and not json.loads(raw).get("training_spread")


def compare(run: dict[str, bytes], reference: dict[str, bytes]) -> Report:
    """Field-by-field verdict of ``run`` against ``reference`` (relative path -> bytes)."""
    rep = Report()
    trained_run, trained_ref = _training(run), _training(reference)
    compared = compare_trained(trained_run, trained_ref, rep) if trained_run and trained_ref else set()
    one_draw = _one_draw(run) and _one_draw(reference)
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
        n, seeds = _sample_size(name, reference), _sample_size(name, reference, "n_seeds")
        for key in sorted(set(got) | set(want)):
            if _is_environment(key):  # where the run was made: shown by environment_diff, never compared
                continue
            if key not in got or key not in want:
                where = f"{name}: {key}"
                side = "missing from the run" if key not in got else "not in the reference"
                if name.startswith("case_study/") and not compared and _named(key.lower(), _heads()):
                    side += f" ({NO_SPREAD})"
                rep.failures.append(f"{where}: {side}")
                continue
            _compare_field(name, key, got[key], want[key], (n, seeds), compared, one_draw, rep)
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
