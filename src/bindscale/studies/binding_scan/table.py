"""The binding_scan study's per-configuration table in its report: every model's rows, the recurrent
encoder-decoder's too (which no claim reads: :func:`.verdicts.prepare_rows`)."""

from __future__ import annotations

import pandas as pd

from bindscale.kit import coerce_numeric, mean_table, ok_rows

from .verdicts import NUMERIC

#: A configuration: the decoders' (budget, positions) and the recurrent model's (hidden, dropout, attention)
#: columns; a table without recurrent records has none of the latter (mean_table keeps the columns present).
KEYS = ["split", "model", "budget", "layers", "pos", "hidden", "dropout", "attention"]
METRICS = ["acc_test", "tok_acc_test", "acc_id", "tok_acc_id", "acc_train", "d_model", "d_ff", "n_params_nonembed",
           "n_params"]


def config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Means over seeds per split × model × budget × depth × positions (× the recurrent model's shape)."""
    rows = coerce_numeric(ok_rows(df, NUMERIC), (*NUMERIC, "acc_train"))
    keys = [k for k in KEYS if k in rows and rows[k].notna().any()]  # e.g. no budget in a recurrent-only table
    return mean_table(rows, keys, [m for m in METRICS if m != "acc_train" or m in rows])
