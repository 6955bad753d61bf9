"""What every study's trainer shares: the result a trainer hands back per trial (:class:`TrialResult`),
whether a device has bf16 matrix units (:func:`fast_bf16`), and the measured choice between one and
several intra-op threads for a training step (:func:`choose_threads`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

#: A stack trains on the caller's intra-op threads only where they make its step at least this much
#: faster (steps/s) than one thread, measured on this machine (:func:`choose_threads`). Measured before
#: (benchmarks/jax_peer.py, fp32): on the 2-core Xeon at load 6-7 a second thread made every shape
#: slower, from 64 × 2 (152 → 69 steps/s) to 1024 × 2 (6.2 → 4.8), since a busy machine deschedules
#: the thread each parallel region waits for; on a quiet one the 256 × 4 MLP at one thread made 0.66×
#: JAX's two-thread speed. No fixed FLOP threshold gets both right, so it is timed. Measured again
#: (benchmarks/lone_trial_threads.py, 4 December, README): one MLP trial alone at width 64/256/1024 ×
#: 2, quiet, two threads 1.05/1.55/1.87× one; with the other core busy 0.04/0.10/0.37×; the timed rule
#: chose one thread in every busy case and two at 256 and 1024 when quiet.
THREADS_GAIN = 0.10
#: Seconds the choice may spend timing one stack shape (once per shape and process; at least three
#: steps at each count, however long a step).
THREADS_TIMING_BUDGET = 1.5
#: Measurements :func:`choose_threads` makes before it settles on one thread.
THREADS_ATTEMPTS = 2
#: Fewest steps in one timed window of :func:`choose_threads`.
MIN_WINDOW = 3


@dataclass
class TrialResult:
    """What training and analysis produced for one trial (becomes part of its record).

    ``model`` (the trained single-trial ``nn.Module``, in eval mode) and ``model_kwargs``
    (what its study's model builder needs beyond the trial config to rebuild it) are set
    only when a trainer is asked for its models (``return_models=True``); they are not
    part of the record.
    """

    status: str = "ok"
    diverged_step: int | None = None
    metrics: dict = field(default_factory=dict)
    model: Any = field(default=None, repr=False, compare=False)
    model_kwargs: dict = field(default_factory=dict, repr=False, compare=False)


def fast_bf16(device: torch.device) -> bool:
    """Whether ``device`` has bf16 matrix units: AMX-BF16 on an x86 CPU, or a bf16-capable CUDA GPU."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        with open("/proc/cpuinfo") as f:
            return "amx_bf16" in f.read()
    except OSError:
        return False


def choose_threads(timer: Callable[[int, int], float], threads: int, budget: float = THREADS_TIMING_BUDGET,
                   gain: float = THREADS_GAIN, rounds: int = 3, attempts: int = THREADS_ATTEMPTS) -> int:
    """``threads`` if every timed window with them is more than ``gain`` faster (steps/s) than every
    window with one thread, in one of ``attempts`` measurements; else 1.

    ``timer(n, k)`` runs ``k`` steps with ``n`` threads and returns their seconds. Two single steps at
    each count (the first warms up: allocations, the thread pool's start; the second sizes the
    windows), then up to ``rounds`` rounds of one window of ``k`` steps per count, back to back,
    alternating which goes first; ``k`` and the rounds fit what is left of ``budget`` (at least one
    round of :data:`MIN_WINDOW` steps, however long a step).

    Why every window against every window, not round by round: other work on the machine slows some
    windows. Where it takes turns with the measurement, the slowest N-thread window overlaps the fastest
    one-thread window and no gain is trusted (measured at load ~4 on the 2-core Xeon, 64 × 2 in a stack
    of 4: one-thread windows of 7.1, 9.4 and 14.0 ms per step beside two-thread ones of 6.1-7.5 ms, which
    passed a round-by-round 10% rule, and two threads then collapsed in training): one thread, the safe
    choice on a busy machine, where a descheduled thread stalls every parallel region. A machine whose
    speed merely wanders (a virtual machine's neighbours: one-thread windows of 1024 × 2 from 122 to
    195 ms at load ~1.4, two-thread ones 66-88 ms) keeps its clear gain; a rule on each count's spread
    (max / min ≤ 1.25) turned such gains down. A disturbed first measurement is followed by another.
    """
    if threads <= 1:
        return 1
    counts = (1, threads)
    spent = sum(timer(n, 1) for n in counts)  # warm-up
    pair = max(sum(timer(n, 1) for n in counts), 1e-6)  # one step at each count
    left = budget - spent - pair
    rounds = max(1, min(rounds, int(left / pair)))
    # At least MIN_WINDOW steps a window, over budget if need be: single steps of a slow shape (1024 x 2,
    # ~0.15 s) vary too much on a quiet machine for a 2-thread gain to be measured.
    k = max(MIN_WINDOW, min(50, int(left / (rounds * pair))))
    for _ in range(attempts):
        windows: dict[int, list[float]] = {n: [] for n in counts}
        for r in range(rounds):
            for n in (counts if r % 2 == 0 else counts[::-1]):
                windows[n].append(max(timer(n, k), 1e-12))
        if min(windows[1]) > (1 + gain) * max(windows[threads]):
            return threads
    return 1
