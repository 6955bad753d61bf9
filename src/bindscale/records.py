"""Per-trial records: one JSON file per trial, written atomically, and the derived table.

A record is written to a temporary name in the same directory, flushed to
disk and renamed, so a reader (or a resumed run) sees either the whole record
or none. ``results.parquet`` is always rebuilt from the record files.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import pandas as pd

from . import __version__

RECORD_DIR = "records"
REQUIRED = ("trial_id", "status", "config")


def _warn(msg: str) -> None:
    """One line on stderr (not a Python warning with its source line)."""
    print(f"warning: {msg}", file=sys.stderr)


def record_path(run_dir: Path, trial_id: str) -> Path:
    return Path(run_dir) / RECORD_DIR / f"{trial_id}.json"


def _clean(obj):
    """Strict-JSON-safe copy: NaN/inf become None (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file + fsync + rename (no half-written file is ever visible).

    Raises:
        OSError: the directory cannot be written (permission, disk full); the temp file is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; records are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_record(run_dir: Path, record: dict) -> Path:
    """Atomically write one trial's record; returns its path."""
    path = record_path(run_dir, record["trial_id"])
    atomic_write_text(path, json.dumps(_clean(record), indent=1, sort_keys=True, allow_nan=False))
    return path


def read_record(path: Path) -> dict | None:
    """A record, or None (with a warning) when it is truncated, corrupt or misnamed."""
    try:
        rec = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        _warn(f"ignoring unreadable record {path} ({type(err).__name__}); its trial will be re-run")
        return None
    if not isinstance(rec, dict) or any(k not in rec for k in REQUIRED) or rec["trial_id"] != Path(path).stem:
        _warn(f"ignoring malformed record {path}; its trial will be re-run")
        return None
    return rec


def load_records(run_dir: Path, trial_ids: set[str] | None = None) -> dict[str, dict]:
    """Valid records of a run directory by trial id (only ``trial_ids`` when given)."""
    d = Path(run_dir) / RECORD_DIR
    out = {}
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        if trial_ids is not None and p.stem not in trial_ids:
            continue
        rec = read_record(p)
        if rec is not None:
            out[rec["trial_id"]] = rec
    return out


def records_table(records: list[dict]) -> pd.DataFrame:
    """Flatten records into one row per trial: config columns, metrics, status, timings, provenance.

    ``decod_layers`` is kept as a JSON string so the table stays rectangular.
    """
    rows = []
    for rec in records:
        row = {"trial_id": rec["trial_id"], "study": rec.get("study"), "status": rec["status"],
               "diverged_step": rec.get("diverged_step"), "error": rec.get("error")}
        row |= rec["config"]
        metrics = dict(rec.get("metrics") or {})
        if "decod_layers" in metrics:
            metrics["decod_layers"] = json.dumps(metrics["decod_layers"], sort_keys=True)
        row |= metrics
        row |= {f"prov_{k}": v for k, v in (rec.get("provenance") or {}).items()}
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in ("r2_id", "r2_heldout", "r2_inhull", "r2_outhull", "decod_best", "decod_input", "decod_random"):
        if col in df:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    return df


def write_results(run_dir: Path, records: list[dict]) -> pd.DataFrame:
    """Write ``results.parquet`` (atomically) from records; returns the table."""
    df = records_table(records)
    path = Path(run_dir) / "results.parquet"
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return df


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


def provenance(device: str, executor: str) -> dict:
    """What produced a record: package version, git hash, torch version, device, executor."""
    import torch

    return {"bindscale_version": __version__, "git_hash": git_hash(), "torch_version": torch.__version__,
            "device": device, "executor": executor}
