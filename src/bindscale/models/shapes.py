"""Iso-parameter transformer shapes: the width of each depth that spends a fixed non-embedding budget.

Shared model-shape code: the depth study compares depths at one budget with it, the ceiling study sizes
its trained models by their budget with it (both through :mod:`bindscale.models`, a study's door to the
models).

Counting convention (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1: the
non-embedding parameters; MobileLLM, Liu et al. 2024, compares shapes at a fixed total): the
blocks and the final LayerNorm of :class:`bindscale.models.transformer.Transformer`, without the
token / position embeddings and the vocabulary head, so the count does not depend on the task's
vocabulary or the position scheme. One pre-LayerNorm block of width ``d`` and MLP hidden width
``f`` holds ``4d² + 2df + 9d + f`` weights and biases (attention 4d² + 4d, MLP 2df + f + d, two
LayerNorms 4d); the final LayerNorm adds ``2d``.

:func:`shape_for_budget` takes the width a 4x MLP would need (the usual shape), rounds it to a
multiple of ``2 * n_heads`` (even rotary head dimensions; the nearer multiple), then sets the MLP hidden width so that
the count meets the budget to within one MLP unit per layer (well inside the 5% the study asks).
"""

from __future__ import annotations

import math
from typing import NamedTuple

#: Nominal MLP expansion the width is first solved for.
MLP_RATIO = 4


class Shape(NamedTuple):
    """A transformer shape: layers, residual width, heads, MLP hidden width, non-embedding count."""

    n_layers: int
    d_model: int
    n_heads: int
    d_ff: int
    n_params: int


def nonembedding_params(n_layers: int, d_model: int, d_ff: int) -> int:
    """Non-embedding trainable parameters of the shared transformer (see the module docstring)."""
    d, f = d_model, d_ff
    return n_layers * (4 * d * d + 2 * d * f + 9 * d + f) + 2 * d


def shape_for_budget(budget: int, n_layers: int, n_heads: int = 2) -> Shape:
    """The shape of depth ``n_layers`` whose non-embedding count is nearest ``budget``.

    Args:
        budget: target non-embedding parameters (> 0).
        n_layers: depth (>= 1).
        n_heads: attention heads; the width is a multiple of ``2 * n_heads``.

    Raises:
        ValueError: a non-positive argument, or a budget too small for one head pair at this depth.
    """
    if budget < 1 or n_layers < 1 or n_heads < 1:
        raise ValueError(f"budget, n_layers and n_heads must be positive; got {budget}, {n_layers}, {n_heads}")
    # L * ((4 + 2r) d^2 + (10 + r) d) + 2d = budget, solved for d with r = MLP_RATIO.
    a, b = n_layers * (4 + 2 * MLP_RATIO), n_layers * (10 + MLP_RATIO) + 2
    d0 = (-b + math.sqrt(b * b + 4 * a * budget)) / (2 * a)
    step = 2 * n_heads
    # The allowed width nearest the 4x-MLP width first (the MLP ratio stays near 4), then the other neighbour.
    widths = sorted({max(step, step * math.floor(d0 / step)), max(step, step * math.ceil(d0 / step))},
                    key=lambda d: (abs(d - d0), d))
    for d in widths:
        # Solve n_layers * (2d + 1) * f = budget - [n_layers * (4d^2 + 9d) + 2d] for f.
        f = round((budget - n_layers * (4 * d * d + 9 * d) - 2 * d) / (n_layers * (2 * d + 1)))
        if f >= 1:
            return Shape(n_layers, d, n_heads, f, nonembedding_params(n_layers, d, f))
    raise ValueError(f"a budget of {budget} non-embedding parameters is too small for {n_layers} layers "
                         f"of width {step} ({n_heads} heads)")
