import signal
import subprocess
import sys

import pytest

from bindscale.core.errors import ConfigError
from bindscale.run.executors import _after_break, execute


class _Proc:
    def __init__(self, exitcode):
        self.exitcode = exitcode


def test_import_and_local_executors_never_import_ray():
    code = ("import sys, bindscale, bindscale.run.executors, bindscale.run.runner, bindscale.cli\n"
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

    from bindscale.core.studyfile import resolve_study
    from bindscale.run.runner import run_study

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError, match="--executor ray needs Ray"):
        run_study(resolve_study("scaling", quick=True), tmp_path / "run", device="cpu", executor="ray")
    assert not (tmp_path / "run").exists()


def test_core_share_gives_disjoint_shares_covering_the_cores():
    from bindscale.run.executors import core_share

    assert [core_share(i, 2, [0, 1, 2, 3]) for i in range(2)] == [[0, 1], [2, 3]]
    assert [core_share(i, 3, [4, 5, 6]) for i in range(3)] == [[4], [5], [6]]
    assert core_share(0, 1, [0, 1]) == [0, 1]  # a lone worker keeps every core
    assert [core_share(i, 3, [0, 1]) for i in range(3)] == [[0], [1], [0]]  # more workers than cores
    shares = [core_share(i, 3, list(range(8))) for i in range(3)]
    assert sorted(c for s in shares for c in s) == list(range(8)) and all(shares)
    with pytest.raises(ValueError, match="slot 2 of 2"):
        core_share(2, 2, [0, 1])


def _pool_affinities(workers: int, env: dict | None = None) -> dict[int, set[int]]:
    """Start the sweep's own pool (:func:`bindscale.run.executors.new_pool`) with ``workers`` workers and
    read back each worker's CPU affinity, its main thread's and every other thread's."""
    import os
    import time

    from bindscale.run.executors import new_pool, pool_context

    ctx = pool_context()
    pool = new_pool(ctx, ctx.Queue(), workers)
    try:
        # Each job sleeps, so every worker is started before the first is free again.
        list(pool.map(time.sleep, [0.5] * (2 * workers)))
        pids = list(pool._processes)
        assert len(pids) == workers
        out = {}
        for pid in pids:
            masks = {frozenset(os.sched_getaffinity(int(t))) for t in os.listdir(f"/proc/{pid}/task")}
            assert len(masks) == 1, f"worker {pid}'s threads are pinned differently: {masks}"
            out[pid] = set(next(iter(masks)))
        return out
    finally:
        pool.shutdown()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU affinity is read from Linux's /proc")
def test_pool_workers_run_pinned_to_disjoint_cores():
    import os

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip(f"this process may use {len(cores)} core: two workers cannot have disjoint cores")
    workers = min(len(cores), 4)
    masks = list(_pool_affinities(workers).values())
    assert all(masks), masks
    for i, a in enumerate(masks):
        for b in masks[i + 1:]:
            assert not a & b, f"two workers share cores: {masks}"
    assert set().union(*masks) == set(cores)  # every core usable by the driver is some worker's


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU affinity is read from Linux's /proc")
def test_pinning_can_be_turned_off(monkeypatch):
    import os

    from bindscale.run.executors import PIN_ENV

    monkeypatch.setenv(PIN_ENV, "0")
    cores = set(os.sched_getaffinity(0))
    assert all(m == cores for m in _pool_affinities(min(2, len(cores))).values())
