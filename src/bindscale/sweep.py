"""Sweeps: trials → stacked jobs → records, resumable.

A *job* is a list of trials sharing one :func:`~bindscale.train.group_key`,
trained as one stacked model by :func:`run_job`, which every executor
(:mod:`bindscale.executors`: inline, process pool, Ray) calls. Each trial's
record is written atomically by whoever trained it; a re-run of the same
command skips trials that have a record (failed ones are retried).
"""

from __future__ import annotations

import os
import traceback
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from .config import FAMILIES, TrialConfig
from .cpu import cpu_training
from .records import load_records, provenance, write_record
from .storage import RunStore
from .train import group_key, train_group

#: Largest number of trials in one stack; free memory lowers it (:func:`max_stack`).
MAX_STACK = 32

#: A hyperteacher trial-step's cost that does not grow with the model (Python and kernel
#: launches, data sampling, optimizer bookkeeping), in weights: measured per-trial-step times
#: of the headline study (two workers, this project's CPU machine) fit 0.36 ms + 1.2e-5 ms per
#: weight, i.e. ~30 000 weights of overhead; widths 16 and 512 and the hypernets are within 5%
#: of the fit, widths 64-256 up to 30% above it.
STEP_OVERHEAD_WEIGHTS = 30_000


def parse_trial(d: dict) -> Any:
    """A trial config of its family (``kind``; absent = hyperteacher) from a plain dict."""
    return FAMILIES[d.get("kind", "hyperteacher")].model_validate(d)


def job_group_key(trial: Any) -> tuple:
    """Trials with equal keys train together: stacked hyperteacher shapes; every transformer trial alone."""
    return group_key(trial) if trial.family == "hyperteacher" else (trial.family, trial.trial_id)


def run_group(trials: list, device: str, progress: Callable[[int], None] | None = None) -> list:
    """Train and analyse one job's trials with their family's trainer (CPU settings: :mod:`bindscale.cpu`)."""
    with cpu_training(device):
        if trials[0].family == "subgraphs":
            from .subgraph_trial import run_group as run_subgraphs

            return run_subgraphs(trials, device, progress)
        if trials[0].family == "modularity":
            from .modularity_trial import run_group as run_modularity

            return run_modularity(trials, device, progress)
        return train_group(trials, device, progress)


def job_cost(job: list[TrialConfig]) -> float:
    """Relative cost of a job: trials × steps × rows × weights (the 6·N·D training FLOPs, up to a constant).

    Hyperteacher jobs add :data:`STEP_OVERHEAD_WEIGHTS` per trial-step, so that a
    width-16 stack is not costed at 1/400 of a width-512 one (measured: 1/18).
    Used to order and cut jobs (:func:`plan_jobs`) and for the ETA of a run.
    """
    t = job[0]
    if t.family == "subgraphs":
        m = t.model
        weights = 12 * m.n_layers * m.d_model**2 + 40 * m.d_model
        length = (30 if t.task.family == "maxsubseq" else 90) if t.task.scratchpad else 16
        return len(job) * t.train.steps * t.train.batch_size * length * weights
    if t.family == "modularity":
        return len(job) * modularity_cost(t)
    w, d = t.model.width, t.model.depth
    weights = w * w * max(d - 1, 0) + w * (t.task.M * t.task.K + t.task.input_dim + t.task.output_dim)
    if t.model.kind == "hypernet":
        weights *= 2  # generated weights are applied per task, plus the mixing
    return len(job) * t.train.steps * t.train.batch_tasks * t.task.samples_per_task * (weights + STEP_OVERHEAD_WEIGHTS)


def modularity_cost(t) -> float:
    """Relative cost of one modularity trial: (pre)training plus every mask search, rows × positions × weights.

    A mask step costs about twice a training step (soft masks, their penalty and Adam on
    one logit per weight); a transformer reads 4 positions per scene.
    """
    m, mk = t.model, t.mask
    if m.architecture == "mlp":
        weights, positions = 2 * (t.task.n_shapes + t.task.n_colours) * m.width + (m.depth - 1) * m.width**2, 1
    else:
        weights, positions = (4 + 2 * m.mlp_ratio) * m.depth * m.width**2, 4
    train = (t.train.steps + (t.pretrain.steps if t.pretrain.kind != "none" else 0)) * t.train.batch_size
    masks = 2 * (mk.n_mask_seeds + mk.control_mask_seeds) * mk.steps * mk.batch_size * 2
    return (train + masks) * positions * (weights + 1000)


def trial_memory_bytes(trial: TrialConfig) -> int:
    """Upper estimate of one trial's memory inside a stack, in bytes.

    Parameters with their gradient and two AdamW moments; activations of a
    training step kept for backward (×3 for gradients and autocast copies); the
    pre-sampled data chunk; evaluation sets; probe activations in float64.
    """
    if trial.family == "subgraphs":  # a small transformer, its batch and its evaluation
        return 512 << 20
    if trial.family == "modularity":  # one small network, its datasets and a few masked copies
        return 256 << 20
    t, m, tr = trial.task, trial.model, trial.train
    code = t.M * t.K + t.n_shots * (t.input_dim + t.output_dim)  # wider than any encoding
    widths = m.width * m.depth + code + t.input_dim + t.output_dim
    params = (code + t.input_dim) * m.width + m.width * m.width * max(m.depth - 1, 0) + m.width * t.output_dim
    if m.kind == "hypernet":
        params *= 1 + (m.n_banks or t.M)
    rows = tr.batch_tasks * t.samples_per_task
    activations = 3 * rows * widths
    if m.kind == "hypernet":  # generated weights per task
        activations += 3 * tr.batch_tasks * params // (1 + (m.n_banks or t.M))
    data = 2_000_000 + 2 * tr.eval_tasks * t.samples_per_task * (code + t.input_dim + t.output_dim)
    probes = 2 * 2 * tr.probe_tasks * tr.probe_samples * widths * 2  # float32 acts + float64 rows, fit + score
    return 4 * (4 * params + activations + data + probes)


def available_memory_bytes(device: str = "cpu") -> int:
    """Free memory on ``device``: CUDA's free memory, or MemAvailable from /proc/meminfo (8 GiB if unknown)."""
    if device == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.mem_get_info()[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def max_stack(trial: TrialConfig, n_workers: int, device: str = "cpu", cap: int = MAX_STACK,
              memory: int | None = None) -> int:
    """Largest stack of ``trial``-shaped trials that fits half of the free memory shared by ``n_workers``."""
    budget = (available_memory_bytes(device) if memory is None else memory) // 2 // max(1, n_workers)
    return max(1, min(cap, budget // trial_memory_bytes(trial)))


def plan_jobs(trials: list[TrialConfig], max_stack_size: int = MAX_STACK, n_workers: int = 1,
              device: str = "cpu", memory: int | None = None) -> list[list[TrialConfig]]:
    """Group trials by shape into stacks, largest jobs first.

    A stack holds at most ``max_stack_size`` trials and what fits in memory
    (:func:`max_stack`); larger groups are cut into near-equal stacks. The
    largest jobs are cut further until every worker has one and no job is
    longer than an equal share of the total.
    """
    groups: dict[tuple, list[TrialConfig]] = defaultdict(list)
    for t in sorted(trials, key=lambda t: t.trial_id):
        groups[job_group_key(t)].append(t)
    jobs = []
    for g in groups.values():
        cap = max_stack(g[0], n_workers, device, max_stack_size, memory)
        n = -(-len(g) // cap)
        jobs += [g[i::n] for i in range(n)]
    # Cut the largest jobs until every worker has one and none is longer than an equal
    # share of the total (otherwise one big stack finishes long after the others).
    share = sum(map(job_cost, jobs)) / max(1, n_workers)
    while jobs:
        jobs.sort(key=job_cost, reverse=True)
        big = jobs[0]
        if len(big) < 2 or (len(jobs) >= n_workers and job_cost(big) <= share):
            break
        jobs = jobs[1:] + [big[0::2], big[1::2]]
    return sorted(jobs, key=job_cost, reverse=True)


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when available, else ``cpu``.

    Raises:
        ValueError: ``cuda`` asked for but not available, or an unknown device.
    """
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available here; allowed: auto, cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; allowed: auto, cpu, cuda")
    return device


def make_record(trial: TrialConfig, study: str, result, device: str, executor: str, error: str | None = None) -> dict:
    """The record of one trial (see :mod:`bindscale.records`)."""
    return {
        "trial_id": trial.trial_id,
        "study": study,
        "status": "failed" if error else result.status,
        "diverged_step": None if error else result.diverged_step,
        "error": error,
        "config": trial.flat(),
        "trial_config": trial.model_dump(mode="json"),
        "metrics": {} if error else result.metrics,
        "provenance": provenance(device, executor),
    }


def run_job(
    job: list[dict], run_dir: str, study: str, device: str, executor: str,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """Train one stacked job and write its records. Exceptions in training become ``failed`` records.

    Args:
        job: trial configs as plain dicts (picklable across processes).
        run_dir: the run directory's path or URL (:class:`~bindscale.storage.RunStore`).

    Raises:
        StorageError: a record cannot be written (disk full, permission denied): that
            stops the sweep, since no later trial could be recorded either.

    Returns:
        The statuses written, one per trial.
    """
    trials = [parse_trial(d) for d in job]
    try:
        results = run_group(trials, device, progress)
        recs = [make_record(t, study, r, device, executor) for t, r in zip(trials, results)]
    except Exception as err:  # the sweep goes on; the error is kept in each trial's record
        msg = f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=5)}"
        recs = [make_record(t, study, None, device, executor, error=msg) for t in trials]
    for rec in recs:
        write_record(run_dir, rec)
    return [r["status"] for r in recs]


def write_failed(job: list[dict], run_dir: str, study: str, device: str, executor: str, error: str) -> list[str]:
    """Record every trial of ``job`` as ``failed`` with ``error`` (its worker died too often)."""
    for d in job:
        write_record(run_dir, make_record(parse_trial(d), study, None, device, executor, error=error))
    return ["failed"] * len(job)


#: Torch threads of a worker (a pool process, a Ray task, the inline executor). One, always:
#: a trial's metrics are then the same bits in any stack (bindscale.optim), whereas with more
#: threads oneDNN and MKL split some matrix products across threads differently for different
#: stack sizes (measured: quick study, width-256 MLPs in bf16, stacks of 6 vs 3 at two threads,
#: held-out R² apart by up to 2.6e-3), and a resumed run, or one with another --workers, would
#: not reproduce. Parallelism comes from workers, one per core.
THREADS_PER_WORKER = 1


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity (taskset, Slurm, cgroup cpusets), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def pending_trials(trials: list[TrialConfig], run_dir: "str | Path | RunStore") -> tuple[list[TrialConfig], dict[str, dict]]:
    """Trials still to run (no record, or a ``failed`` one) and the records already there."""
    ids = {t.trial_id for t in trials}
    have = load_records(run_dir, ids)
    todo = [t for t in trials if t.trial_id not in have or have[t.trial_id]["status"] == "failed"]
    return todo, have
