"""bindscale: can scaling alone produce compositional generalization, or do networks
need explicit binding mechanisms? Controlled, reproducible studies of the published claims.

The Python API (:mod:`bindscale.api`) is available from here: ``bindscale.run_trial(...)``,
``from bindscale import load_results``. It is imported on first use, so ``import bindscale``
stays light (no torch until a function needs it).
"""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# OpenMP threads that spin while waiting for a descheduled peer make torch with two intra-op
# threads 40-100x slower on a busy machine (bindscale.cpu); sleeping waiters cost microseconds.
# Set before torch loads its OpenMP runtime (read once, at load); a user's own setting wins.
if "torch" not in _sys.modules:
    _os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: The Python API (see :mod:`bindscale.api`).
_API = ("resolve_study", "run_study", "run_trial", "load_results", "load_model", "build_tasks", "task_family",
        "build_model", "collect_activations")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'bindscale' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
