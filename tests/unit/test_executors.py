import signal
import subprocess
import sys

import pytest

from bindscale.errors import ConfigError
from bindscale.executors import _after_break, execute


class _Proc:
    def __init__(self, exitcode):
        self.exitcode = exitcode


def test_import_and_local_executors_never_import_ray():
    code = ("import sys, bindscale, bindscale.executors, bindscale.runner, bindscale.cli\n"
            "assert 'ray' not in sys.modules, 'ray imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_dead_worker_is_charged_to_the_job_it_ran_and_retries_run_out():
    # Jobs 0 and 1 were running on pids 10 and 11; 11 was SIGKILLed, 10 terminated by the pool;
    # job 2 had not started. Only job 1 is charged a death.
    deaths, steps, progress, gave_up = [0, 0, 0], [5, 7, 0], [], []
    running = {0: 10, 1: 11}
    procs = {10: _Proc(-signal.SIGTERM), 11: _Proc(-signal.SIGKILL)}
    again = _after_break([0, 1, 2], dict(running), procs, deaths, steps, 1, lambda n, job: progress.append((n, job)),
                         lambda i, why: gave_up.append((i, why)))
    assert again == [0, 1, 2] and deaths == [0, 1, 0] and gave_up == []
    assert sorted(progress) == [(-7, 1), (-5, 0)] and steps == [0, 0, 0]  # their steps are taken back, per job
    # Job 1 dies again: retries (1) are exhausted, it is given up with the exit code.
    again = _after_break([1], {1: 12}, {12: _Proc(-signal.SIGKILL)}, deaths, steps, 1,
                         lambda n, job: progress.append((n, job)), lambda i, why: gave_up.append((i, why)))
    assert again == [] and deaths[1] == 2
    assert gave_up[0][0] == 1 and "died 2 times (last exit code -9)" in gave_up[0][1]


def test_when_no_worker_can_be_singled_out_every_started_job_is_charged():
    deaths = [0, 0, 0]
    _after_break([0, 1, 2], {0: 10, 1: 11}, {10: _Proc(-signal.SIGTERM), 11: _Proc(-signal.SIGTERM)},
                 deaths, [0, 0, 0], 2, lambda n, job: None, lambda i, why: None)
    assert deaths == [1, 1, 0]


def test_unknown_executor_or_negative_retries_is_a_config_error():
    with pytest.raises(ConfigError, match="allowed: inline, process, ray"):
        execute([], "x", "s", "cpu", executor="dask")
    with pytest.raises(ConfigError, match="--retries -1"):
        execute([], "x", "s", "cpu", executor="inline", retries=-1)


def test_ray_missing_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    import importlib.util

    from bindscale.config import resolve_study
    from bindscale.runner import run_study

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError, match="--executor ray needs Ray"):
        run_study(resolve_study("scaling", quick=True), tmp_path / "run", device="cpu", executor="ray")
    assert not (tmp_path / "run").exists()
