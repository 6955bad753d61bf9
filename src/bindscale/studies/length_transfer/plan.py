"""Cost and memory of the length_transfer study's trials (one transformer per trial)."""

from __future__ import annotations

from .tasks import sequence_length


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × mean training positions × weights (6·N·D up to a constant).

    Training sequences are trimmed per batch to the longest one in it, about the longest training
    sequence of the trial's tasks; evaluation adds a share that :attr:`StudyPlugin.seconds_per_cost`
    carries per trial.
    """
    m, k = t.model, t.task
    weights = 12 * m.n_layers * m.d_model**2 + 40 * m.d_model
    longest = max([sequence_length(k.main, k.main_len)]
                  + [sequence_length(a, k.aux_len) for a in k.aux_tasks])
    return t.train.steps * t.train.batch_size * longest * weights


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`trial_cost`."""
    return float(sum(trial_cost(t) for t in job))


def trial_memory_bytes(trial) -> int:
    """A small transformer, its batch and its evaluation: 512 MiB, a generous upper bound."""
    return 512 << 20
