"""The rows of a results table a verdict or figure may read (a leaf module: pandas only).

It sits below :mod:`bindscale.core.study` (whose default ``prepare_rows`` it is) and
:mod:`bindscale.store.records`, so neither imports the other through it.
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


def one_per_unit(df: pd.DataFrame, config: tuple[str, ...] = (),
                 axes: tuple[str, ...] = ()) -> tuple[pd.DataFrame, int]:
    """The table with one record per independent unit (a configuration and its seed), and how many were dropped.

    Two records of the same configuration and seed are one measurement, whatever their trial ids: a
    copied record, or a trial rerun into another directory, resampled as a second seed would narrow
    every interval. ``config``: the trial class's config columns (``seed`` among them,
    :meth:`bindscale.core.config.TrialBase.column_names`); ``axes``: its sweep axes. When the table has
    ``seed`` and every axis column (a results table written by :func:`bindscale.store.records.records_table`
    has all of them), records equal on the config columns present are one unit; otherwise (a table
    built by hand, which may tell its cells apart by columns that are not config fields) only records
    equal on every column but ``trial_id`` are; a record whose ``seed`` is missing (NaN) is never merged. Of a
    unit's records an ``ok`` one with the most finite numbers is kept (the last such).
    """
    import numpy as np
    import pandas as pd

    if df.empty:
        return df, 0
    cols = [c for c in config if c in df.columns]
    full = "seed" in df.columns and all(a in df.columns for a in axes)
    # "study": a table may hold the trials of several studies, which share column names (seed, lr, steps).
    key_cols = cols + [c for c in ("study",) if c in df.columns and c not in cols] if full and cols else \
        [c for c in df.columns if c != "trial_id"]
    # str(): list- and dict-valued cells (curves, keyed tables) are not hashable.
    key = pd.Series(["\x1f".join(map(str, r)) for r in df[key_cols].itertuples(index=False)])
    if "seed" in df.columns:  # a record without a seed is no evidence of a repeat: its own unit
        no_seed = pd.to_numeric(df["seed"], errors="coerce").isna().to_numpy()
        key[no_seed] = [f"\x1e{i}" for i in np.flatnonzero(no_seed)]
    ok = (df["status"].astype(str) == "ok").to_numpy() if "status" in df.columns else np.ones(len(df), bool)
    # Of a unit's records the kept one is ok and, among those, has the most finite numbers (a rerun
    # whose metrics came out NaN does not hide a good record of the same configuration and seed).
    finite = np.isfinite(df.select_dtypes("number").to_numpy(float)).sum(axis=1) if len(df.columns) else 0
    order = ok.astype(np.int64) * (df.shape[1] + 1) + finite
    pos = np.argsort(order, kind="stable")  # positions, best last (kept); the index may repeat labels
    keep = ~key.iloc[pos].duplicated(keep="last").to_numpy()
    out = df.iloc[np.sort(pos[keep])]
    return out, int(len(df) - len(out))


def ambiguous_units(df: pd.DataFrame, config: tuple[str, ...] = (),
                    axes: tuple[str, ...] = ()) -> tuple[int, list[str]]:
    """Records that may repeat a unit but cannot be told apart from distinct ones, and the columns missing.

    When a table lacks some of the study's axis columns (a table built by hand), :func:`one_per_unit`
    merges only exact copies; a record that equals another on every config column present and on its
    ``seed`` but differs in a metric is then either another configuration (on an axis the table does not
    record) or a rerun of the same one, and counting it as another seed would narrow every interval.
    Only ``ok`` records count (a failed retry is never resampled). Output: (how many such records beyond
    the first of each group, the axis columns missing); ``(0, [])``
    when the table has every axis column or no seed column (then each record is its own unit anyway).
    """
    import pandas as pd

    missing = [a for a in axes if a not in df.columns]
    if df.empty or not missing or "seed" not in df.columns:
        return 0, missing if "seed" in df.columns else []
    cols = [c for c in config if c in df.columns]
    cols += [c for c in ("study",) if c in df.columns and c not in cols]
    if "seed" not in cols:
        cols.append("seed")
    seeded = df[pd.to_numeric(df["seed"], errors="coerce").notna()]
    if "status" in seeded.columns:  # only ok records are resampled as seeds
        seeded = seeded[seeded["status"].astype(str) == "ok"]
    keys = pd.Series(["\x1f".join(map(str, r)) for r in seeded[cols].itertuples(index=False)])
    return int(keys.duplicated().sum()), missing


#: Non-integer measured values a record must hold before :func:`copies_under_other_seeds` may call it a copy.
MIN_FRACTIONAL = 3


def copies_under_other_seeds(df: pd.DataFrame, config: tuple[str, ...] = ()) -> tuple[pd.DataFrame, int]:
    """The table without records that repeat another record's every value under another seed number, and how
    many were dropped.

    Two training runs of different seeds never agree to the last bit on every measured value; a record that
    does (equal on every column but ``trial_id`` and ``seed``) is a copy filed as a new seed (or a trial whose
    seed changes nothing, e.g. a deterministic evaluation): one measurement, which counted twice would narrow
    every interval. Only ``ok`` records are merged, and only those holding at least :data:`MIN_FRACTIONAL` finite
    non-integer numbers in columns outside the config columns (``config``) that vary over the table (losses,
    shares of a test set, timings: a trained model's record holds dozens): records made of exact 0s, 1s and counts, or a hand-built table of one or two
    metrics, can agree by chance. Of a group the record with the lowest seed is kept.
    """
    import numpy as np
    import pandas as pd

    if df.empty or "seed" not in df.columns or len(df) < 2:
        return df, 0
    ok = (df["status"].astype(str) == "ok").to_numpy() if "status" in df.columns else np.ones(len(df), bool)
    measured = df.drop(columns=[c for c in (*config, "seed", "trial_id") if c in df.columns]).select_dtypes("number")
    measured = measured.loc[:, measured.nunique(dropna=True) > 1]  # a column equal in every record tells nothing
    vals = measured.to_numpy(float) if measured.shape[1] else np.zeros((len(df), 0))
    fractional = (np.isfinite(vals) & (vals != np.round(vals))).sum(axis=1) >= MIN_FRACTIONAL
    candidate = ok & fractional & pd.to_numeric(df["seed"], errors="coerce").notna().to_numpy()
    if candidate.sum() < 2:
        return df, 0
    key_cols = [c for c in df.columns if c not in ("trial_id", "seed")]
    key = pd.Series(["\x1f".join(map(str, r)) for r in df[key_cols].itertuples(index=False)])
    key[~candidate] = [f"\x1e{i}" for i in np.flatnonzero(~candidate)]
    order = np.argsort(pd.to_numeric(df["seed"], errors="coerce").fillna(np.inf).to_numpy(), kind="stable")
    keep = np.zeros(len(df), bool)
    keep[order] = ~key.iloc[order].duplicated(keep="first").to_numpy()
    return df.iloc[np.flatnonzero(keep)], int((~keep).sum())
