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


#: Standard deviation of a standard normal truncated to [-2, 2]: dividing by it gives the
#: truncated draw the variance asked for (as flax's ``variance_scaling`` does).
TRUNC_STD = 0.87962566103423978


def truncated_normal(shape: tuple[int, ...], variance: float, gen: torch.Generator) -> torch.Tensor:
    """Draws of shape ``shape`` from a normal truncated at ±2 of its σ, scaled to variance ``variance``.

    This is flax's ``variance_scaling(..., distribution="truncated_normal")`` with
    ``variance = scale / fan_in``; ``lecun_normal`` is ``scale = 1`` (LeCun et al. 1998,
    "Efficient BackProp"), the default kernel init of ``flax.linen.Dense`` that the
    reference code of Redhardt, Schug, Akram 2025 trains with.
    """
    std = math.sqrt(variance) / TRUNC_STD
    return torch.nn.init.trunc_normal_(torch.empty(shape), 0.0, std, -2 * std, 2 * std, generator=gen)


def stacked_lecun_normal(shape: tuple[int, ...], fan_in: int, gens: list[torch.Generator]) -> nn.Parameter:
    """A parameter ``(T, *shape)``, slice ``t`` LeCun-normal (truncated, variance 1/fan_in) from ``gens[t]``."""
    return nn.Parameter(torch.stack([truncated_normal(shape, 1.0 / fan_in, g) for g in gens]))


def stacked_zeros(shape: tuple[int, ...], gens: list[torch.Generator]) -> nn.Parameter:
    """A parameter ``(T, *shape)`` of zeros (flax's default bias init)."""
    return nn.Parameter(torch.zeros(len(gens), *shape))


def stacked_init(init: str, shape: tuple[int, ...], fan_in: int, gens: list[torch.Generator], bias: bool = False) -> nn.Parameter:
    """A stacked weight (``bias=False``) or bias of one layer under the scheme ``init``.

    ``lecun_normal``: weights truncated-normal with variance 1/fan_in, biases zero (flax's
    ``Dense`` defaults, as in the reference code). ``torch_uniform``: weights and biases
    U(-1/√fan_in, 1/√fan_in) (PyTorch's ``nn.Linear`` default; bindscale's original initialisation).

    Raises:
        ValueError: unknown scheme.
    """
    if init == "lecun_normal":
        return stacked_zeros(shape, gens) if bias else stacked_lecun_normal(shape, fan_in, gens)
    if init == "torch_uniform":
        return stacked_uniform(shape, linear_bound(fan_in), gens)
    raise ValueError(f"unknown init {init!r}; allowed: lecun_normal, torch_uniform")


def resolve_init(cfg) -> str:
    """The init scheme a model config asks for; ``auto`` resolved by the config's own ``AUTO_INIT`` table
    (model kind → scheme; a study's measured choice), else lecun_normal."""
    if cfg.init != "auto":
        return cfg.init
    return getattr(cfg, "AUTO_INIT", {}).get(getattr(cfg, "kind", None), "lecun_normal")


def linear_bound(fan_in: int) -> float:
    """PyTorch's default ``nn.Linear`` init bound, 1/√fan_in (He et al. 2015 uniform variant)."""
    return 1.0 / math.sqrt(fan_in)


class StackedModel(nn.Module):
    """Base class. Subclasses define ``forward(code, x)`` and ``activation_shapes``.

    Shapes: ``code`` ``(T, B, E)`` encoded task input, ``x`` ``(T, B, S, I)`` inputs,
    output ``(T, B, S, O)``. Every named activation is a :class:`~bindscale.models.hooks.HookPoint`
    submodule (see :meth:`activation_shapes`); read them with
    :func:`~bindscale.models.hooks.run_with_cache`, patch them with
    :func:`~bindscale.models.hooks.run_with_hooks`.
    """

    n_trials: int

    def n_params(self) -> int:
        """Trainable parameters of ONE trial's model (the stack divided by T)."""
        return sum(p[0].numel() for p in self.parameters())

    def activation_shapes(self, B: int, S: int) -> dict[str, tuple[int, ...]]:  # pragma: no cover - abstract
        """Hook name → shape of every hook point for a batch of ``B`` tasks × ``S`` inputs (leading ``T``)."""
        raise NotImplementedError

    def _tower(self, h: torch.Tensor, shape: tuple[int, int, int], hidden_points) -> torch.Tensor:
        """The stack's dense tower (``self.weights`` / ``self.biases``, ``self.activation``) over ``h``
        ``(T, B·S, in)``: the activation after every layer but the last, hidden layer ``i``'s hook point
        (``hidden_points[i]``) seeing a ``(T, B, S, ·)`` view; returns the last layer's output ``(T, B·S, out)``.
        ``shape``: ``(T, B, S)``."""
        T, B, S = shape
        last = len(self.weights) - 1
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            h = torch.baddbmm(b, h, W)
            if i < last:
                # In place for ReLU: baddbmm's backward does not need its output, so no extra tensor per layer.
                h = h.relu_() if self.activation == "relu" else self.act(h)
                hp = hidden_points[i]
                if hp.has_hooks:
                    h = hp(h.view(T, B, S, -1)).reshape(T, B * S, -1)
        return h

    def _member_layers(self, i: int) -> list[Dense]:
        """Trial ``i``'s tower as :class:`Dense` layers (copies), the last without activation.

        Raises:
            IndexError: ``i`` outside the stack.
        """
        if not -self.n_trials <= i < self.n_trials:
            raise IndexError(f"trial {i} of a stack of {self.n_trials}")
        last = len(self.weights) - 1
        return [Dense(W[i], b[i], None if j == last else self.activation)
                for j, (W, b) in enumerate(zip(self.weights, self.biases))]

    def member(self, i: int) -> nn.Module:  # pragma: no cover - abstract
        """Trial ``i`` of the stack as a plain single-trial module (a copy of its weights, same device).

        Its forward takes ``code`` ``(B, E)`` and ``x`` ``(B, S, I)`` and returns ``(B, S, O)``,
        the stack's output for that trial; its hook points carry the stack's names (``hook_input``,
        ``hook_hidden.0`` …, ``hook_output``) and shapes without ``T``, and its layers are
        submodules named ``input``, ``hidden.0`` …, ``output`` (forward hooks read them too).
        """
        raise NotImplementedError


class Dense(nn.Module):
    """``activation(h @ weight + bias)`` over the last dimension of ``h`` (no activation: a readout).

    ``weight`` is ``(in, out)`` (the stacked models' layout, one trial's slice), ``bias`` ``(out,)``.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, activation: str | None = None):
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone())
        self.bias = nn.Parameter(bias.detach().reshape(-1).clone())
        self.activation = activation

    def extra_repr(self) -> str:
        return f"in={self.weight.shape[0]}, out={self.weight.shape[1]}, activation={self.activation}"

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        # The stack's batched product with a stack of one: the same bits as the trial's slice of the stack.
        out = torch.baddbmm(self.bias.view(1, 1, -1), h.reshape(1, -1, h.shape[-1]), self.weight.unsqueeze(0))
        out = out.view(*h.shape[:-1], -1)
        return ACTIVATIONS[self.activation](out) if self.activation else out
