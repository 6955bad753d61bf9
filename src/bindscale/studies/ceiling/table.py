"""The ceiling study's per-configuration table in its report."""

from __future__ import annotations

import pandas as pd

from bindscale.report.html import mean_table

from .problems import FAMILIES
from .verdicts import prepare_rows

KEYS = ["model_kind", "model_name", "budget", "n_train", "layers", "steps"]
METRICS = [f"{m}_{f}" for f in FAMILIES for m in ("sat", "feas", "gap", "optimal", "unparsable")] + \
          [f"sat_{f}_train" for f in FAMILIES] + [f"sat_{f}_heldout" for f in FAMILIES] + ["d_model", "n_params_nonembed"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per model kind × model × budget × training-set size (× depth, steps)."""
    return mean_table(prepare_rows(df), KEYS, METRICS)
