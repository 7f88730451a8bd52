#!/usr/bin/env python
"""`dvc exp show` cut to what a person compares in an experiment on the default run: its main
parameters (params.yaml; the seeds as a count) and its headline metrics (reports/default/headline.json).
Plain `dvc exp show` lists every key of every run's params file and every dep, and its
--keep/--drop regexes cannot select by file: a column is prefixed with its file only where
another file has the same name. So this reads `dvc exp show --json` and selects by file and key.

  python scripts/exp_show.py [--csv | --md] [DVC EXP SHOW OPTIONS, e.g. -A, -n 5]   (make exp-show)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

import pandas as pd

PARAMS_FILE = "params.yaml"
PARAMS = re.compile(r"(sample_size|seeds|recall_k|corr_max_pairs|image_backbone)")
METRICS_DIR = "reports/default/"
METRICS = re.compile(r"(bkr|corr)_(r|rho)|best|best_bkr")


def _flat_keys(d: dict) -> dict:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists kept as values), as DVC names the columns."""
    return pd.json_normalize(d, sep=".").iloc[0].to_dict() if d else {}


def _row(entry: dict) -> dict:
    data = entry.get("data") or {}
    rev = data.get("rev") or entry.get("rev") or ""
    row = {"Experiment": entry.get("name") or "", "rev": rev[:7] if re.fullmatch(r"[0-9a-f]{40}", rev) else rev}
    row["Created"] = data.get("timestamp") or ""
    params = _flat_keys(((data.get("params") or {}).get(PARAMS_FILE) or {}).get("data") or {})
    row |= {k: len(v) if isinstance(v, list) else v for k, v in params.items() if PARAMS.fullmatch(k)}
    for path, metrics in sorted((data.get("metrics") or {}).items()):
        if path.startswith(METRICS_DIR):
            row |= {k: v for k, v in _flat_keys(metrics.get("data") or {}).items() if METRICS.fullmatch(k)}
    return row


def table(exp_show_json: list) -> pd.DataFrame:
    rows = []
    for commit in exp_show_json:
        rows.append(_row(commit))
        for exp in commit.get("experiments") or []:
            rows.extend(_row(rev) for rev in exp.get("revs") or [])
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV instead of a text table")
    fmt.add_argument("--md", action="store_true", help="a Markdown table")
    args, dvc_args = ap.parse_known_args(argv)
    res = subprocess.run(["dvc", "exp", "show", "--json", *dvc_args], capture_output=True, text=True)
    if res.returncode != 0:
        print(res.stderr, file=sys.stderr)
        return res.returncode
    df = table(json.loads(res.stdout))
    if args.csv:
        df.to_csv(sys.stdout, index=False)
    elif args.md:
        print(df.to_markdown(index=False))
    else:
        # a terminal's width: the creation time (month-day hour:minute), the metrics to 3 decimals
        if "Created" in df:
            df["Created"] = df["Created"].astype(str).str.slice(5, 16).str.replace("T", " ")
        if {"Experiment", "rev"} <= set(df):  # an experiment by its name, a commit by its rev
            df.insert(0, "experiment", df["Experiment"].where(df["Experiment"] != "", df["rev"]))
            df = df.drop(columns=["Experiment", "rev"])
        print(df.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
