"""The replicate table beside ``inference.json`` (:data:`REPLICATES_FILE`): one row per item
bootstrap replicate, item jackknife group and encoder family left out, one column per cell
(direction × encoder set × quantity × stat), so that the verdict across configurations pools
the cells of one joint draw."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

#: the replicate table beside inference.json: one row per replicate, one column per cell key
REPLICATES_FILE = "inference_replicates.csv"


def cell_key(direction: str, set_name: str, quantity: str, stat: str) -> str:
    """The column of one cell's quantity in a replicate table."""
    return f"{direction}|{set_name}|{quantity}|{stat}"


def replicate_table(
    reps: Mapping[str, np.ndarray], jack: Mapping[str, np.ndarray], fam_loo: Mapping[str, Mapping[str, float]]
) -> pd.DataFrame:
    """One column per cell key; rows ``kind``/``unit``: ``boot`` (replicate b), ``jack`` (item
    group g left out), ``loo`` (encoder family left out, at the full items)."""
    import pandas as pd

    keys = list(reps)
    fams = sorted({f for k in keys for f in fam_loo.get(k, {})})
    B = len(next(iter(reps.values()))) if reps else 0
    G = len(next(iter(jack.values()))) if jack else 0
    rows = {
        "kind": ["boot"] * B + ["jack"] * G + ["loo"] * len(fams),
        "unit": [*map(str, range(B)), *map(str, range(G)), *fams],
    }
    cols = {k: np.concatenate([reps[k], jack[k], [fam_loo[k].get(f, np.nan) for f in fams]]) for k in keys}
    return pd.DataFrame({**rows, **cols})


def read_replicate_table(table: pd.DataFrame, key: str) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """(bootstrap replicates, jackknife values, family → estimate without it) of one cell key."""
    kind = table["kind"].astype(str)
    col = table[key].to_numpy(dtype=np.float64)
    fams = table.loc[kind == "loo", "unit"].astype(str).tolist()
    return (
        col[(kind == "boot").to_numpy()],
        col[(kind == "jack").to_numpy()],
        dict(zip(fams, col[(kind == "loo").to_numpy()])),
    )
