"""The options of ``bindscale run`` that can be checked without torch: executor names, retries,
worker limits, ``--address`` and ``--out``. :func:`check_run_options` and :func:`check_out` are shared
by a run (:func:`bindscale.run.runner.run_study`) and a dry run (:mod:`bindscale.run.dryrun`), so both refuse the
same input with the same one line, in well under a second (nothing heavy is imported here).

Layer: the bottom of the orchestration layer: the runner, the dry run, the planner and the executors
import it; it imports only :mod:`bindscale.core.errors`, :mod:`bindscale.store.storage` and
:mod:`bindscale.store.published`."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from bindscale.core.errors import ConfigError
from bindscale.store.published import MANIFEST, published_root
from bindscale.store.storage import RunStore, StorageError

#: Files a run writes at the top of its directory beside its ``study.yaml``: found without it, they are not a run's.
RUN_OUTPUTS = ("summary.json", "report.html", "results.parquet", "timing.json")

EXECUTORS = ("inline", "process", "ray")
#: Re-runs of a job whose worker died, then its trials are recorded ``failed``.
RETRIES = 2
MAX_WORKERS = 1024

NO_RAY = ("--executor ray needs Ray: pip install 'bindscale[ray]' "
          "(with the project's constraints file: -c constraints.txt)")


def check_ray_installed() -> None:
    """Raise :class:`ConfigError` unless Ray can be imported (checked before a run writes anything)."""
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(NO_RAY)


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity (taskset, Slurm, cgroup cpusets), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def check_run_options(executor: str | None = None, retries: int = RETRIES, address: str | None = None,
                      workers: int | None = None, out: object = None) -> None:
    """Raise :class:`ConfigError` (one line) for an option a run would refuse; creates nothing.

    Args:
        out: the run directory as given (``None``: not checked; ``""`` is refused, since a path
            would read it as the current directory).
    """
    if executor is not None and executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor!r}: allowed: {', '.join(EXECUTORS)}")
    if retries < 0:
        raise ConfigError(f"--retries {retries}: must be 0 or more")
    if address and executor != "ray":
        raise ConfigError("--address is the Ray cluster's address: it needs --executor ray")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(f"--workers {workers}: allowed 1 to {MAX_WORKERS} (this machine has {available_cores()} "
                          "cores)")
    if out is not None and str(out).strip() == "":
        raise ConfigError("--out: empty path; give a directory for the run")


def check_out_dir(out: Path) -> None:
    """Raise :class:`ConfigError` unless ``out`` is (or can be created as) a writable directory. Creates nothing."""
    out = Path(out)
    root = published_root(out)
    if root is not None:
        raise ConfigError(f"--out {out}: {'is' if root == out else 'is inside'} a published folder ({root / MANIFEST} is "
                          "bindscale publish's): a run would overwrite what publish wrote; give a run directory")
    if out.exists():
        if not out.is_dir():
            raise ConfigError(f"--out {out}: exists and is not a directory")
        if not os.access(out, os.W_OK | os.X_OK):
            raise ConfigError(f"--out {out}: directory is not writable")
        found = [f for f in RUN_OUTPUTS if (out / f).exists()]
        if found and not (out / "study.yaml").exists():
            raise ConfigError(f"--out {out}: holds {', '.join(found)} but no run's study.yaml: not a run directory "
                              "bindscale wrote, and a run would overwrite them; give another directory")
        return
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {out}: cannot create it, {parent} is not a writable directory")


def check_out(out: object, executor: str | None = None):
    """The run directory ``out`` as a :class:`~bindscale.store.storage.RunStore`, or :class:`ConfigError` (one
    line) where a run could not write there: a path that is a file or unwritable, the filesystem root, a
    URL whose filesystem cannot be loaded, or ``memory://`` shared with worker processes. Creates nothing."""
    try:
        store = RunStore.of(out)
    except StorageError as err:
        raise ConfigError(f"--out {out}: {err}") from None
    if store.local is not None:
        if store.local.resolve().parent == store.local.resolve():  # a run writes records/, report.html, …
            raise ConfigError(f"--out {out}: the filesystem root; give a directory for the run")
        check_out_dir(store.local)
    elif store.location.startswith("memory://") and executor != "inline":
        raise ConfigError(f"--out {out}: a memory:// filesystem lives inside one process, so worker processes "
                          "cannot share it; use --executor inline (and nothing survives the run), or a path")
    return store


def check_run(out: object, executor: str | None = None, retries: int = RETRIES, address: str | None = None,
              workers: int | None = None):
    """Everything a run checks of its options before it builds any trial (:func:`check_run_options`,
    :func:`check_out`, Ray installed for ``--executor ray``), shared by the run and its ``--dry-run``.
    Returns the run directory's :class:`~bindscale.store.storage.RunStore`; raises :class:`ConfigError`."""
    check_run_options(executor, retries, address, workers, out)
    store = check_out(out, executor)  # before torch is imported: a bad --out answers at once
    if executor == "ray":
        check_ray_installed()  # Ray itself is not imported here
    return store

