"""Paper-tier jobs on a lent GPU: one short job per transformer study's ``-paper`` variant, its steps/s and memory.

    python benchmarks/gpu_paper.py --json gpu_paper.json               # on one GPU: all five in under 10 minutes
    python benchmarks/gpu_paper.py --device cpu --tiny --json out.json  # a smoke test of seconds (a unit test runs it)

For each of the five transformer studies (depth, subgraphs, length_transfer, ceiling, geometry) it resolves the
study's ``<study>-paper`` variant (a study file beside the study's own; ``--variant`` names another suffix, ``""``
the default study), applies ``--set`` overrides as ``bindscale run`` does, takes one trial (the largest by the
study's own cost model, i.e. the paper tier's biggest model; with ``--tiny`` the smallest) and trains it with
the study's own trainer (:func:`bindscale.run.jobs.run_group`) for ``--warmup`` + ``--steps`` optimizer steps,
then stops it (no evaluation: only the training speed is wanted). A variant that does not exist is skipped with
one line; a job that fails is reported as failed with its error, the others still run, and the exit
status is then 1. A study name the registry does not know, or a ``--json`` path in a folder that cannot be
written, is refused before anything runs (a lent GPU's minutes are not spent on it).

Timing: the trainers report steps through their progress callback after reading the loss on the host
(:mod:`bindscale.train.loop` reads it every ``SYNC_EVERY`` steps on a GPU, every step on the CPU), so the time
of the first report of each such burst is when the GPU had finished the burst's steps. Steps/s is taken
between the first burst that ends past the warm-up and the last one before the stop. Measured per study:
steps/s, seconds timed, set-up seconds (data and model before the first step), CPU-seconds of the process,
peak GPU memory (``torch.cuda.max_memory_allocated``) or, on the CPU, the process's peak resident memory.

Bounds: every study stops after ``--steps`` timed steps or ``--budget-s`` seconds of timing, whichever comes
first, and studies not yet started when ``--total-s`` has passed are skipped (said so): five studies at the
defaults (300 steps, 90 s, 540 s in all) fit 10 minutes on one GPU unless a variant's data takes minutes to
build. The JSON holds the machine and one entry per study.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

from bindscale.core.studyfile import builtin_studies, resolve_study, unknown_study  # noqa: E402
from bindscale.core.errors import BindscaleError  # noqa: E402
from bindscale.run.jobs import run_group  # noqa: E402
from bindscale.run.planner import job_cost  # noqa: E402

#: The studies that train transformers, whose paper tier is meant for a GPU.
TRANSFORMER_STUDIES = ("depth", "subgraphs", "length_transfer", "ceiling", "geometry")
#: Two progress reports less than this apart belong to one burst (reported after one read of the loss): a
#: report costs microseconds, a training step at least a few hundred.
BURST_GAP_S = 1e-4


class _Enough(Exception):
    """Raised from the progress callback to stop a trial once its steps are timed."""


class StepClock:
    """A trainer's ``progress`` callback that times its steps and stops it when enough are timed.

    A burst of reports that follow one host read of the loss marks the time the reported steps were done:
    ``marks`` holds (time of a burst's first report, steps reported once the burst is over).

    Args:
        warmup: steps left out of the timing (allocation, autotuning, the first kernels' compilation).
        steps: steps to time after the warm-up.
        budget_s: seconds of timing after which the trial is stopped even with fewer steps.
    """

    def __init__(self, warmup: int, steps: int, budget_s: float):
        self.warmup, self.steps, self.budget_s = warmup, steps, budget_s
        self.count, self.last, self.marks = 0, None, []
        self.first_report: float | None = None

    def __call__(self, n: int) -> None:
        now = time.perf_counter()
        if self.first_report is None:
            self.first_report = now
        if self.last is None or now - self.last > BURST_GAP_S:  # a new burst: the previous one is complete
            if self.marks:
                self.marks[-1] = (self.marks[-1][0], self.count)
            self._check()
            self.marks.append((now, None))
        self.count += n
        self.last = time.perf_counter()

    def close(self) -> None:
        """The trainer returned: its last burst is complete."""
        if self.marks and self.marks[-1][1] is None:
            self.marks[-1] = (self.marks[-1][0], self.count)

    def _window(self) -> tuple[tuple[float, int], tuple[float, int]] | None:
        done = [m for m in self.marks if m[1] is not None and m[1] >= self.warmup]
        return (done[0], done[-1]) if len(done) >= 2 else None

    def _check(self) -> None:
        w = self._window()
        if w and (w[1][1] - w[0][1] >= self.steps or w[1][0] - w[0][0] >= self.budget_s):
            raise _Enough

    def result(self) -> dict:
        """Steps timed, their seconds and steps/s (None where fewer than two bursts ended past the warm-up)."""
        w = self._window()
        if not w:
            return {"steps_timed": 0, "seconds_timed": None, "steps_per_s": None, "steps_reported": self.count}
        (t0, c0), (t1, c1) = w
        return {"steps_timed": c1 - c0, "seconds_timed": t1 - t0, "steps_per_s": (c1 - c0) / (t1 - t0),
                "steps_reported": self.count}


def pick_trial(trials: list, smallest: bool = False):
    """The trial with the largest (``smallest``: least) cost by its study's cost model; ties by trial id."""
    key = sorted(trials, key=lambda t: t.trial_id)
    return (min if smallest else max)(key, key=lambda t: job_cost([t]))


def time_trial(trial, device: str, warmup: int, steps: int, budget_s: float) -> dict:
    """Train ``trial`` with its study's trainer until ``steps`` steps past ``warmup`` are timed (or ``budget_s``).

    Returns:
        The clock's figures with ``setup_seconds`` (start to the first reported step), ``cpu_seconds`` of the
        process, ``stopped`` (False: the trial ended first) and the peak memory.
    """
    clock = StepClock(warmup, steps, budget_s)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    cpu0, t0 = time.process_time(), time.perf_counter()
    stopped = False
    try:
        run_group([trial], device, clock)
    except _Enough:
        stopped = True
    clock.close()
    out = clock.result() | {
        "setup_seconds": None if clock.first_report is None else clock.first_report - t0,
        "wall_seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - cpu0, "stopped": stopped,
    }
    if device == "cuda":
        out["gpu_peak_memory_bytes"] = int(torch.cuda.max_memory_allocated())
    else:  # ru_maxrss is in KiB on Linux: the process's peak so far, not this trial's alone
        out["process_peak_rss_bytes"] = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    return out


def run(studies: list[str], variant: str, device: str, sets: list[str], warmup: int, steps: int,
        budget_s: float, total_s: float, tiny: bool, say=print, save=None) -> dict:
    """One short job per study's ``<study><variant>``; returns the JSON-ready result (never raises for a study).

    ``save``, when given, is called with the result so far after each study, so that a run stopped from
    outside (a lease's time limit) keeps the studies it finished.
    """
    out: dict = {"machine": machine(), "device": device, "variant": variant, "warmup": warmup, "steps": steps,
                 "budget_s": budget_s, "tiny": tiny, "sets": sets, "studies": {}}
    files, start = builtin_studies(), time.perf_counter()
    for study in studies:
        name = f"{study}{variant}"
        if name not in files:
            say(f"{study}: skipped, no {name} variant in the registry (not written yet?)")
            out["studies"][study] = {"variant": name, "status": "skipped", "reason": f"no {name} variant"}
            continue
        if time.perf_counter() - start > total_s:
            say(f"{study}: skipped, the run's {total_s:.0f} s are spent")
            out["studies"][study] = {"variant": name, "status": "skipped", "reason": f"past --total-s {total_s:.0f}"}
            continue
        try:
            cfg = resolve_study(name, overrides=sets)
            trial = pick_trial(cfg.trials(), smallest=tiny)
            cfg.plugin.check_trials([trial])
            row = {"variant": name, "status": "ok", "trial_id": trial.trial_id,
                   "task": trial.task.model_dump(mode="json") if hasattr(trial, "task") else None,
                   "model": trial.model.model_dump(mode="json"), "trial_steps": cfg.plugin.steps(trial)}
            row |= time_trial(trial, device, warmup, steps, budget_s)
        except (BindscaleError, RuntimeError, ValueError, OSError) as err:  # one study's failure, said
            say(f"{study}: failed, {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            out["studies"][study] = {"variant": name, "status": "failed", "error": f"{type(err).__name__}: {err}"}
            if save is not None:
                save(out)
            continue
        out["studies"][study] = row
        if save is not None:
            save(out)
        mem = row.get("gpu_peak_memory_bytes", row.get("process_peak_rss_bytes", 0)) / 2**30
        rate = f"{row['steps_per_s']:.1f} steps/s" if row["steps_per_s"] else "no steps timed"
        say(f"{study}: {name}, trial {trial.trial_id}: {rate} over {row['steps_timed']} steps, set-up "
            f"{row['setup_seconds'] or 0:.1f} s, {row['cpu_seconds']:.1f} CPU-s, peak memory {mem:.2f} GiB")
    out["wall_seconds"] = time.perf_counter() - start
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--studies", default=",".join(TRANSFORMER_STUDIES), help="comma-separated study names")
    ap.add_argument("--variant", default="-paper", help="suffix of the variant per study ('' for the study itself)")
    ap.add_argument("--set", dest="sets", action="append", default=[], help="override, as bindscale run --set")
    ap.add_argument("--warmup", type=int, default=None, help="steps not timed (default 20; --tiny 1)")
    ap.add_argument("--steps", type=int, default=None, help="steps timed (default 300; --tiny 3)")
    ap.add_argument("--budget-s", type=float, default=90.0, help="seconds of timing per study at most")
    ap.add_argument("--total-s", type=float, default=540.0, help="start no study after this many seconds")
    ap.add_argument("--tiny", action="store_true", help="the smallest trial and a few steps: a smoke test")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("benchmarks/gpu_paper.py: no CUDA device here (use --device cpu --tiny for the smoke test)")
    torch.set_num_threads(1)  # as a bindscale worker trains (and the machine is shared)
    warmup = args.warmup if args.warmup is not None else (1 if args.tiny else 20)
    steps = args.steps if args.steps is not None else (3 if args.tiny else 300)
    studies = [s for s in args.studies.split(",") if s]
    known = builtin_studies()
    unknown = [s for s in studies if s not in known]
    if unknown:  # a typo would otherwise read as a variant not written yet, and spend a lent GPU on nothing
        sys.exit(f"benchmarks/gpu_paper.py: {unknown_study(unknown[0], paths=False)}")
    if args.json and not (args.json.parent.is_dir() and os.access(args.json.parent, os.W_OK)):
        sys.exit(f"benchmarks/gpu_paper.py: --json {args.json}: {args.json.parent} is not a writable directory")
    print("machine:", json.dumps(machine()))
    def save(result: dict) -> None:
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))

    out = run(studies, args.variant, args.device, args.sets, warmup, steps, args.budget_s, args.total_s, args.tiny,
              say=lambda line: print(line, flush=True), save=save)
    save(out)
    failed = [k for k, v in out["studies"].items() if v["status"] == "failed"]
    if failed:  # said per study above; the exit status says it to a script
        sys.exit(f"benchmarks/gpu_paper.py: {len(failed)} of {len(studies)} studies failed: {', '.join(failed)}")
    return out


if __name__ == "__main__":
    main()
