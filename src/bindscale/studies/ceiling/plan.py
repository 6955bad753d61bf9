"""Cost, memory, pre-run checks, stack grouping and stack step timing of the ceiling study's trials
(transformer trials of one task and shape train as one stacked transformer,
:func:`bindscale.studies.ceiling.trial.run_group`; a real language model's trial runs alone)."""

from __future__ import annotations

from bindscale.kit import stack_key

#: A real-model trial's cost per test / held-out instance, in transformer-cost units (a rough guess:
#: SmolLM2-135M generates ~64 tokens per answer in a few CPU-seconds).
LM_COST_PER_INSTANCE = 2.0e4


#: Rough positions of a training sequence (instance, separator, solution, end) for the step timer: about
#: 70 at the default families and difficulties (as :func:`trial_cost`'s measurement); the planner does not
#: build the instance sets (a solver runs per instance) to learn the exact length.
TIMER_POSITIONS = 70


def group_key(trial) -> tuple:
    """Trials with equal keys can share a stack: transformer trials with the same task (hence the same
    instance sets: they do not depend on the trial's seed) and model and the same steps / batch size
    (:func:`bindscale.train.stack.stack_key`); seed (initial weights, batch order) and the per-trial training
    fields may differ. A real language model's trial is never stacked (its own key)."""
    if trial.model.kind == "lm":
        return ("lm", trial.trial_id)
    return stack_key(trial, ("task", "model"))


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of transformer ``trials`` stacked, here and now
    (:func:`bindscale.train.stack.stack_step_seconds` at :data:`TIMER_POSITIONS` positions)."""
    from bindscale.kit import hook_model, stack_step_seconds as timed

    return timed(trials, hook_model(), TIMER_POSITIONS, window, rounds)  # the hook's default: the fixed vocabulary


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × (n_layers + budget / 50,000) for a trained transformer (a step's
    time is a fixed part per layer plus a part growing with the weights; measured at batch 32, ~70 positions:
    0.12 s per step at 100k parameters, 0.19 s at 400k, 0.44 s at 1.6M, four layers, loaded 2-core machine);
    instances × :data:`LM_COST_PER_INSTANCE` for a real model."""
    if t.model.kind == "lm":
        n = len(t.task.family_list) * (t.task.n_test * t.task.max_difficulty + t.task.n_heldout)
        return n * LM_COST_PER_INSTANCE
    return t.train.steps * t.train.batch_size * (t.model.n_layers + t.model.budget / 50_000)


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`trial_cost`."""
    return float(sum(trial_cost(t) for t in job))


def trial_memory_bytes(trial) -> int:
    """A transformer of up to ~10M parameters with its optimizer state and a batch: 1 GiB; a local LM: 2 GiB."""
    return (2 << 30) if trial.model.kind == "lm" else (1 << 30)


def check_trials(trials: list) -> None:
    """Refuse, before anything is written or trained, real-model trials that cannot run: a local model without
    the ``lm`` extra or not installed, or an endpoint that cannot be reached (one line; each model config
    checked once).

    Raises:
        ConfigError: see above.
    """
    from .llm import check_lm

    for model in dict.fromkeys(t.model for t in trials if t.model.kind == "lm"):
        check_lm(model)
