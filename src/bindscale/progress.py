"""Training progress on the driver's console: a live bar on a terminal, plain lines elsewhere.

Off a terminal (CI logs, ``nohup``, a pipe) a live bar would only appear when
the run ends, so :class:`TrainingProgress` prints one line per finished job and
at most one every ``every`` seconds in between.

The fraction done and the ETA count *estimated work*, not trial-steps: a step
of a width-512 stack costs ~18 steps of a width-16 one, and the widest stacks
run first, so counting trial-steps alone, the headline study showed "ETA
0:46:13" after 31 s of a run that took 6 minutes. Each job's trial-steps are
weighted by its cost per trial-step (:func:`bindscale.sweep.job_cost`).
"""

from __future__ import annotations

import math
import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn


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

    Raises:
        ValueError: a cost that is not positive and finite, or no work at all.
    """

    def __init__(self, console: Console, total: int, n_trials: int, every: float = 30.0,
                 job_costs: list[tuple[int, float]] | None = None):
        self.console, self.total, self.n_trials, self.every = console, max(1, total), n_trials, every
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

    def __enter__(self) -> "TrainingProgress":
        if self.live:
            columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), TaskProgressColumn(),
                       TextColumn("{task.fields[steps]}/{task.fields[total_steps]} trial-steps"),
                       TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
            self._bar = Progress(*columns, console=self.console, transient=False).__enter__()
            self._task = self._bar.add_task("training", total=self.total, steps=0, total_steps=self.total)
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
        self.steps += n
        self.work += n * (1.0 if self._weight is None else self._weight[job])
        if self._bar is not None:
            self._bar.update(self._task, completed=self.work, steps=self.steps)
        elif time.monotonic() - self._last >= self.every:
            self._line()

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
        eta = f", ETA {_clock(elapsed * (1 - frac) / frac)}" if 0 < frac < 1 else ""
        self.console.print(f"{self._label()}: {frac:.0%} done ({self.steps}/{self.total} trial-steps), "
                           f"{_clock(elapsed)} elapsed{eta}", highlight=False)
