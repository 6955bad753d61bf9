"""Cost, memory and pre-run checks of the depth study's trials (one small transformer per trial)."""

from __future__ import annotations

from bindscale.errors import ConfigError

#: Mean positions per training sequence (command, separator, actions, end) of SCAN's splits, and the
#: share of a step's time that grows with depth (the rest: embedding, head, optimizer, data).
POSITIONS = 28


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × positions × (layers + 1).

    At these widths (12 to 120) a step's time is dominated by per-position work that grows with the
    number of layers, not with the parameter count (measured: at 300 steps, 25k and 100k parameters
    cost about the same at equal depth), so width does not enter.
    """
    return t.train.steps * t.train.batch_size * POSITIONS * (t.model.n_layers + 1)


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`trial_cost`."""
    return float(sum(trial_cost(t) for t in job))


def trial_memory_bytes(trial) -> int:
    """A small transformer, SCAN as tensors and its evaluation: 512 MiB, a generous upper bound."""
    return 512 << 20


def check_trials(trials: list) -> None:
    """Read every data file the trials name, before anything is written.

    Raises:
        ConfigError: a file is missing, unreadable, empty or has a malformed line (one line naming
            the file and the line).
    """
    from .scan import load_pairs

    seen = set()
    for t in trials:
        for path in (t.data.train, t.data.test):
            if path is not None and (path, t.data.format) not in seen:
                seen.add((path, t.data.format))
                pairs = load_pairs(path, t.data.format)
                if not pairs:
                    raise ConfigError(f"data file {path}: no examples")
