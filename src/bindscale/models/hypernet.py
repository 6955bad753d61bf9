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
"""

from __future__ import annotations

import torch
from torch import nn

from ..trials import ModelConfig
from .base import ACTIVATIONS, StackedModel, resolve_init, stacked_init


class StackedHypernet(StackedModel):
    def __init__(self, cfg: ModelConfig, code_dim: int, x_dim: int, out_dim: int, n_modules: int, gens):
        super().__init__()
        self.n_trials, self.act = len(gens), ACTIVATIONS[cfg.activation]
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
