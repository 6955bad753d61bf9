"""What ``bindscale run --dry-run`` and ``--print-config`` print: the resolved study, its trials,
the stacked jobs a run would train and an estimated time. Nothing is run and nothing is written.

The time estimate turns :func:`bindscale.run.planner.job_cost` into CPU-seconds with each study's
factor (its plugin's ``seconds_per_cost``: per unit of cost, plus a per-trial part for evaluation
and analysis; where it was measured is written beside it), then schedules the jobs, in the
order a run submits them, on the workers. The factors were measured on this project's 2-core
CPU machine at one torch thread per worker; another machine, another load or a GPU changes
them, so the figure is an estimate.

Two more estimates are derived from the same plan. On a GPU (``--device cuda``, also on a machine
without one: the plan is then made for an assumed GPU, :data:`GPU_MEMORY_BYTES`), each job takes a
range (:func:`gpu_job_seconds`): a per-step cost whatever the model's size (kernel launches) times its
optimizer steps, plus its FLOPs at an assumed sustained GPU throughput, the FLOPs bounded from above by
the job's CPU-seconds times the CPU's one-thread matmul peak; nothing of it is measured on a GPU. Beside
it the dry run prints a calibrated range (:mod:`bindscale.run.gpucal`): the same plan fitted to the jobs
timed on a lent H200 (each transformer study's largest ``-paper`` trial, part of ``depth-full``), with the
measurements' source, or a line saying the study is uncalibrated where none of its jobs was measured.
On a Ray cluster (``--executor ray --address ADDR``), ``--workers N`` counts the cluster's worker
CPUs (one torch thread each) and the jobs are scheduled on N such CPUs, each assumed as fast as a core
of the CPU machine.

Layer: beside the runner (the CLI and API call both): it checks the options as a run does
(:mod:`bindscale.run.options`) and plans with the planner (:mod:`bindscale.run.planner`), which it imports only
inside :func:`describe_plan` and :func:`job_seconds`: the planner imports torch, and a refused option
must answer first. The run directory's study file (writing it, the note when it changes) is
:mod:`bindscale.store.rundir`'s.
"""

from __future__ import annotations

from typing import Any

import yaml

from bindscale.core import registry
from bindscale.core.config import StudyConfig
from bindscale.core.errors import ConfigError
from bindscale.run.gpucal import Calibration, job_steps as _job_steps
from bindscale.run.options import NO_RAY, RETRIES, available_cores, check_out, check_run, check_run_options
from bindscale.store.records import load_records
from bindscale.store.rundir import STUDY_FILE, replaced_study_note
from bindscale.store.storage import StorageError

#: What the factors were measured on (the wall-time estimate also assumes a core per worker).
MACHINE = "a 2-core Intel Xeon (the project's CPU machine), one torch thread per worker"
#: Seconds a run spends besides training: starting the workers (import torch) and building the report.
#: A round allowance from measurements at load ~3.5 on the 2-core machine: a worker's imports took
#: 4.3 s; `bindscale run --quick --workers 2` (the headline study) ended training 133 s after its start (start-up
#: included) and exited at 144 s, so ~11 s for the report.
OVERHEAD_S = 30.0

# --- The derived GPU estimate's assumptions (none measured; `python benchmarks/gpu_paper.py` measures steps/s
# of the paper-tier jobs on a lent GPU, and bindscale.run.gpucal calibrates the estimate on what it measured).
#: The GPU the estimate assumes where none is here: its fp32 peak without tensor cores is what bindscale's
#: fp32 training can use (TF32 only with ``train.precision: tf32``); the H200 has the H100's compute.
GPU_ASSUMED = "an NVIDIA H100/H200-class GPU (fp32 peak 67 TFLOP/s without tensor cores)"
GPU_FP32_PEAK = 67e12
#: Share of that peak a job sustains: 15% (models of 0.1-1M parameters, small matmuls) to 60% (wide MLPs,
#: large batches); an assumed range, not a measurement.
GPU_PEAK_SHARE = (0.15, 0.60)
#: Seconds of one optimizer step that do not shrink with the model: eager PyTorch launches every kernel
#: from Python (~5-10 us each); a stacked MLP step is ~100 kernels (~1 ms), a transformer step several
#: hundred (~5 ms). Assumed, not measured.
GPU_STEP_S = (1e-3, 5e-3)
#: Free memory the planner stacks trials into where the GPU is assumed (an 80 GB H100; the H200 has 141 GB).
GPU_MEMORY_BYTES = 80 << 30
#: The CPU machine's best one-thread fp32 matmul (141-149 GFLOP/s measured; README, "Against JAX").
#: Training never runs faster, so a job's CPU-seconds times it bound the job's FLOPs from above.
CPU_FP32_FLOPS = 150e9


def recorded_ids(out: Any, trials: list) -> set[str]:
    """The ids of ``trials`` already recorded in the run directory ``out`` and not failed (a failed trial runs
    again); empty when ``out`` cannot be read (a dry run writes nothing and never fails on a missing folder)."""
    try:
        have = load_records(out, {t.trial_id for t in trials})
    except (StorageError, OSError):
        have = {}
    return {tid for tid, rec in have.items() if rec.get("status") != "failed"}


def job_seconds(job: list) -> float:
    """Estimated CPU-seconds of one stacked job from its study's ``seconds_per_cost``; NaN when the
    study has no such factor."""
    from bindscale.run.planner import job_cost  # the planner imports torch: only once a plan is made

    factor = getattr(registry.for_trial(job[0]), "seconds_per_cost", None)
    if not factor:
        return float("nan")
    per_cost, per_trial = factor
    return per_cost * job_cost(job) + per_trial * len(job)


def gpu_calibration() -> Calibration:
    """The calibration of the GPU estimate (:func:`bindscale.run.gpucal.calibration`) under this module's derived
    model: its FLOP bound (:data:`CPU_FP32_FLOPS`) and start-up allowance (:data:`OVERHEAD_S`)."""
    from bindscale.run.gpucal import calibration

    return calibration(CPU_FP32_FLOPS, OVERHEAD_S)


def gpu_job_seconds(job: list) -> tuple[float, float]:
    """Estimated GPU seconds of one stacked job, as a (fast, slow) range; NaNs when the study has no
    ``seconds_per_cost``.

    ``steps × GPU_STEP_S + CPU-seconds of training × CPU_FP32_FLOPS / (GPU_FP32_PEAK × GPU_PEAK_SHARE)
    + the per-trial part`` (evaluation and analysis, kept at its CPU figure: some of it runs on the CPU
    whatever the device). The middle term is an upper bound of the job's FLOPs at the assumed throughput:
    tight for wide models (the CPU trains them at 0.7-0.8 of its matmul peak), loose for small ones,
    where the step term dominates anyway. Derived from the plan and the assumptions above, not measured.
    """
    factor = getattr(registry.for_trial(job[0]), "seconds_per_cost", None)
    if not factor:
        return float("nan"), float("nan")
    from bindscale.run.planner import job_cost  # the planner imports torch: only once a plan is made

    per_cost, per_trial = factor
    flops = per_cost * job_cost(job) * CPU_FP32_FLOPS
    steps, rest = _job_steps(job), per_trial * len(job)
    fast = steps * GPU_STEP_S[0] + flops / (GPU_FP32_PEAK * GPU_PEAK_SHARE[1]) + rest
    slow = steps * GPU_STEP_S[1] + flops / (GPU_FP32_PEAK * GPU_PEAK_SHARE[0]) + rest
    return fast, slow


def _clock(seconds: float) -> str:
    m = round(seconds / 60)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if m >= 48 * 60:  # days read better than thousands of hours
        return f"{m / 1440:.0f} days" if m >= 14400 else f"{m / 1440:.1f} days"
    return f"{seconds:.0f} s" if seconds < 90 else f"{m} min" if m < 90 else f"{m // 60} h {m % 60:02d} min"


def _values(values: list[Any]) -> str:
    return "/".join(map(str, values)) if len(values) <= 5 else f"×{len(values)}"


def grid_counts(study: StudyConfig) -> list[tuple[dict[str, list[Any]], int]]:
    """Each grid with its number of distinct trials (a trial in two grids counts in both)."""
    return [(grid, len(study.model_copy(update={"grids": [grid]}).trials())) for grid in study.grids]


def _gpu_estimate(jobs: list, cpu_seconds: list[float], gpus: int, how: str) -> list[str]:
    """The dry run's GPU lines: the jobs' :func:`gpu_job_seconds` ranges scheduled on ``gpus`` GPUs (one
    unless a Ray cluster gives each task its own), with the assumptions said."""
    from bindscale.run.planner import schedule

    fast, slow = zip(*(gpu_job_seconds(j) for j in jobs))
    lo = schedule(list(fast), gpus) + OVERHEAD_S  # in the plan's order, as a run hands them out
    hi = schedule(list(slow), gpus) + OVERHEAD_S
    steps = sum(_job_steps(j) for j in jobs)
    where = "one GPU, one job at a time" if gpus == 1 else f"{gpus} GPUs (a Ray task takes a whole GPU)"
    return [
        f"estimated time on a GPU: ~{_clock(lo)} to ~{_clock(hi)} wall on {where} "
        f"(the same jobs: {_clock(sum(cpu_seconds))} CPU time of training on {MACHINE.split(',')[0]})",
        f"  (derived from the plan, not measured on a GPU: {steps:,} optimizer steps x {GPU_STEP_S[0] * 1e3:.0f}-"
        f"{GPU_STEP_S[1] * 1e3:.0f} ms of kernel launches each, plus each job's FLOPs, at most its CPU-seconds x "
        f"{CPU_FP32_FLOPS / 1e9:.0f} GFLOP/s (the CPU's one-thread fp32 matmul peak), at "
        f"{GPU_PEAK_SHARE[0]:.0%}-{GPU_PEAK_SHARE[1]:.0%} of {GPU_ASSUMED}; evaluation and analysis at "
        f"their CPU time; the CPU factor is {how}; benchmarks/gpu_paper.py measures real steps/s)",
    ] + _calibrated_lines(jobs, gpus, where)


def _calibrated_lines(jobs: list, gpus: int, where: str) -> list[str]:
    """The dry run's calibrated GPU lines (:mod:`bindscale.run.gpucal`): the jobs' calibrated ranges scheduled as
    the derived ones are, with the measurements' source; or why the plan is uncalibrated."""
    from bindscale.run.gpucal import calibrated_job_seconds, uncalibrated_why
    from bindscale.run.planner import schedule

    cal = gpu_calibration()
    why = uncalibrated_why(jobs, cal)
    if why is None and not cal.points:
        why = "no usable GPU measurement (" + "; ".join(cal.notes) + ")"
    if why is not None:
        return [f"calibrated on measured GPU jobs: none, uncalibrated for this study: {why}; only the derived "
                f"range above (measurements: {cal.source_line()})"]
    fast, slow = zip(*(calibrated_job_seconds(j, cal) for j in jobs))
    lo = schedule(list(fast), gpus) + OVERHEAD_S
    hi = schedule(list(slow), gpus) + OVERHEAD_S
    point = cal.points[registry.for_trial(jobs[0][0]).name]
    c_lo, c_hi = cal.per_layer_step_s
    return [
        f"calibrated on measured GPU jobs: ~{_clock(lo)} to ~{_clock(hi)} wall on {where}",
        f"  (measured: {cal.source_line()}; per optimizer step {c_lo * 1e3:.1f}-{c_hi * 1e3:.1f} ms of overhead per "
        f"layer plus the derived FLOP bound at the rate measured for {point.study} ({point.variant}'s measured trial: "
        f"{point.steps_per_s:.1f} steps/s, {point.layers} layers); evaluation and analysis at their CPU time; the fit "
        "and its range: bindscale.run.gpucal)",
    ]


def _cluster_estimate(cpu_seconds: list[float], n_workers: int, asked: int | None, how: str) -> list[str]:
    """The dry run's Ray-cluster lines: the jobs scheduled on ``n_workers`` worker CPUs, with the assumptions said."""
    from bindscale.run.planner import schedule

    wall = schedule(cpu_seconds, n_workers) + OVERHEAD_S
    total = sum(cpu_seconds)
    lines = [f"estimated time on a Ray cluster: ~{_clock(wall)} wall on {n_workers} worker CPU(s) "
             f"({_clock(total)} CPU time of training / {n_workers} = {_clock(total / n_workers)}; the longest job "
             f"{_clock(max(cpu_seconds))}; + ~{OVERHEAD_S:.0f} s start-up and report)"]
    if asked is None:
        lines.append("  (no --workers given: every job its own task, as if the cluster had a free CPU for each; "
                     "give --workers N for a cluster of N worker CPUs)")
    lines.append(f"  (an estimate: each worker CPU as fast as a core of {MACHINE}, cost-to-seconds factor {how}; "
                 "N CPUs free for this run, bindscale installed on every node, the run directory shared; Ray's "
                 "own task start-up and data transfer not counted)")
    return lines


def describe_plan(study: StudyConfig, workers: int | None = None, device: str = "auto",
                  executor: str | None = None, out: str | None = None, retries: int = RETRIES,
                  address: str | None = None, walls: list[float] | None = None) -> str:
    """The dry run's text: trials per grid, stacked jobs, estimated time. Runs and writes nothing.

    ``walls``: when given, the CPU estimate's wall seconds are appended to it (``run all --dry-run`` adds the
    studies' estimates into one total).

    The estimate is the CPU one (seconds on the CPU machine, scheduled on the workers), a GPU one on
    ``device`` cuda (:func:`gpu_job_seconds`), or a Ray-cluster one with ``executor`` ray and an ``address``
    (``workers``: the cluster's worker CPUs; not cut to this machine's cores, as the run does not).

    Args:
        workers, device, executor, retries, address: as ``bindscale run`` takes them.
        out: the run directory, read (not written) to leave out trials already recorded.

    Raises:
        ConfigError: an option the run would refuse (device, workers, executor, an ``out`` it could
            not write), or a split that cannot be made. Two refusals of a run are notes here instead, so
            that one can estimate before renting: ``--device cuda`` on a machine without CUDA (planned
            for an assumed GPU, :data:`GPU_ASSUMED`) and ``--executor ray`` without Ray installed.
    """
    # What a run refuses, refused the same way.
    held, no_ray = None, False
    if out is not None:
        try:
            store = check_run(out, executor, retries, address, workers)
        except ConfigError as err:
            if str(err) != NO_RAY:
                raise
            # Said, not refused: a cluster estimate is wanted before Ray is installed here.
            no_ray, store = True, check_out(out, executor)
        try:
            held = store.read_text(STUDY_FILE) if store.exists(STUDY_FILE) else None
        except (OSError, ValueError):
            held = None  # unreadable: the run would say so itself
    else:
        check_run_options(executor, retries, address, workers)
    # Here, after the options are checked: the planner imports torch (a refused option answers first).
    from bindscale.run.planner import plan_jobs, resolve_device, schedule

    assumed_gpu = False
    try:
        dev = resolve_device(device)
    except ValueError as err:
        if device != "cuda":
            raise ConfigError(str(err)) from None
        # No GPU here: a run would be refused, but the dry run plans for an assumed one (the GPU estimate
        # is what one asks for on a laptop before renting a GPU).
        dev, assumed_gpu = "cuda", True
    cores = available_cores()
    cluster = executor == "ray" and bool(address)
    trials = study.trials()
    study.plugin.check_trials(trials)

    lines = [f"{study.name}{' (quick)' if study.is_quick else ''}: {len(trials)} trial{'' if len(trials) == 1 else 's'}"]
    if note := replaced_study_note(held, study, out, dry_run=True):
        lines.append(note)
    if no_ray:
        lines.append(f"note: Ray is not installed here, so a run with --executor ray would be refused ({NO_RAY})")
    if assumed_gpu:
        lines.append(f"note: no CUDA device here, so a run with --device cuda would be refused on this machine; "
                     f"planned for {GPU_ASSUMED} with {GPU_MEMORY_BYTES >> 30} GiB free")
    counts = grid_counts(study)
    for i, (grid, n) in enumerate(counts, 1):
        axes = ", ".join(f"{axis} {_values(values)}" for axis, values in grid.items()) or "the base trial"
        lines.append(f"  grid {i}: {n} trial{'' if n == 1 else 's'} ({axes})")
    if sum(n for _, n in counts) > len(trials):
        lines.append("  (a trial in several grids runs once)")

    done = 0
    if out is not None:
        recorded = recorded_ids(out, trials)
        todo = [t for t in trials if t.trial_id not in recorded]
        done = len(trials) - len(todo)
    else:
        todo = trials
    if done:
        lines.append(f"{done} already recorded in {out}, {len(todo)} to run")
    if not todo:
        lines.append("nothing to run: every trial has a record (a run would only rebuild the report)")
        return "\n".join(lines)

    if cluster:  # as the run plans it (runner._run_locked): the cluster's CPUs, not this machine's cores
        n_workers = workers or len(todo)
    elif workers is not None:
        n_workers = 1 if executor == "inline" else min(workers, cores)
        if workers > n_workers:  # as the run itself says (runner.run_study)
            why = "the inline executor trains in this process" if executor == "inline" else f"{cores} cores"
            lines.append(f"note: --workers {workers} would run as {n_workers} ({why})")
    else:
        n_workers = 1 if dev == "cuda" or executor == "inline" else min(cores, len(todo))
    memory = GPU_MEMORY_BYTES if assumed_gpu else None
    jobs = plan_jobs(todo, n_workers=n_workers, device=dev, memory=memory)
    planned_workers = n_workers
    if workers is not None and len(jobs) < n_workers:  # said, as the cores' cap is: one job per worker at most
        lines.append(f"note: --workers {workers}: the plan has {len(jobs)} stacked job(s), so {max(1, len(jobs))} "
                     "worker(s) have work (a job is one worker's)")
    n_workers = max(1, min(n_workers, len(jobs)))
    executor = executor or ("process" if n_workers > 1 else "inline")
    sizes = sorted((len(j) for j in jobs), reverse=True)
    shown = ", ".join(map(str, sizes[:20])) + (f", … ({len(sizes) - 20} more)" if len(sizes) > 20 else "")
    lines.append(f"{len(jobs)} stacked job{'s' if len(jobs) != 1 else ''} on {n_workers} worker(s) ({executor}), device {dev}; "
                 f"trials per stack: {shown}")
    if note := measured_cut_note(jobs, dev):
        lines.append(note)
    if dev == "cuda" and (note := oversized_note(jobs, planned_workers, memory)):
        lines.append(note)

    seconds = [job_seconds(j) for j in jobs]
    if any(x != x for x in seconds):  # NaN: no calibration
        lines.append(f"no time estimate: study {study.plugin.name} gives no cost-to-seconds factor")
        lines.append("dry run: nothing was run or written")
        return "\n".join(lines)
    measured = all(getattr(registry.for_trial(j[0]), "seconds_measured", False) for j in jobs)
    how = "measured" if measured else "a rough estimate (fitted to a few measured trial times)"
    if dev == "cuda":
        lines += _gpu_estimate(jobs, seconds, n_workers if cluster else 1, how)
    elif cluster:
        lines += _cluster_estimate(seconds, n_workers, workers, how)
    else:
        wall = schedule(seconds, n_workers) + OVERHEAD_S
        if walls is not None:
            walls.append(wall)
        lines.append(f"estimated time: ~{_clock(wall)} wall on {n_workers} worker(s) ({_clock(sum(seconds))} CPU time "
                     f"of training, + ~{OVERHEAD_S:.0f} s start-up and report)")
        lines.append(f"  (an estimate: the cost-to-seconds factor is {how} on {MACHINE}; another machine or "
                     "its load changes it)")
        if wall > 2 * 3600:
            lines.append("  (too long here? `--dry-run --device cuda` estimates it on a GPU, `--dry-run --executor ray "
                         "--address ADDR --workers N` on a Ray cluster of N CPUs)")
    lines.append("dry run: nothing was run or written")
    return "\n".join(lines)


def measured_cut_note(jobs: list[list[Any]], device: str) -> str | None:
    """Why and by how much the run's stacked jobs may outnumber the dry run's: on the CPU a run first times a
    few steps of each shape whose study gives a step timer (:func:`bindscale.run.planner.measured_stack_cap`,
    seconds per shape) and cuts a stack smaller where a bigger one would not make a trial cheaper on that
    machine and load. The dry run does not time (it trains nothing), so it gives the range: its own plan, up to
    one job per timed trial. The time estimate counts each trial's own cost, so it holds either way. None when
    no job can be cut (a GPU run, or no study with a step timer).
    """
    if device != "cpu":
        return None
    def has_timer(trial: Any) -> bool:  # looked up, never called: the dry run trains nothing
        plugin = registry.for_trial(trial)
        return getattr(plugin, "hook", lambda name: None)("step_timer") is not None

    timed = [j for j in jobs if len(j) > 1 and has_timer(j[0])]
    if not timed:
        return None
    most = len(jobs) - len(timed) + sum(len(j) for j in timed)
    return (f"  (the run times a few steps of each shape first and may cut {len(timed)} of these stacks smaller "
            f"where a bigger stack would not make a trial cheaper here: {len(jobs)} to {most} jobs, by this "
            "machine's speed and load; the time estimate counts each trial's own cost and holds either way)")


def oversized_note(jobs: list[list[Any]], n_workers: int = 1, memory: int | None = None) -> str | None:
    """The dry run's warning where a trial's own memory estimate exceeds what a stack may take on the GPU
    (:func:`bindscale.run.planner.memory_budget`: its free memory, or ``memory`` for an assumed GPU, less a safety
    margin): such a trial is planned alone and may not fit. None when every trial fits."""
    from bindscale.run.planner import GPU_MEMORY_MARGIN, available_memory_bytes, memory_budget, oversized_trials

    big = oversized_trials(jobs, "cuda", n_workers, memory)
    if not big:
        return None
    free = available_memory_bytes("cuda") if memory is None else memory
    trial, need = max(big, key=lambda x: x[1])
    share = "" if n_workers == 1 else f", shared by {n_workers} workers"
    return (f"note: {len(big)} trial(s) estimated to need more GPU memory than a stack may take "
            f"({memory_budget('cuda', n_workers, memory) / 2**30:.1f} GiB: {free / 2**30:.0f} GiB free less a "
            f"{GPU_MEMORY_MARGIN:.0%} margin{share}), up to {need / 2**30:.1f} GiB (trial {trial.trial_id}): each is "
            "planned alone and may not fit (the estimate: its study's trial_memory_bytes)")


def tier_estimate(study: StudyConfig, workers: int = 2) -> dict[str, Any]:
    """A shipped study file's dry-run estimate as numbers, for the answer page's "what would decide it": wall
    seconds on ``workers`` CPU workers of the project's machine (:data:`MACHINE`) and the (fast, slow) range on
    one assumed GPU (:data:`GPU_ASSUMED`), as ``--dry-run`` and ``--dry-run --device cuda`` print them.

    Returns: ``{"tier", "trials", "cpu_wall_s", "cpu_workers", "gpu_wall_s": [fast, slow], "measured"}``; the times
    are None for a study with no cost-to-seconds factor.
    """
    from bindscale.run.planner import plan_jobs, schedule

    trials = study.trials()
    jobs = plan_jobs(trials, n_workers=workers, device="cpu")
    seconds = [job_seconds(j) for j in jobs]
    out: dict[str, Any] = {"tier": study.name, "trials": len(trials), "cpu_workers": workers,
                           "cpu_wall_s": None, "gpu_wall_s": None, "measured": False}
    if not jobs or any(x != x for x in seconds):
        return out
    out["cpu_wall_s"] = round(schedule(seconds, max(1, min(workers, len(jobs)))) + OVERHEAD_S, 1)
    gpu_jobs = plan_jobs(trials, n_workers=1, device="cuda", memory=GPU_MEMORY_BYTES)
    fast, slow = zip(*(gpu_job_seconds(j) for j in gpu_jobs))
    out["gpu_wall_s"] = [round(schedule(list(fast), 1) + OVERHEAD_S, 1), round(schedule(list(slow), 1) + OVERHEAD_S, 1)]
    out["measured"] = all(getattr(registry.for_trial(j[0]), "seconds_measured", False) for j in jobs)
    return out


def tier_estimates(workers: int = 2) -> dict[str, dict[str, Any]]:
    """:func:`tier_estimate` of every shipped study file of every built-in study (default, ``-full``, ``-paper``
    and the real-model files), by file name; a file that cannot be planned here is left out."""
    from bindscale.core.studyfile import resolve_study

    out = {}
    for name in registry.builtin_files():
        try:
            out[name] = tier_estimate(resolve_study(name), workers)
        except (ConfigError, ValueError, ImportError):
            continue
    return out


def gpu_estimate(study: StudyConfig, out: str | None = None) -> dict[str, Any]:
    """``--dry-run --device cuda``'s two estimates as numbers, for scripts (``benchmarks/gpu_full.sh`` orders a lent
    GPU's tiers by them): the trials still to run (those without a record in ``out``, when given) planned for
    one GPU (this machine's, else the assumed one, :data:`GPU_MEMORY_BYTES`), their derived (fast, slow) wall
    seconds (:func:`gpu_job_seconds`) and their calibrated ones (:mod:`bindscale.run.gpucal`), each with
    :data:`OVERHEAD_S` of start-up and report.

    Returns: ``{"tier", "trials", "recorded", "derived_s": [fast, slow] | None, "calibrated_s": [fast, slow] | None,
    "uncalibrated": why | None}``; None times where nothing is left to run (or the study has no cost factor).
    """
    import torch

    from bindscale.run.gpucal import calibrated_job_seconds, uncalibrated_why
    from bindscale.run.planner import plan_jobs, schedule

    trials = study.trials()
    recorded = recorded_ids(out, trials) if out is not None else set()
    todo = [t for t in trials if t.trial_id not in recorded]
    res: dict[str, Any] = {"tier": study.name, "trials": len(trials), "recorded": len(trials) - len(todo),
                           "derived_s": None, "calibrated_s": None, "uncalibrated": None}
    if not todo:
        return res
    memory = None if torch.cuda.is_available() else GPU_MEMORY_BYTES
    jobs = plan_jobs(todo, n_workers=1, device="cuda", memory=memory)
    derived = [gpu_job_seconds(j) for j in jobs]
    if any(x != x for pair in derived for x in pair):
        return res
    res["derived_s"] = [round(schedule([d[i] for d in derived], 1) + OVERHEAD_S, 1) for i in (0, 1)]
    cal = gpu_calibration()
    res["uncalibrated"] = uncalibrated_why(jobs, cal) or (None if cal.points else "no usable GPU measurement")
    if res["uncalibrated"] is None:
        calibrated = [calibrated_job_seconds(j, cal) for j in jobs]
        res["calibrated_s"] = [round(schedule([c[i] for c in calibrated], 1) + OVERHEAD_S, 1) for i in (0, 1)]
    return res
