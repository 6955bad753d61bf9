"""The rows of a results table a verdict or figure may read (a leaf module: pandas only).

It sits below :mod:`bindscale.study` (whose default ``prepare_rows`` it is) and
:mod:`bindscale.records`, so neither imports the other through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def ok_rows(df: pd.DataFrame, numeric: tuple[str, ...] = ()) -> pd.DataFrame:
    """Copy of the ``status == "ok"`` rows of a results table, with the ``numeric`` columns coerced to float.

    Missing numeric columns are added as NaN (an older run without a metric makes
    its claim inconclusive instead of crashing). A table without a ``status``
    column is taken as all ok; a repeated record (same ``trial_id``) counts once.
    """
    import numpy as np
    import pandas as pd

    out = df.copy()
    if "trial_id" in out.columns:
        out = out.drop_duplicates("trial_id")  # a repeated record is one trial, not another seed
    if "status" in out.columns:
        out = out[out["status"].astype(str) == "ok"].copy()
    for col in numeric:
        out[col] = pd.to_numeric(out[col], errors="coerce") if col in out else np.nan
    return out.reset_index(drop=True)
