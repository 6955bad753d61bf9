"""Cost and memory of the subgraphs study's trials (one transformer per trial)."""

from __future__ import annotations


def job_cost(job: list) -> float:
    """Relative cost of a job: trials × steps × rows × positions × weights (6·N·D up to a constant)."""
    t = job[0]
    m = t.model
    weights = 12 * m.n_layers * m.d_model**2 + 40 * m.d_model
    length = (30 if t.task.family == "maxsubseq" else 90) if t.task.scratchpad else 16
    return len(job) * t.train.steps * t.train.batch_size * length * weights


def trial_memory_bytes(trial) -> int:
    """A small transformer, its batch and its evaluation: 512 MiB, a generous upper bound."""
    return 512 << 20
