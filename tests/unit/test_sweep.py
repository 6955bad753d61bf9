import pytest

from bindscale.core.config import StudyConfig
from bindscale.studies.scaling.config import ModelConfig, TrainConfig, TrialConfig
from bindscale.run.planner import schedule as makespan
from bindscale.run.planner import BALANCE_GAIN, job_cost, max_stack, plan_jobs, trial_memory_bytes
from bindscale.studies.scaling.plan import group_key


def study(**grid):
    return StudyConfig(name="s", base=TrialConfig(train=TrainConfig(steps=100)), grids=[grid]).trials()


def test_jobs_group_same_shapes_and_cover_every_trial_once():
    trials = study(width=[8, 16], seed=[0, 1, 2], lr=[1e-3, 3e-3], holdout=[0.25, 0.5])
    jobs = plan_jobs(trials, n_workers=1)
    ids = [t.trial_id for j in jobs for t in j]
    assert sorted(ids) == sorted(t.trial_id for t in trials)
    assert all(len({group_key(t) for t in j}) == 1 for j in jobs)
    # lr, seed and holdout share a stack; width does not.
    assert sorted(len(j) for j in jobs) == [12, 12]


def test_jobs_are_cut_for_workers_and_balance():
    trials = study(width=[8, 512], seed=list(range(8)))
    jobs = plan_jobs(trials, n_workers=2)
    big = [j for j in jobs if j[0].model.width == 512]
    assert len(big) >= 2  # the expensive group is split so both workers share it
    assert job_cost(jobs[0]) >= job_cost(jobs[-1])


def test_schedule_is_list_scheduling_in_the_given_order():
    # Hand-worked: 5 → A, 4 → B, 3 → B (4 < 5), 2 → A (5 < 7): A 7, B 7.
    assert makespan([5, 4, 3, 2], 2) == 7
    # The order matters (Graham's anomaly): small jobs first leave the big one for last.
    assert makespan([1, 1, 2], 2) == 3 and makespan([2, 1, 1], 2) == 2
    assert makespan([3, 3], 1) == 6 and makespan([], 2) == 0


def test_a_stack_is_halved_where_a_worker_would_wait_for_the_last_job():
    # Widths 128 and 256, 6 seeds each: 256 (cost 2.05 per trial) stacked by 3 twice and 128 by 6 left
    # one worker idle for a third of the sweep (12.2 units where 9.2 each is the share).
    trials = study(width=[128, 256], seed=list(range(6)))
    jobs = plan_jobs(trials, n_workers=2, max_stack_size=6)
    costs = [job_cost(j) for j in jobs]
    assert makespan(costs, 2) <= sum(costs) / 2 * 1.01
    assert sorted(len(j) for j in jobs) == [3, 3, 3, 3]
    assert costs == sorted(costs, reverse=True)  # handed out largest first, as the makespan assumes
    assert sorted(t.trial_id for j in jobs for t in j) == sorted(t.trial_id for t in trials)


def test_no_stack_is_halved_for_less_than_the_balance_gain():
    # Stacks of 8 + 8 + 8 + 8 on two workers are balanced already and stay whole, as does a one-worker
    # plan; 8 + 8 + 7 (one worker 16, the other 7) is halved.
    assert sorted(map(len, plan_jobs(study(width=[64], seed=list(range(32))), n_workers=2, max_stack_size=8))) == [8] * 4
    assert sorted(map(len, plan_jobs(study(width=[64], seed=list(range(16))), n_workers=1, max_stack_size=8))) == [8, 8]
    jobs = plan_jobs(study(width=[64], seed=list(range(23))), n_workers=2, max_stack_size=8)
    costs = [job_cost(j) for j in jobs]
    assert makespan(costs, 2) < 16 / 23 * sum(costs) * (1 - BALANCE_GAIN)
    # 21 of one shape on two workers in stacks of at most 8: 7 + 7 + 7 leaves 14 / 7; halving a 7 makes
    # 7 + 7 + 4 + 3 → 11 / 10, a gain of 21%; from there no halving gains 5% (7 + 4 + 4 + 3 + 3: 11 / 10).
    jobs = plan_jobs(study(width=[64], seed=list(range(21))), n_workers=2, max_stack_size=8)
    assert sorted(map(len, jobs), reverse=True) == [7, 7, 4, 3]


def test_stack_size_adapts_to_memory():
    t = TrialConfig(model=ModelConfig(width=2048, depth=4))
    per = trial_memory_bytes(t)
    assert per > 4 * 4 * 2048 * 2048 * 3  # at least params, grads, two moments
    assert max_stack(t, n_workers=1, memory=2 * per * 3) == 3
    assert max_stack(t, n_workers=2, memory=2 * per * 3) == 1
    assert max_stack(t, n_workers=1, memory=0) == 1
    assert max_stack(t, n_workers=1, memory=1 << 50, cap=16) == 16
    trials = [t.model_copy(update={"seed": s}) for s in range(6)]
    jobs = plan_jobs(trials, n_workers=1, memory=2 * per * 2)
    assert all(len(j) <= 2 for j in jobs) and sum(map(len, jobs)) == 6


def test_available_cores_follows_the_affinity_mask(monkeypatch):
    import os

    from bindscale.run.planner import available_cores

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert available_cores() == 1  # e.g. `taskset -c 0`, a one-CPU Slurm allocation
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert available_cores() == 3


def test_the_inline_executor_trains_with_one_thread(tmp_path, monkeypatch):
    import torch

    import bindscale.run.executors as ex
    from bindscale.run.jobs import THREADS_PER_WORKER

    seen = []
    monkeypatch.setattr(ex, "run_job", lambda *a, **k: seen.append(torch.get_num_threads()) or [])
    torch.set_num_threads(2)
    ex.execute([[{}]], str(tmp_path), "study", "cpu", executor="inline", workers=1)
    assert seen == [THREADS_PER_WORKER] == [1]


def _timed_plan(monkeypatch, seconds, n=16, n_workers=1, max_stack_size=32):
    """plan_jobs with measure=True where a stack of T trials' step takes ``seconds(T)`` milliseconds."""
    from bindscale.run import planner as sweep
    from bindscale.core.study import StudyPlugin

    monkeypatch.setattr(sweep, "_measured_caps", {})
    monkeypatch.setattr(sweep, "_measured_shares", {})
    asked = []
    monkeypatch.setattr(StudyPlugin, "stack_step_seconds", lambda self, ts: asked.append(len(ts)) or seconds(len(ts)) / 1e3)
    jobs = plan_jobs(study(width=[64], seed=list(range(n))), n_workers=n_workers, measure=True,
                     max_stack_size=max_stack_size)
    return sorted(len(j) for j in jobs), asked


def test_balancing_costs_a_halved_stack_with_the_sharing_it_keeps(monkeypatch):
    # 20 trials on two workers in stacks of at most 8: 7 + 7 + 6 leaves one worker idle for half the
    # sweep. Costed linearly, halving a 7 gains 23% (7 + 6 + 4 + 3: 10 / 10). Where a step is mostly
    # fixed cost (1 ms shared by the stack + 0.02 ms a trial), a stack of 3 or 4 costs about what one
    # of 7 does (1.06, 1.08, 1.14 ms a step): 2.26 → 2.20 ms, under the 5% worth a halving.
    sizes, _ = _timed_plan(monkeypatch, lambda T: 1.0 + 0.02 * T, n=20, n_workers=2, max_stack_size=8)
    assert sizes == [6, 7, 7]
    from bindscale.run.planner import _measured_cost

    trials = study(width=[64], seed=list(range(20)))
    for n in (1, 2, 3, 6, 8, 12):  # interpolated in 1 / n between the timed 1, 2, 4, 8: exact here
        share = (1.0 + 0.02 * min(n, 8)) / min(n, 8)
        assert abs(_measured_cost(trials[:n]) / job_cost(trials[:n]) - share / 1.02) < 1e-9
    # Flat per-trial costs (no sharing to lose): the measured plan halves as the linear one does.
    sizes, _ = _timed_plan(monkeypatch, lambda T: 1.0 * T, n=20, n_workers=2, max_stack_size=8)
    assert sizes == [3, 4, 6, 7]
    assert sorted(map(len, plan_jobs(study(width=[64], seed=list(range(20))), n_workers=2, max_stack_size=8))) == [3, 4, 6, 7]


def test_measured_stacks_grow_while_a_trial_share_of_a_step_falls_or_stays(monkeypatch):
    # A fixed 1 s per step shared by the stack, 0.1 s per trial: the share falls all the way to 16.
    sizes, asked = _timed_plan(monkeypatch, lambda T: 1.0 + 0.1 * T)
    assert sizes == [16] and asked == [1, 2, 4, 8, 16]
    # Flat within the slack (noise): the stack still grows (it shares evaluation and start-up too).
    sizes, asked = _timed_plan(monkeypatch, lambda T: T * (1.0 + 0.03 * (T % 2 == 0)))
    assert sizes == [16]


def test_measured_stacks_stop_where_a_trial_costs_more(monkeypatch):
    # Cheaper per trial up to 4, then its tensors spill out of the caches: stacks of at most 4.
    sizes, asked = _timed_plan(monkeypatch, lambda T: (1.0 + 0.2 * T) if T <= 4 else 2.0 * T)
    assert sizes == [4, 4, 4, 4] and asked == [1, 2, 4, 8]


def test_a_stack_slower_per_trial_than_a_trial_alone_is_not_planned(monkeypatch):
    # Per-trial cost 1 s alone, 1.2 s in any stack (its tensors spill out of the caches): one trial per job.
    sizes, asked = _timed_plan(monkeypatch, lambda T: T * (1.0 if T == 1 else 1.2), n=4)
    assert sizes == [1, 1, 1, 1] and asked == [1, 2]


def test_no_stack_is_tried_where_one_trial_step_is_long(monkeypatch):
    from bindscale.run.planner import UNSTACKED_STEP

    # 25 ms alone: the ~1 ms a stack could share is under the slack; a stack's cost is not even timed.
    sizes, asked = _timed_plan(monkeypatch, lambda T: T * UNSTACKED_STEP * 1e3 * 1.25, n=4)
    assert sizes == [1, 1, 1, 1] and asked == [1]
    # Just under it (1 ms shared + 18 ms a trial: 19 ms alone) stacks are timed, and grow while they pay.
    sizes, asked = _timed_plan(monkeypatch, lambda T: 1.0 + T * UNSTACKED_STEP * 1e3 * 0.9, n=4)
    assert sizes == [4] and asked == [1, 2, 4]


def test_unmeasured_plans_ask_no_timer(monkeypatch):
    from bindscale.core.study import StudyPlugin

    monkeypatch.setattr(StudyPlugin, "stack_step_seconds", lambda self, ts: 1 / 0)
    assert sorted(map(len, plan_jobs(study(width=[64], seed=list(range(4))), n_workers=1))) == [4]


def test_the_hyperteacher_step_timer_times_a_real_stack():
    from bindscale.studies.scaling.plan import stack_step_seconds

    trials = study(width=[16], seed=[0, 1])
    assert 0 < stack_step_seconds(trials, window=0.01, rounds=1) < 10


@pytest.mark.parametrize("name", ["subgraphs", "depth", "length_transfer", "ceiling", "geometry"])
def test_the_planner_times_stacks_of_a_study_whose_timer_is_found_by_convention(monkeypatch, name):
    # The transformer studies' timers are plan.stack_step_seconds, found by convention (the plugin's
    # step_timer attribute stays None): the planner must still ask them, and size stacks by their answer.
    from bindscale.core import registry
    from bindscale.run import planner as sweep
    from bindscale.core.study import StudyPlugin

    plugin = registry.get(name)
    assert plugin.step_timer is None and plugin.hook("step_timer") is not None
    monkeypatch.setattr(sweep, "_measured_caps", {})
    monkeypatch.setattr(sweep, "_measured_shares", {})
    asked = []
    # Cheaper per trial up to 2, dearer beyond: stacks of 2.
    monkeypatch.setattr(StudyPlugin, "stack_step_seconds",
                        lambda self, ts: asked.append(len(ts)) or (1e-3 * (1 + 0.2 * len(ts)) if len(ts) <= 2 else 1.0))
    trials = [plugin.trial_class.model_validate({"seed": s}) for s in range(4)]
    jobs = plan_jobs(trials, n_workers=1, measure=True, memory=64 << 30)
    assert asked == [1, 2, 4] and sorted(map(len, jobs)) == [2, 2]
