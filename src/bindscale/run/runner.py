"""Run a study end to end: validate → plan → train (resumably) → records → table → report.

Layer: the runner, under the CLI and the API. It calls the planner (:mod:`bindscale.run.planner`), the
executors (:mod:`bindscale.run.executors`), the report and, for ``run all``, the answer page
(:mod:`bindscale.report.answer`); none of them imports it back. The run directory's study file is
:mod:`bindscale.store.rundir`'s (re-exported here: ``bindscale.run.runner.STUDY_FILE``, ``load_run_study``).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from bindscale.core import registry
from bindscale.report.answer import build_answer
from bindscale.core.config import StudyConfig, TrialBase
from bindscale.core.studyfile import resolve_study
from bindscale.core.errors import ConfigError
from bindscale.store.lock import RunLock
from bindscale.run.options import RETRIES, available_cores, check_run
from bindscale.run.progress import TrainingProgress, console as progress_console
from bindscale.store.records import RECORD_DIR, load_records
from bindscale.verdicts.results_table import records_table, write_results
from bindscale.store.rundir import STUDY_FILE, load_run_study, prepare_run_dir
from bindscale.store.storage import RunStore, StorageError

# The planner and executors (torch) and the report (pandas, matplotlib) are imported inside the
# functions that need them, so that a refused option or study answers in well under a second (the
# CLI imports this module before it checks them).


def default_out(study: StudyConfig, quick: bool) -> Path:
    """``runs/NAME``, or ``runs/NAME-quick`` for a quick variant (``--quick`` or a file saying ``is_quick``)."""
    return Path("runs") / (study.name + ("-quick" if quick or study.is_quick else ""))


def run_study(
    study: StudyConfig, out: "str | Path", device: str = "auto", workers: int | None = None,
    console: Console | None = None, executor: str | None = None, retries: int = RETRIES,
    address: str | None = None,
) -> dict:
    """Run (or resume) ``study`` into ``out`` and build its report; returns the summary.

    Args:
        out: run directory, a local path or an fsspec URL (:mod:`bindscale.store.storage`).
        executor: ``inline``, ``process`` or ``ray``; default ``process`` with more
            than one worker, else ``inline``.
        retries: re-runs of a job whose worker died (then its trials are ``failed``).
        address: Ray cluster address (``--executor ray``); none starts a local instance.

    Raises:
        ConfigError: bad device / executor, unwritable ``out``, or a split that cannot
            be made — all detected before anything is written.
        RunLocked: another live driver holds ``out``.
        StorageError: records cannot be written during the run (finished trials are kept).
    """
    console = console or progress_console(stderr=True)
    store = check_run(out, executor, retries, address, workers)  # before torch is imported (resolve_device)
    from bindscale.run.planner import resolve_device  # torch

    try:
        dev = resolve_device(device)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    trials = study.trials()
    if dev != "cuda" and any(getattr(t.train, "precision", None) == "tf32" for t in trials):
        raise ConfigError("train.precision tf32 needs --device cuda; allowed on CPU: fp32, bf16, auto")
    study.plugin.check_trials(trials)  # e.g. a split that cannot be made: fail before anything is written
    if study.save_models and not getattr(study.plugin, "returns_models", lambda: False)():
        raise ConfigError(f"save_models: the {study.plugin.name} study's trainer cannot hand back trained models")
    cores = available_cores()
    if executor == "inline" and workers is not None and workers > 1:
        console.print(f"note: --workers {workers} ignored: the inline executor trains in this process, one job "
                      "at a time", highlight=False)
        workers = 1
    elif workers is not None and workers > cores and not (executor == "ray" and address):
        # (On a Ray cluster --workers counts the cluster's CPUs, not this machine's cores.)
        console.print(f"note: --workers {workers} > {cores} cores; using {cores} (more would oversubscribe the CPU)")
        workers = cores

    try:
        store.makedirs()
    except StorageError as err:
        raise ConfigError(f"--out {out}: {err}") from None
    with RunLock(store):
        return _run_locked(study, store, dev, workers, console, trials, executor, retries, address)


def _run_locked(study: StudyConfig, store: RunStore, dev: str, workers: int | None, console: Console,
                trials: list[TrialBase], executor: str | None, retries: int, address: str | None) -> dict:
    from bindscale.run.executors import execute, start_fork_server, study_imports  # torch
    from bindscale.run.planner import job_cost, pending_trials, plan_jobs  # torch

    note, n_removed = prepare_run_dir(store, study)
    if note:
        console.print(note, highlight=False)
    if n_removed:
        console.print(f"removed {n_removed} unfinished record write(s) left by an interrupted run")
    todo, have = pending_trials(trials, store)
    if executor == "ray" and address:
        n_workers = workers or len(todo) or 1  # the cluster's scheduler decides placement
    else:
        n_workers = workers or (1 if dev == "cuda" else min(available_cores(), max(1, len(todo))))
    if executor in (None, "process") and n_workers > 1 and len(todo) > 1:
        start_fork_server(study_imports(study.plugin))  # its imports overlap the planning below
    jobs = plan_jobs(todo, n_workers=n_workers, device=dev, measure=True)
    n_workers = max(1, min(n_workers, len(jobs)))
    executor = executor or ("process" if n_workers > 1 else "inline")
    if executor == "inline":
        n_workers = 1
    recorded = len(have) - sum(h['status'] == 'failed' for h in have.values())
    plan_line = (f"{len(todo)} to run in {len(jobs)} stacked job{'s' if len(jobs) != 1 else ''} on {n_workers} worker(s) ({executor}), device {dev}"
                 if jobs else "0 to run")
    console.print(f"[bold]{study.name}[/]: {len(trials)} trial{'' if len(trials) == 1 else 's'}, {recorded} already recorded, {plan_line} → {store}")
    t0 = time.perf_counter()
    if jobs:
        steps = [sum(study.plugin.steps(t) for t in j) for j in jobs]
        costs = [(s, job_cost(j) / s) for s, j in zip(steps, jobs)]  # for the ETA: a wide stack's step costs more
        with TrainingProgress(console, sum(steps), len(todo), job_costs=costs) as progress:
            payload = [[t.model_dump(mode="json") for t in job] for job in jobs]
            unfinished = [len(jobs)]

            def job_done(statuses: list[str]) -> None:
                progress.job_done(statuses)
                unfinished[0] -= 1
                if 0 < unfinished[0] < n_workers:  # a worker has nothing left to do: its core is free
                    _warm_report_imports()

            try:
                execute(payload, str(store), study.name, dev, executor=executor, workers=n_workers,
                        retries=retries, address=address, on_progress=progress.advance,
                        on_job_done=job_done,
                        on_note=lambda msg: console.print(f"note: {msg}", highlight=False),
                        save_models=study.save_models)
            except StorageError as err:
                raise StorageError(f"{err}; the sweep stopped, finished trials are kept: fix the storage "
                                   "and re-run the same command to resume") from None
    summary = build_outputs(store, study, trials)
    summary["wall_seconds"] = time.perf_counter() - t0
    store.write_text("timing.json", json.dumps(add_session_timing(store, summary["wall_seconds"], len(todo),
                                                                  len(have))) + "\n")
    return summary


def add_session_timing(store: RunStore, wall_seconds: float, trials_run: int, recorded_before: int) -> dict:
    """``timing.json``'s content after a session that trained ``trials_run`` trials in ``wall_seconds`` (training
    and report) with ``recorded_before`` trials already recorded: every finished session of the run directory
    (earlier ones from the file, when it holds them) and their sums, read by ``bindscale publish`` for the
    published wall times. ``wall_seconds`` is the sum over the sessions that finished; ``trials_timed`` counts the
    trials they trained, so a session cut off before it wrote the file (its trials recorded, its time not) shows
    as ``trials_timed`` below the run's trial count."""
    sessions: list[dict] = []
    if store.exists("timing.json"):
        try:
            old = json.loads(store.read_text("timing.json"))
            sessions = list(old.get("sessions") or [
                {k: old[k] for k in ("wall_seconds", "trials_run", "trials_recorded_before") if k in old}])
        except (ValueError, TypeError, AttributeError):
            sessions = []
    sessions.append({"wall_seconds": round(wall_seconds, 2), "trials_run": trials_run,
                     "trials_recorded_before": recorded_before})
    walls = [float(s.get("wall_seconds") or 0.0) for s in sessions]
    return {"wall_seconds": round(sum(walls), 2), "trials_run": trials_run, "trials_recorded_before": recorded_before,
            "trials_timed": sum(int(s.get("trials_run") or 0) for s in sessions), "sessions": sessions}


_report_warmer: threading.Thread | None = None


def _warm_report_imports() -> None:
    """Import the report's modules (matplotlib, SciPy's stats, pandas' parquet writer) in a background
    thread, once, while the last jobs train: 1.5-2.2 s that the report would otherwise spend after
    training, on the core a finished worker left free (2-core Xeon). The report's own imports then find
    them loaded (or wait for the thread's import to finish: Python's import locks)."""
    global _report_warmer
    if _report_warmer is not None:
        return

    def warm() -> None:
        try:
            import pyarrow.parquet  # noqa: F401

            from bindscale import report  # noqa: F401
            from bindscale.report import figures  # noqa: F401
            from bindscale.verdicts import engine as verdicts  # noqa: F401
        except Exception:  # noqa: BLE001 - only a warm-up: the report imports them itself and raises there
            pass

    _report_warmer = threading.Thread(target=warm, name="bindscale-warm-report", daemon=True)
    _report_warmer.start()


ALL = "all"


def run_all(out: "str | Path", quick: bool = False, console: Console | None = None,
            on_study_done: "Callable[[str, dict], None] | None" = None, **kwargs) -> dict:
    """Run (or resume) every built-in study into ``out/<study>`` and write ``out/answer.html`` and
    ``out/answer.json`` (:mod:`bindscale.report.answer`); returns ``{"studies": {name: summary}, "answer": data}``.

    Every study is resolved and checked before any trains; a study whose trials all have records
    is only re-reported. ``on_study_done(name, summary)`` is called as each study finishes (the CLI
    prints its verdicts then). The directory's own lock is held throughout. ``kwargs`` go to :func:`run_study` (device, workers, executor, ...).

    Raises:
        ConfigError: as :func:`run_study`, for any of the studies, before anything is written.
    """
    console = console or progress_console(stderr=True)
    if str(out).strip() == "":
        raise ConfigError("--out: empty path; give a directory for the runs")
    names = registry.run_order()  # headline first
    studies = {name: resolve_study(name, quick=quick) for name in names}
    # Every option a study's run would refuse, before the studies' checks import torch and before the
    # directory and its lock are made (a refused `run all` writes nothing).
    store = check_run(out, kwargs.get("executor"), kwargs.get("retries", RETRIES), kwargs.get("address"),
                      kwargs.get("workers"))
    from bindscale.run.planner import resolve_device  # torch

    try:
        resolve_device(kwargs.get("device", "auto"))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    for study in studies.values():
        study.plugin.check_trials(study.trials())
    summaries = {}
    try:
        store.makedirs()
    except StorageError as err:
        raise ConfigError(f"--out {out}: {err}") from None
    # The whole directory is held while the studies run (each study's own lock too): `bindscale report`
    # of it is refused before it rebuilds anything, also between two studies.
    with RunLock(store):
        for i, (name, study) in enumerate(studies.items(), 1):
            console.print(f"[bold]study {i} of {len(studies)}[/]: {name}", highlight=False)
            summaries[name] = run_study(study, store.where(name), console=console, **kwargs)
            if on_study_done is not None:  # the study's verdicts now, not after the last study
                on_study_done(name, summaries[name])
        answer = build_answer(out)
    return {"studies": summaries, "answer": answer}


def is_multi_run(run_dir: "str | Path") -> bool:
    """A directory written by ``bindscale run all``: no study of its own, studies in subdirectories."""
    store = RunStore.of(run_dir)
    return not store.exists(STUDY_FILE) and any(store.exists(f"{n}/{STUDY_FILE}") for n in registry.builtin())


def rebuild_all(run_dir: "str | Path") -> dict:
    """``bindscale report`` of a ``run all`` directory: every study's outputs, then the answer page.

    Raises:
        RunLocked: a live run holds the directory or any of its studies; raised before anything is rebuilt.

    Output: ``{"studies": {name: summary}, "answer": ..., "unrecorded": [names]}``; a study whose folder
    holds no record yet is left as it is and named in ``unrecorded``.
    """
    store = RunStore.of(run_dir)
    names = [n for n in registry.builtin() if store.exists(f"{n}/{STUDY_FILE}")]
    # Every lock first, the directory's and each study's, before any report is rebuilt: a live
    # `run all` (holding the directory, or only the study it is training) refuses this at once.
    with contextlib.ExitStack() as held:
        held.enter_context(RunLock(store))
        for name in names:
            held.enter_context(RunLock(store.where(name)))
        # A study the run reached but none of whose trials finished has nothing to report: rebuilding it
        # would write a report of gaps that reads as if its trials had failed.
        unrecorded = [n for n in names if not RunStore.of(store.where(n)).list(RECORD_DIR, ".json")]
        studies = {name: load_run_study(store.where(name)) for name in names if name not in unrecorded}
        summaries = {name: build_outputs(store.where(name), study, study.trials()) for name, study in studies.items()}
        return {"studies": summaries, "answer": build_answer(run_dir), "unrecorded": unrecorded}


def build_outputs(run_dir: "str | Path | RunStore", study: StudyConfig, trials: list[TrialBase]) -> dict:
    """``results.parquet``, ``report.html`` and ``summary.json`` from the records of the study's trials
    (``trials``: ``study.trials()``, which a run has made already)."""
    from bindscale.report import build_report  # pandas, matplotlib: only when a report is built
    from bindscale.verdicts.engine import MISSING

    ids = [t.trial_id for t in trials]
    recs = load_records(run_dir, set(ids))
    if not recs and (store := RunStore.of(run_dir)).list(RECORD_DIR, ".json"):
        n_other = len(store.list(RECORD_DIR, ".json"))
        raise ConfigError(f"none of the {n_other} records in {store.where(RECORD_DIR)} belongs to this study's "
                          f"{len(ids)} trials: they were written for other trial configurations (an earlier "
                          "bindscale, whose defaults or config fields differed); re-run the study to get its records")
    df = write_results(run_dir, [recs[i] for i in ids if i in recs], type(study.base))
    run_info = {"quick": study.is_quick, "n_planned": len(ids), "n_missing": len(ids) - len(recs),
                "steps": sorted({t.train.steps for t in trials})}
    # The plan reaches the verdicts' guards: a planned trial without a record is a row of status "missing".
    missing = [{"trial_id": t.trial_id, "status": MISSING, "config": t.flat()}
               for t in trials if t.trial_id not in recs]
    unrecorded = records_table(missing, type(study.base)) if missing else None
    return build_report(run_dir, df, study.model_dump(mode="json"), run_info=run_info, unrecorded=unrecorded)
