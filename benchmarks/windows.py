"""Warm-up and a wall-clock timing window around any training-step function (no imports beyond the standard
library, so the reference code's own environment can run it as well as bindscale's and the JAX peer's)."""

from __future__ import annotations

import time
from collections.abc import Callable


def warm_and_time(run: Callable[[int], None], warm_steps: int, warm_s: float, window_s: float) -> dict:
    """Warm ``run`` up, then time it over a wall-clock window.

    ``run(n)`` trains ``n`` steps and blocks until they are done. Warm-up: ten steps first (they compile on
    a shape's first call; not counted in the per-step estimate), then chunks of ten until ``warm_steps``
    steps or ``warm_s`` seconds. The window: chunks of ~0.1 s (few blocking points, so an asynchronous
    runtime is not starved of work) until ``window_s`` seconds of wall clock have passed.

    Returns:
        ``steps``, ``wall_s``, ``cpu_s`` (this process), ``steps_per_s``, ``steps_per_cpu_s`` (None when no
        CPU time was measured), ``cpu_share`` (CPU-s per wall-s), ``warm_steps`` and ``warm_s``.
    """
    t0 = time.perf_counter()
    run(10)
    warm, t1 = 10, time.perf_counter()
    while warm < warm_steps and time.perf_counter() - t1 < warm_s:
        run(10)
        warm += 10
    warmed = time.perf_counter() - t0
    per_step = (time.perf_counter() - t1) / (warm - 10) if warm > 10 else warmed / warm  # compilation left out
    chunk = max(1, int(0.1 / max(1e-5, per_step)))
    steps, w0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - w0 < window_s:
        run(chunk)
        steps += chunk
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"steps": steps, "wall_s": wall, "cpu_s": cpu, "steps_per_s": steps / wall,
            "steps_per_cpu_s": steps / cpu if cpu > 0 else None, "cpu_share": cpu / wall,
            "warm_steps": warm, "warm_s": warmed}
