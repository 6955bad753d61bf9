"""Training progress on the driver's console: a live bar on a terminal, plain lines elsewhere.

Off a terminal (CI logs, ``nohup``, a pipe) a live bar would only appear when
the run ends, so :class:`TrainingProgress` prints one line per finished job and
at most one every ``every`` seconds in between.

The fraction done and the ETA count *estimated work*, not trial-steps: a step
of a width-512 stack costs ~18 steps of a width-16 one, and the widest stacks
run first, so counting trial-steps alone, the headline study showed "ETA
0:46:13" after 31 s of a run that took 6 minutes. Each job's trial-steps are
weighted by its cost per trial-step (:func:`bindscale.run.planner.job_cost`).

The ETA is measured from the first progress report, not from the start: worker
start-up (spawning, importing torch, building the data) is not training, and
extrapolating from it, a 32-minute run's log read "0:00:36 elapsed, ETA
5:46:24". Until ``eta_after_s`` seconds and ``eta_after_frac`` of the work have
passed since that first report, the ETA reads "estimating…".
"""

from __future__ import annotations

import math
import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

ESTIMATING = "ETA estimating…"
#: Columns of a console that is not a terminal: a log line is one line (rich's default, 80, wrapped the
#: progress and plan lines of a run driven from the Python API in two).
LOG_WIDTH = 160


def console(stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr): the terminal's width on a terminal, :data:`LOG_WIDTH`
    columns in a log or pipe."""
    import sys

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else LOG_WIDTH)


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}"


class TrainingProgress:
    """Counts trial-steps (``advance``) and finished trials (``job_done``) of one sweep.

    Args:
        console: where to print (the live bar needs ``console.is_terminal``).
        total: trial-steps to run; n_trials: trials to run.
        every: seconds between plain lines off a terminal.
        job_costs: ``(trial-steps, cost of one trial-step)`` of each job, by job
            index; None: every trial-step counts the same.
        eta_after_s, eta_after_frac: no ETA until this many seconds and this fraction
            of the work have passed since the first progress report.

    Raises:
        ValueError: a cost that is not positive and finite, or no work at all.
    """

    def __init__(self, console: Console, total: int, n_trials: int, every: float = 30.0,
                 job_costs: list[tuple[int, float]] | None = None, eta_after_s: float = 10.0,
                 eta_after_frac: float = 0.01):
        self.console, self.total, self.n_trials, self.every = console, max(1, total), n_trials, every
        self.eta_after_s, self.eta_after_frac = eta_after_s, eta_after_frac
        self._weight: list[float] | None = None
        if job_costs is not None:
            work = sum(s * c for s, c in job_costs)
            if not all(0 < c < math.inf for _, c in job_costs) or not work > 0:
                raise ValueError("TrainingProgress: job costs must be positive and finite")
            # Work counted in mean trial-steps: its total equals the trial-steps'.
            self._weight = [c * self.total / work for _, c in job_costs]
        self.steps = self.trials = self.bad = 0
        self.work = 0.0
        self.live = console.is_terminal
        self._bar: Progress | None = None
        self._t0 = self._last = time.monotonic()
        self._t1: float | None = None  # time of the first progress report, and the work it reported
        self._w1 = 0.0

    def __enter__(self) -> "TrainingProgress":
        if self.live:
            columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), TaskProgressColumn(),
                       TextColumn("{task.fields[steps]}/{task.fields[total_steps]} trial-steps"),
                       TimeElapsedColumn(), TextColumn("{task.fields[eta]}"))
            self._bar = Progress(*columns, console=self.console, transient=False).__enter__()
            self._task = self._bar.add_task("training", total=self.total, steps=0, total_steps=self.total,
                                            eta=ESTIMATING)
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def _label(self) -> str:
        return f"training ({self.trials}/{self.n_trials} trials" + (f", {self.bad} not ok" if self.bad else "") + ")"

    def advance(self, n: int, job: int = 0) -> None:
        """``n`` more trial-steps of job ``job`` done (negative: a re-run job's steps taken back).

        ``job`` indexes ``job_costs``; without them it is ignored.
        """
        now = time.monotonic()
        self.steps += n
        self.work += n * (1.0 if self._weight is None else self._weight[job])
        if self._t1 is None and n > 0:
            self._t1, self._w1 = now, self.work
        if self._bar is not None:
            self._bar.update(self._task, completed=self.work, steps=self.steps, eta=self._eta(now))
        elif now - self._last >= self.every:
            self._line()

    def _eta(self, now: float) -> str:
        """"ETA h:mm:ss" at the rate measured since the first progress report, or "ETA estimating…"."""
        if self._t1 is None:
            return ESTIMATING
        seconds, work = now - self._t1, self.work - self._w1
        if seconds < self.eta_after_s or work <= 0 or work < self.eta_after_frac * self.total:
            return ESTIMATING
        return f"ETA {_clock(max(0.0, self.total - self.work) * seconds / work)}"

    def job_done(self, statuses: list[str]) -> None:
        """A job finished with these trial statuses."""
        self.trials += len(statuses)
        self.bad += sum(s != "ok" for s in statuses)
        if self._bar is not None:
            self._bar.update(self._task, description=self._label())
        else:
            self._line()

    def _line(self) -> None:
        self._last = now = time.monotonic()
        frac = min(1.0, max(0.0, self.work / self.total))
        elapsed = now - self._t0
        eta = f", {self._eta(now)}" if frac < 1 else ""
        self.console.print(f"{self._label()}: {frac:.0%} done ({self.steps}/{self.total} trial-steps), "
                           f"{_clock(elapsed)} elapsed{eta}", highlight=False)
