"""Iso-parameter shapes of the explicit-binding transformers (:mod:`.binding`) beside the plain one.

Torch-free, like :mod:`.shapes` (a trial config sizes its model at planning time). The counting
convention is :mod:`.shapes`' (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1):
non-embedding parameters, i.e. every trainable weight but the lookup tables (token, position and, for
the syntactic-attention model, semantic embeddings) and the vocabulary head, so that the count does not
depend on the task's vocabulary. Per model of width ``d``, MLP hidden width ``f`` and ``L`` blocks:

- ``transformer`` (:class:`~bindscale.models.transformer.Transformer`):
  ``L (4d² + 2df + 9d + f) + 2d`` (:func:`bindscale.models.shapes.nonembedding_params`).
- ``tp_transformer`` (:class:`~.binding.TPTransformer`): each block's attention also has the role
  projection ``W_r`` (``d² + d``): ``L (5d² + 2df + 10d + f) + 2d``.
- ``syntactic_attention`` (:class:`~.binding.SyntacticAttentionTransformer`): the syntax stream is a
  plain transformer of ``L`` blocks and its final LayerNorm, and the syntactic attention adds its
  query and key projections (``2 (d² + d)``): ``L (4d² + 2df + 9d + f) + 2d + 2d² + 2d``.

:func:`shape_for_budget` picks, for a target non-embedding budget, the width (a multiple of
``2 * n_heads``: even rotary head dimensions) whose MLP hidden width, solved to meet the budget, is
nearest to four times the width (the usual shape), so that the count meets the budget to within one MLP
unit per layer, the same rule as :func:`bindscale.models.shapes.shape_for_budget` for the plain model.
"""

from __future__ import annotations

from bindscale.models.shapes import MLP_RATIO, Shape
from bindscale.models.shapes import nonembedding_params as plain_params
from bindscale.models.shapes import shape_for_budget as plain_shape

#: The model kinds a SCAN study can build (plain first).
KINDS = ("transformer", "syntactic_attention", "tp_transformer")
#: The kinds with an explicit binding mechanism.
BINDING_KINDS = ("syntactic_attention", "tp_transformer")


def nonembedding_params(kind: str, n_layers: int, d_model: int, d_ff: int) -> int:
    """Non-embedding trainable parameters of a model of ``kind`` (see the module docstring).

    Raises:
        ValueError: an unknown kind.
    """
    d, f, L = d_model, d_ff, n_layers
    if kind == "transformer":
        return plain_params(L, d, f)
    if kind == "tp_transformer":
        return L * (5 * d * d + 2 * d * f + 10 * d + f) + 2 * d
    if kind == "syntactic_attention":
        return plain_params(L, d, f) + 2 * d * d + 2 * d
    raise ValueError(f"unknown model kind {kind!r}; known: {', '.join(KINDS)}")


def shape_for_budget(kind: str, budget: int, n_layers: int, n_heads: int = 2) -> Shape:
    """The shape of ``kind`` with ``n_layers`` blocks whose non-embedding count is nearest ``budget``.

    The plain transformer's is :func:`bindscale.models.shapes.shape_for_budget`; for a binding kind, every
    width that is a multiple of ``2 * n_heads`` is tried, the MLP width solved for the budget at each (the
    count is linear in it), and the width whose MLP width is nearest ``MLP_RATIO`` times the width wins (the
    smaller width on a tie).

    Raises:
        ValueError: a non-positive argument, an unknown kind, or a budget too small for one head pair.
    """
    if kind == "transformer":
        return plain_shape(budget, n_layers, n_heads)
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r}; known: {', '.join(KINDS)}")
    if budget < 1 or n_layers < 1 or n_heads < 1:
        raise ValueError(f"budget, n_layers and n_heads must be positive; got {budget}, {n_layers}, {n_heads}")
    step = 2 * n_heads
    best = None
    d = step
    while True:
        fixed = nonembedding_params(kind, n_layers, d, 0)
        if fixed >= budget:
            break
        per_unit = nonembedding_params(kind, n_layers, d, 1) - fixed
        f = round((budget - fixed) / per_unit)
        if f >= 1:
            key = (abs(f / d - MLP_RATIO), d)
            if best is None or key < best[0]:
                best = (key, d, f)
        d += step
    if best is None:
        raise ValueError(f"a budget of {budget} non-embedding parameters is too small for a {kind} of "
                         f"{n_layers} layers of width {step} ({n_heads} heads)")
    _, d, f = best
    return Shape(n_layers, d, n_heads, f, nonembedding_params(kind, n_layers, d, f))
