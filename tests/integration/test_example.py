"""examples/notebook.py and examples/hooks.py run as scripts (this is how CI runs the examples)."""

import os
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "notebook.py"


def test_the_notebook_example_runs_and_prints_its_results(tmp_path):
    env = os.environ | {"TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}  # its run directory goes under tmp_path
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=600)
    elapsed = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    print(f"\nexamples/notebook.py: {elapsed:.0f} s")
    out = r.stdout
    assert "ok, held-out R²" in out and "ridge probe hidden.1 -> z" in out and "logistic probe" in out
    assert "hypernet" in out and "best trial" in out
    run = next(tmp_path.glob("bindscale-example-*")) / "run"
    assert (run / "results.parquet").exists() and len(list((run / "models").glob("*.pt"))) == 4


HOOKS_EXAMPLE = Path(__file__).parents[2] / "examples" / "hooks.py"


def test_the_hooks_example_runs_and_prints_its_results(tmp_path):
    env = os.environ | {"TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    r = subprocess.run([sys.executable, str(HOOKS_EXAMPLE)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "ActivationCache(hook_hidden.0" in out and "mean ablation hurts most" in out
    assert "of the gap closed" in out and out.rstrip().endswith("hooks example done")
