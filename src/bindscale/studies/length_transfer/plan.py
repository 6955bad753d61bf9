"""Cost, memory, stack grouping and stack step timing of the length_transfer study's trials (one transformer
per trial; trials of one task mixture and shape train as one stacked transformer,
:func:`bindscale.studies.length_transfer.trial.run_group`)."""

from __future__ import annotations

from bindscale.kit import stack_key

from .data import longest_train_sequence  # noqa: F401 - kept importable here


def group_key(trial) -> tuple:
    """Trials with equal keys can share a stack: same task section (main and auxiliary tasks, their
    lengths and set sizes: the mixture each trial draws its own training set from, and the sequence
    lengths the stack trains at), same model and steps / batch size (:func:`bindscale.train.stack.stack_key`).
    Seed (data, data order, initial weights) and the per-trial training fields may differ. A pretrained model's
    trial (:mod:`.lmtrial`) stacks with nothing: its key is its own id."""
    from .lmtrial import is_lm_trial

    if is_lm_trial(trial):
        return ("pretrained", trial.trial_id)
    return stack_key(trial, ("task", "model"))


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` stacked, here and now (:func:`bindscale.train.stack.stack_step_seconds`
    at the longest training sequence, :func:`longest_train_sequence`: batches are trimmed to about that)."""
    from bindscale.kit import hook_model, stack_step_seconds as timed

    return timed(trials, hook_model(), longest_train_sequence(trials[0]), window, rounds)


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × mean training positions × weights (6·N·D up to a constant).

    Training sequences are trimmed per batch to the longest one in it, about the longest training
    sequence of the trial's tasks; evaluation adds a share that :attr:`StudyPlugin.seconds_per_cost`
    carries per trial. A pretrained model's trial: its estimated seconds (:func:`.lmtrial.estimated_seconds`, from
    the measured step time) in the same units (divided by the study's seconds per unit).
    """
    from .lmtrial import estimated_seconds, is_lm_trial

    if is_lm_trial(t):
        from . import STUDY

        per_unit, per_trial = STUDY.seconds_per_cost
        return max(0.0, estimated_seconds(t) - per_trial) / per_unit
    m = t.model
    weights = 12 * m.n_layers * m.d_model**2 + 40 * m.d_model
    return t.train.steps * t.train.batch_size * longest_train_sequence(t) * weights


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`trial_cost`."""
    return float(sum(trial_cost(t) for t in job))


def trial_memory_bytes(trial) -> int:
    """A small transformer, its batch and its evaluation: 512 MiB, a generous upper bound; a pretrained model's
    fine-tuning: :func:`.lmtrial.memory_bytes`."""
    from .lmtrial import is_lm_trial, memory_bytes

    return memory_bytes(trial) if is_lm_trial(trial) else 512 << 20


def check_trials(trials: list) -> None:
    """The study's checker: a pretrained trial's model must be on disk (:func:`.lmtrial.check_trials`)."""
    from .lmtrial import check_trials as check

    check(trials)
