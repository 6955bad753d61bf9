"""What ``bindscale run --dry-run`` and ``--print-config`` print: the resolved study, its trials,
the stacked jobs a run would train and an estimated time. Nothing is run and nothing is written.

The time estimate turns :func:`bindscale.sweep.job_cost` into CPU-seconds with each study's
factor (its plugin's ``seconds_per_cost``: per unit of cost, plus a per-trial part for evaluation
and analysis; where it was measured is written beside it), then schedules the jobs, in the
order a run submits them, on the workers. The factors were measured on this project's 2-core
CPU machine at one torch thread per worker; another machine, another load or a GPU changes
them, so the figure is an estimate.

Layer: beside the runner (the CLI and API call both): it checks the options as a run does
(:mod:`bindscale.options`) and plans with the planner (:mod:`bindscale.sweep`), which it imports only
inside :func:`describe_plan` and :func:`job_seconds`: the planner imports torch, and a refused option
must answer first. The runner takes :func:`study_yaml` and :func:`replaced_study_note` from here.
"""

from __future__ import annotations

from typing import Any

import yaml

from . import registry
from .config import StudyConfig
from .errors import ConfigError
from .options import RETRIES, available_cores, check_run, check_run_options
from .records import load_records
from .rundir import STUDY_FILE
from .storage import StorageError

#: What the factors were measured on (the wall-time estimate also assumes a core per worker).
MACHINE = "a 2-core Intel Xeon (the project's CPU machine), one torch thread per worker"
#: Seconds a run spends besides training: starting the workers (import torch) and building the report.
#: A round allowance from measurements at load ~3.5 on the 2-core machine: a worker's imports took
#: 4.3 s; `bindscale run --quick --workers 2` (the headline study) ended training 133 s after its start (start-up
#: included) and exited at 144 s, so ~11 s for the report.
OVERHEAD_S = 30.0


def study_yaml(study: StudyConfig) -> str:
    """The resolved study as YAML, as a run writes it to ``study.yaml`` (it loads back as the same study).
    Non-ASCII text stays as written (``Diego-Simón``, not ``Diego-Sim\\xF3n``)."""
    return yaml.safe_dump(study.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def replaced_study_note(held: str | None, study: StudyConfig, where: object, dry_run: bool = False) -> str | None:
    """What a run (or its ``--dry-run``) says when its directory ``where`` holds another study (``held``:
    that directory's study.yaml text, None when there is none); None when it holds none or this one.

    Compared as data, not text: a run written before non-ASCII was kept as written is the same study.
    Records are keyed by trial id, so nothing is mixed up; but the directory changes study."""
    if held is None or yaml.safe_load(held) == yaml.safe_load(study_yaml(study)):
        return None
    what = "holds a different study configuration; a run would replace it" if dry_run else \
        "held a different study configuration; it is replaced"
    return f"note: {where} {what}, records of trials not in this study stay on disk and are not reported"


def job_seconds(job: list) -> float:
    """Estimated CPU-seconds of one stacked job from its study's ``seconds_per_cost``; NaN when the
    study has no such factor."""
    from .sweep import job_cost  # the planner imports torch: only once a plan is made

    factor = getattr(registry.for_trial(job[0]), "seconds_per_cost", None)
    if not factor:
        return float("nan")
    per_cost, per_trial = factor
    return per_cost * job_cost(job) + per_trial * len(job)


def _clock(seconds: float) -> str:
    m = round(seconds / 60)
    if seconds < 10:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s" if seconds < 90 else f"{m} min" if m < 90 else f"{m // 60} h {m % 60:02d} min"


def _values(values: list[Any]) -> str:
    return "/".join(map(str, values)) if len(values) <= 5 else f"×{len(values)}"


def grid_counts(study: StudyConfig) -> list[tuple[dict[str, list[Any]], int]]:
    """Each grid with its number of distinct trials (a trial in two grids counts in both)."""
    return [(grid, len(study.model_copy(update={"grids": [grid]}).trials())) for grid in study.grids]


def describe_plan(study: StudyConfig, workers: int | None = None, device: str = "auto",
                  executor: str | None = None, out: str | None = None, retries: int = RETRIES,
                  address: str | None = None) -> str:
    """The dry run's text: trials per grid, stacked jobs, estimated time. Runs and writes nothing.

    Args:
        workers, device, executor, retries, address: as ``bindscale run`` takes them.
        out: the run directory, read (not written) to leave out trials already recorded.

    Raises:
        ConfigError: an option the run would refuse (device, workers, executor, an ``out`` it could
            not write), or a split that cannot be made.
    """
    # What a run refuses, refused the same way.
    held = None
    if out is not None:
        store = check_run(out, executor, retries, address, workers)
        try:
            held = store.read_text(STUDY_FILE) if store.exists(STUDY_FILE) else None
        except (OSError, ValueError):
            held = None  # unreadable: the run would say so itself
    else:
        check_run_options(executor, retries, address, workers)
    # Here, after the options are checked: the planner imports torch (a refused option answers first).
    from .sweep import plan_jobs, resolve_device, schedule

    try:
        dev = resolve_device(device)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    cores = available_cores()
    trials = study.trials()
    study.plugin.check_trials(trials)

    lines = [f"{study.name}{' (quick)' if study.is_quick else ''}: {len(trials)} trials"]
    if note := replaced_study_note(held, study, out, dry_run=True):
        lines.append(note)
    counts = grid_counts(study)
    for i, (grid, n) in enumerate(counts, 1):
        axes = ", ".join(f"{axis} {_values(values)}" for axis, values in grid.items()) or "the base trial"
        lines.append(f"  grid {i}: {n} trials ({axes})")
    if sum(n for _, n in counts) > len(trials):
        lines.append("  (a trial in several grids runs once)")

    done = 0
    if out is not None:
        try:
            have = load_records(out, {t.trial_id for t in trials})
        except (StorageError, OSError):
            have = {}
        recorded = {tid for tid, rec in have.items() if rec.get("status") != "failed"}
        todo = [t for t in trials if t.trial_id not in recorded]
        done = len(trials) - len(todo)
    else:
        todo = trials
    if done:
        lines.append(f"{done} already recorded in {out}, {len(todo)} to run")
    if not todo:
        lines.append("nothing to run: every trial has a record (a run would only rebuild the report)")
        return "\n".join(lines)

    if workers is not None:
        n_workers = 1 if executor == "inline" else min(workers, cores)
        if workers > n_workers:  # as the run itself says (runner.run_study)
            why = "the inline executor trains in this process" if executor == "inline" else f"{cores} cores"
            lines.append(f"note: --workers {workers} would run as {n_workers} ({why})")
    else:
        n_workers = 1 if dev == "cuda" or executor == "inline" else min(cores, len(todo))
    jobs = plan_jobs(todo, n_workers=n_workers, device=dev)
    n_workers = max(1, min(n_workers, len(jobs)))
    executor = executor or ("process" if n_workers > 1 else "inline")
    sizes = sorted((len(j) for j in jobs), reverse=True)
    shown = ", ".join(map(str, sizes[:20])) + (f", … ({len(sizes) - 20} more)" if len(sizes) > 20 else "")
    lines.append(f"{len(jobs)} stacked jobs on {n_workers} worker(s) ({executor}), device {dev}; "
                 f"trials per stack: {shown}")

    seconds = [job_seconds(j) for j in jobs]
    if any(x != x for x in seconds):  # NaN: no calibration
        lines.append(f"no time estimate: study {study.plugin.name} gives no cost-to-seconds factor")
        lines.append("dry run: nothing was run or written")
        return "\n".join(lines)
    wall = schedule(seconds, n_workers) + OVERHEAD_S
    measured = all(getattr(registry.for_trial(j[0]), "seconds_measured", False) for j in jobs)
    how = "measured" if measured else "a rough estimate (fitted to a few measured trial times)"
    lines.append(f"estimated time: ~{_clock(wall)} wall on {n_workers} worker(s) ({_clock(sum(seconds))} CPU time of "
                 f"training, + ~{OVERHEAD_S:.0f} s start-up and report)")
    lines.append(f"  (an estimate: the cost-to-seconds factor is {how} on {MACHINE}; another machine or "
                 "its load changes it" + ("; on a GPU it is not calibrated" if dev == "cuda" else "") + ")")
    lines.append("dry run: nothing was run or written")
    return "\n".join(lines)
