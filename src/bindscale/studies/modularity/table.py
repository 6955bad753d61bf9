"""The modularity study's per-configuration table in its report."""

from __future__ import annotations

import pandas as pd

from bindscale.kit import mean_table, ok_rows

KEYS = ["architecture", "width", "depth", "pretraining"]
METRICS = ["base_acc_test", "frac_structural", "frac_robust", "sub_diff", "abl_diff", "density",
           "random_frac_structural", "untrained_frac_structural"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per architecture × width × depth × pretraining."""
    return mean_table(ok_rows(df), KEYS, METRICS)
