#!/usr/bin/env python
"""Stress test: the word-level family's vectors are bit-identical, run after run (not in CI).

    python scripts/stress_fasttext.py [--config config/multi30k.yaml] [--n 30] [--lang en]
                                      [--align-n 3] [--align-lang de] [--jobs 1] [--keep DIR]

Works on the shipped configuration's own corpus (its ``corpora`` entry, prepared into a
temporary folder from the configured mirror) and the settings of its first ``wordvec`` encoder
(dim, epochs, seed, bucket, ...), through the same code the pipeline runs
(:meth:`WordVecEncoder.mono` with an empty cache):

1. **train**: fastText vectors of ``--lang`` trained ``--n`` times in fresh processes and
   ``--n`` times in this process. The fresh processes vary what a correct program must not
   depend on: ``PYTHONHASHSEED``, glibc's ``MALLOC_PERTURB_`` (fills newly allocated heap memory
   with a byte pattern, so reading uninitialised memory changes the result; 128 gives the float
   pattern 0x7F7F7F7F = 3.4e38) and the BLAS thread count.
2. **align**: every ``wordvec`` encoder of the config (Procrustes / CCA / RCSLS at each
   dictionary size) maps ``--align-lang`` into the hub space from the same monolingual vectors
   (trained once) and encodes 1000 sentences of both languages; ``--align-n`` fresh processes
   and ``--align-n`` in-process runs, hashing the maps and the document vectors.

Prints one line per run (hash, non-finite count, seconds, environment) and a summary with the
number of distinct hashes; exit status 1 unless every phase has exactly one hash, no
non-finite value and no failed run. The machine's load does not matter (only hashes are
compared), but the runs take minutes: each trains on the whole corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

#: MALLOC_PERTURB_ values cycled over the fresh processes (0 = glibc default, no perturbation)
PERTURB = (0, 128, 85, 255, 1, 170)
N_ALIGN_TEXTS = 1000


def _sha(*arrays: np.ndarray, words: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256()
    h.update("\n".join(words).encode("utf-8"))
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _nonfinite(*arrays: np.ndarray) -> int:
    return int(sum(np.size(a) - np.isfinite(a).sum() for a in arrays))


# ------------------------------------------------------------------------------- the work


def train_once(spec: dict[str, Any], lang: str) -> dict[str, Any]:
    """Train ``lang``'s vectors through the encoder (empty cache), as the pipeline does."""
    from backretrieval.encoders.wordvec import build_wordvec_encoder

    with tempfile.TemporaryDirectory(prefix="stress-ft-") as tmp:
        enc = build_wordvec_encoder("stress", {**spec, "cache_dir": tmp})
        mv = enc.mono(lang)
        return {
            "hash": _sha(mv.vectors, mv.counts, words=mv.words),
            "nonfinite": _nonfinite(mv.vectors),
            "vocab": len(mv.words),
            "sentences": len(enc._load_sentences()[lang]),
        }


def align_once(specs: dict[str, dict[str, Any]], mono_cache: str, lang: str, hub: str) -> dict[str, Any]:
    """Every encoder's map for ``lang`` and its document vectors, from the cached mono vectors."""
    from backretrieval.encoders.wordvec import build_wordvec_encoder

    per: dict[str, str] = {}
    bad = 0
    with tempfile.TemporaryDirectory(prefix="stress-align-") as tmp:
        shutil.copytree(Path(mono_cache) / "mono", Path(tmp) / "mono")
        for name, spec in specs.items():
            enc = build_wordvec_encoder(name, {**spec, "cache_dir": tmp})
            sents = enc._load_sentences()
            w = enc.mapping(lang)["W"]
            docs = [enc.encode(sents[x][:N_ALIGN_TEXTS], x) for x in (lang, hub)]
            per[name] = _sha(w, *docs)
            bad += _nonfinite(w, *docs)
    return {
        "hash": _sha(np.array([]), words=tuple(f"{k}={v}" for k, v in sorted(per.items()))),
        "nonfinite": bad,
        "per_encoder": per,
    }


# ------------------------------------------------------------------------------- running


def _env(i: int) -> dict[str, str]:
    threads = str(1 + i % 3)
    return {
        "PYTHONHASHSEED": str(1000 + i),
        "MALLOC_PERTURB_": str(PERTURB[i % len(PERTURB)]),
        "OPENBLAS_NUM_THREADS": threads,
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
    }


def _fresh(job: dict[str, Any], i: int) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(_env(i))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _collect(proc: subprocess.Popen) -> dict[str, Any]:
    out, err = proc.communicate()
    lines = [x for x in out.splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (err.strip().splitlines() or ["(no stderr)"])[-1]
        return {"error": f"exit {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


def _do(job: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        if job["phase"] == "train":
            res = train_once(job["spec"], job["lang"])
        else:
            res = align_once(job["specs"], job["mono_cache"], job["lang"], job["hub"])
    except Exception as exc:  # reported as a failed run, not a crash of the stress test
        res = {"error": f"{type(exc).__name__}: {exc}"}
    res["seconds"] = round(time.perf_counter() - t0, 1)
    return res


def run_phase(name: str, job: dict[str, Any], n: int, jobs: int) -> dict[str, Any]:
    results: list[tuple[str, dict[str, Any]]] = []
    pending: list[tuple[int, subprocess.Popen, float]] = []
    i = 0
    while i < n or pending:
        while i < n and len(pending) < jobs:
            pending.append((i, _fresh(job, i), time.perf_counter()))
            i += 1
        k, proc, t0 = pending.pop(0)
        res = _collect(proc)
        res.setdefault("seconds", round(time.perf_counter() - t0, 1))
        env = " ".join(f"{a}={b}" for a, b in _env(k).items() if a != "MKL_NUM_THREADS" and a != "OMP_NUM_THREADS")
        _line(name, f"fresh {k + 1:2d}", res, env)
        results.append(("fresh", res))
    for k in range(n):
        res = _do(job)
        _line(name, f"inproc {k + 1:2d}", res, "")
        results.append(("inproc", res))
    hashes = Counter(r["hash"] for _, r in results if "hash" in r)
    summary = {
        "runs": len(results),
        "distinct": len(hashes),
        "hashes": dict(hashes),
        "nonfinite_runs": sum(1 for _, r in results if r.get("nonfinite", 0) > 0),
        "errors": sum(1 for _, r in results if "error" in r),
    }
    if name == "align" and len(hashes) > 1:  # which encoders disagree
        per: dict[str, set[str]] = {}
        for _, r in results:
            for enc, h in r.get("per_encoder", {}).items():
                per.setdefault(enc, set()).add(h)
        summary["differing_encoders"] = sorted(e for e, hs in per.items() if len(hs) > 1)
    return summary


def _line(phase: str, what: str, res: dict[str, Any], env: str) -> None:
    if "error" in res:
        body = f"ERROR {res['error']}"
    else:
        body = f"hash={res['hash']} nonfinite={res['nonfinite']}"
    print(f"{phase:5s} {what:10s} {body}  {res.get('seconds', '?')}s  {env}".rstrip(), flush=True)


# ------------------------------------------------------------------------------- setup


def _prepare_corpus(cfg: dict[str, Any], corpus_path: str, work: Path) -> Path:
    """The config's corpus behind ``corpus_path`` (data/prepared/<name>), prepared into ``work``."""
    from backretrieval.prepare import prepare_dataset

    name = Path(corpus_path).name
    corpora = cfg.get("corpora") or {}
    if name not in corpora:
        sys.exit(
            f"stress_fasttext: the encoders' corpus {corpus_path!r} is not one of the config's "
            f"corpora {sorted(corpora)}"
        )
    entry = json.loads(json.dumps(corpora[name]))
    entry.setdefault("options", {})["download_dir"] = str(work / "downloads")
    out = work / "prepared" / name
    prepare_dataset(dict(cfg, dataset={"name": name, **entry}), out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="config/multi30k.yaml")
    ap.add_argument("--n", type=int, default=30, help="training runs per mode (fresh / in-process)")
    ap.add_argument("--lang", default="en", help="language whose vectors are trained")
    ap.add_argument("--align-n", type=int, default=3, help="alignment runs per mode; 0 skips them")
    ap.add_argument("--align-lang", default="de")
    ap.add_argument("--jobs", type=int, default=1, help="fresh processes at a time")
    ap.add_argument("--keep", help="work folder to use and keep (default: a temporary one)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(_do(json.loads(args.worker))), flush=True)
        return 0

    from backretrieval.config import load_config

    os.chdir(ROOT)  # the config's relative paths (mirror) are relative to the repository root
    cfg = load_config(args.config)
    specs = {k: dict(v) for k, v in cfg["encoders"].items() if v.get("type") == "wordvec"}
    if not specs:
        sys.exit(f"stress_fasttext: {args.config} has no wordvec encoder")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="stress-fasttext-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        corpus = _prepare_corpus(cfg, next(iter(specs.values()))["corpus"], work)
        for s in specs.values():
            s["corpus"] = str(corpus)
        first_name, first = next(iter(specs.items()))
        print(
            f"config {args.config}: settings of '{first_name}' (dim {first.get('dim', 100)}, epochs "
            f"{first.get('epochs', 10)}, seed {first.get('seed', 0)}); corpus {corpus}",
            flush=True,
        )
        summaries = {}
        summaries["train"] = run_phase("train", {"phase": "train", "spec": first, "lang": args.lang}, args.n, args.jobs)
        if args.align_n > 0:
            from backretrieval.encoders.wordvec import build_wordvec_encoder

            mono_cache = work / "mono-cache"
            enc = build_wordvec_encoder(first_name, {**first, "cache_dir": str(mono_cache)})
            hub = enc.spec.hub
            if args.align_lang not in enc.spec.languages or args.align_lang == hub:
                sys.exit(f"stress_fasttext: --align-lang must be one of {[x for x in enc.spec.languages if x != hub]}")
            enc.mono(hub), enc.mono(args.align_lang)
            job = {"phase": "align", "specs": specs, "mono_cache": str(mono_cache), "lang": args.align_lang, "hub": hub}
            summaries["align"] = run_phase("align", job, args.align_n, args.jobs)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    ok = True
    for phase, s in summaries.items():
        good = s["distinct"] == 1 and s["nonfinite_runs"] == 0 and s["errors"] == 0
        ok &= good
        extra = f"; differing encoders: {s['differing_encoders']}" if s.get("differing_encoders") else ""
        print(
            f"{phase}: {s['runs']} runs, {s['distinct']} distinct hash(es) {s['hashes']}, "
            f"{s['nonfinite_runs']} run(s) with NaN/inf, {s['errors']} failed run(s){extra} -> "
            f"{'OK' if good else 'NOT DETERMINISTIC'}",
            flush=True,
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
