"""Per-trial records: one JSON file per trial, written atomically.

A record is written to a temporary name in the same directory, flushed to
disk and renamed (:mod:`bindscale.store.storage`), so a reader (or a resumed run)
sees either the whole record or none. The run directory may be a local path
or an fsspec URL. The results table (``results.parquet``) is built from these
files by :mod:`bindscale.verdicts.results_table`.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from bindscale.core._version import __version__
from bindscale.store.storage import RunStore

RECORD_DIR = "records"
REQUIRED = ("trial_id", "status", "config")


def warn(msg: str) -> None:
    """One line on stderr (not a Python warning with its source line)."""
    print(f"warning: {msg}", file=sys.stderr)


def record_name(trial_id: str) -> str:
    """Name of a trial's record inside the run directory."""
    return f"{RECORD_DIR}/{trial_id}.json"


def record_path(run_dir: str | Path | RunStore, trial_id: str) -> str:
    """Full path (or URL) of a trial's record."""
    return RunStore.of(run_dir).where(record_name(trial_id))


def json_safe(obj):
    """Strict-JSON-safe copy: NaN/inf become None (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def write_record(run_dir: str | Path | RunStore, record: dict) -> str:
    """Atomically write one trial's record; returns its path.

    Raises:
        StorageError: the record cannot be written (disk full, permission denied); nothing half-written stays.
    """
    store = RunStore.of(run_dir)
    store.write_text(record_name(record["trial_id"]), json.dumps(json_safe(record), indent=1, sort_keys=True,
                                                                 allow_nan=False))
    return store.where(record_name(record["trial_id"]))


def read_record(run_dir: str | Path | RunStore, trial_id: str) -> dict | None:
    """A record, or None (with a warning) when it is truncated, corrupt or misnamed."""
    store = RunStore.of(run_dir)
    where = store.where(record_name(trial_id))
    try:
        rec = json.loads(store.read_bytes(record_name(trial_id)))
    except (OSError, ValueError) as err:
        warn(f"ignoring unreadable record {where} ({type(err).__name__}); its trial is re-run by the next `bindscale run`")
        return None
    if not isinstance(rec, dict) or any(k not in rec for k in REQUIRED) or rec["trial_id"] != trial_id:
        warn(f"ignoring malformed record {where}; its trial is re-run by the next `bindscale run`")
        return None
    return rec


def load_records(run_dir: str | Path | RunStore, trial_ids: set[str] | None = None) -> dict[str, dict]:
    """Valid records of a run directory by trial id (only ``trial_ids`` when given)."""
    store = RunStore.of(run_dir)
    out = {}
    for name in store.list(RECORD_DIR, ".json"):
        tid = name[: -len(".json")]
        if trial_ids is not None and tid not in trial_ids:
            continue
        rec = read_record(store, tid)
        if rec is not None:
            out[rec["trial_id"]] = rec
    return out


@lru_cache(maxsize=1)
def git_hash() -> str | None:
    """Commit of the bindscale source checkout, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(device: str, executor: str, result_version: int | None = None) -> dict:
    """What produced a record: package version, git hash, torch version, device, executor, the CPU's model
    and the study's result version (:attr:`bindscale.core.study.StudyPlugin.result_version`; records made
    before versions were recorded carry none and count as version 1)."""
    import torch

    from bindscale.core.machine import cpu_model

    out = {"bindscale_version": __version__, "git_hash": git_hash(), "torch_version": torch.__version__,
           "device": device, "executor": executor, "cpu": cpu_model()}
    if result_version is not None:
        out["result_version"] = int(result_version)
    return out
