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


def assert_resumes(study: Path, out: Path, n_trials: int) -> None:
    """A second run of the same command re-runs nothing."""
    r = bindscale("run", study, "--out", out, "--workers", "1")
    assert f"{n_trials} already recorded, 0 to run" in r.stderr.replace("\n", " ")


@pytest.fixture
def tiny():
    return TINY
