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
