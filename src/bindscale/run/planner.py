"""The planner: trials → stacked jobs, largest first, balanced over the workers; and what is left to run.

A *job* is a list of trials sharing one :func:`job_group_key` (their study's
``group_key``), trained as one stacked model by :func:`bindscale.run.jobs.run_job`,
which every executor (:mod:`bindscale.run.executors`: inline, process pool, Ray) calls.
:func:`pending_trials` resumes: trials with a record are skipped (failed ones are retried).

Layer: planner, below the runner (:mod:`bindscale.run.runner`) and the dry run
(:mod:`bindscale.run.dryrun`), above the study hooks (:mod:`bindscale.core.registry`'s plugins)
and records/storage; it imports no executor and no job runner.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

from bindscale.core import registry
from bindscale.run.options import available_cores  # noqa: F401  (re-exported: bindscale.run.planner.available_cores)
from bindscale.store.records import load_records
from bindscale.store.storage import RunStore

#: Largest number of trials in one stack; free memory lowers it (:func:`max_stack`).
MAX_STACK = 32

def job_group_key(trial: Any) -> tuple:
    """Trials with equal keys train together in one job (their study decides: e.g. stacked shapes)."""
    return (trial.family, *registry.for_trial(trial).group_key(trial))


def job_cost(job: list) -> float:
    """Relative cost of a job, as its study estimates it (orders and cuts jobs, weighs the ETA)."""
    return registry.for_trial(job[0]).job_cost(job)


def trial_memory_bytes(trial: Any) -> int:
    """Upper estimate of one trial's memory inside a job, in bytes (its study's estimate; a transformer study's
    from the trial's shapes, :func:`bindscale.models.memory.transformer_memory_bytes`)."""
    return registry.for_trial(trial).trial_memory_bytes(trial)


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


#: Share of a GPU's free memory the planner leaves unplanned. The trials' estimates (the transformer studies':
#: bindscale.models.memory) are within -3% to +7% of the peaks measured on an H200 (allocated bytes, one trial
#: alone); the margin covers what they leave out: the caching allocator's fragmentation (reserved beyond allocated),
#: a worker's own CUDA context and evaluation after training.
GPU_MEMORY_MARGIN = 0.25


def memory_budget(device: str = "cpu", n_workers: int = 1, memory: int | None = None) -> int:
    """Bytes one worker's stack may take on ``device``: on a GPU, its free memory (``memory`` when given, e.g. an
    assumed GPU's) less :data:`GPU_MEMORY_MARGIN`; on the CPU, half the available memory. Shared by ``n_workers``."""
    free = available_memory_bytes(device) if memory is None else memory
    usable = int(free * (1 - GPU_MEMORY_MARGIN)) if device == "cuda" else free // 2
    return usable // max(1, n_workers)


def max_stack(trial: Any, n_workers: int, device: str = "cpu", cap: int = MAX_STACK,
              memory: int | None = None) -> int:
    """Largest stack of ``trial``-shaped trials whose estimates (:func:`trial_memory_bytes`) add up to at most a
    worker's :func:`memory_budget`; 1 where one trial alone exceeds it (it is planned alone and may not fit:
    :func:`oversized_trials`)."""
    return max(1, min(cap, memory_budget(device, n_workers, memory) // trial_memory_bytes(trial)))


def oversized_trials(jobs: list[list[Any]], device: str = "cpu", n_workers: int = 1,
                     memory: int | None = None) -> list[tuple[Any, int]]:
    """The trials of ``jobs`` whose own estimate exceeds a worker's :func:`memory_budget`, each with its estimate
    in bytes, in the jobs' order. The planner leaves each alone (:func:`max_stack`); it may still not fit."""
    budget = memory_budget(device, n_workers, memory)
    needs = ((t, trial_memory_bytes(t)) for job in jobs for t in job)
    return [(t, need) for t, need in needs if need > budget]


#: A stack stops growing (doubling) when a trial's share of a measured step rises by more than this
#: fraction over the best smaller stack's; flat costs keep it growing (a bigger stack also shares its
#: job's evaluation, probes and start-up, which the step timer leaves out).
STACK_SLACK = 0.05
#: Seconds of one trial's step (one thread) from which no stack is tried. A stack shares a step's fixed
#: costs (Python, kernel launches: ~1 ms, the MLP 64 x 2 step's 2.0 ms beside its 1.1 ms of matmuls on
#: the 2-core Xeon), under STACK_SLACK of such a step, while its larger tensors can cost more than that:
#: measured there (benchmarks/jax_peer.py), 1024 x 2 in stacks of 2-4 at 0.83-0.97x a trial alone, which
#: step timings on a machine whose speed wanders by 20% could not tell from flat (the planner chose 2).
UNSTACKED_STEP = 0.02
_measured_caps: dict[tuple, int] = {}


def measured_stack_cap(group: list[Any], cap: int) -> int:
    """The stack size, up to ``cap``, past which a trial's share of a step stops falling on this machine.

    Stacking pays by sharing a step's fixed costs (Python, kernel launches) among trials; once a
    stack's tensors outgrow the caches, a trial can cost more in a stack than alone (measured:
    MLP 256 × 4, one thread, per-trial steps/s 0.90× alone in a stack of 4 on the 2-core Xeon; an
    AMD EPYC: 0.90× at 256 × 4, 0.94× at 1024 × 2). So stacks of 1, 2, 4, … of the group's
    shape are timed with the study's step timer (:meth:`bindscale.core.study.StudyPlugin.stack_step_seconds`)
    until the per-trial time rises by more than :data:`STACK_SLACK`; none where one trial's step takes
    :data:`UNSTACKED_STEP` or more. Once per shape and process; ``cap``
    when the study has no timer. Results never depend on it (a trial's numbers are the same in any stack).
    """
    plugin = registry.for_trial(group[0])
    if not _has_step_timer(plugin) or len(group) < 2 or cap < 2:
        return cap
    key = (job_group_key(group[0]), min(cap, len(group)))
    if key not in _measured_caps:
        best_n, best = 1, plugin.stack_step_seconds(group[:1])
        shares = _measured_shares.setdefault(key[0], {})
        shares[1] = best
        n = 2 if best < UNSTACKED_STEP else key[1] + 1  # a long step: nothing left to share
        while n <= key[1]:
            per_trial = shares[n] = plugin.stack_step_seconds(group[:n]) / n
            if per_trial > best * (1 + STACK_SLACK):
                break
            best_n, best = n, min(best, per_trial)
            n = min(2 * n, key[1]) if n < key[1] else n + 1
        _measured_caps[key] = best_n
    return _measured_caps[key]


def _has_step_timer(plugin: Any) -> bool:
    """Whether the study times stacks: a timer given to its plugin or found by convention
    (``plan.stack_step_seconds``; the attribute alone is None for a hook found by convention)."""
    hook = getattr(plugin, "hook", None)
    return (hook("step_timer") if callable(hook) else getattr(plugin, "step_timer", None)) is not None


#: Measured seconds of a trial's share of one step, by stack size, per shape (:func:`measured_stack_cap`).
_measured_shares: dict[tuple, dict[int, float]] = {}


def _measured_cost(job: list[Any]) -> float:
    """:func:`job_cost` scaled by the measured share of a step of a stack of this size against a trial alone.

    So a halved stack is costed with the sharing it keeps, not the sharing of the stack it came from.
    Between measured sizes the share is interpolated linearly in 1 / size (exact where a step is a fixed
    cost shared by the stack plus a cost per trial); beyond the largest, that one's share.
    :func:`job_cost` itself where the shape was not measured.
    """
    shares = _measured_shares.get(job_group_key(job[0]))
    if not shares or 1 not in shares:
        return job_cost(job)
    n = len(job)
    lo, hi = max(k for k in shares if k <= n), min((k for k in shares if k >= n), default=None)
    if hi is None or hi == lo:
        share = shares[lo]
    else:
        w = (1 / lo - 1 / n) / (1 / lo - 1 / hi)
        share = (1 - w) * shares[lo] + w * shares[hi]
    return job_cost(job) * share / shares[1]


def plan_jobs(trials: list[Any], max_stack_size: int = MAX_STACK, n_workers: int = 1,
              device: str = "cpu", memory: int | None = None, measure: bool = False) -> list[list[Any]]:
    """Group trials by shape into stacks, largest jobs first.

    A stack holds at most ``max_stack_size`` trials and what fits in memory
    (:func:`max_stack`) and, with ``measure`` on the CPU, no more than pays on this
    machine (:func:`measured_stack_cap`); larger groups are cut into near-equal stacks.
    The largest jobs are cut further until every worker has one and no job is longer
    than an equal share of the total.
    """
    groups: dict[tuple, list[Any]] = defaultdict(list)
    for t in sorted(trials, key=lambda t: t.trial_id):
        groups[job_group_key(t)].append(t)
    jobs = []
    for g in groups.values():
        cap = max_stack(g[0], n_workers, device, max_stack_size, memory)
        if measure and device == "cpu":
            cap = measured_stack_cap(g, cap)
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
    return _balance(sorted(jobs, key=_measured_cost, reverse=True), n_workers)


def schedule(seconds: list[float], workers: int) -> float:
    """Wall seconds of jobs taken in this order by the first free of ``workers`` workers.

    The executors hand jobs out in the planned order (largest first) as workers free up: Graham's list
    scheduling (Graham 1969, "Bounds on multiprocessing timing anomalies"), simulated; the planner
    balances its jobs with it (:func:`plan_jobs`); the dry run estimates a sweep's time with it
    (:func:`bindscale.run.dryrun.describe_plan`).
    """
    free = [0.0] * max(1, workers)
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


#: A job is halved to balance the workers (:func:`_balance`) only where that shortens the sweep's
#: estimated wall time by more than this fraction: halving a stack gives up some of its sharing.
BALANCE_GAIN = 0.05


def _balance(jobs: list[list[Any]], n_workers: int) -> list[list[Any]]:
    """Halve jobs while that shortens the sweep's wall time (:func:`schedule`) by more
    than :data:`BALANCE_GAIN`, each time the job whose halving shortens it most (the largest on a tie).

    Equal shares alone can leave a worker idle: jobs of 6, 6.2 and 6.2 units on two workers end at
    12.2, where halving the 6 ends at 9.2 (the quick JAX peer sweep's plan: widths 128 × 6 and
    256 × 3 × 2; benchmarks/jax_peer.py). A halved stack shares less of each step: where the planner
    measured stacks of the shape, a job's cost is scaled by the measured share (:func:`_measured_cost`).
    ``jobs`` sorted by that cost, largest first; so is the result (the order in which they are handed out).
    """
    if n_workers < 2:
        return jobs
    while True:
        best, now = jobs, schedule([_measured_cost(j) for j in jobs], n_workers)
        bar = now * (1 - BALANCE_GAIN)
        for i, big in enumerate(jobs):
            if len(big) < 2:
                continue
            cand = sorted(jobs[:i] + jobs[i + 1:] + [big[0::2], big[1::2]], key=_measured_cost, reverse=True)
            if (span := schedule([_measured_cost(j) for j in cand], n_workers)) < bar:
                best, bar = cand, span
        if best is jobs:
            return jobs
        jobs = best


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


def pending_trials(trials: list[Any], run_dir: "str | Path | RunStore") -> tuple[list[Any], dict[str, dict]]:
    """Trials still to run (no record, or a ``failed`` one) and the records already there."""
    ids = {t.trial_id for t in trials}
    have = load_records(run_dir, ids)
    todo = [t for t in trials if t.trial_id not in have or have[t.trial_id]["status"] == "failed"]
    return todo, have
