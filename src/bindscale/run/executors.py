"""Executors: run stacked jobs inline, on a local process pool, or on a Ray cluster.

Every executor calls :func:`bindscale.run.jobs.run_job`, which writes each
trial's record as soon as its stack is trained, so whatever an executor loses
(a killed worker, a pre-empted node, a killed driver) costs only the jobs in
flight; a re-run resumes from the records.

Worker death: a job whose worker dies (SIGKILL, out of memory, a lost node)
is run again, up to ``retries`` more times; after that its trials are
recorded as ``failed`` with the cause, and the sweep finishes. A Python
exception inside training is not retried (it would fail the same way): it is
recorded as ``failed`` straight away by ``run_job``.

Start-up: on Linux the pool's workers are forked from a fork server that
imported torch and the study's plugin and trainer
once (:func:`start_fork_server`, started before the driver plans its jobs so
the imports overlap the planning); a spawned worker imports them itself, ~5
CPU-seconds each on the project's 2-core Xeon, which was a sixth of a 12-trial
sweep of 100 steps (benchmarks/jax_peer.py). Elsewhere workers are spawned.

Cores: each pool worker is pinned to its share of the driver's cores (:func:`core_share`: disjoint
shares while there are no more workers than cores; ``BINDSCALE_PIN_WORKERS=0`` leaves them unpinned).
Ray's workers are not pinned: Ray reuses its worker processes across tasks and does not say which
core a task was given, so a pin chosen inside a task could put two concurrent tasks on one core.

Threads: every worker (pool process, Ray task, the inline executor) trains
with one torch thread (:data:`bindscale.train.speed.THREADS_PER_WORKER`, set by
:func:`bindscale.train.speed.set_worker_threads`: the one place the speed settings are decided): the
machine is never oversubscribed (a 2-core machine oversubscribed by
BLAS threads runs ~50× slower), and a trial's metrics are the same bits
whatever stack, executor or number of workers runs it.

Layer: executors, below the runner (which hands them the planner's jobs) and above the job runner
(:mod:`bindscale.run.jobs`); the Ray executor is :mod:`bindscale.run.ray_executor`.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_all_start_methods, get_context

from bindscale.core import registry
from bindscale.store.checkpoints import MODEL_DIR
from bindscale.core.errors import ConfigError
from bindscale.run.jobs import run_job, write_failed
from bindscale.run.options import EXECUTORS, RETRIES
from bindscale.run.ray_executor import execute_ray  # Ray itself is imported only when a Ray sweep runs
from bindscale.store.records import RECORD_DIR
from bindscale.store.storage import RunStore, remove_temporaries
from bindscale.train.speed import set_worker_threads
from bindscale.core.study import CONVENTION

Progress = Callable[[int, int], None]
JobDone = Callable[[list[str]], None]


def execute(
    payload: list[list[dict]], run_dir: str, study: str, device: str, *, executor: str = "process",
    workers: int = 1, retries: int = RETRIES, address: str | None = None, gpu_fraction: float = 1.0,
    on_progress: Progress = lambda n, job: None, on_job_done: JobDone = lambda s: None,
    on_note: Callable[[str], None] = lambda msg: None, save_models: bool = False,
) -> None:
    """Run every job of ``payload`` (lists of trial-config dicts) and write their records.

    Args:
        executor: ``inline`` (this process), ``process`` (a pool of ``workers``
            spawned processes) or ``ray`` (Ray tasks; local instance unless ``address``).
        retries: re-runs of a job whose worker died before it is recorded as failed.
        on_progress: called with trial-steps done and the index of their job in
            ``payload`` (negative steps take back those of a job that is re-run);
            on_job_done: with the statuses of a finished job; on_note: with a line
            for the user (a worker died and jobs are re-run).
        save_models: workers also write each trial's trained model (:func:`bindscale.run.jobs.run_job`).

    Raises:
        ConfigError: unknown executor, or Ray asked for but not installed / unreachable.
        StorageError: records cannot be written (the sweep stops; finished trials are kept).
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor!r}: allowed: {', '.join(EXECUTORS)}")
    if retries < 0:
        raise ConfigError(f"--retries {retries}: must be 0 or more")
    if executor == "inline":
        set_worker_threads()
        for i, job in enumerate(payload):
            on_job_done(run_job(job, run_dir, study, device, "inline", lambda n, i=i: on_progress(n, i),
                                save_models=save_models))
    elif executor == "process":
        _execute_pool(payload, run_dir, study, device, workers, retries, on_progress, on_job_done, on_note,
                      save_models)
    else:
        execute_ray(payload, run_dir, study, device, workers=workers, retries=retries, address=address,
                    gpu_fraction=gpu_fraction, on_progress=on_progress, on_job_done=on_job_done,
                    save_models=save_models)


# ----------------------------------------------------------------------------- process pool

_QUEUE = None

#: What a pool worker imports before its first job, whatever the study; :func:`study_imports` adds what
#: the job's study trains with.
WORKER_IMPORTS = ("bindscale", "torch", "bindscale.run.jobs")


def study_imports(plugin) -> tuple[str, ...]:
    """The modules a study's workers import to train: its plugin's and its trainer's (from the
    ``"module:function"`` reference, without importing it here: the driver need not pay for them)."""
    trainer = plugin.trainer
    if trainer is None and getattr(plugin, "package", None):  # found by convention: <package>.trial
        trainer = f"{plugin.package}.{CONVENTION['trainer'][0]}:"
    module = trainer.partition(":")[0] if isinstance(trainer, str) else getattr(trainer, "__module__", None)
    plugin_module = getattr(plugin, "package", None) or type(plugin).__module__
    return tuple(dict.fromkeys(m for m in (plugin_module, module) if m))


def pool_context(study_module: str | tuple[str, ...] | None = None):
    """The process pool's multiprocessing context: a fork server on Linux, spawn elsewhere.

    Never plain fork: forking the driver after torch has started threads is unsafe. The fork
    server is a fresh interpreter that imports :data:`WORKER_IMPORTS` and ``study_module`` (a module
    or several: :func:`study_imports`) and runs nothing; workers forked from it start with those imports done. One fork server serves
    the driver process for its lifetime (its import list is the first caller's); it exits with
    the driver.
    """
    if not sys.platform.startswith("linux") or "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    ctx = get_context("forkserver")
    # First: Ctrl-C is the driver's to answer (bindscale.run.fork_server_init).
    extra = [study_module] if isinstance(study_module, str) else list(study_module or ())
    ctx.set_forkserver_preload(["bindscale.run.fork_server_init", *WORKER_IMPORTS, *extra])
    return ctx


def start_fork_server(study_module: str | tuple[str, ...] | None = None) -> None:
    """Start the pool's fork server now (Linux), so its imports run while the driver plans; else nothing.

    The imports take a few CPU-seconds on the other cores; the first worker waits for them.
    """
    ctx = pool_context(study_module)
    if ctx.get_start_method() == "forkserver":
        _start_resource_tracker()  # before the fork server, which would start it with the leak warning on
        _ensure_fork_server()


#: Environment variable through which the driver asks its new fork server to die with it (read and
#: removed by :mod:`bindscale.run.fork_server_init`): the driver's pid.
DIE_WITH = "BINDSCALE_FORK_SERVER_DIE_WITH"


def _ensure_fork_server() -> None:
    """Start the fork server if it is not running; one started from the main thread dies with the driver.

    A killed driver must not leave workers training and writing records (a resumed driver runs
    the same trials again). Its workers hold the fork server's "alive" pipe open, so the server
    would outlive the driver; the server therefore sets PR_SET_PDEATHSIG, and its workers do
    too (:func:`_worker_init`): the kernel kills the server as the driver exits and each worker
    as the server exits, with no polling window in which a stack can finish and write its
    records (CI once counted 4 records written after the driver's ``kill -9``). The signal
    follows the *thread* that started the server, so only a server started from the main
    thread asks for it; one started from another thread relies on the workers' watch.
    """
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    os.environ[DIE_WITH] = str(os.getpid())
    try:
        forkserver.ensure_running()
    finally:
        os.environ.pop(DIE_WITH, None)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a killed driver its own parent has not reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


#: Set to ``0`` to leave the pool's workers unpinned (to measure what pinning does; default: pinned).
PIN_ENV = "BINDSCALE_PIN_WORKERS"


def core_share(slot: int, workers: int, cores: list[int]) -> list[int]:
    """The cores worker number ``slot`` (0-based) of ``workers`` is pinned to: its share of ``cores``.

    With no more workers than cores the shares are disjoint and cover every core (4 cores, 2 workers:
    [0, 1] and [2, 3]; 2 cores, 1 worker: both); with more workers than cores (``--workers`` is capped at
    the cores, so only by a direct call) worker ``slot`` shares core ``slot mod cores`` with the others
    on it.

    Raises:
        ValueError: ``workers`` < 1, ``slot`` outside ``0 .. workers - 1`` or no cores.
    """
    if workers < 1 or not 0 <= slot < workers or not cores:
        raise ValueError(f"core_share: slot {slot} of {workers} worker(s) on {len(cores)} core(s)")
    if workers > len(cores):
        return [cores[slot % len(cores)]]
    return cores[slot * len(cores) // workers:(slot + 1) * len(cores) // workers]


def pin_process(cpus: list[int]) -> None:
    """Pin every thread of this process (and the threads it starts later, which inherit it) to ``cpus``.

    ``os.sched_setaffinity(0, …)`` sets only the calling thread's mask on Linux, so the threads already
    running (a watch thread, a BLAS pool) are pinned one by one from ``/proc/self/task``.
    """
    os.sched_setaffinity(0, cpus)
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:  # the thread ended meanwhile
            pass


def pin_args(ctx, workers: int) -> tuple:
    """The pinning part of :func:`_worker_init`'s arguments: a shared slot counter, ``workers`` and the
    driver's usable cores; ``(None, workers, [])`` (no pinning) where the OS has no affinity call or
    :data:`PIN_ENV` is ``0``."""
    if not hasattr(os, "sched_setaffinity") or os.environ.get(PIN_ENV, "1") == "0":
        return None, workers, []
    return ctx.Value("i", 0), workers, sorted(os.sched_getaffinity(0))


def _pin_worker(slots, workers: int, cores: list[int]) -> None:
    """Take the next worker slot of this pool and pin this process to that slot's :func:`core_share`.

    Why: README promises each worker its share of the cores, and before this every worker could run on
    every core (``Cpus_allowed_list: 0-1`` in each), so the kernel was free to stack two
    one-thread workers on one core. A pool rebuilt after a worker died gets a new counter, so its workers
    take the shares afresh.
    """
    if slots is None or not cores:
        return
    with slots.get_lock():
        slot = slots.value % workers
        slots.value += 1
    try:
        pin_process(core_share(slot, workers, cores))
    except OSError:  # a core taken away since the driver read its mask (cpuset change): run unpinned
        pass


def _worker_init(q, driver: int, slots=None, workers: int = 1, cores: list[int] | None = None) -> None:
    global _QUEUE
    if not _alive(driver):  # the driver died while this worker was still starting
        os.kill(os.getpid(), signal.SIGKILL)
    _QUEUE = q
    _pin_worker(slots, workers, cores or [])  # before torch starts its threads: they inherit the mask
    set_worker_threads(process_start=True)
    # Die with the driver: a killed driver must not leave workers training (and writing
    # records) while a resumed driver runs the same trials again. The parent is the driver
    # (spawn) or the fork server, which exits once the driver and every worker are gone.
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: when the parent exits
        except (OSError, AttributeError):
            pass
    # Not every kernel honours PR_SET_PDEATHSIG (sandboxes, other OSes), and a fork server outlives the
    # driver while its workers live (they hold its "alive" pipe): also watch the parent and the driver.
    threading.Thread(target=_watch_parent, args=(parent, driver), name="bindscale-watch-parent",
                     daemon=True).start()


def _watch_parent(parent: int, driver: int, every: float = 0.2) -> None:
    while True:
        time.sleep(every)
        if os.getppid() != parent or not _alive(driver):  # re-parented, or the driver is gone
            os.kill(os.getpid(), signal.SIGKILL)


def _pool_job(idx, job, run_dir, study, device, save_models=False):
    q = _QUEUE
    q.put(("start", idx, os.getpid()))
    return run_job(job, run_dir, study, device, "process", lambda n: q.put(("steps", idx, n)), save_models=save_models)


def _leak_warning_filter() -> str:
    """``-W``-style filters that ignore exactly the resource tracker's "leaked semaphore objects" warning.

    The warning is matched by its text's start, its category, its module and the line(s) of its
    ``warnings.warn`` call in this Python's ``multiprocessing/resource_tracker.py`` (the same
    tracker's other warnings, e.g. a failed clean-up, stay on); without the source, no line.
    """
    import inspect
    from multiprocessing import resource_tracker

    rule = "ignore:resource_tracker:UserWarning:multiprocessing.resource_tracker"
    try:
        lines, first = inspect.getsourcelines(resource_tracker.main)
    except (OSError, TypeError):
        return rule
    for i, line in enumerate(lines):
        if "leaked" in line:
            start = next((j for j in range(i, max(-1, i - 4), -1) if "warnings.warn(" in lines[j]), i)
            return ",".join(f"{rule}:{first + j}" for j in range(start, i + 1))
    return rule


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (if not running) without its "leaked semaphore" warning.

    The pool's queues hold named POSIX semaphores (the spawn context needs names for the
    workers to open them); the driver unlinks them when it exits. A driver killed with
    SIGKILL cannot: the tracker, which outlives it, unlinks them and warns "There appear
    to be N leaked semaphore objects to clean up at shutdown" on the user's terminal. That
    clean-up is what it is for (nothing is left in /dev/shm), so the warning is only noise
    after a ``kill -9``; it is turned off in the tracker process alone, through the
    environment it starts with, and the driver's and workers' environments are unchanged.
    """
    from multiprocessing import resource_tracker

    if getattr(resource_tracker._resource_tracker, "_fd", None) is not None:  # already running
        return
    old = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (old, _leak_warning_filter())))
    try:
        resource_tracker.ensure_running()
    finally:
        if old is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = old


def new_pool(ctx, q, workers: int) -> ProcessPoolExecutor:
    """The sweep's process pool: ``workers`` processes started by ``ctx``, each run through
    :func:`_worker_init` (dies with the driver, one torch thread, pinned to its :func:`core_share`)."""
    return ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(q, os.getpid(), *pin_args(ctx, workers)))


def _execute_pool(payload, run_dir, study, device, workers, retries, on_progress, on_job_done, on_note,
                  save_models=False) -> None:
    module = _study_module(payload)
    ctx = pool_context(module)
    # Here, not from the pool's first worker: a fork server started by this thread dies with the driver.
    start_fork_server(module)
    _start_resource_tracker()  # before the first semaphore (spawn): it starts the tracker otherwise
    # A plain queue inherited by the workers: no manager process that could outlive a killed driver.
    q = ctx.Queue()
    todo = list(range(len(payload)))
    deaths = [0] * len(payload)
    steps_done = [0] * len(payload)
    running: dict[int, int] = {}  # job → pid of the worker that started it

    def drain() -> None:
        while True:
            try:
                msg = q.get_nowait()
            except queue.Empty:
                return
            if msg[0] == "start":
                running[msg[1]] = msg[2]
            else:
                steps_done[msg[1]] += msg[2]
                on_progress(msg[2], msg[1])

    while todo:
        pool = new_pool(ctx, q, workers)
        procs: dict[int, object] = {}
        broken = False
        try:
            futures = {pool.submit(_pool_job, i, payload[i], run_dir, study, device, save_models): i for i in todo}
            todo = []
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                procs |= dict(getattr(pool, "_processes", None) or {})
                drain()
                for fut in done:
                    i = futures[fut]
                    try:
                        statuses = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        todo.append(i)
                        continue
                    running.pop(i, None)
                    on_job_done(statuses)
            drain()
        except BaseException:
            # Ctrl-C, a storage error: stop now. Jobs in flight are lost (their trials have
            # no record and re-run on resume); no new job starts.
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in list((getattr(pool, "_processes", None) or {}).values()) + list(procs.values()):
                proc.kill()
            raise
        pool.shutdown(wait=True)
        if not broken:
            break
        # Every worker of a broken pool is dead now: a write it was making is an orphan temp file.
        remove_temporaries(RunStore(run_dir), RECORD_DIR)
        remove_temporaries(RunStore(run_dir), MODEL_DIR)
        lost = len(todo)
        todo = _after_break(sorted(todo), running, procs, deaths, steps_done, retries, on_progress,
                            lambda i, why: on_job_done(write_failed(payload[i], run_dir, study, device, "process",
                                                                    why)))
        on_note(f"a worker process died: {len(todo)} of the {lost} job(s) in flight re-run"
                + (f", {lost - len(todo)} recorded failed (--retries {retries} exhausted)" if lost > len(todo) else ""))


def _study_module(payload: list[list[dict]]) -> tuple[str, ...] | None:
    """The modules the payload's study trains with (:func:`study_imports`), if they can be told."""
    try:
        return study_imports(registry.for_trial(payload[0][0]))
    except Exception:  # noqa: BLE001 — only an import list: the workers import what they need anyway
        return None


def _after_break(lost, running, procs, deaths, steps_done, retries, on_progress, give_up) -> list[int]:
    """Jobs to resubmit after a worker died; charges the death to the job(s) that dead worker ran.

    The pool terminates the surviving workers (exit code −SIGTERM) when one dies;
    the job whose worker exited otherwise (−SIGKILL, a crash) is charged. If no
    worker can be singled out, every started job is charged (every lost job when
    none is known to have started: a dying worker may not have flushed its message),
    so a job that kills its worker every time cannot be retried forever.
    """
    codes = {pid: getattr(p, "exitcode", None) for pid, p in procs.items()}
    started = [i for i in lost if i in running]
    culprits = [i for i in started if codes.get(running[i]) not in (None, 0, -signal.SIGTERM)]
    for i in culprits or started or lost:
        deaths[i] += 1
    again = []
    for i in lost:
        if steps_done[i]:
            on_progress(-steps_done[i], i)
            steps_done[i] = 0
        pid = running.pop(i, None)
        if deaths[i] > retries:
            code = codes.get(pid)
            give_up(i, f"WorkerDied: the worker running this job died {deaths[i]} times "
                       f"(last exit code {code}); retries exhausted ({retries})")
        else:
            again.append(i)
    return again
