"""Where a sweep's CPU goes beyond its trials' training steps: per component, in process CPU seconds.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/sweep_cpu.py --json out.json   # jax_peer.py's 12-trial sweep
    python benchmarks/sweep_cpu.py --steps 100 --seeds 1                          # its 4-trial, start-up-heavy cut

The sweep is ``benchmarks/jax_peer.py``'s (widths 128 / 256, depth 2, hold-out 0.25 / 0.5, ``--seeds`` seeds,
``--steps`` steps, evaluation on 256 tasks at 5 points, probes on 256 tasks). Two measurements:

1. ``bindscale run`` on it (workers pinned, one torch thread each, as a user runs it), its process tree's CPU
   seconds sampled from ``/proc`` every 0.1 s: the driver (start-up and imports, planning, progress, report),
   the pool's fork server (the workers' imports, paid once) and the workers;
2. the same trials' jobs (as this process's planner makes them) run one after another in this process at one
   torch thread, with every component's process CPU time taken exclusively (a component's time does not
   include the components it calls): task construction, model and optimizer, training steps (forward,
   backward, clipping, AdamW and the loop), sampling of training data, evaluation during and after training,
   probes (their sets and activations; the ridge fits) and records; the imports a worker makes beyond the
   fork server's (scikit-learn's, while the probes used it) are timed apart.

``time.process_time`` throughout: on a loaded machine wall time measures the load, CPU time the work.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (module, attribute, component): what is timed in part 2; a class attribute is ``Class.name``.
TIMED = (
    ("bindscale.studies.scaling.trial", "_run_group", "training steps"),  # what the others leave of a trial
    ("bindscale.studies.scaling.trial", "HyperTeacher.__init__", "task construction"),
    ("bindscale.studies.scaling.trial", "HyperTeacher.sample", "sampling"),
    ("bindscale.studies.scaling.trial", "build_model", "model and optimizer"),
    ("bindscale.studies.scaling.trial", "make_optimizer", "model and optimizer"),
    ("bindscale.studies.scaling.trial", "_predict", "evaluation"),
    ("bindscale.studies.scaling.trial", "r2_within_task", "evaluation"),
    ("bindscale.studies.scaling.trial", "r2_task_mean", "evaluation"),
    ("bindscale.studies.scaling.trial", "_final_metrics", "evaluation"),
    ("bindscale.studies.scaling.trial", "_probe_metrics", "probes: sets and activations"),
    ("bindscale.studies.scaling.probes", "probe_layers", "probes: ridge fits and scores"),
    ("bindscale.run.jobs", "write_record", "records"),
    ("bindscale.run.jobs", "make_record", "records"),
)


class Clock:
    """Exclusive process CPU seconds per component: a timed call's time, less the timed calls inside it."""

    def __init__(self):
        self.seconds: collections.Counter = collections.Counter()
        self._stack: list[list] = []  # [component, CPU time when it last resumed]

    def wrap(self, fn, component: str):
        """``fn``, its calls timed as ``component``."""
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            now = time.process_time()
            if self._stack:  # the caller's component stops here
                self.seconds[self._stack[-1][0]] += now - self._stack[-1][1]
            frame = [component, now]
            self._stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                end = time.process_time()
                self.seconds[component] += end - frame[1]
                self._stack.pop()
                if self._stack:  # and resumes here
                    self._stack[-1][1] = end

        return timed


def instrument(clock: Clock):
    """Wrap every :data:`TIMED` function with ``clock`` (module attributes replaced, in this process); returns
    the function that puts the originals back."""
    import importlib

    saved = []
    for module, attr, component in TIMED:
        owner = importlib.import_module(module)
        *path, name = attr.split(".")
        for p in path:
            owner = getattr(owner, p)
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, clock.wrap(getattr(owner, name), component))

    def restore() -> None:
        for owner, name, fn in reversed(saved):
            setattr(owner, name, fn)

    return restore


def sweep_yaml(steps: int, seeds: int, probe_tasks: int, path: Path) -> Path:
    """jax_peer.py's sweep as a study file."""
    sys.path.insert(0, str(HERE))
    from jax_peer import sweep_trials

    from bindscale.core.config import StudyConfig
    from bindscale.store.rundir import study_yaml

    trials = sweep_trials(steps, seeds, probe_tasks)
    axes = {"width": sorted({t.model.width for t in trials}), "holdout": sorted({t.task.holdout for t in trials}),
            "seed": sorted({t.seed for t in trials})}
    path.write_text(study_yaml(StudyConfig(name="jax_peer_sweep", base=trials[0], grids=[axes])))
    return path


def run_cli(study: Path, out: Path) -> dict:
    """``bindscale run STUDY --out OUT``: wall seconds and each process's CPU seconds (driver, fork server, workers)."""
    sys.path.insert(0, str(HERE))
    from jax_peer import _tree_cpu

    seen: dict[int, float] = {}
    names: dict[int, str] = {}
    t0 = time.perf_counter()
    with open(out.with_suffix(".log"), "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "bindscale", "run", str(study), "--out", str(out)],
                                stdout=log, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            _tree_cpu(proc.pid, seen)
            for pid in seen.keys() - names.keys():
                try:
                    names[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    names[pid] = ""
            time.sleep(0.1)
    if proc.returncode:
        raise RuntimeError(f"bindscale run failed; see {out.with_suffix('.log')}")
    server = [p for p in seen if p != proc.pid and "forkserver" in names[p] and os.getpid() != p]
    server = min(server) if server else None  # the fork server starts before its workers
    parts = {"driver": seen.get(proc.pid, 0.0), "fork server": seen.get(server, 0.0) if server else 0.0}
    parts["workers and helpers"] = sum(seen.values()) - sum(parts.values())
    return {"wall_s": time.perf_counter() - t0, "cpu_s": sum(seen.values()), "processes": parts}


def run_jobs(study: Path, out: Path) -> dict:
    """The study's jobs one after another in this process, each component's CPU seconds (:data:`TIMED`)."""
    t0 = time.process_time()
    import torch

    import bindscale.studies.scaling.trial  # the fork server's imports
    from bindscale.run import jobs
    preload = time.process_time() - t0
    t0 = time.process_time()
    import bindscale.studies.scaling.probes  # noqa: F401  (a worker imports it at its first probe)
    probes_import = time.process_time() - t0

    from bindscale.core.studyfile import resolve_study
    from bindscale.run.planner import plan_jobs
    from bindscale.train.speed import set_worker_threads

    clock = Clock()
    config = resolve_study(str(study))
    trials = config.trials()
    threads = torch.get_num_threads()
    set_worker_threads()
    restore = instrument(clock)
    try:
        t0 = time.process_time()
        planned = plan_jobs(trials, n_workers=2, device="cpu", measure=True)
        plan = time.process_time() - t0
        t0 = time.process_time()
        for job in planned:
            jobs.run_job([t.model_dump(mode="json") for t in job], str(out), config.name, "cpu", "process")
        total = time.process_time() - t0
    finally:
        restore()
        torch.set_num_threads(threads)
    parts = dict(clock.seconds)
    parts["job runner, outside the timed parts"] = total - sum(parts.values())
    return {"trials": len(trials), "jobs": [len(j) for j in planned], "worker_imports_s": preload,
            "probes_import_s": probes_import, "plan_s": plan, "jobs_cpu_s": total, "components": parts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--probe-tasks", type=int, default=256)
    ap.add_argument("--skip-run", action="store_true", help="only part 2 (the in-process breakdown)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out: dict = {"steps": args.steps, "seeds": args.seeds, "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as d:
        study = sweep_yaml(args.steps, args.seeds, args.probe_tasks, Path(d) / "sweep.yaml")
        if not args.skip_run:
            out["bindscale_run"] = run_cli(study, Path(d) / "run")
            print(json.dumps(out["bindscale_run"]), flush=True)
        out["in_process"] = run_jobs(study, Path(d) / "jobs")
    out["load_after"] = os.getloadavg()
    ip = out["in_process"]
    n = ip["trials"]
    print(f"\n{n} trials x {args.steps} steps, jobs {ip['jobs']}: CPU-s (per trial)")
    rows = [("worker imports (fork server, once)", ip["worker_imports_s"]), ("probes' imports (each worker)",
            ip["probes_import_s"]), ("planning (measured)", ip["plan_s"])]
    rows += sorted(ip["components"].items(), key=lambda kv: -kv[1])
    for name, s in rows:
        print(f"  {name:40s} {s:8.2f}  ({s / n:.3f})")
    print(f"  {'jobs in all':40s} {ip['jobs_cpu_s']:8.2f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
