"""Tiers of scale: every study's -full and -paper variants (those of scaling and modularity here), and the dry
run's GPU and Ray-cluster estimates (:mod:`bindscale.run.dryrun`), derived from the plan and stated assumptions."""

import math
import re
from pathlib import Path

import pytest
import torch

from bindscale.run import dryrun as plan_mod
from bindscale.core.studyfile import builtin_studies, resolve_study
from bindscale.run.dryrun import OVERHEAD_S, describe_plan, gpu_job_seconds, job_seconds
from bindscale.run.planner import plan_jobs, schedule

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "integration" / "tiny.yaml"
VARIANTS = ["scaling-full", "scaling-paper", "modularity-full", "modularity-paper"]


@pytest.mark.parametrize("name", VARIANTS)
def test_each_variant_is_listed_validates_and_plans(name):
    assert name in builtin_studies()  # what `bindscale list` shows and `bindscale run NAME` takes
    study = resolve_study(name)
    assert study.name == name and study.trials()
    text = describe_plan(study, workers=1, device="cpu")
    assert re.search(r"estimated time: ~", text), text
    assert resolve_study(name, quick=True).trials()  # its --quick smoke test resolves too


FULL = sorted(n for n in builtin_studies() if n.endswith("-full"))  # every study's, as they are written


def test_scaling_and_modularity_have_their_tiers():
    assert {"scaling-full", "modularity-full"} <= set(FULL)


@pytest.mark.parametrize("name", FULL)
def test_a_full_variant_fits_two_hours_on_two_cores_by_its_estimate(name):
    """The bound for -full: two cores finish it in 2 hours (by the dry run's own estimate, planned as a
    run on two workers plans it); a grid grown past it fails here. The one exception: 8 seeds in every
    deciding cell (what a published verdict needs) may take a tier past 2 hours, never past 3, and its
    description then states the dry run's figure and the 8 seeds."""
    study = resolve_study(name)
    jobs = plan_jobs(study.trials(), n_workers=2, device="cpu")
    wall = schedule([job_seconds(j) for j in jobs], 2) + OVERHEAD_S
    if wall > 2 * 3600:
        assert wall <= 3 * 3600, wall / 60
        minutes = round(wall / 60)
        stated = f"{minutes // 60} h {minutes % 60:02d} min"
        text = " ".join(study.description.split())
        assert "8 seeds" in text and any(f"{minutes // 60} h {(minutes + d) % 60:02d} min" in text
                                         for d in (-1, 0, 1)), (name, stated)
    if name in ("scaling-full", "modularity-full"):  # and not a default-sized study under another name
        assert wall > 30 * 60, wall / 60


@pytest.mark.parametrize("name, study", [("scaling-paper", "scaling"), ("modularity-paper", "modularity")])
def test_a_paper_variant_is_far_beyond_the_default(name, study):
    paper, default = (sum(job_seconds([t]) for t in resolve_study(n).trials()) for n in (name, study))
    assert paper > 50 * default


def _cpu_only():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the dry run plans for it, not for an assumed one")


def test_gpu_dry_run_without_a_gpu_plans_for_an_assumed_one(tmp_path):
    _cpu_only()
    text = describe_plan(resolve_study(str(TINY)), device="cuda", out=str(tmp_path / "o"))
    assert "note: no CUDA device here, so a run with --device cuda would be refused on this machine" in text
    assert re.search(r"stacked jobs on 1 worker\(s\) \(inline\), device cuda", text)
    m = re.search(r"estimated time on a GPU: ~(.+) to ~(.+) wall on one GPU", text)
    assert m, text
    assert "not measured on a GPU" in text and plan_mod.GPU_ASSUMED in text
    assert not (tmp_path / "o").exists()


def test_gpu_job_seconds_follow_the_stated_model(monkeypatch):
    """fast/slow = steps x per-step cost + CPU-seconds of training x CPU FLOP rate / GPU FLOP rate + per-trial part."""
    study = resolve_study(str(TINY))
    job = plan_jobs(study.trials()[:4], n_workers=1)[0]
    plugin = study.plugin
    per_cost, per_trial = plugin.seconds_per_cost
    from bindscale.run.planner import job_cost

    train_cpu = per_cost * job_cost(job)
    steps = max(plugin.steps(t) for t in job)  # a stack steps once for all its trials
    fast, slow = gpu_job_seconds(job)
    gpu = plan_mod.GPU_FP32_PEAK
    assert fast == pytest.approx(steps * plan_mod.GPU_STEP_S[0] + train_cpu * plan_mod.CPU_FP32_FLOPS
                                 / (gpu * plan_mod.GPU_PEAK_SHARE[1]) + per_trial * len(job))
    assert slow == pytest.approx(steps * plan_mod.GPU_STEP_S[1] + train_cpu * plan_mod.CPU_FP32_FLOPS
                                 / (gpu * plan_mod.GPU_PEAK_SHARE[0]) + per_trial * len(job))
    assert 0 < fast < slow
    # Four times the steps: the launch part grows fourfold, the compute part with the cost model.
    longer = [t.model_copy(update={"train": t.train.model_copy(update={"steps": 4 * t.train.steps})}) for t in job]
    f4, _ = gpu_job_seconds(longer)
    assert f4 > fast


def test_the_gpu_estimate_counts_every_optimizer_step_of_a_modularity_trial(monkeypatch):
    """Pretraining and mask searches step too (the study's step_counter), not only the compound training."""
    monkeypatch.setattr(plan_mod, "CPU_FP32_FLOPS", 0.0)  # the launch part alone
    study = resolve_study("modularity", overrides=["pretraining=match_count", "mask.control_mask_seeds=1",
                                                   "seed=[0]", "width=[16]"])
    (t,) = study.trials()
    want = t.pretrain.steps + t.train.steps + 2 * (t.mask.n_mask_seeds + 1) * t.mask.steps
    assert want > t.train.steps
    fast, slow = gpu_job_seconds([t])
    per_trial = study.plugin.seconds_per_cost[1]
    assert fast == pytest.approx(want * plan_mod.GPU_STEP_S[0] + per_trial)
    assert slow == pytest.approx(want * plan_mod.GPU_STEP_S[1] + per_trial)


def test_a_cluster_dry_run_schedules_the_jobs_on_the_clusters_cpus(tmp_path):
    study = resolve_study(str(TINY))
    text = describe_plan(study, executor="ray", address="auto", workers=64, out=str(tmp_path / "o"))
    assert "would run as" not in text  # --workers counts the cluster's CPUs, not this machine's cores
    m = re.search(r"estimated time on a Ray cluster: ~(.+) wall on (\d+) worker CPU\(s\) \((.+) CPU time of "
                  r"training / (\d+) = (.+); the longest job", text)
    assert m, text
    n = int(m.group(2))
    assert n == int(m.group(4)) and 1 < n <= 64  # no more workers than jobs
    if n < 64:  # and the lowered count is said, not silent
        assert f"note: --workers 64: the plan has {n} stacked job(s), so {n} worker(s) have work" in text
    assert "N CPUs free for this run" in text and "Ray's own task start-up" in text
    try:
        import ray  # noqa: F401
    except ImportError:
        assert "note: Ray is not installed here, so a run with --executor ray would be refused" in text
    assert not (tmp_path / "o").exists()
    # Without --workers: each job its own task, and it says so.
    text = describe_plan(study, executor="ray", address="auto")
    assert "no --workers given: every job its own task" in text


def test_the_cluster_estimate_is_the_list_schedule_of_the_cpu_estimate():
    study = resolve_study("scaling-full")
    jobs = plan_jobs(study.trials(), n_workers=16)
    seconds = [job_seconds(j) for j in jobs]
    text = describe_plan(study, executor="ray", address="auto", workers=16)
    wall = schedule(seconds, min(16, len(jobs))) + OVERHEAD_S
    shown = re.search(r"on a Ray cluster: ~(\d+) min wall", text)
    assert shown and abs(int(shown.group(1)) - wall / 60) <= 1, (text, wall / 60)
    assert wall >= sum(seconds) / 16 and math.isfinite(wall)


def test_a_run_on_a_ray_cluster_keeps_its_workers_beyond_this_machines_cores(tmp_path, monkeypatch):
    """--workers on a Ray cluster counts the cluster's CPUs: the run plans with them (as its dry run does),
    where a local run is cut to this machine's cores."""
    import bindscale.run.runner as runner
    from bindscale.store.storage import RunStore

    seen = {}
    monkeypatch.setattr(runner, "check_run", lambda out, *a: RunStore.of(out))  # Ray need not be installed here
    monkeypatch.setattr(runner, "_run_locked", lambda study, store, dev, workers, *a: seen.setdefault("w", workers))
    study = resolve_study(str(TINY))
    runner.run_study(study, tmp_path / "a", device="cpu", executor="ray", address="auto", workers=512)
    assert seen.pop("w") == 512
    runner.run_study(study, tmp_path / "b", device="cpu", executor="ray", workers=512)  # a local Ray: this machine
    assert seen.pop("w") == runner.available_cores()
