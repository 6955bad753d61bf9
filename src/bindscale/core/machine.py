"""What machine a number was measured on: CPU model, cores, memory, OS, Python and torch versions.

Torch-free (torch's version is read from its installed metadata), so the CLI's `publish` and the
benchmarks (``benchmarks/common.py``) describe a machine the same way without importing torch.
"""

from __future__ import annotations

import os
import platform
from typing import Any


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``'s "model name", else :func:`platform.processor`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def describe() -> dict[str, Any]:
    """The machine's facts a reader needs to weigh wall times: CPU, cores, memory, OS, Python, torch."""
    info: dict[str, Any] = {"cpu": cpu_model(), "cores": os.cpu_count(), "os": platform.platform(),
                            "python": platform.python_version()}
    try:
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    try:
        from importlib.metadata import version

        info["torch"] = version("torch")
    except Exception:  # noqa: BLE001 - torch missing: the field is left out
        pass
    return info
