"""Training progress on the driver's console: a live bar on a terminal, plain lines elsewhere.

Off a terminal (CI logs, ``nohup``, a pipe) a live bar would only appear when
the run ends, so :class:`TrainingProgress` prints one line per finished job and
at most one every ``every`` seconds in between.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}"


class TrainingProgress:
    """Counts trial-steps (``advance``) and finished trials (``job_done``) of one sweep.

    Args:
        console: where to print (the live bar needs ``console.is_terminal``).
        total: trial-steps to run; n_trials: trials to run.
        every: seconds between plain lines off a terminal.
    """

    def __init__(self, console: Console, total: int, n_trials: int, every: float = 30.0):
        self.console, self.total, self.n_trials, self.every = console, max(1, total), n_trials, every
        self.steps = self.trials = self.bad = 0
        self.live = console.is_terminal
        self._bar: Progress | None = None
        self._t0 = self._last = time.monotonic()

    def __enter__(self) -> "TrainingProgress":
        if self.live:
            columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("trial-steps"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
            self._bar = Progress(*columns, console=self.console, transient=False).__enter__()
            self._task = self._bar.add_task("training", total=self.total)
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def _label(self) -> str:
        return f"training ({self.trials}/{self.n_trials} trials" + (f", {self.bad} not ok" if self.bad else "") + ")"

    def advance(self, n: int) -> None:
        """``n`` more trial-steps done (negative: a re-run job's steps taken back)."""
        self.steps += n
        if self._bar is not None:
            self._bar.advance(self._task, n)
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
        frac = min(1.0, max(0.0, self.steps / self.total))
        elapsed = now - self._t0
        eta = f", ETA {_clock(elapsed * (1 - frac) / frac)}" if 0 < frac < 1 else ""
        self.console.print(f"{self._label()}: {frac:.0%} of {self.total} trial-steps, {_clock(elapsed)} elapsed{eta}",
                           highlight=False)
