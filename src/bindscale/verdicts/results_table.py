"""The results table: ``results.parquet`` built from a run's per-trial records (:mod:`bindscale.store.records`).

A record is written to a temporary name in the same directory, flushed to
disk and renamed (:mod:`bindscale.store.storage`), so a reader (or a resumed run)
sees either the whole record or none. The run directory may be a local path
or an fsspec URL. ``results.parquet`` is always rebuilt from the record files
(``bindscale report DIR`` rebuilds it for run directories of any age).

``results.parquet``: one row per trial, one column per field, every value in a
native Arrow type (no JSON text), so that pandas (``pd.read_parquet``) and
DuckDB (``SELECT ... FROM 'results.parquet'``) read it as it is:

- ``trial_id``, ``study`` (the study's name), ``status`` (ok / diverged /
  failed), ``diverged_step``, ``error``;
- config: one column per trial field, named by the study's short sweep-axis
  name where it has one (``width``, ``holdout``, ``pretraining``; the trial
  class's ``AXES``), by its dotted path otherwise (``train.grad_clip``).
  Records written before this held both names (``width`` and ``model.width``);
  the table keeps the short one (:meth:`bindscale.core.config.TrialBase.config_columns`);
- scalar metrics: int64 / double / bool / string;
- curves: ``curve_steps`` (list<int64>) and one list<double> per curve of the
  same length (``curve_loss`` in every study; ``curve_r2_heldout`` and
  ``curve_r2_heldout_taskmean`` of the stacked trainer); NaN is null. Records written
  before curves were lists hold ``curve`` as JSON text of ``[step, loss]``
  pairs; the table splits it into ``curve_steps`` and ``curve_loss``;
- keyed per-trial tables (per-layer decodability, accuracy by depth, error
  types by depth, …): list<struct> columns of rows, one struct field per key
  level and per value, as the trial class's ``NESTED_METRICS`` names them, e.g.
  ``decod_layers`` list<struct<layer: string, r2: double>> and
  ``coverage_by_depth`` list<struct<depth: string, label: string, n: int64,
  share: double>>. Keys are strings, as in the records (``"3"``, ``"2x3"``);
  :func:`metric_table` turns a cell back into the record's nested dict;
- other lists of dicts (e.g. per-mask ``runs``, decoded ``examples``):
  list<struct>; other dicts (``timings``): struct;
- ``prov_*``: provenance (bindscale version, git hash, torch version, device,
  executor).

In DuckDB, ``SELECT trial_id, width, unnest(curve_steps) AS step,
unnest(curve_r2_heldout) AS r2 FROM 'results.parquet'`` gives a long curve
table, and ``SELECT trial_id, unnest(acc_by_depth, recursive := true) FROM
'results.parquet'`` one row per trial and depth (columns depth, n, acc).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bindscale.store.records import json_safe, warn
from bindscale.store.storage import RunStore

if TYPE_CHECKING:
    import pandas as pd

#: Record fields that hold text (or nothing) even when every value is null.
TEXT_COLUMNS = ("trial_id", "study", "status", "error")


def _trial_class(rec: dict, default: type | None) -> type:
    """The trial config class of a record's study (for its column names and nested metrics)."""
    from bindscale.core import registry
    from bindscale.core.config import TrialBase
    from bindscale.core.errors import ConfigError

    if default is not None:
        return default
    if isinstance(rec.get("trial_config"), dict):
        try:
            return registry.for_trial(rec["trial_config"]).trial_class
        except ConfigError:  # a study whose plugin is not installed here: its columns as recorded
            pass
    return TrialBase


def metric_rows(table: Mapping, keys: Sequence[str], values: Sequence[str]) -> list[dict]:
    """A record's keyed table as rows: ``{"3": [32, 0.8]}`` with keys ``("size",)`` and values
    ``("n", "acc")`` gives ``[{"size": "3", "n": 32, "acc": 0.8}]`` (one key level per key name;
    a leaf is a list of the values, or the value itself when there is one). A branch that is not
    a dict where a key level is expected is left out."""
    rows: list[dict] = []

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if len(path) == len(keys):
            leaf = list(node) if len(values) > 1 and isinstance(node, (list, tuple)) else [node]
            rows.append({**dict(zip(keys, path)), **dict(zip(values, leaf))})
        elif isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, (*path, str(k)))

    walk(table, ())
    return rows


def metric_table(cell: Any, keys: Sequence[str], values: Sequence[str]) -> dict | None:
    """A keyed-table cell of the results table back in the record's nested-dict form.

    Reads every form the table has had: a list (or array, from Parquet) of row dicts, the nested
    dict itself, or JSON text (tables written before they were typed). None when the cell is empty
    or unreadable (a malformed entry drops out rather than failing the report).
    """
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except ValueError:
            return None
    if isinstance(cell, Mapping):
        return dict(cell)
    if cell is None or isinstance(cell, float) or not hasattr(cell, "__iter__"):
        return None
    out: dict = {}
    for row in cell:
        if not isinstance(row, Mapping) or any(k not in row for k in keys):
            continue
        node = out
        for k in keys[:-1]:
            node = node.setdefault(str(row[k]), {})
        leaf = [row.get(v) for v in values]
        node[str(row[keys[-1]])] = leaf if len(values) > 1 else leaf[0]
    return out


def metric_items(cell: Any) -> list:
    """A list cell (list<struct> from Parquet, a list, or JSON text of one) as a list; [] when empty."""
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except ValueError:
            return []
    if cell is None or isinstance(cell, (float, Mapping)) or not hasattr(cell, "__iter__"):
        return []
    return list(cell)


def _table_metrics(metrics: Mapping[str, Any], nested: Mapping[str, tuple]) -> dict[str, Any]:
    """A record's metrics as table cells: JSON text parsed, ``curve`` pairs split, keyed tables as rows."""
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        if isinstance(v, str) and v.startswith(("[", "{")):  # JSON text (records before typed tables)
            try:
                v = json.loads(v)
            except ValueError:
                pass
        if k == "curve" and isinstance(v, list):  # [[step, loss], ...] (records before curve lists)
            pairs = [p for p in v if isinstance(p, (list, tuple)) and len(p) == 2]
            out.setdefault("curve_steps", [p[0] for p in pairs])
            out.setdefault("curve_loss", [p[1] for p in pairs])
            continue
        if k in nested and isinstance(v, Mapping):
            v = metric_rows(v, *nested[k])
        out[k] = v
    return out


def records_table(records: list[dict], trial_class: type | None = None) -> pd.DataFrame:
    """Flatten records into one row per trial: config columns, metrics, status, timings, provenance.

    One column per config field (:meth:`bindscale.core.config.TrialBase.config_columns`); nested metrics in
    the forms of the module docstring. ``trial_class``: the trial config class of every record
    (default: each record's own, found from its ``trial_config`` through the registry).
    """
    import pandas as pd

    rows = []
    for rec in records:
        cls = _trial_class(rec, trial_class)
        row = {"trial_id": rec["trial_id"], "study": rec.get("study"), "status": rec["status"],
               "diverged_step": rec.get("diverged_step"), "error": rec.get("error")}
        row |= cls.config_columns(rec["config"])
        row |= _table_metrics(rec.get("metrics") or {}, getattr(cls, "NESTED_METRICS", {}))
        row |= {f"prov_{k}": v for k, v in (rec.get("provenance") or {}).items()}
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in df.columns:
        # A metric that is NaN (JSON null) in some records arrives as an object column of
        # numbers and None: make it float. Strings, bools, lists and dicts are left alone.
        if col not in TEXT_COLUMNS and df[col].dtype == object and df[col].map(_is_number_or_none).all():
            df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    return df



def _is_number_or_none(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _to_parquet(df: pd.DataFrame) -> bytes:
    """Parquet bytes of the table. A column Arrow cannot type (values of mixed kinds, which no
    study records) is written as JSON text with a warning rather than losing the table."""
    import pyarrow as pa

    buf = io.BytesIO()
    try:
        df.to_parquet(buf, index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        df = df.copy()
        for col in df.columns[df.dtypes == object]:
            try:
                pa.array(df[col], from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                warn(f"results table: column {col!r} mixes kinds of values; written as JSON text")
                df[col] = [None if _is_missing(v) else json.dumps(json_safe(v), sort_keys=True) for v in df[col]]
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
    return buf.getvalue()


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def write_results(run_dir: str | Path | RunStore, records: list[dict], trial_class: type | None = None) -> pd.DataFrame:
    """Write ``results.parquet`` (atomically) from records; returns the table as a reader of the file
    sees it (lists as arrays, structs as dicts), which is what the report is built from."""
    import pandas as pd

    data = _to_parquet(records_table(records, trial_class))
    RunStore.of(run_dir).write_bytes("results.parquet", data)
    return pd.read_parquet(io.BytesIO(data))
