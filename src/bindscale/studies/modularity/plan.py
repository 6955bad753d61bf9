"""Cost and memory of the modularity study's trials (one base network, then its mask searches)."""

from __future__ import annotations


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`modularity_cost`."""
    return len(job) * modularity_cost(job[0])


def modularity_cost(t) -> float:
    """Relative cost of one modularity trial: (pre)training plus every mask search, rows × positions × weights.

    A mask step costs about twice a training step (soft masks, their penalty and Adam on
    one logit per weight); a transformer reads 4 positions per scene.
    """
    m, mk = t.model, t.mask
    if m.architecture == "mlp":
        weights, positions = 2 * (t.task.n_shapes + t.task.n_colours) * m.width + (m.depth - 1) * m.width**2, 1
    else:
        weights, positions = (4 + 2 * m.mlp_ratio) * m.depth * m.width**2, 4
    train = (t.train.steps + (t.pretrain.steps if t.pretrain.kind != "none" else 0)) * t.train.batch_size
    masks = 2 * (mk.n_mask_seeds + mk.control_mask_seeds) * mk.steps * mk.batch_size * 2
    return (train + masks) * positions * (weights + 1000)


def optimizer_steps(t) -> int:
    """Optimizer steps of one modularity trial: pretraining, compound training and every mask search (two
    subroutines, each with its mask seeds on the trained network and its control seeds on the untrained one),
    as :func:`modularity_cost` counts them. The progress unit stays the compound training step."""
    pretrain = t.pretrain.steps if t.pretrain.kind != "none" else 0
    return pretrain + t.train.steps + 2 * (t.mask.n_mask_seeds + t.mask.control_mask_seeds) * t.mask.steps


def trial_memory_bytes(trial) -> int:
    """One small network, its datasets and a few masked copies: 256 MiB, a generous upper bound."""
    return 256 << 20
