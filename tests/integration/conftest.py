import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

TINY = Path(__file__).parent / "tiny.yaml"


def bindscale(*args, cwd=None, timeout=300):
    """Run the CLI in a subprocess, as a user would."""
    env = os.environ | {"PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "bindscale", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def processes():
    """``(pid, stat fields after the command name, /proc/PID folder)`` of every process (Linux's /proc;
    none where there is none). Fields: state, ppid, pgrp, session, …"""
    for d in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        yield int(d.name), fields, d


def session_processes(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``: a run started with ``start_new_session=True`` and
    every process it made, re-parented or not."""
    return [pid for pid, fields, _ in processes() if int(fields[3]) == sid and fields[0] != "Z"]


def run_quick(study: str, out: Path) -> tuple[float, dict]:
    """``bindscale run STUDY --quick --out OUT`` as a user would: (wall seconds, summary.json).

    Fails the calling test when the command fails.
    """
    t0 = time.perf_counter()
    r = bindscale("run", study, "--quick", "--out", out, timeout=600)
    elapsed = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    summary = json.loads((Path(out) / "summary.json").read_text())
    print(f"\n{study} --quick: {elapsed:.0f} s; " + "; ".join(
        f"{v['claim']} {v['verdict']} {v['value']}" for v in summary["verdicts"]))
    return elapsed, summary


def run_tiny(study: Path, out: Path, claims: list[str], n_trials: int, columns=()) -> tuple[dict, "pd.DataFrame"]:
    """Run a tiny study file through the CLI on one worker and check what every study's run must give:
    exit 0, its claims in order, each inconclusive (a tiny study has too few seeds to decide), ``n_trials``
    ok records and the ``columns`` in the results table. Returns (summary, results table)."""
    import pandas as pd

    r = bindscale("run", study, "--out", out, "--workers", "1")
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [v["claim"] for v in summary["verdicts"]] == list(claims)
    assert all(v["verdict"] == "inconclusive" for v in summary["verdicts"]), [v["verdict"] for v in summary["verdicts"]]
    df = pd.read_parquet(out / "results.parquet")
    assert len(df) == n_trials and set(df["status"]) == {"ok"}
    missing = [c for c in columns if c not in df]
    assert not missing, missing
    return summary, df


def assert_resumes(study: Path, out: Path, n_trials: int) -> None:
    """A second run of the same command re-runs nothing."""
    r = bindscale("run", study, "--out", out, "--workers", "1")
    assert f"{n_trials} already recorded, 0 to run" in r.stderr.replace("\n", " ")


def assert_typed_table(out: Path):
    """``results.parquet`` of a finished run: one column per config field (no two columns with equal
    content are the same field), no JSON text, and curves and keyed tables equal to the records'.
    Returns the table."""
    import itertools

    import pandas as pd

    from bindscale.store.records import load_records
    from bindscale.verdicts.results_table import metric_table
    from bindscale.run.runner import load_run_study

    df = pd.read_parquet(Path(out) / "results.parquet")
    cls = type(load_run_study(out).base)
    same = {frozenset((a, p)) for a, p in cls.AXES.items() if a != p}
    for a, b in itertools.combinations(df.columns, 2):
        assert not (frozenset((a, b)) in same and df[a].equals(df[b])), f"{a} and {b} are one field"
    assert not {p for a, p in cls.AXES.items() if a != p} & set(df.columns)
    json_text = [c for c in df.columns if df[c].map(lambda v: isinstance(v, str) and v.startswith(("[", "{"))).any()]
    assert json_text == []
    rows = df.set_index("trial_id")
    for tid, rec in load_records(out).items():
        m = rec["metrics"]
        for k in ("curve_steps", "curve_loss", "curve_r2_heldout"):
            if k in m:
                got = [None if x != x else x for x in rows.at[tid, k].tolist()]  # NaN is null in both
                assert got == m[k], (tid, k)
        for k, spec in cls.NESTED_METRICS.items():
            if k in m:
                assert json.dumps(metric_table(rows.at[tid, k], *spec), sort_keys=True) == \
                    json.dumps(m[k], sort_keys=True), (tid, k)
    return df


@pytest.fixture
def tiny():
    return TINY
