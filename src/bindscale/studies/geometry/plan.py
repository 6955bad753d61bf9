"""Cost, memory, stack grouping and stack step timing of the geometry study's trials (one LM trained, then
probed at every layer; LMs of one grammar and shape train as one stacked transformer,
:func:`bindscale.studies.geometry.trial.run_group`; a pretrained model's trial runs alone)."""

from __future__ import annotations

from bindscale.kit import stack_key

#: Mean words per grammar sentence plus <s> and </s> (measured on the default grammar: 11.6 + 2).
_TOKENS_PER_SENTENCE = 13.6


def group_key(trial) -> tuple:
    """Trials with equal keys can share a stack: trained LMs with the same data section (grammar, corpus
    and probe-set sizes, sentence length) and model and the same steps / batch size
    (:func:`bindscale.train.stack.stack_key`). Seed (corpus, initial weights, batch order), probe settings and
    the per-trial training fields may differ: probes run per trial, after training. A pretrained model's
    trial is never stacked (its own key)."""
    from .lmtrial import is_lm_trial

    if is_lm_trial(trial):
        return ("pretrained", trial.trial_id)
    return stack_key(trial, ("data", "model"))


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of trained-LM ``trials`` stacked, here and now
    (:func:`bindscale.train.stack.stack_step_seconds` at a sentence's mean length, :data:`_TOKENS_PER_SENTENCE`,
    or the longest input the model takes if shorter; its ``max_len`` is its own, ``max_words + 2``)."""
    from bindscale.kit import stack_step_seconds as timed

    # The study's models hook: this module never imports .trial (which imports it to group trials).
    from . import STUDY

    length = min(round(_TOKENS_PER_SENTENCE), trials[0].data.max_words + 1)
    return timed(trials, lambda t, max_len: STUDY.build_model(t), length, window, rounds)


def job_cost(job: list) -> float:
    """Relative cost: LM training (steps × batch × tokens × weights, 6·N·D up to a constant) plus probing
    (layers × probe sentences × width, scaled to be comparable), summed over the job's trials."""
    from . import lmtrial

    total = 0.0
    for t in job:
        if lmtrial.is_lm_trial(t):
            total += lmtrial.job_cost(t)
            continue
        m = t.model
        weights = 12 * m.n_layers * m.d_model**2 + 2 * 160 * m.d_model
        train = t.train.steps * t.train.batch_size * _TOKENS_PER_SENTENCE * weights
        # per model probed (the trained LM, and its untrained twin with the control): the three kinds with the first
        # estimator, and with probe.inputs dev the structural and polar probes again on raw vectors (2 of 3 kinds)
        fits = 1 + 2 / 3 * (len(t.probe.estimators()) - 1)
        models = (2 if t.probe.untrained_control else 1) * fits
        probe = models * (m.n_layers + 1) * (t.data.n_fit * t.probe.max_epochs + t.data.n_dev + t.data.n_test) \
            * min(t.probe.rank, m.d_model) * m.d_model * 4e3
        total += train + probe
    return total


#: Least memory a trained LM's trial is planned with, in bytes: its activations for the probe sentences at every
#: layer and the probe batches, which the training estimate leaves out; the flat 512 MiB the study planned every
#: such trial with before.
MEMORY_FLOOR = 512 << 20


def trial_memory_bytes(trial) -> int:
    """A trained LM: its training memory in a stack, in bytes (:func:`bindscale.models.transformer_memory_bytes` at its
    shape, batch and longest sentence, ``max_words`` + 2 tokens, its ``n_lm`` sentences on the device), at least
    :data:`MEMORY_FLOOR`; a 12 × 512 LM (batch 64, geometry-paper's largest) measured 1.55 GiB alone on an H200
    (benchmarks/results/gpu_paper_h200_2026-12-04.json); this gives 1.6 GiB (stacked form). A pretrained model:
    :func:`.lmtrial.trial_memory_bytes`."""
    from . import lmtrial

    if lmtrial.is_lm_trial(trial):
        return lmtrial.trial_memory_bytes(trial)
    from bindscale.models import transformer_memory_bytes

    from .grammar import vocabulary

    m, length = trial.model, trial.data.max_words + 2
    need = transformer_memory_bytes(
        n_layers=m.n_layers, d_model=m.d_model, d_ff=m.mlp_ratio * m.d_model, vocab_size=len(vocabulary()) + 3,
        batch_size=trial.train.batch_size, positions=length, n_examples=trial.data.n_lm, example_len=length,
        steps=trial.train.steps, precision=trial.train.precision)
    return max(MEMORY_FLOOR, need)
