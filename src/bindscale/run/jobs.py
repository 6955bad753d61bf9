"""The job runner: train one stacked job with its study's trainer and write its trials' records.

Layer: job runner, below the executors (:mod:`bindscale.run.executors`, :mod:`bindscale.run.ray_executor`),
which call :func:`run_job` in whatever process trains the job, and above the study hooks
(:mod:`bindscale.core.registry`'s plugins) and records/storage. Each trial's record is written atomically
by whoever trained it; a re-run of the same command skips trials that have a record (failed ones are
retried). Which trials form a job is the planner's business (:mod:`bindscale.run.planner`).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from bindscale.core import registry
from bindscale.store.checkpoints import save_model
from bindscale.train.speed import THREADS_PER_WORKER, cpu_training  # noqa: F401 (THREADS_PER_WORKER: re-exported)
from bindscale.store.records import provenance, write_record


def parse_trial(d: dict) -> Any:
    """A trial config of its study (by ``kind``; absent = the study of trials without one) from a plain dict."""
    return registry.for_trial(d).trial_class.model_validate(d)


def run_group(trials: list, device: str, progress: Callable[[int], None] | None = None,
              return_models: bool = False) -> list:
    """Train and analyse one job's trials with their study's trainer (CPU settings: :mod:`bindscale.train.speed`).

    ``return_models``: each result also carries its trained model (``TrialResult.model``).

    Raises:
        NotImplementedError: models asked for from a study whose trainer cannot return them.
    """
    plugin = registry.for_trial(trials[0])
    with cpu_training(device):
        if not return_models:
            return plugin.run_group(trials, device, progress)
        if not getattr(plugin, "returns_models", lambda: False)():
            raise NotImplementedError(f"study {plugin.name}: its trainer cannot hand back trained models")
        return plugin.run_group(trials, device, progress, return_models=True)


def result_version_of(trial: Any) -> int:
    """The result version of the trial's study (1 for a study that declares none)."""
    return int(getattr(registry.for_trial(trial), "result_version", 1) or 1)


def make_record(trial: Any, study: str, result, device: str, executor: str, error: str | None = None) -> dict:
    """The record of one trial (see :mod:`bindscale.store.records`)."""
    return {
        "trial_id": trial.trial_id,
        "study": study,
        "status": "failed" if error else result.status,
        "diverged_step": None if error else result.diverged_step,
        "error": error,
        "config": trial.flat(),
        "trial_config": trial.model_dump(mode="json"),
        "metrics": {} if error else result.metrics,
        "provenance": provenance(device, executor, result_version_of(trial)),
    }


def run_job(
    job: list[dict], run_dir: str, study: str, device: str, executor: str,
    progress: Callable[[int], None] | None = None, save_models: bool = False,
) -> list[str]:
    """Train one stacked job and write its records. Exceptions in training become ``failed`` records.

    Args:
        job: trial configs as plain dicts (picklable across processes).
        run_dir: the run directory's path or URL (:class:`~bindscale.store.storage.RunStore`).
        save_models: also write each trained trial's model to ``models/<trial_id>.pt``
            (:mod:`bindscale.store.checkpoints`), before its record.

    Raises:
        StorageError: a record cannot be written (disk full, permission denied): that
            stops the sweep, since no later trial could be recorded either.

    Returns:
        The statuses written, one per trial.
    """
    trials = [parse_trial(d) for d in job]
    try:
        results = run_group(trials, device, progress, return_models=save_models)
        recs = [make_record(t, study, r, device, executor) for t, r in zip(trials, results)]
    except Exception as err:  # the sweep goes on; the error is kept in each trial's record
        msg = f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=5)}"
        recs = [make_record(t, study, None, device, executor, error=msg) for t in trials]
        results = [None] * len(trials)
    for trial, result, rec in zip(trials, results, recs):
        # The model first: a trial with a record (which a resumed run skips) has its model file.
        if save_models and result is not None and result.model is not None:
            save_model(run_dir, trial, registry.for_trial(trial).name, result.model, result.model_kwargs)
        write_record(run_dir, rec)
    return [r["status"] for r in recs]


def write_failed(job: list[dict], run_dir: str, study: str, device: str, executor: str, error: str) -> list[str]:
    """Record every trial of ``job`` as ``failed`` with ``error`` (its worker died too often)."""
    for d in job:
        write_record(run_dir, make_record(parse_trial(d), study, None, device, executor, error=error))
    return ["failed"] * len(job)

