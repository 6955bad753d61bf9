"""The ``--dry-run --device cuda`` estimate calibrated on GPU measurements: a range per job, fitted to the
jobs that were timed on a GPU, beside the derived range of :func:`bindscale.run.dryrun.gpu_job_seconds`.

Measurements (:data:`MEASURED_FILE`, ``gpu_measured.json`` beside this module, shipped with the package;
a unit test keeps its trials equal to ``benchmarks/results/gpu_paper_h200_2026-12-04.json``), all on one
NVIDIA H200, torch 2.11.0+cu130, fp32, 4 December 2026:

- ``trials``: the largest trial of each transformer study's ``-paper`` variant, timed alone by
  ``benchmarks/gpu_paper.py`` (steps/s over up to 300 steps after 20 warm-up steps);
- ``runs``: ``bindscale run depth-full --device cuda`` stopped by its lease after 254 s, with the three first
  stacked jobs (15 trials, 5,000 steps each) recorded and the fourth unfinished (docs/speed.md, "Measured on
  a lent GPU"; depth-full.yaml's comments).

Model. One optimizer step of a job costs ``c × L`` seconds of overhead (``L`` the model's layers, ``c`` seconds
per layer and step: kernel launches and the Python around them, whatever the width) and ``F / R_s`` seconds of
compute (``F`` the derived model's FLOP bound per step: the job's CPU-seconds of training ×
:data:`~bindscale.run.dryrun.CPU_FP32_FLOPS` / its steps, the same bound
:func:`~bindscale.run.dryrun.gpu_job_seconds` divides by an assumed throughput; ``R_s`` the rate at which
the GPU works through that bound for study ``s``). How much the two overlap is not measured: the host
queues kernels while the GPU computes, so a step takes between ``max(c L, F / R_s)`` (full overlap) and
``c L + F / R_s`` (none). A job's seconds are its steps times that, plus its evaluation and analysis at their
CPU time (the study's per-trial part, as in the derived estimate). Set-up before the first step (data, model;
11-132 s per -paper trial measured) is not counted beyond that.

Fit. ``R_s`` is per study, from its measured trial (``τ_p`` seconds per step, ``L_p`` layers, ``F_p``):
``F_p / τ_p`` with full overlap, ``F_p / (τ_p - c L_p)`` with none, so the measured trial is reproduced
whatever ``c`` is. Per study because ``F`` is each study's own CPU cost factor turned into FLOPs, and how
loose that bound is differs by study: ``F_p / τ_p`` runs from 12 TFLOP/s (geometry) to 134 (length_transfer,
above the chip's 67 TFLOP/s fp32 peak: the bound is loose there), so one share of the peak for every study
cannot fit. ``c`` is one number for every study (they all train the project's one transformer with the kit's
trainer), and each measurement bounds it from one side, under either overlap: a measured step is at least
its overhead (``c ≤ τ_p / L_p``; geometry's 12 × 512 step, 29 ms, gives 2.4 ms); depth-full's three finished
jobs took at most the run's 254 s (start-up and evaluation taken as nothing); its four started jobs,
evaluation at CPU time and :data:`~bindscale.run.dryrun.OVERHEAD_S` of start-up took more than 254 s (else
the fourth would have been recorded). A job's time grows with ``c``, so each bound is found by bisection;
``c``'s interval is the widest the two overlaps allow. A job's calibrated range is the least and the most
of its time at the interval's two ends under the two overlaps. One overhead per step whatever the layers
does not fit: ceiling-paper's 2-layer step took 8.5 ms in all, while depth-full's stacks of 2- and 8-layer
models with negligible FLOPs needed more than 9 ms a step on average.

Honesty. Six measurements set six numbers (five rates and ``c``'s interval), so the measured jobs are
reproduced by construction (a unit test checks it), not validated out of sample; the range says how a
measured step may split into overhead and compute and how far they overlap, which matters for jobs far
smaller or larger than the one measured of their study (a stack of eight large trials: no overlap credits
it with seven steps' overhead saved, full overlap with none). A study with no measured trial (the MLP studies,
binding_scan), or a job whose model has no layer count, is left uncalibrated and said so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from bindscale.core import registry

#: The measurements, shipped with the package (package data).
MEASURED_FILE = Path(__file__).with_name("gpu_measured.json")


def measurements() -> dict[str, Any]:
    """The shipped measurements (:data:`MEASURED_FILE`) as a dict: ``sources``, ``trials``, ``runs``."""
    return json.loads(MEASURED_FILE.read_text(encoding="utf-8"))


def layers(trial: Any) -> int | None:
    """The layers of a trial's transformer (``model.n_layers``), None for any other model."""
    model = getattr(trial, "model", None)
    n = getattr(model, "n_layers", None)
    return int(n) if isinstance(n, int) and n > 0 and getattr(model, "kind", "transformer") == "transformer" else None


def _per_trial(job: list) -> float:
    """A job's per-trial part (evaluation and analysis, at their CPU time), seconds: its study's factor."""
    factor = getattr(registry.for_trial(job[0]), "seconds_per_cost", None)
    return factor[1] * len(job) if factor else float("nan")


def job_steps(job: list) -> int:
    """Optimizer steps of a job: a stack steps once for all its trials (the most steps of any of them).
    A study may count steps beyond its progress unit (``steps``: e.g. pretraining and mask searches) with
    its ``step_counter`` hook (:meth:`bindscale.core.study.StudyPlugin.optimizer_steps`); else its ``steps``."""
    plugin = registry.for_trial(job[0])
    count = getattr(plugin, "optimizer_steps", None) or plugin.steps
    return max(int(count(t)) for t in job)


def _steps_flops(job: list, cpu_flops: float) -> tuple[int, float]:
    """(optimizer steps, the derived FLOP bound per step) of a job, as the derived estimate counts them: its
    CPU-seconds of training × ``cpu_flops`` (FLOP/s) / its steps."""
    from bindscale.run.planner import job_cost  # the planner imports torch: only once a plan is made

    per_cost = registry.for_trial(job[0]).seconds_per_cost[0]
    steps = job_steps(job)
    return steps, per_cost * job_cost(job) * cpu_flops / steps


@dataclass(frozen=True)
class Point:
    """One study's measured trial: what the fit takes from it (seconds, FLOPs) and where it came from."""

    study: str  #: the plugin's name (what :func:`bindscale.core.registry.for_trial` returns for its trials)
    variant: str  #: the study file it was drawn from (``depth-paper``)
    trial_id: str  #: the trial id today (``matched`` says whether it is the measured one's)
    matched: str  #: "trial id", or "model" where the trial's id has changed since (same model, largest such trial)
    layers: int
    step_s: float  #: measured seconds per optimizer step (1 / steps/s)
    flops: float  #: the derived FLOP bound of one step, FLOPs
    steps_per_s: float
    trial_steps: int
    trial: Any = field(default=None, compare=False, repr=False)  #: the trial itself, as resolved today


@dataclass(frozen=True)
class Calibration:
    """The fitted calibration: ``per_layer_step_s`` is ``c``'s interval (seconds per layer and optimizer step),
    ``points`` the measured trial of each calibrated study (by plugin name), ``bounds`` what set each end,
    ``notes`` measurements left out and why, ``sources`` the shipped file's sources."""

    per_layer_step_s: tuple[float, float]
    cpu_flops: float  #: the FLOP rate that turns a job's CPU-seconds into its FLOP bound (the derived model's)
    overhead_s: float  #: the start-up and report seconds a run adds (the derived model's)
    points: dict[str, Point]
    bounds: tuple[str, str]
    sources: dict[str, dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)

    def source_line(self) -> str:
        """Where the measurements come from: file, date, GPU (one phrase per source)."""
        by_machine: dict[str, list[str]] = {}
        for s in self.sources.values():
            where = s["file"] + (f" ({s['section']})" if s.get("section") else "")
            by_machine.setdefault(f"an {s['gpu']}, torch {s['torch']}, {s['precision']}, {s['date']}", []).append(where)
        return "; ".join(f"{' and '.join(files)} ({machine})" for machine, files in by_machine.items())


def _pick(trials: list, row: dict) -> tuple[Any, str] | None:
    """The measured trial among a variant's trials today: by id, else the largest by cost with the same model."""
    from bindscale.run.planner import job_cost

    for t in trials:
        if t.trial_id == row["trial_id"]:
            return t, "trial id"
    same = [t for t in sorted(trials, key=lambda t: t.trial_id) if t.model.model_dump(mode="json") == row["model"]]
    return (max(same, key=lambda t: job_cost([t])), "model") if same else None


def _select(trials: list, selector: dict[str, Any]) -> list:
    """The trials whose fields (dotted paths) equal the selector's values (a list: any of them)."""
    def value(obj: Any, path: str) -> Any:
        for part in path.split("."):
            obj = getattr(obj, part, None)
        return obj

    def ok(t: Any) -> bool:
        return all(value(t, k) in v if isinstance(v, list) else value(t, k) == v for k, v in selector.items())

    return [t for t in trials if ok(t)]


def job_training_seconds(job: list, point: Point, c: float, overlap: bool, cpu_flops: float) -> float:
    """A job's training seconds on the GPU under the calibration's model (module docstring): steps × the step's
    overhead ``c`` × layers and compute at the rate ``point`` measured for its study, added (``overlap`` False)
    or the larger of the two (``overlap`` True). ``c`` in seconds per layer and step; ``cpu_flops`` as
    :attr:`Calibration.cpu_flops`."""
    steps, flops = _steps_flops(job, cpu_flops)
    ratio = flops / point.flops
    if overlap:
        return steps * max(c * layers(job[0]), ratio * point.step_s)
    return steps * (c * layers(job[0]) + ratio * (point.step_s - c * point.layers))


def _solve(total, target: float, hi: float) -> float | None:
    """The ``c`` in [0, hi] where the nondecreasing ``total(c)`` reaches ``target`` (bisection); None when it
    does not within the interval (0 where it is already past it at 0)."""
    if total(hi) < target:
        return None
    lo = 0.0
    if total(lo) >= target:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < target else (lo, mid)
    return (lo + hi) / 2


@lru_cache(maxsize=4)
def calibration(cpu_flops: float, overhead_s: float) -> Calibration:
    """Fit the calibration (module docstring) to the shipped measurements under the derived model, whose
    FLOP bound is a job's CPU-seconds × ``cpu_flops`` (FLOP/s) and whose runs add ``overhead_s`` seconds of
    start-up and report (:func:`bindscale.run.dryrun.gpu_calibration` passes the dry run's own).

    Resolves the -paper variants and the measured run's study file and costs their trials (a second or two,
    most of it importing the studies); cached for the process (``run all --dry-run`` asks once per study).
    """
    from bindscale.core.errors import ConfigError
    from bindscale.core.studyfile import resolve_study

    data = measurements()
    points: dict[str, Point] = {}
    notes: list[str] = []
    for name, row in data["trials"].items():
        try:
            found = _pick(resolve_study(row["variant"]).trials(), row)
        except (ConfigError, ValueError, ImportError) as err:
            notes.append(f"{name}: {row['variant']} no longer resolves ({err}); left out")
            continue
        if found is None:
            notes.append(f"{name}: no trial of {row['variant']} has the measured model any more; left out")
            continue
        trial, matched = found
        n_layers = layers(trial)
        if n_layers is None or not getattr(registry.for_trial(trial), "seconds_per_cost", None):
            notes.append(f"{name}: the measured trial has no layer count or cost factor; left out")
            continue
        steps, flops = _steps_flops([trial], cpu_flops)
        points[registry.for_trial(trial).name] = Point(
            study=registry.for_trial(trial).name, variant=row["variant"], trial_id=trial.trial_id, matched=matched,
            layers=n_layers, step_s=1.0 / row["steps_per_s"], flops=flops, steps_per_s=row["steps_per_s"],
            trial_steps=int(row["trial_steps"]), trial=trial)
    # c's interval: a measured step is at least its overhead ...
    hi, hi_why = min(((p.step_s / p.layers, f"{p.variant}'s measured step") for p in points.values()),
                     default=(float("inf"), "nothing"))
    lo, lo_why = 0.0, "nothing (no lower bound measured)"
    runs = []
    for run in data.get("runs", []):
        try:
            trials = resolve_study(run["variant"]).trials()
        except (ConfigError, ValueError, ImportError) as err:
            notes.append(f"{run['variant']} run: no longer resolves ({err}); left out")
            continue
        jobs = [_select(trials, s) for s in run["finished"]] + [_select(trials, run["unfinished"])]
        point = points.get(registry.for_trial(trials[0]).name) if trials else None
        if point is None or any(not j or layers(j[0]) is None for j in jobs) or hi == float("inf"):
            notes.append(f"{run['variant']} run: its jobs or its study's measured trial are not found today; left out")
            continue
        wall = float(run["wall_seconds"])
        rest = overhead_s + sum(_per_trial(j) for j in jobs)
        ups, downs = [], []
        for overlap in (False, True):
            def done(c: float, overlap: bool = overlap) -> float:
                return sum(job_training_seconds(j, point, c, overlap, cpu_flops) for j in jobs[:-1])

            def started(c: float, overlap: bool = overlap) -> float:
                return sum(job_training_seconds(j, point, c, overlap, cpu_flops) for j in jobs) + rest

            # ... the finished jobs fit in the run's wall time (start-up and evaluation taken as nothing) ...
            up = _solve(done, wall, hi)
            ups.append(hi if up is None else up)
            # ... and the four started ones with evaluation and start-up did not.
            down = _solve(started, wall, hi)
            downs.append(0.0 if down is None else down)
        if max(ups) < hi:
            hi, hi_why = max(ups), f"{run['variant']}'s finished jobs within {wall:.0f} s"
        if min(downs) > lo:
            lo, lo_why = min(downs), f"{run['variant']}'s unfinished fourth job past {wall:.0f} s"
        runs.append({**run, "jobs": jobs, "point": point})
    if lo > hi:  # measurements that contradict the model: say so, calibrate nothing
        notes.append(f"the measurements bound the overhead per layer from both sides inconsistently "
                     f"({lo * 1e3:.2f} > {hi * 1e3:.2f} ms); nothing calibrated")
        points = {}
    return Calibration(per_layer_step_s=(lo, hi), cpu_flops=cpu_flops, overhead_s=overhead_s, points=points, bounds=(lo_why, hi_why), sources=data["sources"],
                       notes=notes, runs=runs)


def calibrated_job_seconds(job: list, cal: Calibration) -> tuple[float, float] | None:
    """A job's calibrated GPU seconds as a (fast, slow) range, or None where it is uncalibrated (its study has
    no measured trial, or its model no layer count): the least and the most of its training seconds at both
    ends of ``c``'s interval under both overlaps (:func:`job_training_seconds`), plus the per-trial part at
    CPU time (as :func:`bindscale.run.dryrun.gpu_job_seconds` counts it)."""
    point = cal.points.get(registry.for_trial(job[0]).name)
    if point is None or layers(job[0]) is None or not getattr(registry.for_trial(job[0]), "seconds_per_cost", None):
        return None
    ends = [job_training_seconds(job, point, c, overlap, cal.cpu_flops)
            for c in cal.per_layer_step_s for overlap in (False, True)]
    rest = _per_trial(job)
    return min(ends) + rest, max(ends) + rest


def uncalibrated_why(jobs: list, cal: Calibration) -> str | None:
    """Why a plan's calibrated estimate is missing (the first study or model without a measurement), or None."""
    for job in jobs:
        name = registry.for_trial(job[0]).name
        if name not in cal.points:
            measured = ", ".join(sorted(cal.points)) or "none"
            return f"no GPU measurement of study {name} (measured: {measured})"
        if layers(job[0]) is None:
            return f"a {name} job's model has no layer count (not the measured trainer's transformer)"
    return None


def measured_jobs(cal: Calibration, derived) -> list[dict[str, Any]]:
    """Each measured job beside what the derived (``derived``: :func:`bindscale.run.dryrun.gpu_job_seconds`) and
    the calibrated estimates predict for it, in seconds.

    A ``-paper`` trial: its training (``trial_steps`` / the measured steps/s; the estimates without their per-trial
    part). The depth-full run: its first three jobs with the calibration's ``overhead_s`` of start-up and their
    per-trial parts, against the run's 254 s (at most that: the run was stopped during the fourth).

    Returns: rows ``{"what", "measured_s", "derived_s": (fast, slow), "calibrated_s": (fast, slow)}``.
    """
    rows = []
    for p in cal.points.values():
        rest = _per_trial([p.trial])
        estimate = tuple(x - rest for x in derived([p.trial]))
        calibrated = tuple(x - rest for x in calibrated_job_seconds([p.trial], cal))
        rows.append({"what": f"{p.variant}: one trial of {p.layers} layers, {p.trial_steps:,} steps",
                     "measured_s": p.trial_steps / p.steps_per_s, "derived_s": estimate, "calibrated_s": calibrated})
    for run in cal.runs:
        done = run["jobs"][:-1]
        estimates = [derived(j) for j in done]
        calibrated = [calibrated_job_seconds(j, cal) for j in done]
        rows.append({"what": f"{run['variant']}: its first {len(done)} jobs ({sum(map(len, done))} trials) and start-up",
                     "measured_s": float(run["wall_seconds"]),
                     "derived_s": tuple(sum(x[i] for x in estimates) + cal.overhead_s for i in (0, 1)),
                     "calibrated_s": tuple(sum(x[i] for x in calibrated) + cal.overhead_s for i in (0, 1))})
    return rows
