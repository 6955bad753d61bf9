"""The binding_scan study's per-configuration table in its report."""

from __future__ import annotations

import pandas as pd

from bindscale.kit import mean_table

from .verdicts import prepare_rows

KEYS = ["split", "model", "budget", "layers", "pos"]
METRICS = ["acc_test", "tok_acc_test", "acc_id", "tok_acc_id", "d_model", "d_ff", "n_params_nonembed", "n_params"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per split × model × budget × depth × positions."""
    return mean_table(prepare_rows(df), KEYS, METRICS)
