"""Cost, memory and pre-run checks of the ceiling study's trials."""

from __future__ import annotations

from bindscale.errors import ConfigError

#: A real-model trial's cost per test / held-out instance, in transformer-cost units (a rough guess:
#: SmolLM2-135M generates ~64 tokens per answer in a few CPU-seconds).
LM_COST_PER_INSTANCE = 2.0e4


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
