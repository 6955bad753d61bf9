"""Cost, memory, checks, stack grouping and stack step timing of the binding_scan study's trials.

Plain transformers of one split and shape train as one stacked transformer (as the depth study's do); a
binding model (syntactic attention, TP-Transformer) has no stacked form, so each of its trials is a group
of its own and trains alone.
"""

from __future__ import annotations

from bindscale.kit import stack_key

#: Positions of a training batch (command, separator, actions, end) by split: the length split's outputs
#: stop at 22 actions, the others' reach 48.
POSITIONS = {"length": 33}
POSITIONS_OTHER = 58
#: Relative cost of a training step of each kind at equal budget and depth, against the plain transformer
#: (measured, one thread, the project's 2-core Xeon at load 7-8, add-jump, 100k, depth 2, batch 32, 80 steps
#: each: plain 0.023 CPU-s per step alone, syntactic attention 0.027, TP-Transformer 0.025). A binding model
#: trains alone and shares nothing of a stack's step, hence a little more than the measured ratio.
KIND_FACTOR = {"transformer": 1.0, "syntactic_attention": 1.25, "tp_transformer": 1.25}
#: Greedy evaluation without a KV cache (the binding models): CPU-seconds per scored example at 100k, scaled by
#: the square root of the budget, on top of the study's per-trial seconds (measured as above: 0.0068-0.0085;
#: the plain transformer decodes with a KV cache, 0.0012, inside the per-trial seconds).
EVAL_SECONDS_PER_EXAMPLE = {"transformer": 0.0, "syntactic_attention": 0.009, "tp_transformer": 0.009}
#: CPU-seconds per unit of :func:`trial_cost` (the depth study's measured factor: the same trainer and
#: plain transformer on the same data).
SECONDS_PER_COST = 3.2e-6
#: Vocabulary of a SCAN split for the step timer (3 specials, 13 command words, 6 actions).
TIMER_VOCAB = 22


def group_key(trial) -> tuple:
    """Plain transformers with equal keys share a stack (same split, model and steps / batch size; seed and
    the per-trial training fields may differ: :func:`bindscale.kit.stack_key`); every binding trial is a
    group of its own (its trial id is in the key)."""
    key = stack_key(trial, ("task", "model"))
    return key if trial.model.kind == "transformer" else (*key, trial.trial_id)


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` (plain transformers of one stack key) stacked, here and now
    (:func:`bindscale.kit.stack_step_seconds`). The planner times only groups of two or more trials, which
    binding trials never form (:func:`group_key`)."""
    from bindscale.kit import hook_model
    from bindscale.kit import stack_step_seconds as timed

    t = trials[0]
    return timed(trials, hook_model(vocab_size=TIMER_VOCAB), POSITIONS.get(t.task.split, POSITIONS_OTHER),
                 window, rounds)


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × positions × (layers + 4 + budget / 50,000) × the kind's
    step factor, plus its cache-free evaluation (:data:`EVAL_SECONDS_PER_EXAMPLE`, in cost units). The
    first part is the depth study's cost model of the same trainer."""
    m = t.model
    positions = POSITIONS.get(t.task.split, POSITIONS_OTHER)
    train = t.train.steps * t.train.batch_size * positions * (m.n_layers + 4 + m.budget / 50_000) * KIND_FACTOR[m.kind]
    n_eval = (t.task.n_test or 1000) + t.task.n_id
    return train + EVAL_SECONDS_PER_EXAMPLE[m.kind] * n_eval * (m.budget / 100_000) ** 0.5 / SECONDS_PER_COST


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`trial_cost`."""
    return float(sum(trial_cost(t) for t in job))


def trial_memory_bytes(trial) -> int:
    """A small model, SCAN as tensors and its evaluation: 512 MiB, a generous upper bound."""
    return 512 << 20


def check_trials(trials: list) -> None:
    """Nothing to read before a run: the study generates its data."""
