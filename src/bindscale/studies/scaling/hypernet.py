"""Hypernetwork over module weight banks: the explicit-binding baseline.

Following Schug et al. ICLR 2024 ("Discovering modular solutions that
generalize compositionally"), the task code is mapped *linearly* to mixing
coefficients ``α`` (one per bank), and every weight and bias of a small target
network is the base value plus the α-weighted sum of ``n_banks`` learned
banks. The target network (``depth`` hidden layers of ``width`` units) is then
applied to x. Binding is explicit: the code can only select and weight modules.

Activation points (B tasks × S inputs, T trials)::

    input      (T, B, E)          task code
    mixing     (T, B, L)          α, L = n_banks
    hidden.i   (T, B, S, width)   target-net hidden layer i
    output     (T, B, S, O)

:meth:`StackedHypernet.member` gives one trial as a plain :class:`Hypernet` (``code``
``(B, E)``, ``x`` ``(B, S, I)``), whose submodules ``input``, ``mixing``, ``hidden.i``
and ``output`` output the same points without the ``T`` dimension.
"""

from __future__ import annotations

import torch
from torch import nn

from bindscale.models.base import ACTIVATIONS, Dense, StackedModel, resolve_init, stacked_init

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

    def activation_shapes(self, B: int, S: int) -> dict[str, tuple[int, ...]]:
        T = self.n_trials
        shapes = {"input": (T, B, self.mix_W.shape[1]), "mixing": (T, B, self.n_banks)}
        shapes |= {f"hidden.{i}": (T, B, S, d) for i, d in enumerate(self.dims[1:-1])}
        shapes["output"] = (T, B, S, self.dims[-1])
        return shapes

    def forward(self, code: torch.Tensor, x: torch.Tensor, acts: dict | None = None) -> torch.Tensor:
        T, B, S, _ = x.shape
        alpha = torch.baddbmm(self.mix_b, code, self.mix_W)  # (T, B, L)
        if acts is not None:
            acts["input"], acts["mixing"] = code, alpha
        h = x
        last = len(self.base_W) - 1
        for i in range(last + 1):
            fan_in, fan_out = self.dims[i], self.dims[i + 1]
            W = torch.bmm(alpha, self.bank_W[i]).view(T, B, fan_in, fan_out) + self.base_W[i].unsqueeze(1)
            b = torch.bmm(alpha, self.bank_b[i]) + self.base_b[i]  # (T, B, out)
            h = torch.matmul(h, W) + b.unsqueeze(2)
            if i < last:
                h = self.act(h)
                if acts is not None:
                    acts[f"hidden.{i}"] = h
        if acts is not None:
            acts["output"] = h
        return h

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

    ``forward(h (B, S, in), alpha (B, L)) -> (B, S, out)``.
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

    def forward(self, h: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        B = alpha.shape[0]
        # Batched products over a stack of one, as the stacked model computes them (the same bits).
        W = torch.bmm(alpha.unsqueeze(0), self.bank_W.unsqueeze(0)).view(B, self.fan_in, self.fan_out) + self.base_W
        b = torch.bmm(alpha.unsqueeze(0), self.bank_b.unsqueeze(0))[0] + self.base_b  # (B, out)
        h = torch.matmul(h, W) + b.unsqueeze(1)
        return ACTIVATIONS[self.activation](h) if self.activation else h


class Hypernet(nn.Module):
    """One trial's hypernetwork (:meth:`StackedHypernet.member`): ``forward(code (B, E), x (B, S, I)) -> (B, S, O)``.

    Submodules, each named after the activation point it outputs::

        input      nn.Identity      (B, E)          task code
        mixing     Dense            (B, L)          α, one coefficient per bank
        hidden.i   GeneratedDense   (B, S, width)   target-net hidden layer i (post-activation)
        output     GeneratedDense   (B, S, O)       target-net readout
    """

    def __init__(self, mixing: Dense, hidden: list[GeneratedDense], output: GeneratedDense):
        super().__init__()
        self.input = nn.Identity()
        self.mixing = mixing
        self.hidden = nn.ModuleList(hidden)
        self.output = output

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        alpha = self.mixing(self.input(code))
        h = x
        for layer in self.hidden:
            h = layer(h, alpha)
        return self.output(h, alpha)
