"""Plain MLP student, stacked over trials.

Input is the task code concatenated with x; ``depth`` hidden layers of
``width`` units; a linear readout. Stacked over trials: every weight has a
leading trial dimension and layers are batched matmuls (``torch.baddbmm``).

Hook points (:mod:`bindscale.models.hooks`; batch of B tasks × S inputs, T trials,
E code features, I input features, O outputs)::

    hook_input      (T, B, S, E + I)   code ‖ x
    hook_hidden.i   (T, B, S, width)   post-activation of hidden layer i, i = 0..depth-1
    hook_output     (T, B, S, O)       linear readout (the model's output)

:meth:`StackedMLP.member` gives one trial as a plain :class:`MLP` (``code`` ``(B, E)``,
``x`` ``(B, S, I)``) with the same hook points without the ``T`` dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from bindscale.models.base import ACTIVATIONS, StackedModel, resolve_init, stacked_init
from bindscale.models.hooks import HookPoint


@dataclass(frozen=True)
class MLPConfig:
    """What :class:`StackedMLP` reads of a model config; a study may pass its own config with these fields."""

    width: int
    depth: int
    activation: str = "relu"
    init: str = "lecun_normal"


class StackedMLP(StackedModel):
    # cfg: a study's model config with ``width``, ``depth``, ``activation`` and ``init`` (resolve_init).
    def __init__(self, cfg, code_dim: int, x_dim: int, out_dim: int, n_modules: int, gens):
        super().__init__()
        self.n_trials, self.act = len(gens), ACTIVATIONS[cfg.activation]
        self.activation = cfg.activation
        init = resolve_init(cfg)
        self.dims = [code_dim + x_dim] + [cfg.width] * cfg.depth + [out_dim]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(self.dims[:-1], self.dims[1:]):
            # (T, in, out): x @ W without a transpose in the hot loop.
            self.weights.append(stacked_init(init, (fan_in, fan_out), fan_in, gens))
            self.biases.append(stacked_init(init, (1, fan_out), fan_in, gens, bias=True))
        self.hook_input = HookPoint()
        self.hook_hidden = nn.ModuleList(HookPoint() for _ in range(cfg.depth))
        self.hook_output = HookPoint()
        # Plain (unregistered) references for the training step: a registered submodule's attribute
        # lookup and ModuleList indexing cost ~1 µs each, several times the idle HookPoint itself.
        self._points = (self.hook_input, tuple(self.hook_hidden), self.hook_output)

    def activation_shapes(self, B: int, S: int) -> dict[str, tuple[int, ...]]:
        T = self.n_trials
        shapes = {"hook_input": (T, B, S, self.dims[0])}
        shapes |= {f"hook_hidden.{i}": (T, B, S, d) for i, d in enumerate(self.dims[1:-1])}
        shapes["hook_output"] = (T, B, S, self.dims[-1])
        return shapes

    def forward(self, code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        T, B, S, _ = x.shape
        h = torch.cat([code.unsqueeze(2).expand(T, B, S, code.shape[-1]), x], dim=-1).reshape(T, B * S, -1)
        hp_input, hp_hidden, hp_output = self._points
        # Points see (T, B, S, ·) views; a hook that replaces one is reshaped back to (T, B·S, ·).
        if hp_input.has_hooks:
            h = hp_input(h.view(T, B, S, -1)).reshape(T, B * S, -1)
        h = self._tower(h, (T, B, S), hp_hidden)
        return hp_output(h.view(T, B, S, -1))

    def member(self, i: int) -> "MLP":
        """Trial ``i`` as a plain :class:`MLP` (a copy of its weights)."""
        layers = self._member_layers(i)
        return MLP(layers[:-1], layers[-1])


class MLP(nn.Module):
    """One trial's MLP (:meth:`StackedMLP.member`): ``forward(code (B, E), x (B, S, I)) -> (B, S, O)``.

    Submodules, each named after the activation point it outputs::

        input      nn.Identity  (B, S, E + I)   code ‖ x
        hidden.i   Dense        (B, S, width)   post-activation of hidden layer i
        output     Dense        (B, S, O)       linear readout

    Hook points, as :class:`StackedMLP`'s without ``T``: ``hook_input`` ``(B, S, E + I)``,
    ``hook_hidden.i`` ``(B, S, width)``, ``hook_output`` ``(B, S, O)``.

    Parameters ``hidden.i.weight`` ``(in, out)``, ``hidden.i.bias``, ``output.weight``, ``output.bias``.
    """

    def __init__(self, hidden: list[Dense], output: Dense):
        super().__init__()
        self.input = nn.Identity()
        self.hidden = nn.ModuleList(hidden)
        self.output = output
        self.hook_input = HookPoint()
        self.hook_hidden = nn.ModuleList(HookPoint() for _ in hidden)
        self.hook_output = HookPoint()

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        B, S, _ = x.shape
        h = self.hook_input(self.input(torch.cat([code.unsqueeze(1).expand(B, S, code.shape[-1]), x], dim=-1)))
        for layer, hp in zip(self.hidden, self.hook_hidden):
            h = hp(layer(h))
        return self.hook_output(self.output(h))
