"""AdamW over stacked parameters, with per-trial learning rate and weight decay.

The update is AdamW (Loshchilov & Hutter 2019, "Decoupled Weight Decay
Regularization") computed by PyTorch's fused AdamW kernel
(``torch.optim.adamw.adamw(..., fused=True)``), with one learning rate and
weight decay per trial.

**A trial's update does not depend on its stack.** The fused CPU kernel
runs a vectorized loop over each tensor and a scalar loop over its last
``numel % vector width`` elements, and the two loops round differently. Run
over a whole ``(T, ...)`` parameter, which of trial ``t``'s elements land in
the scalar tail depends on ``T``: the same trial then trained alone and in a
stack of two differed in the last bits (measured: width-12 MLP, R² differing
by 1e-9), so a resumed sweep, whose stacks can be smaller, did not reproduce
an uninterrupted one bit for bit. Here the kernel runs on each trial's own
slice ``p[t]``, the tensor a trial alone would have, unless the slice is a
whole number of :data:`ALIGN` elements and all trials share learning rate and
weight decay: then no element of any trial is in a tail, and one call over
the whole stacked tensor gives the same bits with fewer kernel launches (decided
per parameter, from its per-trial size only, never from ``T``).
``tests/studies/scaling/test_optim.py`` checks both against ``torch.optim.AdamW``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch.optim.adamw import adamw

#: Elements per 64-byte cache line of fp32: the fused CPU kernel's work unit, a
#: multiple of its vector width (16 lanes with AVX-512, 8 with AVX2, 4 with NEON).
ALIGN = 16


def _floats(v: float | Sequence[float] | torch.Tensor, T: int, name: str) -> list[float]:
    vals = torch.as_tensor(v, dtype=torch.float64).flatten().tolist()
    if len(vals) == 1:
        vals = vals * T
    if len(vals) != T:
        raise ValueError(f"StackedAdamW: {name} has {len(vals)} values for {T} trials")
    return vals


class StackedAdamW:
    """AdamW for parameters whose dim 0 indexes trials.

    Args:
        params: stacked parameters, each ``(T, ...)``, contiguous.
        lr, weight_decay: ``(T,)`` per-trial values (a float, sequence or tensor; one value is shared).
        betas, eps: as in ``torch.optim.AdamW``.

    Raises:
        ValueError: no parameters, parameters with different ``T``, or ``lr`` /
            ``weight_decay`` with neither 1 nor ``T`` values.
    """

    def __init__(self, params: Iterable[torch.Tensor], lr, weight_decay, betas=(0.9, 0.999), eps=1e-8):
        self.params = list(params)
        if not self.params:
            raise ValueError("StackedAdamW got no parameters")
        T = self.params[0].shape[0]
        if any(p.shape[0] != T for p in self.params):
            raise ValueError("StackedAdamW: every parameter needs the same leading trial dimension")
        self.n_trials = T
        self.lr, self.weight_decay = _floats(lr, T, "lr"), _floats(weight_decay, T, "weight_decay")
        self.beta1, self.beta2, self.eps = betas[0], betas[1], eps
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.contiguous_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.contiguous_format) for p in self.params]
        # Trials sharing (lr, weight decay) are updated by one kernel call. With one such group, a
        # parameter whose per-trial size is a whole number of ALIGN elements goes in whole.
        groups: dict[tuple[float, float], list[int]] = {}
        for t, key in enumerate(zip(self.lr, self.weight_decay)):
            groups.setdefault(key, []).append(t)
        self.groups = list(groups.items())
        self.whole_params = [len(self.groups) == 1 and p[0].numel() % ALIGN == 0 for p in self.params]
        self.whole = all(self.whole_params)
        # Per group: (parameter index, trial or None for the whole tensor), its views, and the fused
        # kernel's step count for each updated tensor (fp32 scalar, on the parameter's device).
        self._plan = []
        for _, trials in self.groups:
            units = [(i, None) if self.whole_params[i] else (i, t)
                     for i in range(len(self.params)) for t in ([None] if self.whole_params[i] else trials)]
            view = lambda xs, i, t: xs[i] if t is None else xs[i][t]  # noqa: E731
            self._plan.append((units, [view(self.params, i, t) for i, t in units],
                               [view(self.exp_avg, i, t) for i, t in units],
                               [view(self.exp_avg_sq, i, t) for i, t in units],
                               [torch.zeros((), dtype=torch.float32, device=self.params[i].device) for i, _ in units]))

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One AdamW step for every trial; parameters without a gradient are left alone."""
        # Per-trial views only of the gradients that are updated per trial (none on the common path).
        grads = [None if p.grad is None else (p.grad, None if whole else p.grad.unbind(0))
                 for p, whole in zip(self.params, self.whole_params)]
        for ((lr, wd), _), (units, ps, ms, vs, steps) in zip(self.groups, self._plan):
            keep = [k for k, (i, _) in enumerate(units) if grads[i] is not None]
            if not keep:
                continue
            gs = [grads[i][0] if t is None else grads[i][1][t] for i, t in (units[k] for k in keep)]
            if len(keep) < len(units):
                ps, ms, vs, steps = ([xs[k] for k in keep] for xs in (ps, ms, vs, steps))
            self._fused(ps, gs, ms, vs, steps, lr, wd)

    def _fused(self, ps, gs, ms, vs, steps, lr: float, wd: float) -> None:
        adamw(ps, gs, ms, vs, [], steps, fused=True, amsgrad=False, beta1=self.beta1, beta2=self.beta2,
              lr=lr, weight_decay=wd, eps=self.eps, maximize=False)
