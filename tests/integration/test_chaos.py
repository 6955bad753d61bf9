"""Chaos tests: kill workers or the driver at random points of a small study.

Each round ends with every trial recorded exactly once and metrics equal to an
uninterrupted run's, whatever was killed and whichever executor resumed.
"""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from .conftest import bindscale, processes

CHAOS = Path(__file__).parent / "chaos.yaml"
N_TRIALS = 8
ROUNDS = 10
METRICS = ["status", "r2_id", "r2_heldout", "r2_inhull", "decod_best", "decod_input", "final_loss"]

pytestmark = pytest.mark.slow


def _children(pid: int, marker: str) -> list[int]:
    """Pids of ``pid``'s child processes whose command line contains ``marker``."""
    out = []
    for child, fields, d in processes():
        if int(fields[1]) != pid:
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            out.append(child)
    return out


def _workers(pid: int) -> list[int]:
    """Pids of driver ``pid``'s pool workers: its spawned children, or the children of its fork server."""
    servers = _children(pid, "multiprocessing.forkserver")
    return _children(pid, "spawn_main") + [w for s in servers for w in _children(s, "multiprocessing.forkserver")]


def _start(out: Path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bindscale", "run", str(CHAOS), "--out", str(out), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _table(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "results.parquet").set_index("trial_id").sort_index()


def _check_exactly_once(out: Path, expected: pd.DataFrame) -> None:
    recs = sorted(p.stem for p in (out / "records").glob("*.json"))
    assert recs == sorted(expected.index), "every trial has exactly one record"
    assert not list((out / "records").glob(".*.tmp")), "no half-written record is left"
    got = _table(out)
    assert got.index.is_unique and list(got.index) == list(expected.index)
    pd.testing.assert_frame_equal(got[METRICS], expected[METRICS], check_exact=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("chaos") / "reference"
    r = bindscale("run", CHAOS, "--out", out, "--executor", "inline")
    assert r.returncode == 0, r.stderr
    expected = _table(out)
    assert len(expected) == N_TRIALS and (expected["status"] == "ok").all()
    return expected


def test_chaos_rounds_kill_workers_or_the_driver_and_every_trial_survives_once(reference, tmp_path):
    rng = random.Random(20261129)
    injected = {"worker": 0, "driver": 0}
    for rnd in range(ROUNDS):
        out = tmp_path / f"round{rnd}"
        victim = "worker" if rnd % 2 == 0 else "driver"
        proc = _start(out, "--workers", "2")
        # Wait for the workers, then a random point of the sweep.
        deadline = time.time() + 60
        while not _workers(proc.pid) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.2, 2.5))  # workers appear once the fork server has its imports; training then lasts ~4 s
        if proc.poll() is None:
            if victim == "worker":
                workers = _workers(proc.pid)
                if workers:
                    os.kill(rng.choice(workers), signal.SIGKILL)
                    injected["worker"] += 1
            else:
                os.kill(proc.pid, signal.SIGKILL)
                injected["driver"] += 1
        _, err = proc.communicate(timeout=300)
        if victim == "worker":
            # The sweep survives a dead worker by itself: the job is re-run, the run finishes.
            assert proc.returncode == 0, err
        else:
            # Driver killed: the same command resumes — under another executor half of the time.
            executor = rng.choice(["inline", "process"])
            r = bindscale("run", CHAOS, "--out", out, "--executor", executor)
            assert r.returncode == 0, r.stderr
        _check_exactly_once(out, reference)
    print(f"\nchaos: {sum(injected.values())} faults injected ({injected['worker']} worker kills, "
          f"{injected['driver']} driver kills) in {ROUNDS} rounds; every round recovered")
    assert sum(injected.values()) >= ROUNDS


def test_a_worker_that_keeps_dying_is_recorded_failed_and_the_sweep_finishes(reference, tmp_path):
    out = tmp_path / "noretry"
    proc = _start(out, "--workers", "2", "--retries", "0")
    deadline = time.time() + 60
    while not _workers(proc.pid) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    killed = _workers(proc.pid)
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert killed and proc.returncode == 0, err
    assert "recorded failed (--retries 0 exhausted)" in err.replace("\n", " "), err
    got = _table(out)
    assert len(got) == N_TRIALS
    failed = got[got["status"] == "failed"]
    assert len(failed) >= 1 and failed["error"].str.startswith("WorkerDied").all()
    shown = bindscale("report", out)  # the summary says so, not only the report
    assert f"{len(failed)} of {N_TRIALS} trials failed" in shown.stdout, shown.stdout
    # The failed trials are re-run by the next run of the same command.
    r = bindscale("run", CHAOS, "--out", out, "--workers", "2")
    assert r.returncode == 0, r.stderr
    _check_exactly_once(out, reference)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and the fork server are Linux's")
def test_a_killed_driver_takes_its_fork_server_and_workers_with_it(tmp_path):
    proc = _start(tmp_path / "orphans", "--workers", "2")
    deadline = time.time() + 60
    while not (workers := _workers(proc.pid)) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    servers = _children(proc.pid, "multiprocessing.forkserver")
    assert workers and servers, "the run started its workers from a fork server"
    # Stopped workers cannot run their own watch of the driver (a thread polling every 0.2 s, in which
    # window CI once saw a stack finish and write 4 records): only the kernel can end them, through the
    # fork server's and their own PR_SET_PDEATHSIG, at the moment the driver exits.
    time.sleep(0.3)  # a worker is listed as soon as the kernel creates it, before its first instruction
    for p in workers:
        os.kill(p, signal.SIGSTOP)
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)  # not communicate(): a surviving worker holds the stderr pipe open
        proc.stderr.close()
        deadline = time.time() + 2
        while time.time() < deadline and any(Path(f"/proc/{p}").exists() for p in workers + servers):
            time.sleep(0.05)
        left = [p for p in workers + servers if Path(f"/proc/{p}").exists()
                and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
        assert not left, "no worker keeps training (and writing records) after its driver was killed"
    finally:
        for p in workers + servers:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and the fork server are Linux's")
def test_ctrl_c_while_the_fork_server_imports_prints_no_traceback(tmp_path):
    # Ctrl-C at a terminal reaches the whole process group: the driver, its fork server, the workers.
    proc = subprocess.Popen([sys.executable, "-m", "bindscale", "run", str(CHAOS), "--out", str(tmp_path / "int"),
                             "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.time() + 60
    while not _children(proc.pid, "multiprocessing.forkserver") and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(0.5)  # inside its imports (torch, scikit-learn: seconds)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
