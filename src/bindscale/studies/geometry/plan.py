"""Cost and memory of the geometry study's trials (one LM trained, then probed at every layer)."""

from __future__ import annotations

#: Mean words per grammar sentence plus <s> and </s> (measured on the default grammar: 11.6 + 2).
_TOKENS_PER_SENTENCE = 13.6


def job_cost(job: list) -> float:
    """Relative cost: LM training (steps × batch × tokens × weights, 6·N·D up to a constant) plus probing
    (layers × probe sentences × width, scaled to be comparable), summed over the job's trials."""
    total = 0.0
    for t in job:
        m = t.model
        weights = 12 * m.n_layers * m.d_model**2 + 2 * 160 * m.d_model
        train = t.train.steps * t.train.batch_size * _TOKENS_PER_SENTENCE * weights
        models = 2 if t.probe.untrained_control else 1
        probe = models * (m.n_layers + 1) * (t.data.n_fit * t.probe.max_epochs + t.data.n_dev + t.data.n_test) \
            * min(t.probe.rank, m.d_model) * m.d_model * 4e3
        total += train + probe
    return total


def trial_memory_bytes(trial) -> int:
    """A small LM, its activations for the probe sentences at every layer and the probe batches: 512 MiB."""
    return 512 << 20
