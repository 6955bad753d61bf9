"""Shared helpers of the benchmarks: machine description and a matmul peak measured in the same run."""

from __future__ import annotations

import os
import platform
import time

import torch


def machine() -> dict:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__, "python": platform.python_version()}
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
