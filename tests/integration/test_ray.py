"""The Ray executor on a local Ray instance that the run starts and stops (issue #4)."""

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from .conftest import bindscale

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

METRICS = ["status", "r2_id", "r2_heldout", "r2_inhull", "r2_outhull", "decod_best", "final_loss"]


def _table(out):
    return pd.read_parquet(out / "results.parquet").set_index("trial_id").sort_index()


def test_quick_study_on_ray_gives_the_local_runs_records_and_verdicts(tmp_path):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    r = bindscale("run", "--quick", "--out", local, timeout=600)
    assert r.returncode == 0, r.stderr
    r = bindscale("run", "--quick", "--out", on_ray, "--executor", "ray", "--workers", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    assert "(ray)" in r.stderr
    a, b = _table(local), _table(on_ray)
    pd.testing.assert_frame_equal(a[METRICS], b[METRICS], check_exact=True)
    assert set(b["prov_executor"]) == {"ray"} and set(a["prov_executor"]) == {"process"}
    va = json.loads((local / "summary.json").read_text())["verdicts"]
    vb = json.loads((on_ray / "summary.json").read_text())["verdicts"]
    assert [(v["claim"], v["verdict"], v["value"]) for v in va] == [(v["claim"], v["verdict"], v["value"]) for v in vb]
    # Records, table and report have the same form.
    assert sorted(p.name for p in local.iterdir() if not p.name.startswith(".")) == \
        sorted(p.name for p in on_ray.iterdir() if not p.name.startswith("."))


def test_a_run_interrupted_under_the_process_pool_resumes_on_ray(tiny, tmp_path):
    ref = tmp_path / "ref"
    assert bindscale("run", tiny, "--out", ref, "--executor", "inline").returncode == 0
    out = tmp_path / "mixed"
    proc = subprocess.Popen([sys.executable, "-m", "bindscale", "run", str(tiny), "--out", str(out), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not list((out / "records").glob("*.json")) if (out / "records").is_dir() else time.time() < deadline:
        if time.time() > deadline or proc.poll() is not None:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(list((out / "records").glob("*.json")))
    assert 0 < n_before < 16
    r = bindscale("run", tiny, "--out", out, "--executor", "ray", "--workers", "2")
    assert r.returncode == 0, r.stderr
    got = _table(out)
    pd.testing.assert_frame_equal(got[METRICS], _table(ref)[METRICS], check_exact=True)
    assert set(got["prov_executor"]) == {"process", "ray"}
