"""The subgraphs study's per-configuration table in its report."""

from __future__ import annotations

import pandas as pd

from bindscale.kit import mean_table, ok_rows

KEYS = ["task", "scratchpad", "n_train", "layers", "d_model"]
METRICS = ["acc_id", "acc_ood", "compound_eps", "seen_correct", "seen_wrong"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per task × scratchpad × training-set size × model shape."""
    return mean_table(ok_rows(df), KEYS, METRICS)
