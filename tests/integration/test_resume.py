import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd

from .conftest import bindscale, session_processes


#: Interrupted runs train longer than tiny.yaml's 60 steps, so that the other jobs are still
#: running when the first record appears (at 60 steps the rest took ~1 s and, on a loaded
#: machine, finished before the signal arrived).
LONGER = ["--set", "train.steps=200"]


def _records(out):
    d = out / "records"
    return sorted(p.name for p in d.glob("*.json")) if d.is_dir() else []


def test_kill_9_during_a_sweep_then_rerun_records_every_trial_once_with_identical_results(tiny, tmp_path):
    ref = tmp_path / "ref"
    assert bindscale("run", tiny, "--out", ref, "--workers", "2", *LONGER).returncode == 0
    expected = pd.read_parquet(ref / "results.parquet").set_index("trial_id").sort_index()

    out = tmp_path / "killed"
    # Its own session: every process of the run is found after the kill, re-parented or not.
    proc = subprocess.Popen([sys.executable, "-m", "bindscale", "run", str(tiny), "--out", str(out), "--workers", "2", *LONGER],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while not _records(out) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # the driver only: its workers must die with it
    proc.wait()
    # The kernel ends the fork server as the driver exits and the workers as the fork server exits: a
    # few milliseconds in which a worker finishing a stack can still write a record (seen once under
    # load, when the count was read right after the driver's exit). The records are counted once the
    # run's processes are gone; a worker still alive seconds later is a failure. (That they die at the
    # driver's exit, not 0.2 s later through their polling watch, is test_chaos.py's slow test.)
    deadline = time.time() + 5
    while (left := session_processes(proc.pid)) and time.time() < deadline:
        time.sleep(0.02)
    try:
        assert not left, f"processes {left} outlived the killed driver"
    finally:
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
    n_before = len(_records(out))
    assert 0 < n_before < 16, n_before
    time.sleep(1.0)
    assert len(_records(out)) == n_before  # no orphaned worker kept writing

    r = bindscale("run", tiny, "--out", out, "--workers", "2", *LONGER)
    assert r.returncode == 0, r.stderr
    assert f"{n_before} already recorded, {16 - n_before} to run" in r.stderr.replace("\n", " ")
    assert len(_records(out)) == 16
    assert not list((out / "records").glob(".*.tmp"))
    got = pd.read_parquet(out / "results.parquet").set_index("trial_id").sort_index()
    assert list(got.index) == list(expected.index)
    cols = ["status", "r2_id", "r2_heldout", "r2_inhull", "r2_outhull", "decod_best", "final_loss"]
    pd.testing.assert_frame_equal(got[cols], expected[cols])


def test_ctrl_c_stops_the_sweep_with_one_line_and_the_rerun_finishes(tiny, tmp_path):
    out = tmp_path / "ctrl_c"
    # A terminal's Ctrl-C sends SIGINT to the whole foreground process group: driver and workers.
    # SIGINT's default action is restored for the run, as a terminal's foreground job has it: a
    # test runner started in the background (`cmd &` in a script, nohup) passes SIGINT down ignored.
    proc = subprocess.Popen([sys.executable, "-m", "bindscale", "run", str(tiny), "--out", str(out), "--workers", "2", *LONGER],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while not _records(out) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted: finished trials are kept; re-run the same command to resume" in err
    assert "Traceback" not in err
    records = [json.loads((out / "records" / n).read_text()) for n in _records(out)]
    assert records and all(r["status"] == "ok" for r in records)  # nothing recorded as failed by the interrupt
    r = bindscale("run", tiny, "--out", out, "--workers", "2", *LONGER)
    assert r.returncode == 0, r.stderr
    assert len(_records(out)) == 16


def test_sigterm_to_the_driver_stops_workers_keeps_records_and_the_rerun_finishes(tiny, tmp_path):
    out = tmp_path / "sigterm"
    # A scheduler (SLURM pre-emption, `kill PID`) signals the driver only.
    proc = subprocess.Popen([sys.executable, "-m", "bindscale", "run", str(tiny), "--out", str(out), "--workers", "2", *LONGER],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not _records(out) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM): finished trials are kept; re-run the same command to resume" in err
    assert "Traceback" not in err and "leaked semaphore" not in err
    n_before = len(_records(out))
    time.sleep(1.0)
    assert len(_records(out)) == n_before  # the workers stopped with the driver
    records = [json.loads((out / "records" / n).read_text()) for n in _records(out)]
    assert records and all(r["status"] == "ok" for r in records)
    r = bindscale("run", tiny, "--out", out, "--workers", "2", *LONGER)
    assert r.returncode == 0, r.stderr
    assert len(_records(out)) == 16


def test_a_different_study_in_an_existing_run_directory_is_pointed_out(tiny, tmp_path):
    out = tmp_path / "reused"
    assert bindscale("run", tiny, "--out", out, "--set", "train.steps=3").returncode == 0
    same = bindscale("run", tiny, "--out", out, "--set", "train.steps=3")
    assert same.returncode == 0 and "different study configuration" not in same.stderr
    # The same study written differently (older runs escaped non-ASCII text) is the same study.
    import yaml

    data = yaml.safe_load((out / "study.yaml").read_text())
    (out / "study.yaml").write_text(yaml.safe_dump(data, default_flow_style=True))
    same = bindscale("run", tiny, "--out", out, "--set", "train.steps=3")
    assert same.returncode == 0 and "different study configuration" not in same.stderr
    other = bindscale("run", tiny, "--out", out, "--set", "train.steps=4")
    assert other.returncode == 0, other.stderr
    assert "held a different study configuration" in other.stderr.replace("\n", " ")
