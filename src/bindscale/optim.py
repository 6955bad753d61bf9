"""AdamW over stacked parameters, with per-trial learning rate and weight decay.

The update is AdamW (Loshchilov & Hutter 2019, "Decoupled Weight Decay
Regularization") exactly as ``torch.optim.AdamW`` computes it, except that the
learning rate and weight decay are ``(T,)`` tensors broadcast over each
parameter's leading trial dimension. Adam is elementwise, so trial ``t``'s
update depends only on its own gradients: a stack of trials updates as the
trials would alone. ``tests/unit/test_optim.py`` checks it against
``torch.optim.AdamW``.
"""

from __future__ import annotations

import torch


class StackedAdamW:
    """AdamW for parameters whose dim 0 indexes trials.

    Args:
        params: stacked parameters, each ``(T, ...)``.
        lr, weight_decay: ``(T,)`` per-trial values (or floats, shared).
        betas, eps: as in ``torch.optim.AdamW``.
    """

    def __init__(self, params, lr, weight_decay, betas=(0.9, 0.999), eps=1e-8):
        self.params = [p for p in params]
        if not self.params:
            raise ValueError("StackedAdamW got no parameters")
        T, dev = self.params[0].shape[0], self.params[0].device
        as_t = lambda v: torch.as_tensor(v, dtype=torch.float32, device=dev).expand(T).clone()  # noqa: E731
        self.lr, self.weight_decay = as_t(lr), as_t(weight_decay)
        self.beta1, self.beta2, self.eps = betas[0], betas[1], eps
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.step_count = 0

    @staticmethod
    def _per_trial(v: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return v.view((-1,) + (1,) * (p.dim() - 1))

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.step_count += 1
        bc1 = 1 - self.beta1 ** self.step_count
        bc2_sqrt = (1 - self.beta2 ** self.step_count) ** 0.5
        decay = 1 - self.lr * self.weight_decay  # (T,)
        step_size = -self.lr / bc1  # (T,)
        for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq):
            g = p.grad
            if g is None:
                continue
            p.mul_(self._per_trial(decay, p))
            m.lerp_(g, 1 - self.beta1)
            v.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
            denom = (v.sqrt() / bc2_sqrt).add_(self.eps)
            p.addcmul_(m / denom, self._per_trial(step_size, p))
