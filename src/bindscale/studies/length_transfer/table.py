"""The length_transfer study's per-configuration table in its report."""

from __future__ import annotations

import pandas as pd

from bindscale.kit import mean_table

from .verdicts import prepare_rows

KEYS = ["main", "aux", "pos", "layers", "d_model"]
METRICS = ["acc_in", "acc_beyond", "acc_past", "aux_acc_in", "transfer_gain", "head_corr", "head_jaccard"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per main task × auxiliary × positions × model shape (× pretrained model, where there is one)."""
    ok = prepare_rows(df)
    keys = KEYS + (["model_path"] if "model_path" in ok and ok["model_path"].notna().any() else [])
    return mean_table(ok, keys, METRICS)
