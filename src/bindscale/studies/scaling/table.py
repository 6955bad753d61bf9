"""The scaling study's per-configuration table in its report."""

from __future__ import annotations

import pandas as pd

from bindscale.kit import mean_table

from .verdicts import prepare_rows

METRICS = ["r2_id", "r2_heldout", "r2_inhull", "r2_outhull", "decod_best"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per model × width × depth × hold-out; encoding, split and withheld pairs
    are columns only when they vary (otherwise noise)."""
    ok = prepare_rows(df)
    keys = ["model", "width", "depth", "holdout"]
    keys += [c for c in ("encoding", "split", "withheld_pairs") if c in ok and ok[c].nunique() > 1]
    return mean_table(ok, keys, METRICS, counts=("n_train_combos",))
