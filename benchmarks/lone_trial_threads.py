"""Should a trial training alone use two intra-op threads when the other core is busy?

A sweep's workers train on one torch thread each (``bindscale.run.jobs.THREADS_PER_WORKER``). When a trial
trains alone — the last job of a sweep, or a caller of ``run_group`` who allowed two threads — the
second core may be idle (two threads could help) or busy with other work (a second thread then waits
for a descheduled partner in every parallel region). This benchmark measures both, on the headline
study's real training step (``scaling.steps.stack_step_timer``: forward, backward, clipping, AdamW),
at three MLP widths (64, 256, 1024; depth 2, one trial):

* ``quiet``: nothing else started by the benchmark (the load average is recorded: a shared machine
  may still be busy);
* ``busy``: a child process spins a one-thread 256² fp32 matmul loop (another worker's kind of work)
  for the whole condition.

In each condition and width, windows of ``--window`` seconds on one and on two threads alternate
``--rounds`` times (each window wall-clock: steps repeat until the seconds have passed, after an untimed step); reported: the median steps/s per count,
its per-window range, steps per CPU-second (this process), the two-thread / one-thread ratio of the
medians, and what ``choose_threads`` (the rule a caller with two threads gets) picks there and then.

    python benchmarks/lone_trial_threads.py [--window 1.5] [--rounds 5] [--json runs/lone_threads.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import load, machine, print_table  # noqa: E402

WIDTHS = (64, 256, 1024)


def _spin(stop, parent: int) -> None:  # the busy core's work: a one-thread matmul loop, as another worker's
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    # A killed benchmark cannot set ``stop``: the spinner also ends when its parent is gone (reparented),
    # so it never keeps a core busy behind a later measurement.
    while not stop.is_set() and os.getppid() == parent:
        for _ in range(50):
            a @ b


def _trials(width: int):
    """One MLP trial of the headline study at ``width`` x depth 2 (its task, batch and optimiser)."""
    from bindscale.core.studyfile import resolve_study

    trial = resolve_study("scaling").base
    return [trial.model_copy(update={"model": trial.model.model_copy(update={"width": width, "depth": 2})})]


def measure(width: int, window: float, rounds: int) -> dict:
    """One width in the current condition: alternating 1- and 2-thread windows, and the rule's choice."""
    from bindscale.studies.scaling.steps import stack_step_timer
    from bindscale.train.threads import choose_threads

    timer = stack_step_timer(_trials(width))
    per_step = max(timer(1, 3) / 3, 1e-5)
    # A window is wall-clock: timer calls repeat until ``window`` seconds have passed, each call's steps
    # doubling from one while a call takes under a tenth of the window, so a slow thread count (two
    # threads against a busy core can be 100x slower) cannot stretch a window to minutes.
    out: dict = {"width": width, "one_thread_step_s": per_step}
    rates: dict[int, list[float]] = {1: [], 2: []}
    cpu_rates: dict[int, list[float]] = {1: [], 2: []}
    for r in range(rounds):
        for n in ((1, 2) if r % 2 == 0 else (2, 1)):
            chunk, steps, s, c0 = 1, 0, 0.0, time.process_time()
            while s < window:
                dt = timer(n, chunk)
                s, steps = s + dt, steps + chunk
                if dt < window / 10:
                    chunk *= 2
            c = time.process_time() - c0
            rates[n].append(steps / s)
            cpu_rates[n].append(steps / c if c > 0 else float("nan"))
    for n in (1, 2):
        out[f"t{n}_steps_per_s"] = statistics.median(rates[n])
        out[f"t{n}_range"] = [min(rates[n]), max(rates[n])]
        out[f"t{n}_steps_per_cpu_s"] = statistics.median(cpu_rates[n])
    out["ratio_2t_over_1t"] = out["t2_steps_per_s"] / out["t1_steps_per_s"]
    out["rule_chooses"] = choose_threads(timer, 2)
    return out


def run(window: float, rounds: int, conditions: tuple[str, ...]) -> dict:
    import torch

    result = {"machine": machine(), "window_s": window, "rounds": rounds, "conditions": {}}
    for cond in conditions:
        stop = proc = None
        if cond == "busy":
            ctx = mp.get_context("spawn")
            stop = ctx.Event()
            proc = ctx.Process(target=_spin, args=(stop, os.getpid()), daemon=True)
            proc.start()
            time.sleep(2.0)  # its imports, then it spins
        try:
            rows = {"load_start": load()}
            rows["widths"] = [measure(w, window, rounds) for w in WIDTHS]
            rows["load_end"] = load()
        finally:
            if proc is not None:
                stop.set()
                proc.join(10)
        result["conditions"][cond] = rows
    torch.set_num_threads(1)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--window", type=float, default=1.5, help="seconds per timed window")
    ap.add_argument("--rounds", type=int, default=5, help="windows per thread count")
    ap.add_argument("--conditions", default="quiet,busy", help="comma-separated: quiet, busy")
    ap.add_argument("--json", default=None, help="write the result here")
    a = ap.parse_args()
    conds = tuple(c.strip() for c in a.conditions.split(",") if c.strip())
    bad = [c for c in conds if c not in ("quiet", "busy")]
    if bad or a.window <= 0 or a.rounds < 1:
        ap.error(f"--conditions takes quiet and/or busy (got {bad}); --window > 0; --rounds >= 1")
    res = run(a.window, a.rounds, conds)
    print(f"machine: {res['machine']}")
    for cond, rows in res["conditions"].items():
        print_table(f"{cond} (load {rows['load_start']} -> {rows['load_end']}): steps/s, median [range] of {a.rounds} windows",
                    ["width", "1 thread", "range", "2 threads", "range", "2t/1t", "per CPU-s 1t", "per CPU-s 2t", "rule"],
                    [[r["width"], r["t1_steps_per_s"], f"{r['t1_range'][0]:.0f}-{r['t1_range'][1]:.0f}",
                      r["t2_steps_per_s"], f"{r['t2_range'][0]:.0f}-{r['t2_range'][1]:.0f}", r["ratio_2t_over_1t"],
                      r["t1_steps_per_cpu_s"], r["t2_steps_per_cpu_s"], r["rule_chooses"]] for r in rows["widths"]])
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    main()
