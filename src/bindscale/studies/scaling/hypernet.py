"""Hypernetwork over module weight banks: the explicit-binding baseline.

Following Schug et al. ICLR 2024 ("Discovering modular solutions that
generalize compositionally"), the task code is mapped *linearly* to mixing
coefficients ``α`` (one per bank), and every weight and bias of a small target
network is the base value plus the α-weighted sum of ``n_banks`` learned
banks. The target network (``depth`` hidden layers of ``width`` units) is then
applied to x. Binding is explicit: the code can only select and weight modules.

Hook points (:mod:`bindscale.models.hooks`; B tasks × S inputs, T trials, E code
features, ``d_i`` the target net's layer widths: ``d_0 = I`` inputs, ``width`` hidden,
``d_{depth+1} = O`` outputs; ``j = 0..depth`` runs over the target net's layers)::

    hook_input      (T, B, E)               task code
    hook_mixing     (T, B, L)               α, L = n_banks
    hook_weights.j  (T, B, d_j, d_{j+1})    generated weights of layer j (base + Σ α_l bank_l)
    hook_biases.j   (T, B, d_{j+1})         generated biases of layer j
    hook_hidden.i   (T, B, S, width)        target-net hidden layer i (post-activation), i = 0..depth-1
    hook_output     (T, B, S, O)            target-net readout (the model's output)

:meth:`StackedHypernet.member` gives one trial as a plain :class:`Hypernet` (``code``
``(B, E)``, ``x`` ``(B, S, I)``) with the same hook points without the ``T`` dimension.
"""

from __future__ import annotations

import torch
from torch import nn

from bindscale.models.base import ACTIVATIONS, Dense, StackedModel, resolve_init, stacked_init
from bindscale.models.hooks import HookPoint

from .config import ModelConfig


class StackedHypernet(StackedModel):
    def __init__(self, cfg: ModelConfig, code_dim: int, x_dim: int, out_dim: int, n_modules: int, gens):
        super().__init__()
        self.n_trials, self.act = len(gens), ACTIVATIONS[cfg.activation]
        self.activation = cfg.activation
        init = resolve_init(cfg)
        self.n_banks = L = cfg.n_banks or n_modules
        self.dims = [x_dim] + [cfg.width] * cfg.depth + [out_dim]
        self.mix_W = stacked_init(init, (code_dim, L), code_dim, gens)
        self.mix_b = stacked_init(init, (1, L), code_dim, gens, bias=True)
        self.base_W, self.base_b = nn.ParameterList(), nn.ParameterList()
        self.bank_W, self.bank_b = nn.ParameterList(), nn.ParameterList()
        for fan_in, fan_out in zip(self.dims[:-1], self.dims[1:]):
            self.base_W.append(stacked_init(init, (fan_in, fan_out), fan_in, gens))
            self.base_b.append(stacked_init(init, (1, fan_out), fan_in, gens, bias=True))
            # Banks (weights and biases alike) start at the scale of the base weights, so α
            # moves the generated weights and biases from step one.
            self.bank_W.append(stacked_init(init, (L, fan_in * fan_out), fan_in, gens))
            self.bank_b.append(stacked_init(init, (L, fan_out), fan_in, gens))
        _add_hook_points(self, cfg.depth)

    def activation_shapes(self, B: int, S: int) -> dict[str, tuple[int, ...]]:
        T = self.n_trials
        shapes = {"hook_input": (T, B, self.mix_W.shape[1]), "hook_mixing": (T, B, self.n_banks)}
        shapes |= {f"hook_weights.{j}": (T, B, i, o) for j, (i, o) in enumerate(zip(self.dims[:-1], self.dims[1:]))}
        shapes |= {f"hook_biases.{j}": (T, B, o) for j, o in enumerate(self.dims[1:])}
        shapes |= {f"hook_hidden.{i}": (T, B, S, d) for i, d in enumerate(self.dims[1:-1])}
        shapes["hook_output"] = (T, B, S, self.dims[-1])
        return shapes

    def forward(self, code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        T, B, S, _ = x.shape
        hp_input, hp_mixing, hp_weights, hp_biases, hp_hidden, hp_output = self._points
        code = hp_input(code)
        alpha = hp_mixing(torch.baddbmm(self.mix_b, code, self.mix_W))  # (T, B, L)
        h = x
        last = len(self.base_W) - 1
        for i in range(last + 1):
            fan_in, fan_out = self.dims[i], self.dims[i + 1]
            W = torch.bmm(alpha, self.bank_W[i]).view(T, B, fan_in, fan_out) + self.base_W[i].unsqueeze(1)
            b = torch.bmm(alpha, self.bank_b[i]) + self.base_b[i]  # (T, B, out)
            W, b = hp_weights[i](W), hp_biases[i](b)
            h = torch.matmul(h, W) + b.unsqueeze(2)
            if i < last:
                h = hp_hidden[i](self.act(h))
        return hp_output(h)

    def member(self, i: int) -> "Hypernet":
        """Trial ``i`` as a plain :class:`Hypernet` (a copy of its weights)."""
        if not -self.n_trials <= i < self.n_trials:
            raise IndexError(f"trial {i} of a stack of {self.n_trials}")
        last = len(self.base_W) - 1
        layers = [GeneratedDense(self.base_W[j][i], self.base_b[j][i], self.bank_W[j][i], self.bank_b[j][i],
                                 None if j == last else self.activation) for j in range(last + 1)]
        return Hypernet(Dense(self.mix_W[i], self.mix_b[i]), layers[:-1], layers[-1])


class GeneratedDense(nn.Module):
    """A target-network layer whose weights the mixing ``α`` generates:
    ``activation(h @ (base_W + Σ_l α_l bank_W[l]) + base_b + Σ_l α_l bank_b[l])``.

    ``forward(h (B, S, in), alpha (B, L)) -> (B, S, out)``; ``hook_W``/``hook_b`` (optional
    :class:`HookPoint`) see the generated weights ``(B, in, out)`` and biases ``(B, out)``.
    """

    def __init__(self, base_W, base_b, bank_W, bank_b, activation: str | None = None):
        super().__init__()
        self.fan_in, self.fan_out = base_W.shape
        self.base_W = nn.Parameter(base_W.detach().clone())  # (in, out)
        self.base_b = nn.Parameter(base_b.detach().reshape(-1).clone())  # (out,)
        self.bank_W = nn.Parameter(bank_W.detach().clone())  # (L, in·out)
        self.bank_b = nn.Parameter(bank_b.detach().clone())  # (L, out)
        self.activation = activation

    def extra_repr(self) -> str:
        return f"in={self.fan_in}, out={self.fan_out}, banks={self.bank_W.shape[0]}, activation={self.activation}"

    def forward(self, h: torch.Tensor, alpha: torch.Tensor, hook_W: HookPoint | None = None,
                hook_b: HookPoint | None = None) -> torch.Tensor:
        B = alpha.shape[0]
        # Batched products over a stack of one, as the stacked model computes them (the same bits).
        W = torch.bmm(alpha.unsqueeze(0), self.bank_W.unsqueeze(0)).view(B, self.fan_in, self.fan_out) + self.base_W
        b = torch.bmm(alpha.unsqueeze(0), self.bank_b.unsqueeze(0))[0] + self.base_b  # (B, out)
        if hook_W is not None:
            W, b = hook_W(W), hook_b(b)
        h = torch.matmul(h, W) + b.unsqueeze(1)
        return ACTIVATIONS[self.activation](h) if self.activation else h


class Hypernet(nn.Module):
    """One trial's hypernetwork (:meth:`StackedHypernet.member`): ``forward(code (B, E), x (B, S, I)) -> (B, S, O)``.

    Submodules, each named after the activation point it outputs::

        input      nn.Identity      (B, E)          task code
        mixing     Dense            (B, L)          α, one coefficient per bank
        hidden.i   GeneratedDense   (B, S, width)   target-net hidden layer i (post-activation)
        output     GeneratedDense   (B, S, O)       target-net readout

    Hook points, as :class:`StackedHypernet`'s without ``T``: ``hook_input`` ``(B, E)``,
    ``hook_mixing`` ``(B, L)``, ``hook_weights.j`` ``(B, d_j, d_{j+1})``, ``hook_biases.j``
    ``(B, d_{j+1})``, ``hook_hidden.i`` ``(B, S, width)``, ``hook_output`` ``(B, S, O)``.
    """

    def __init__(self, mixing: Dense, hidden: list[GeneratedDense], output: GeneratedDense):
        super().__init__()
        self.input = nn.Identity()
        self.mixing = mixing
        self.hidden = nn.ModuleList(hidden)
        self.output = output
        _add_hook_points(self, len(hidden))

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        alpha = self.hook_mixing(self.mixing(self.hook_input(self.input(code))))
        h = x
        for i, layer in enumerate(self.hidden):
            h = self.hook_hidden[i](layer(h, alpha, self.hook_weights[i], self.hook_biases[i]))
        return self.hook_output(self.output(h, alpha, self.hook_weights[-1], self.hook_biases[-1]))


def _add_hook_points(model: nn.Module, depth: int) -> None:
    """The hook points of a hypernetwork with ``depth`` hidden layers (stacked or one trial)."""
    model.hook_input, model.hook_mixing = HookPoint(), HookPoint()
    model.hook_weights = nn.ModuleList(HookPoint() for _ in range(depth + 1))
    model.hook_biases = nn.ModuleList(HookPoint() for _ in range(depth + 1))
    model.hook_hidden = nn.ModuleList(HookPoint() for _ in range(depth))
    model.hook_output = HookPoint()
    # Plain (unregistered) references for the training step: a registered submodule's attribute
    # lookup and ModuleList indexing cost ~1 µs each, several times the idle HookPoint itself.
    model._points = (model.hook_input, model.hook_mixing, tuple(model.hook_weights), tuple(model.hook_biases),
                     tuple(model.hook_hidden), model.hook_output)
