"""The verdict across configurations, in numbers: the ``inference`` records' BkR − CORR per
configuration, pooled over the configurations that share one encoder set (both questions,
:func:`backretrieval.stats.questions.two_questions`, over the cells of one joint draw), and the
same groups as simulation layouts (:class:`Layout`: cells per image pool, encoder families), whose
coverage :mod:`backretrieval.findings.inference_sim` checks. Its words: :mod:`.verdict_text`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...stats.questions import two_questions
from ...stats.weighted import STATS
from .replicates import cell_key, read_replicate_table

#: fewest encoders a cell set needs for an inferential (pooled) result; below it the results
#: are descriptive (a Spearman correlation across 3 encoders takes 4 values)
MIN_POOL_ENCODERS = 8


@dataclass(frozen=True)
class Layout:
    """The shape of a pooled result: ``cells`` (configuration, image pool, directions) and the
    encoders every cell shares, as family sizes (a family of 1: an independent encoder)."""

    name: str
    cells: tuple[tuple[str, str, int], ...]
    families: tuple[int, ...]

    @property
    def n_encoders(self) -> int:
        return int(sum(self.families))

    def signature(self) -> str:
        """One line that names the layout: cells per image pool, encoders, families."""
        pools: dict[str, int] = {}
        for _, pool, n in self.cells:
            pools[pool] = pools.get(pool, 0) + n
        cells = " + ".join(f"{n}" for n in pools.values())
        fams = "+".join(str(f) for f in sorted(self.families, reverse=True))
        return f"{sum(pools.values())} cells ({cells} per image pool), {self.n_encoders} encoders in families {fams}"


def overall_cells(records) -> pd.DataFrame:
    """One row per (configuration, direction, stat) from the ``inference`` records: the
    BkR − CORR difference of the correlations with XLR, its crossed-bootstrap SE and CI."""
    rows = []
    for rec in records:
        if rec.analysis != "inference" or rec.status != "ok":
            continue
        for r in rec.numbers.get("per_direction", []):
            d = r.get("rho_diff") or {}
            if not d:
                continue
            rows.append(
                {
                    "run_name": rec.run.run_name,
                    "dataset": rec.run.dataset,
                    "synthetic": rec.run.synthetic,
                    "direction": r["direction"],
                    "stat": r["stat"],
                    "bkr": (r.get("rho_bkr") or {}).get("estimate"),
                    "corr": (r.get("rho_corr") or {}).get("estimate"),
                    "diff": d.get("estimate"),
                    "se": d.get("se"),
                    "low": d.get("low"),
                    "high": d.get("high"),
                }
            )
    cols = ["run_name", "dataset", "synthetic", "direction", "stat", "bkr", "corr", "diff", "se", "low", "high"]
    return pd.DataFrame(rows, columns=cols).astype(
        {"bkr": float, "corr": float, "diff": float, "se": float, "low": float, "high": float}
    )


#: the encoder sets the overall verdict reports (findings step ``encoder_sets``)
VERDICT_SETS = ("all", "core")


def verdict_layouts(records: Sequence) -> dict[str, list]:
    """``{set: [Layout]}``: the pooled groups the verdict reports (real-data configurations
    that share one encoder set of at least :data:`MIN_POOL_ENCODERS`), as simulation layouts
    (cells per configuration and image pool, encoder families). Configurations on the same
    images share a pool (:func:`_image_pool`: the digest of the image ids in their records)."""

    # a pool's label in the simulation (its items are keyed by it): any fixed label would do;
    # the largest dataset name among the records on those images keeps it stable as records
    # are added, and keeps the committed simulations reproducible
    label: dict[str, str] = {}
    for r in _verdict_records(records):
        label[_image_pool(r)] = max(label.get(_image_pool(r), ""), str(r.run.dataset))
    out: dict[str, list] = {}
    for set_name, groups in _groups(records).items():
        for members, recs in groups.items():
            if len(members) < MIN_POOL_ENCODERS:
                continue
            fams: dict[str, int] = {}
            fam_of = recs[0].settings.get("encoder_families") or {}
            for e in members:
                fams[fam_of.get(e, e)] = fams.get(fam_of.get(e, e), 0) + 1
            fam_sizes = tuple(sorted(fams.values(), reverse=True))
            if len(recs) > 1:  # each configuration's own result is stated too: its layout alone
                for r in recs:
                    one = ((r.run.run_name, label[_image_pool(r)], len(r.run.directions)),)
                    out.setdefault(set_name, []).append(Layout(f"{set_name}:{r.run.run_name}", one, fam_sizes))
            cells = tuple((r.run.run_name, label[_image_pool(r)], len(r.run.directions)) for r in recs)
            out.setdefault(set_name, []).append(
                Layout(
                    f"{set_name}:{'+'.join(r.run.run_name for r in recs)}",
                    cells,
                    tuple(sorted(fams.values(), reverse=True)),
                )
            )
    return out


def _image_pool(rec) -> str:
    """The images a configuration samples: the digest of their ids its inference record holds
    (configurations on the same images, e.g. Multi30K task 1 and task 2 on test_2016, share a
    pool); a record made before the digest existed: its dataset's name."""
    return str(rec.settings.get("image_pool") or rec.run.dataset)


def _verdict_records(records: Sequence) -> list:
    """The records the verdict rests on: the real-data ones, or (none) the SYNTHETIC ones."""
    return [r for r in records if not r.run.synthetic] or list(records)


def _groups(records: Sequence) -> dict[str, dict[tuple[str, ...], list]]:
    out: dict[str, dict[tuple[str, ...], list]] = {}
    for set_name in VERDICT_SETS:
        for r in _verdict_records(records):
            members = (r.settings.get("encoder_sets") or {}).get(set_name)
            if members:
                out.setdefault(set_name, {}).setdefault(tuple(sorted(members)), []).append(r)
    return out


def verdict_pooled(records: Sequence, tables: Sequence[pd.DataFrame], alpha: float = 0.05) -> dict[str, Any]:
    """The overall verdict's numbers. ``configurations``: every real-data configuration's own
    BkR − CORR (mean over its directions; both questions; its encoder count), first.
    ``pooled[set]``: the groups of configurations that share one encoder set of at least
    :data:`MIN_POOL_ENCODERS` encoders, pooled (:func:`two_questions`) over their cells; smaller
    sets are descriptive only. ``records[i]`` is an ``inference`` record, ``tables[i]`` its
    replicate table; all must share B and the bootstrap seed (then an image has the same weight
    in replicate b of every configuration)."""
    if len(records) != len(tables):
        raise InputError("verdict_pooled: one replicate table per inference record")
    designs = {(int(r.settings.get("B", -1)), int(r.settings.get("bootstrap_seed", -1))) for r in records}
    if len(designs) > 1:
        names = ", ".join(
            f"{r.run.run_name} (B={r.settings.get('B')}, seed {r.settings.get('bootstrap_seed')})" for r in records
        )
        raise InputError(
            f"verdict_pooled: the inference records were not drawn jointly (differing B or bootstrap seed): {names}"
        )
    table_of = {id(r): t for r, t in zip(records, tables)}
    configs = []
    for r in _verdict_records(records):
        conf = r.numbers.get("configuration") or {}
        configs.append(
            {
                "run_name": r.run.run_name,
                "dataset": r.run.dataset,
                "synthetic": bool(r.run.synthetic),
                "N": int(r.run.sample_size),
                "n_seeds": int(r.settings.get("n_seeds_used") or len(r.run.seeds)),
                "directions": list(r.run.directions),
                **{sn: conf[sn] for sn in VERDICT_SETS if sn in conf},
            }
        )
    pooled: dict[str, list] = {}
    for set_name, groups in _groups(records).items():
        for members, recs in groups.items():
            entry: dict[str, Any] = {
                "configurations": [r.run.run_name for r in recs],
                "datasets": sorted({r.run.dataset for r in recs}),
                "encoders": list(members),
                "n_encoders": len(members),
                "inferential": len(members) >= MIN_POOL_ENCODERS,
            }
            for stat in STATS:
                pts, reps, jack, loo, cells = [], [], [], {}, []
                for r in recs:
                    for d in r.run.directions:
                        key = cell_key(d, set_name, "rho_diff", stat)
                        pt = (r.numbers.get("cell_points") or {}).get(key)
                        t = table_of[id(r)]
                        if pt is None or key not in t.columns:
                            continue
                        rep, jk, fam = read_replicate_table(t, key)
                        pts.append(float(pt))
                        reps.append(rep)
                        jack.append(jk)
                        for f_, v in fam.items():
                            loo.setdefault(f_, []).append(v)
                        cells.append(f"{r.run.run_name}:{d}")
                if not pts:
                    continue
                loo = {f_: v for f_, v in loo.items() if len(v) == len(pts) and np.isfinite(v).all()}
                res = two_questions(pts, reps, jack, loo, alpha)
                res.update(cells=cells, n_positive=int(np.sum(np.array(pts) > 0)))
                entry[stat] = res
            entry["n_families"] = entry.get("pearson", {}).get("random", {}).get("n_families")
            pooled.setdefault(set_name, []).append(entry)
    return {"configurations": configs, "pooled": pooled}
