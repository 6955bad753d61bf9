"""The Ray executor on a local Ray instance that the run starts and stops."""

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


def test_ray_tasks_report_progress_while_they_train(tmp_path):
    from bindscale.studies.scaling.config import ModelConfig, TrainConfig, TrialConfig
    from bindscale.run.ray_executor import execute_ray

    train = TrainConfig(steps=1000, batch_tasks=16, n_evals=1, eval_tasks=16, probe_tasks=16, probe_samples=1)
    job = [TrialConfig(model=ModelConfig(width=16, depth=2), train=train, seed=s).model_dump(mode="json")
           for s in range(2)]
    calls, done = [], []
    execute_ray([job], str(tmp_path), "progress", "cpu", workers=1, retries=0, address=None, gpu_fraction=1.0,
                on_progress=lambda n, job: calls.append(n), on_job_done=done.append)
    assert done == [["ok", "ok"]]
    assert sum(calls) == 2 * 1000
    # Steps arrived while the job trained (reports every 25 steps, drained every 0.5 s),
    # not only as one lump when it finished (the last call tops up the rest).
    assert len(calls) >= 3 and sum(calls[:-1]) >= 2 * 25, calls
