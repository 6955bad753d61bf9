"""Shared helpers of the benchmarks: machine description and a matmul peak measured in the same run."""

from __future__ import annotations

import os
import time

import torch


def machine() -> dict:
    """What the figures were measured on (:func:`bindscale.core.machine.describe`, with the torch build's own
    version string and the GPU where there is one)."""
    from bindscale.core.machine import describe

    info = {**describe(), "torch": torch.__version__}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_peak(threads: int, n: int = 2048, dtype=torch.float32, device: str = "cpu", seconds: float = 2.0) -> float:
    """Sustained GFLOP/s of one large ``torch.matmul`` (2·n³ FLOPs per call) with ``threads`` threads."""
    torch.set_num_threads(threads)
    a = torch.randn(n, n, dtype=dtype, device=device)
    b = torch.randn(n, n, dtype=dtype, device=device)
    for _ in range(3):
        a @ b
    sync(device)
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        calls += 1
    sync(device)
    return 2 * n**3 * calls / (time.perf_counter() - t0) / 1e9


def print_table(title: str, header: list[str], rows: list[list]) -> None:
    """A plain fixed-width table on stdout."""
    cells = [header] + [[f"{c:.3g}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for j, r in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
        if j == 0:
            print("  ".join("-" * w for w in widths))


def lscpu() -> dict:
    """CPU model, core counts, caches and the AVX/AMX flags (lscpu); empty where lscpu is missing.

    The flags say which vector units PyTorch's CPU kernels can use (AVX-512, AMX tiles): a figure
    measured on one CPU says little about another without them.
    """
    import subprocess

    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    keep = ("Model name", "CPU(s)", "Thread(s) per core", "L2 cache", "L3 cache", "Flags")
    info = {}
    for line in out.splitlines():
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k in keep:
            info[k] = " ".join(f for f in v.split() if f.startswith(("avx", "amx"))) if k == "Flags" else v
    return info


def load() -> list[float]:
    """The 1-, 5- and 15-minute load averages (os.getloadavg), rounded to 0.01."""
    return [round(x, 2) for x in os.getloadavg()]


class WindowDone(Exception):
    """Raised from a training loop's ``on_step`` callback by :class:`StepWindow` once its window has elapsed."""


class StepWindow:
    """Times a training loop's steps over a wall-clock window, from inside the loop's per-step callback.

    bindscale's trainers run their loop themselves and call ``on_step`` once per finished step; this
    object is that callback. The first ``warmup_s`` seconds (and at least ``min_warmup`` steps) after
    the first call are left out (allocator growth, first-touch page faults, lazy kernel set-up); then
    the steps finished in the next ``seconds`` of wall time are counted, with the process's CPU time
    (``time.process_time``: every thread of this process) over the same span, and :class:`WindowDone`
    is raised to end the loop. Give the loop more steps than the window can reach.

    Attributes after the window: ``steps`` (whole steps in the window), ``wall`` (seconds from the end
    of the last warm-up step to the end of the last timed one), ``cpu`` (process CPU-seconds over that
    span), ``done`` (True once the window was filled).
    """

    def __init__(self, seconds: float, warmup_s: float, min_warmup: int = 3):
        self.seconds, self.warmup_s, self.min_warmup = seconds, warmup_s, min_warmup
        self.n = 0
        self.first = self.t0 = self.c0 = None
        self.steps, self.wall, self.cpu, self.done = 0, 0.0, 0.0, False

    def __call__(self, *_args) -> None:
        now = time.perf_counter()
        self.n += 1
        if self.first is None:
            self.first = now
        if self.t0 is None:
            if self.n >= self.min_warmup and now - self.first >= self.warmup_s:
                self.t0, self.c0, self.n0 = now, time.process_time(), self.n
            return
        if now - self.t0 >= self.seconds:
            self.steps, self.wall, self.cpu = self.n - self.n0, now - self.t0, time.process_time() - self.c0
            self.done = True
            raise WindowDone

    def rate(self) -> float:
        """Steps per wall-clock second in the window.

        Raises:
            RuntimeError: the loop ended before the window was filled.
        """
        if not self.done:
            raise RuntimeError("the training loop ended before the timing window was filled: give it more steps")
        return self.steps / self.wall
