"""The thread rule and the thread watch of :mod:`bindscale.train.speed` (a loop reaches them through
:func:`bindscale.train.speed.training_settings`, never directly).

:func:`choose_threads` (below) decides once per process and stack shape
(:func:`bindscale.train.speed.measured_threads`), from a few timed windows before training. A
machine that turns busy afterwards makes every parallel region wait for a descheduled thread: measured on the 2-core Xeon (benchmarks/jax_peer.py, run d of stop 26), a
256 × 4 MLP chosen for two threads then trained at 29.2 steps/s against 31 on one; at load 6-7
a second thread made the 64 × 2 MLP 2.2× slower (152 → 69 steps/s). :class:`ThreadWatch` watches
the real training steps, so a wrong or outdated choice costs a few windows, not the rest of the run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

#: Seconds of training steps in one timed window (at least :data:`MIN_STEPS` steps).
WINDOW_SECONDS = 0.25
#: Fewest steps in one window.
MIN_STEPS = 3
#: A multi-thread window this many times slower per step than the fastest one so far is followed by a
#: window on one thread. A machine whose speed merely wanders moves by less than this: one-thread windows
#: of 1024 × 2 from 122 to 195 ms on the virtual Xeon at load ~1.4; two-thread runs of the 64 × 2 MLP at
#: 300-690 steps/s on the quiet 2-core EPYC (1.5 made it fall back there with nothing else running). A
#: descheduled waiter costs more: 4-5× with one busy process beside it (EPYC, OpenMP's default spin),
#: up to 80× at load ~5.5 (Xeon).
SLOWDOWN = 2.0
#: The one-thread window must be this much faster per step than the multi-thread window before it.
GAIN = 0.10


class ThreadWatch:
    """Times a stack's training steps on ``threads`` intra-op threads in windows of about
    :data:`WINDOW_SECONDS` and falls back to one thread where that is faster, on the real steps (no
    extra timing).

    The first step is not timed and the first window only sizes the windows (warm-up). Where a
    multi-thread window is more than ``slowdown`` times slower per step than the fastest multi-thread
    window so far, the next window runs on one thread (``set_threads(1)``). Where that window is faster
    per step than the multi-thread one before it by more than ``gain``, the stack stays on one thread
    for the rest of its training
    (:attr:`fell_back_at` holds the step); otherwise it goes back to ``threads``, and the slower speed
    becomes the reference (the whole machine slowed: one thread does not pay either), so the next
    one-thread window waits for another ``slowdown``.

    The one-thread window samples its data inline, as the multi-thread path does: it is compared on
    the same terms. A trial's numbers do not depend on the switch beyond float rounding (more threads
    may sum some products in another order).

    Args:
        threads: the intra-op threads the stack starts on (> 1).
        set_threads: sets the process's intra-op threads (``torch.set_num_threads``).
        clock: seconds (``time.perf_counter``).
        window, slowdown, gain: :data:`WINDOW_SECONDS`, :data:`SLOWDOWN`, :data:`GAIN`.

    Raises:
        ValueError: ``threads`` < 2.
    """

    def __init__(self, threads: int, set_threads: Callable[[int], None], clock: Callable[[], float] = time.perf_counter,
                 window: float = WINDOW_SECONDS, slowdown: float = SLOWDOWN, gain: float = GAIN):
        if threads < 2:
            raise ValueError(f"ThreadWatch needs more than one thread, got {threads}")
        self.threads, self.current = threads, threads
        self.fell_back_at: int | None = None
        self._set, self._clock = set_threads, clock
        self._window, self._slowdown, self._gain = window, slowdown, gain
        self._steps: int | None = None  # steps per window, sized by the first window
        self._best = math.inf  # fastest multi-thread window so far, seconds per step
        self._multi = math.inf  # the multi-thread window before a one-thread one
        self.restart()

    def restart(self) -> None:
        """Start a new window now (after an evaluation: its time is not a step's)."""
        self._t0, self._n = self._clock(), 0

    def step_done(self, step: int) -> None:
        """Call after each training step (``step`` counts from 1)."""
        if self.fell_back_at is not None:
            return
        if step == 1:  # untimed: the first step pays allocations and the thread team's start
            self.restart()
            return
        self._n += 1
        target = self._steps or MIN_STEPS
        # A collapse ends its window early: already slower than allowed, whatever its last steps would cost
        # (steps 100x slower would otherwise hold a window sized for fast steps 100x longer).
        if self._n < target and not (self.current > 1 and self._clock() - self._t0 > self._slowdown * self._best * target):
            return
        per = (self._clock() - self._t0) / self._n
        if self._steps is None:
            self._steps = max(MIN_STEPS, int(self._window / max(per, 1e-9)))
        elif self.current > 1:
            self._best = min(self._best, per)
            if per > self._slowdown * self._best:
                self._multi = per
                self._switch(1)
        elif per * (1 + self._gain) < self._multi:
            self.fell_back_at = step
            return
        else:
            self._best = self._multi
            self._switch(self.threads)
        self.restart()

    def _switch(self, n: int) -> None:
        self._set(n)
        self.current = n


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
