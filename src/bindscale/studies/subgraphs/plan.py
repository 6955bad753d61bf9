"""Cost, memory, stack grouping and stack step timing of the subgraphs study's trials (one transformer per
trial; trials of one shape train as one stacked transformer, :func:`bindscale.studies.subgraphs.trial.run_group`)."""

from __future__ import annotations

from bindscale.kit import stack_key


def group_key(trial) -> tuple:
    """Trials with equal keys can share a stack: same task, model and steps / batch size
    (:func:`bindscale.train.stack.stack_key`). Seed (hence data, data order and initial weights), learning rate,
    weight decay, warm-up and clipping may differ: each trial keeps its own."""
    return stack_key(trial, ("task", "model"))


def job_cost(job: list) -> float:
    """Relative cost of a job: trials × steps × rows × positions × weights (6·N·D up to a constant)."""
    t = job[0]
    m = t.model
    weights = 12 * m.n_layers * m.d_model**2 + 40 * m.d_model
    return len(job) * t.train.steps * t.train.batch_size * _length(t) * weights


def _length(trial) -> int:
    """A rough training sequence length of the trial's task (prompt, scratchpad and answer)."""
    return (30 if trial.task.family == "maxsubseq" else 90) if trial.task.scratchpad else 16


def trial_memory_bytes(trial) -> int:
    """A small transformer, its batch and its evaluation: 512 MiB, a generous upper bound."""
    return 512 << 20


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` stacked, here and now (:func:`bindscale.train.stack.stack_step_seconds`
    at the task's rough sequence length, :func:`_length`)."""
    from bindscale.kit import hook_model, stack_step_seconds as timed

    return timed(trials, hook_model(), _length(trials[0]), window, rounds)
