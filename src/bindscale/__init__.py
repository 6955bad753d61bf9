"""bindscale: can scale alone produce compositional generalization, or do networks
need explicit binding mechanisms? Controlled, reproducible studies of the published claims.

The Python API (:mod:`bindscale.api`) is available from here: ``bindscale.run_trial(...)``,
``from bindscale import load_results``. It is imported on first use, so ``import bindscale``
stays light (no torch until a function needs it).
"""

from bindscale.core._version import __version__

# OpenMP's wait policy is left at the runtime's default (waiters spin briefly, then sleep): sleeping
# waiters halved a two-thread step on a quiet machine, and a busy machine is handled where threads are
# chosen (bindscale.train.speed.training_settings: choose_threads and ThreadWatch); see bindscale.train.speed.

#: The Python API (see :mod:`bindscale.api`).
_API = ("resolve_study", "run_study", "run_trial", "load_results", "load_model", "build_tasks", "task_family",
        "build_model", "collect_activations")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from bindscale import api

        return getattr(api, name)
    raise AttributeError(f"module 'bindscale' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
