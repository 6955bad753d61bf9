"""Run a study end to end: validate → plan → train (resumably) → records → table → report."""

from __future__ import annotations

import os
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from . import seeding
from .config import StudyConfig, TrialConfig, validate
from .errors import BindscaleError, ConfigError
from .lock import RunLock
from .records import atomic_write_text, load_records, write_results
from .sweep import execute, pending_trials, plan_jobs, resolve_device
from .tasks.splits import make_split

STUDY_FILE = "study.yaml"
MAX_WORKERS = 1024


def check_out_dir(out: Path) -> None:
    """Raise :class:`ConfigError` unless ``out`` is (or can be created as) a writable directory. Creates nothing."""
    if str(out).strip() == "":
        raise ConfigError("--out: empty path; give a directory for the run")
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise ConfigError(f"--out {out}: exists and is not a directory")
        if not os.access(out, os.W_OK | os.X_OK):
            raise ConfigError(f"--out {out}: directory is not writable")
        return
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {out}: cannot create it, {parent} is not a writable directory")


def check_splits(trials: list[TrialConfig]) -> None:
    """Build every trial's split before anything is written, so an impossible split fails early.

    Raises:
        ConfigError: naming the trial's M, K, split and holdout.
    """
    seen = set()
    for t in trials:
        key = (t.task.M, t.task.K, t.task.split, t.task.holdout, t.seed)
        if key in seen:
            continue
        seen.add(key)
        try:
            make_split(t.task.M, t.task.K, t.task.split, t.task.holdout, seeding.rng(t.seed, "split"))
        except BindscaleError as err:
            raise ConfigError(f"split cannot be made (seed {t.seed}): {err}") from None


def default_out(study: StudyConfig, quick: bool) -> Path:
    return Path("runs") / (study.name + ("-quick" if quick else ""))


def run_study(
    study: StudyConfig, out: Path, device: str = "auto", workers: int | None = None,
    console: Console | None = None,
) -> dict:
    """Run (or resume) ``study`` into ``out`` and build its report; returns the summary.

    Raises:
        ConfigError: bad device, unwritable ``out``, or a split that cannot be made —
            all detected before anything is written.
    """
    console = console or Console(stderr=True)
    try:
        dev = resolve_device(device)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    trials = study.trials()
    if dev != "cuda" and any(t.train.precision == "tf32" for t in trials):
        raise ConfigError("train.precision tf32 needs --device cuda; allowed on CPU: fp32, bf16, auto")
    check_splits(trials)
    check_out_dir(out)
    cores = os.cpu_count() or 1
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(f"--workers {workers}: allowed 1 to {MAX_WORKERS} (this machine has {cores} cores)")
    if workers is not None and workers > cores:
        console.print(f"note: --workers {workers} > {cores} cores; using {cores} (more would oversubscribe the CPU)")
        workers = cores

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"--out {out}: cannot create it ({err.strerror})") from None
    with RunLock(out):
        return _run_locked(study, out, dev, workers, console, trials)


def _run_locked(study: StudyConfig, out: Path, dev: str, workers: int | None, console: Console,
                trials: list[TrialConfig]) -> dict:
    atomic_write_text(out / STUDY_FILE, yaml.safe_dump(study.model_dump(mode="json"), sort_keys=False))
    todo, have = pending_trials(trials, out)
    n_workers = workers or (1 if dev == "cuda" else min(os.cpu_count() or 1, max(1, len(todo))))
    jobs = plan_jobs(todo, n_workers=n_workers, device=dev)
    n_workers = max(1, min(n_workers, len(jobs)))
    console.print(
        f"[bold]{study.name}[/]: {len(trials)} trials, {len(have) - sum(h['status'] == 'failed' for h in have.values())} "
        f"already recorded, {len(todo)} to run in {len(jobs)} stacked jobs on {n_workers} worker(s), device {dev} → {out}"
    )
    t0 = time.perf_counter()
    if jobs:
        total = sum(len(j) * j[0].train.steps for j in jobs)
        columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("trial-steps"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        with Progress(*columns, console=console, transient=False) as bar:
            task = bar.add_task("training", total=total)
            done = {"trials": 0}

            def job_done(statuses):
                done["trials"] += len(statuses)
                bad = sum(s != "ok" for s in statuses)
                bar.update(task, description=f"training ({done['trials']}/{len(todo)} trials"
                                             + (f", {bad} not ok" if bad else "") + ")")

            execute(jobs, out, study.name, dev, n_workers, lambda n: bar.advance(task, n), job_done)
    summary = build_outputs(out, study)
    summary["wall_seconds"] = time.perf_counter() - t0
    return summary


def load_run_study(run_dir: Path) -> StudyConfig:
    """The resolved study a run directory was made with.

    Raises:
        ConfigError: not a run directory.
    """
    path = Path(run_dir) / STUDY_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a bindscale run directory (no {STUDY_FILE})")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as err:
        raise ConfigError(f"{path} cannot be read as YAML ({type(err).__name__}); it was written by bindscale run, "
                          "re-run that command to rewrite it") from None
    return validate(StudyConfig, data, where=str(path))


def build_outputs(run_dir: Path, study: StudyConfig) -> dict:
    """``results.parquet``, ``report.html`` and ``summary.json`` from the records of the study's trials."""
    from .report import build_report

    trials = study.trials()
    ids = [t.trial_id for t in trials]
    recs = load_records(run_dir, set(ids))
    df = write_results(run_dir, [recs[i] for i in ids if i in recs])
    run_info = {"quick": study.is_quick, "n_planned": len(ids), "n_missing": len(ids) - len(recs),
                "steps": sorted({t.train.steps for t in trials})}
    return build_report(Path(run_dir), df, study.model_dump(mode="json"), run_info=run_info)
