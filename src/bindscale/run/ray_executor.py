"""Ray executor: each stacked job is one Ray task with declared resources.

Ray itself is imported only inside :func:`execute_ray`, when ``--executor ray``
is asked for, so ``import bindscale`` and the local executors never import it
(an optional extra: ``pip install 'bindscale[ray]'``); whether it is installed is
checked before a run by :func:`bindscale.run.options.check_ray_installed`.

With no ``address`` a local Ray instance is started with one CPU per worker
and shut down at the end; with an address (``auto``, ``ray://host:10001`` or
``host:6379``) the tasks go to that cluster and every node must see the run
directory (an NFS path or an fsspec URL such as ``s3://bucket/run``) and have
bindscale installed. A task whose worker process or node dies is re-run by
Ray up to ``retries`` times (``max_retries``); after that its trials are
recorded as failed by the driver.

Layer: executors, with :mod:`bindscale.run.executors` (which calls it), above the job runner
(:mod:`bindscale.run.jobs`).
"""

from __future__ import annotations

from bindscale.core.errors import BindscaleError, ConfigError
from bindscale.run.jobs import run_job, write_failed
from bindscale.run.options import NO_RAY
from bindscale.train.speed import THREADS_PER_WORKER, set_worker_threads


def _ray_job(job: list[dict], run_dir: str, study: str, device: str, threads: int, index: int, queue,
             save_models: bool = False) -> list[str]:
    set_worker_threads()  # Ray workers are reused: on every task (``threads``: the CPUs it declared)
    return run_job(job, run_dir, study, device, "ray", lambda n: queue.put((index, n)), save_models=save_models)


def _steps(job: list[dict]) -> int:
    return len(job) * int(job[0]["train"]["steps"])


def execute_ray(
    payload: list[list[dict]], run_dir: str, study: str, device: str, *, workers: int, retries: int,
    address: str | None, gpu_fraction: float, on_progress, on_job_done, save_models: bool = False,
) -> None:
    """Run ``payload`` as Ray tasks (see :func:`bindscale.run.executors.execute`).

    Each task declares ``num_cpus = threads`` (torch threads it will use) and,
    on CUDA, ``num_gpus = gpu_fraction``. Tasks report trial-steps through a
    Ray queue (an actor holding no CPU); the driver drains it every 0.5 s.

    Raises:
        ConfigError: Ray not installed, or the cluster cannot be reached.
        StorageError: a record could not be written on a worker (re-raised here).
    """
    try:
        import ray
        from ray import exceptions as rex
    except ImportError:
        raise ConfigError(NO_RAY) from None
    started_here = not ray.is_initialized()
    threads = THREADS_PER_WORKER
    if started_here:
        try:
            if address:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(num_cpus=max(1, workers) * threads, num_gpus=1 if device == "cuda" else 0,
                         include_dashboard=False, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise ConfigError(f"--executor ray: cannot start or reach Ray at {address or 'a local instance'}: "
                              f"{str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    task = ray.remote(_ray_job).options(
        num_cpus=threads, num_gpus=gpu_fraction if device == "cuda" else 0,
        max_retries=retries, retry_exceptions=False,
    )
    from ray.util.queue import Queue

    queue = Queue(actor_options={"num_cpus": 0})
    refs = {task.remote(job, run_dir, study, device, threads, i, queue, save_models): i
            for i, job in enumerate(payload)}
    reported = [0] * len(payload)  # trial-steps reported per job (a retried job reports again)

    def drain() -> None:
        # A task's reports are queued before it returns, so draining after ray.wait and
        # before handling the finished jobs sees all of them.
        running = set(refs.values())
        for i, n in queue.get_nowait_batch(queue.qsize()):
            if i in running:
                reported[i] += n
                on_progress(n, i)

    try:
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
            drain()
            for ref in done:
                i = refs.pop(ref)
                try:
                    statuses = ray.get(ref)
                except rex.RayTaskError as err:  # an exception raised inside run_job
                    cause = getattr(err, "cause", None)
                    if isinstance(cause, BindscaleError):
                        raise cause from None
                    raise
                except rex.RayError as err:  # the worker or its node died, retries exhausted
                    why = f"WorkerDied: {type(err).__name__} after {retries} retries: " \
                          f"{(str(err).splitlines() or [''])[0][:300]}"
                    statuses = write_failed(payload[i], run_dir, study, device, "ray", why)
                on_progress(_steps(payload[i]) - reported[i], i)  # the rest; negative after a retry
                reported[i] = _steps(payload[i])
                on_job_done(statuses)
    except BaseException:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise
    finally:
        queue.shutdown(force=True)  # its actor would outlive the sweep on a shared cluster
        if started_here:
            ray.shutdown()
