from bindscale.config import StudyConfig
from bindscale.trials import ModelConfig, TrainConfig, TrialConfig
from bindscale.sweep import job_cost, max_stack, plan_jobs, trial_memory_bytes
from bindscale.train import group_key


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

    from bindscale.sweep import available_cores

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert available_cores() == 1  # e.g. `taskset -c 0`, a one-CPU Slurm allocation
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert available_cores() == 3


def test_the_inline_executor_trains_with_one_thread(tmp_path, monkeypatch):
    import torch

    import bindscale.executors as ex
    from bindscale.sweep import THREADS_PER_WORKER

    seen = []
    monkeypatch.setattr(ex, "run_job", lambda *a, **k: seen.append(torch.get_num_threads()) or [])
    torch.set_num_threads(2)
    ex.execute([[{}]], str(tmp_path), "study", "cpu", executor="inline", workers=1)
    assert seen == [THREADS_PER_WORKER] == [1]


def _timed_plan(monkeypatch, seconds, n=16):
    """plan_jobs with measure=True where a stack of T trials' step takes ``seconds(T)`` milliseconds."""
    from bindscale import sweep
    from bindscale.study import StudyPlugin

    monkeypatch.setattr(sweep, "_measured_caps", {})
    asked = []
    monkeypatch.setattr(StudyPlugin, "stack_step_seconds", lambda self, ts: asked.append(len(ts)) or seconds(len(ts)) / 1e3)
    jobs = plan_jobs(study(width=[64], seed=list(range(n))), n_workers=1, measure=True)
    return sorted(len(j) for j in jobs), asked


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
    from bindscale.sweep import UNSTACKED_STEP

    # 25 ms alone: the ~1 ms a stack could share is under the slack; a stack's cost is not even timed.
    sizes, asked = _timed_plan(monkeypatch, lambda T: T * UNSTACKED_STEP * 1e3 * 1.25, n=4)
    assert sizes == [1, 1, 1, 1] and asked == [1]
    # Just under it (1 ms shared + 18 ms a trial: 19 ms alone) stacks are timed, and grow while they pay.
    sizes, asked = _timed_plan(monkeypatch, lambda T: 1.0 + T * UNSTACKED_STEP * 1e3 * 0.9, n=4)
    assert sizes == [4] and asked == [1, 2, 4]


def test_unmeasured_plans_ask_no_timer(monkeypatch):
    from bindscale.study import StudyPlugin

    monkeypatch.setattr(StudyPlugin, "stack_step_seconds", lambda self, ts: 1 / 0)
    assert sorted(map(len, plan_jobs(study(width=[64], seed=list(range(4))), n_workers=1))) == [4]


def test_the_hyperteacher_step_timer_times_a_real_stack():
    from bindscale.train import stack_step_seconds

    trials = study(width=[16], seed=[0, 1])
    assert 0 < stack_step_seconds(trials, window=0.01, rounds=1) < 10
