"""The ceiling study's per-configuration table in its report."""

from __future__ import annotations

import pandas as pd

from bindscale.kit import mean_table

from .problems import FAMILIES
from .verdicts import prepare_rows

KEYS = ["model_kind", "model_name", "model_path", "lm_model", "budget", "n_train", "layers", "steps"]
#: Per family: each test metric beside its chance level on the same instances (``chance_*``: the better of
#: uniform-random and all-zero answers), the training-set fit (the gates' inputs) and the held-out satisfaction;
#: then the gates' worst-family columns (:data:`.verdicts.GATE_COLUMNS`).
METRICS = [c for f in FAMILIES for m in ("sat", "feas", "optimal") for c in (f"{m}_{f}", f"chance_{m}_{f}")] + \
          [f"{m}_{f}" for f in FAMILIES for m in ("gap", "unparsable", "n")] + ["lm_parsed"] + \
          [f"{m}_{f}_train" for f in FAMILIES for m in ("sat", "feas", "optimal")] + \
          [f"sat_{f}_heldout" for f in FAMILIES] + ["train_fit", "train_sat", "d_model", "n_params_nonembed"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per model kind × model × budget × training-set size (× depth, steps)."""
    return mean_table(prepare_rows(df), KEYS, METRICS)
