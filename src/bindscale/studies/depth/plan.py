"""Cost, memory, pre-run checks, stack grouping and stack step timing of the depth study's trials (one small
transformer per trial; trials of one split and shape train as one stacked transformer,
:func:`bindscale.studies.depth.trial.run_group`)."""

from __future__ import annotations

from bindscale.kit import ConfigError, stack_key

#: Positions of a training batch (trimmed to its longest sequence: command, separator, actions, end) by
#: split: the length split's outputs stop at 22 actions, the others' reach 48 (data files: as the others).
POSITIONS = {"length": 33}
POSITIONS_OTHER = 58
#: CPU-seconds per unit of :func:`trial_cost`: 24 trials of the default study (length split, 700 x 32;
#: depth 1 and 8 at 100k, depth 2 at 200k) took 584 CPU-s on the project's 2-core machine under load
#: (45% of a core), 1.33 times what a first fit to seven shorter pilot trials (2.4e-6) predicted.
SECONDS_PER_COST = 3.2e-6


#: Vocabulary of a SCAN split for the step timer: 3 specials, 13 command words, 6 actions (a split's own
#: vocabulary is read from its data, which the planner does not load; a few tokens more or less change a
#: step's time by well under the timer's noise).
TIMER_VOCAB = 22


def group_key(trial) -> tuple:
    """Trials with equal keys can share a stack: same split and data files (hence the same sequences,
    vocabulary and lengths: the depth study's data does not depend on the trial's seed), same model
    and steps / batch size (:func:`bindscale.train.stack.stack_key`). Seed (initial weights, batch order)
    and the per-trial training fields may differ."""
    return stack_key(trial, ("task", "data", "model"))


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` stacked, here and now (:func:`bindscale.train.stack.stack_step_seconds`
    at the split's batch length, :data:`POSITIONS`, and a SCAN-sized vocabulary, :data:`TIMER_VOCAB`)."""
    from bindscale.kit import hook_model, stack_step_seconds as timed

    t = trials[0]
    positions = POSITIONS.get(t.task.split, POSITIONS_OTHER) if t.data.train is None else POSITIONS_OTHER
    return timed(trials, hook_model(vocab_size=TIMER_VOCAB), positions, window, rounds)


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × positions × (layers + 4 + budget / 50,000).

    At these widths (12 to 120) a step's time is mostly per-position work that grows with depth, plus
    a fixed part (embedding, head, optimizer, data) and a part that grows with the weights (measured at
    300 steps: depth 1 → 8 costs 2.7x at 25k parameters; 25k → 100k costs 1.1-1.8x at equal depth).
    """
    positions = POSITIONS.get(t.task.split, POSITIONS_OTHER) if t.data.train is None else POSITIONS_OTHER
    return t.train.steps * t.train.batch_size * positions * (t.model.n_layers + 4 + t.model.budget / 50_000)


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
    from bindscale.kit import scan

    seen = set()
    for t in trials:
        for path in (t.data.train, t.data.test):
            if path is not None and (path, t.data.format) not in seen:
                seen.add((path, t.data.format))
                pairs = scan.load_pairs(path, t.data.format)
                if not pairs:
                    raise ConfigError(f"data file {path}: no examples")
