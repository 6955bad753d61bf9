"""AdamW over stacked parameters (dim 0 indexes trials): per-trial learning rate, weight decay, state and freezing.

The one per-trial AdamW of the project: the scaling study's stacked MLPs and hypernetworks
(:mod:`bindscale.studies.scaling.optim`) and the stacked transformers of the sequence studies
(:class:`bindscale.train.loop.PerTrialAdamW`, :func:`bindscale.train.loop.fit_stacked_minibatches`) step with it.

The update is AdamW (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization") computed by
PyTorch's own functional kernel (``torch.optim.adamw.adamw``, fused on CPU and CUDA: what
``torch.optim.AdamW(fused=True)`` calls), with one learning rate and weight decay per trial.

**A trial's update does not depend on its stack.** The fused CPU kernel runs a vectorized loop over each
tensor and a scalar loop over its last ``numel % vector width`` elements, and the two loops round
differently. Run over a whole ``(T, ...)`` parameter, which of trial ``t``'s elements land in the scalar
tail depends on ``T``: the same trial then trained alone and in a stack of two differed in the last bits
(measured: width-12 MLP, R² differing by 1e-9), so a resumed sweep, whose stacks can be smaller, did not
reproduce an uninterrupted one bit for bit. Here the kernel runs on each trial's own slice ``p[t]``, the
tensor a trial alone would have, unless the slice is a whole number of :data:`ALIGN` elements and every
trial is updated at one learning rate and weight decay: then no element of any trial is in a tail, and
one call over the whole stacked tensor gives the same bits with fewer kernel launches (decided per
parameter from its per-trial size only, never from ``T``). Once a step updates only some trials (a
frozen, diverged trial) or trials at different rates, every parameter is updated slice by slice from
then on, each trial's step count carried over. ``tests/studies/scaling/test_optim.py`` and
``tests/unit/test_stacked_transformer.py`` check both paths against ``torch.optim.AdamW`` bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch.optim.adamw import adamw

from bindscale.train.speed import fused_optimizer

#: Elements per 64-byte cache line of fp32: the fused CPU kernel's work unit, a
#: multiple of its vector width (16 lanes with AVX-512, 8 with AVX2, 4 with NEON).
ALIGN = 16


def per_trial_floats(v: float | Sequence[float] | torch.Tensor, T: int, name: str) -> list[float]:
    """``T`` floats from one value (shared) or ``T`` values (a sequence or tensor).

    Raises:
        ValueError: neither 1 nor ``T`` values.
    """
    vals = torch.as_tensor(v, dtype=torch.float64).flatten().tolist()
    if len(vals) == 1:
        vals = vals * T
    if len(vals) != T:
        raise ValueError(f"StackedAdamW: {name} has {len(vals)} values for {T} trials")
    return vals


class StackedAdamW:
    """AdamW for parameters whose dim 0 indexes trials (see the module docstring).

    Args:
        params: stacked parameters, each ``(T, ...)``, contiguous; those without ``requires_grad`` are left out.
        lr: the per-trial learning rates :meth:`step` uses when it is given none (a float, sequence or
            tensor; one value is shared).
        weight_decay: per trial, likewise.
        betas, eps: as in ``torch.optim.AdamW``.
        decay_min_dim: weight decay applies to parameters whose per-trial slice has at least this many
            dimensions (0: every parameter, as ``torch.optim.AdamW`` with one group; 2: matrices and
            embeddings only, biases and norms undecayed).
        fused: the fused kernel; None: where :func:`bindscale.train.speed.fused_optimizer` uses it (CPU and
            CUDA; elsewhere the single-tensor loop).

    Attributes:
        whole_params: per parameter, whether it may be updated in one call over the whole stack.
        whole: all of them may.

    Raises:
        ValueError: no parameters, parameters with different ``T``, or ``lr`` / ``weight_decay`` with
            neither 1 nor ``T`` values.
    """

    def __init__(self, params: Iterable[torch.Tensor], lr, weight_decay, betas=(0.9, 0.999), eps: float = 1e-8,
                 *, decay_min_dim: int = 0, fused: bool | None = None):
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("StackedAdamW got no parameters")
        T = self.params[0].shape[0]
        if any(p.shape[0] != T for p in self.params):
            raise ValueError("StackedAdamW: every parameter needs the same leading trial dimension")
        self.n_trials = T
        self.lr, self.weight_decay = per_trial_floats(lr, T, "lr"), per_trial_floats(weight_decay, T, "weight_decay")
        self.beta1, self.beta2, self.eps = betas[0], betas[1], eps
        device = self.params[0].device
        self.fused = fused_optimizer(device) if fused is None else fused
        self.decays = [p.dim() - 1 >= decay_min_dim for p in self.params]
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.contiguous_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.contiguous_format) for p in self.params]
        self.whole_params = [p[0].numel() % ALIGN == 0 and len(set(zip(self.lr, self.weight_decay))) == 1
                             for p in self.params]
        self.whole = all(self.whole_params)
        # The kernel's step counts (fp32 scalars, as torch.optim.AdamW's): one per parameter while it is
        # updated whole, one per (parameter, trial) once sliced (carried over at the switch).
        self._whole_steps = [torch.zeros((), dtype=torch.float32, device=p.device) for p in self.params]
        self._trial_steps = [[torch.zeros((), dtype=torch.float32, device=p.device) for _ in range(T)]
                             for p in self.params]
        self._sliced = False  # set for good by the first step that cannot go whole
        self._plans: dict[tuple, list] = {}

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _go_sliced(self) -> None:
        """From now on every parameter by slices: trial step counts take over the whole-tensor ones."""
        for i, whole in enumerate(self.whole_params):
            if whole:
                for s in self._trial_steps[i]:
                    s.copy_(self._whole_steps[i])
        self._sliced = True
        self._plans.clear()

    def _plan(self, partition: tuple[tuple[int, ...], ...]) -> list:
        """Per trial group of ``partition``, per decay flag: the units ``(parameter, trial or None for the
        whole tensor)`` and their parameter, moment and step-count views (cached per partition)."""
        if partition not in self._plans:
            plans = []
            for trials in partition:
                for decayed in (True, False):
                    units = [(i, None) if (self.whole_params[i] and not self._sliced) else (i, t)
                             for i in range(len(self.params)) if self.decays[i] == decayed
                             for t in ([None] if (self.whole_params[i] and not self._sliced) else trials)]
                    if not units:
                        continue
                    view = lambda xs, i, t: xs[i] if t is None else xs[i][t]  # noqa: E731
                    plans.append((trials, decayed, units, [view(self.params, i, t) for i, t in units],
                                  [view(self.exp_avg, i, t) for i, t in units],
                                  [view(self.exp_avg_sq, i, t) for i, t in units],
                                  [self._whole_steps[i] if t is None else self._trial_steps[i][t] for i, t in units]))
            self._plans[partition] = plans
        return self._plans[partition]

    @torch.no_grad()
    def step(self, lrs: Sequence[float] | None = None, trials: Sequence[int] | None = None) -> None:
        """One AdamW step of ``trials`` (default: all; the others untouched, their state too), trial ``t``
        at learning rate ``lrs[t]`` (default: the constructor's ``lr``); parameters without a gradient are
        left alone."""
        T = self.n_trials
        lrs = self.lr if lrs is None else [float(x) for x in lrs]
        trials = range(T) if trials is None else trials
        groups: dict[tuple[float, float], list[int]] = {}
        for t in trials:
            groups.setdefault((lrs[t], self.weight_decay[t]), []).append(t)
        if not self._sliced and any(self.whole_params) and (len(groups) != 1 or len(trials) != T):
            self._go_sliced()
        keys = list(groups)
        partition = tuple(tuple(groups[k]) for k in keys)
        # Per-trial views only of the gradients updated by slices (none on the whole path).
        grads = [None if p.grad is None else (p.grad, None if (w and not self._sliced) else p.grad.unbind(0))
                 for p, w in zip(self.params, self.whole_params)]
        for trial_group, decayed, units, ps, ms, vs, steps in self._plan(partition):
            lr, wd = keys[partition.index(trial_group)]
            keep = [k for k, (i, _) in enumerate(units) if grads[i] is not None]
            if not keep:
                continue
            gs = [grads[i][0] if t is None else grads[i][1][t] for i, t in (units[k] for k in keep)]
            if len(keep) < len(units):
                ps, ms, vs, steps = ([xs[k] for k in keep] for xs in (ps, ms, vs, steps))
            adamw(ps, gs, ms, vs, [], steps, fused=self.fused, foreach=None if self.fused else False,
                  amsgrad=False, beta1=self.beta1, beta2=self.beta2, lr=lr,
                  weight_decay=wd if decayed else 0.0, eps=self.eps, maximize=False)
