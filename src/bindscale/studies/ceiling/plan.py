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


#: CPU time of a packed training step (``train.pack``, :func:`bindscale.train.loop.packed_batch`) over a padded one:
#: 1 / 1.51, ``benchmarks/packing.py`` at ceiling-full's largest trial (1.6M, 2 x 256, batch 32; the project's 2-core
#: Xeon, one torch thread; benchmarks/results/packing_intel-xeon-processor_2026-12-07.json, "ceiling"): 0.56 real
#: tokens padded, 0.88 packed. Every training set of ceiling-full packs alike (packed positions 0.64-0.66 of the
#: padded at 50-400 instances a family); smaller models, whose steps hold more fixed work, were not timed.
PACKED_STEP_SHARE = 1 / 1.51


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × (n_layers + budget / 50,000) for a trained transformer (a step's
    time is a fixed part per layer plus a part growing with the weights; measured at batch 32, ~70 positions:
    0.12 s per step at 100k parameters, 0.19 s at 400k, 0.44 s at 1.6M, four layers, loaded 2-core machine), times
    :data:`PACKED_STEP_SHARE` where it packs (``train.pack``); instances × :data:`LM_COST_PER_INSTANCE` for a real
    model."""
    if t.model.kind == "lm":
        n = len(t.task.family_list) * (t.task.n_test * t.task.max_difficulty + t.task.n_heldout)
        return n * LM_COST_PER_INSTANCE
    share = PACKED_STEP_SHARE if getattr(t.train, "pack", False) else 1.0
    return t.train.steps * t.train.batch_size * (t.model.n_layers + t.model.budget / 50_000) * share


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`trial_cost`."""
    return float(sum(trial_cost(t) for t in job))


#: Tokens of the longest training sequence by ``task.max_difficulty`` (the default three families), rounded up:
#: measured over 200 training instances per family, 55, 81, 116, 154 and 210 at difficulties 1-5 (600 per family at
#: difficulty 3, the ceiling-paper trial measured on the H200: 118). The planner does not build the instance sets
#: (a solver runs per instance) to learn the exact length.
TRAIN_TOKENS = {1: 60, 2: 90, 3: 120, 4: 160, 5: 220}
#: At least the study's vocabulary (115 tokens; trial.VOCAB, which this light module does not import).
VOCAB_SIZE_MAX = 128
#: Least memory a trained transformer's trial is planned with, in bytes: what the estimate leaves out at small
#: sizes (evaluation, the allocator's rounding), the flat 1 GiB the study planned every such trial with before.
MEMORY_FLOOR = 1 << 30


def trial_memory_bytes(trial) -> int:
    """A trained transformer: its training memory in a stack, in bytes
    (:func:`bindscale.models.transformer_memory_bytes` at its shape, batch and :data:`TRAIN_TOKENS` positions, its
    training instances on the device), at least :data:`MEMORY_FLOOR`; ceiling-paper's largest trial (2 × 728,
    12.8M, batch 32) measured 0.63 GiB alone on an H200 (benchmarks/results/gpu_paper_h200_2026-12-04.json),
    under the floor. A packed trial (``train.pack``) is planned at this padded figure, an upper bound: its steps
    hold fewer rows of the same width. A local LM: 2 GiB."""
    if trial.model.kind == "lm":
        return 2 << 30
    from bindscale.models import shape_for_budget, transformer_memory_bytes

    m, k = trial.model, trial.task
    s = shape_for_budget(m.budget, m.n_layers, m.n_heads)
    length = TRAIN_TOKENS[k.max_difficulty]
    need = transformer_memory_bytes(
        n_layers=s.n_layers, d_model=s.d_model, d_ff=s.d_ff, vocab_size=VOCAB_SIZE_MAX,
        batch_size=trial.train.batch_size, positions=length, n_examples=k.n_train * len(k.family_list),
        example_len=length, steps=trial.train.steps, precision=trial.train.precision)
    return max(MEMORY_FLOOR, need)


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
