"""Shared machinery of stacked models: per-trial initialisation and parameter counts."""

from __future__ import annotations

import math

import torch
from torch import nn

ACTIVATIONS = {"relu": torch.relu, "gelu": nn.functional.gelu, "tanh": torch.tanh}


def stacked_uniform(shape: tuple[int, ...], bound: float, gens: list[torch.Generator]) -> nn.Parameter:
    """A parameter of shape ``(T, *shape)``, slice ``t`` drawn U(-bound, bound) from ``gens[t]``.

    Drawing each slice from its own trial's generator makes a trial's initial
    weights independent of which other trials share its stack.
    """
    return nn.Parameter(torch.stack([(2 * torch.rand(shape, generator=g) - 1) * bound for g in gens]))


def linear_bound(fan_in: int) -> float:
    """PyTorch's default ``nn.Linear`` init bound, 1/√fan_in (He et al. 2015 uniform variant)."""
    return 1.0 / math.sqrt(fan_in)


class StackedModel(nn.Module):
    """Base class. Subclasses define ``forward(code, x, acts=None)`` and ``activation_shapes``.

    Shapes: ``code`` ``(T, B, E)`` encoded task input, ``x`` ``(T, B, S, I)`` inputs,
    output ``(T, B, S, O)``. When ``acts`` is a dict, the forward pass stores every
    named activation point in it (see :meth:`activation_shapes`).
    """

    n_trials: int

    def n_params(self) -> int:
        """Trainable parameters of ONE trial's model (the stack divided by T)."""
        return sum(p[0].numel() for p in self.parameters())

    def activation_shapes(self, B: int, S: int) -> dict[str, tuple[int, ...]]:  # pragma: no cover - abstract
        """Name → shape of every activation point for a batch of ``B`` tasks × ``S`` inputs."""
        raise NotImplementedError
