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


#: Least memory a from-scratch trial is planned with, in bytes: what the estimate leaves out at small sizes
#: (evaluation, the allocator's rounding), the flat 512 MiB the study planned every such trial with before.
MEMORY_FLOOR = 512 << 20


def trial_memory_bytes(trial) -> int:
    """One from-scratch trial's training memory in a stack, in bytes: :func:`bindscale.models.transformer_memory_bytes`
    at its shape, batch and longest training sequence (:func:`longest_train_sequence`, ``n_train`` of them on the
    device); at least :data:`MEMORY_FLOOR`. length_transfer-paper's largest trial (6 × 384, batch 256 of 100
    tokens, 400,000 sequences) measured 4.74 GiB alone on an H200 (benchmarks/results/gpu_paper_h200_2026-12-04.json);
    this gives 5.3 GiB (stacked form). A pretrained model's fine-tuning: :func:`.lmtrial.memory_bytes`."""
    from bindscale.models import transformer_memory_bytes

    from .data import T
    from .lmtrial import is_lm_trial, memory_bytes

    if is_lm_trial(trial):
        return memory_bytes(trial)
    m, k, length = trial.model, trial.task, longest_train_sequence(trial)
    table = max(T.sequence_length(task, k.test_max) for task in [k.main, *k.aux_tasks]) + 8  # as make_data's
    need = transformer_memory_bytes(
        n_layers=m.n_layers, d_model=m.d_model, d_ff=m.mlp_ratio * m.d_model, vocab_size=T.VOCAB_SIZE,
        batch_size=trial.train.batch_size, positions=length, n_examples=trial.task.n_train, example_len=length,
        steps=trial.train.steps, position_table=table if m.pos == "learned" else 0, precision=trial.train.precision)
    return max(MEMORY_FLOOR, need)


def check_trials(trials: list) -> None:
    """The study's checker: a pretrained trial's model must be on disk (:func:`.lmtrial.check_trials`)."""
    from .lmtrial import check_trials as check

    check(trials)
