"""One training step of the scaling study's stacked students: the per-trial AdamW (:func:`make_optimizer`),
per-trial clipping and the masking of diverged trials (:func:`clip_and_mask`), and the step timer built
from them (:func:`stack_step_timer`), which the trainer's thread choice
(:func:`bindscale.studies.scaling.trial.intra_op_threads`) and the planner's step timer
(:func:`bindscale.studies.scaling.plan.stack_step_seconds`) read. Its own module so that :mod:`.plan`
reaches the timer without importing :mod:`.trial` (which imports :mod:`.plan` to group its trials)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from bindscale.kit import step_timer
from bindscale.models import StackedModel

from .config import TrialConfig
from .optim import StackedAdamW
from .students import build_model
from .tasks.encodings import encoding_dim


def make_optimizer(model: StackedModel, cfgs: list) -> StackedAdamW:
    """AdamW for a stack, with each trial's learning rate and weight decay (PyTorch's fused
    kernel; a trial's update is the same bits whatever its stack: :mod:`bindscale.studies.scaling.optim`)."""
    return StackedAdamW(model.parameters(), lr=[c.lr for c in cfgs], weight_decay=[c.weight_decay for c in cfgs])


def clip_and_mask(model: StackedModel, alive: torch.Tensor, max_norm: torch.Tensor | None) -> None:
    """Per-trial gradient-norm clipping to ``max_norm`` ``(T,)`` (inf or None = off); diverged trials get zero gradients.

    On the CPU, where reading a flag costs nothing, passes that would change
    nothing are skipped; on CUDA every pass runs, so the loop never syncs.
    """
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    shape = lambda g: (-1,) + (1,) * (g.dim() - 1)  # noqa: E731
    lazy = grads[0].device.type == "cpu"
    # where(), not a multiply: 0 · NaN would still be NaN.
    if not (lazy and bool(alive.all())):
        for g in grads:
            torch.where(alive.view(shape(g)), g, torch.zeros((), dtype=g.dtype, device=g.device), out=g)
    if max_norm is None:
        return
    # Each trial's norm from its own slices, summed over parameters in a fixed order: a
    # reduction over a (T, n) tensor may sum in another order than over the (n,) a trial
    # alone has, and a trial's numbers must not depend on its stack (bindscale.studies.scaling.optim).
    T = grads[0].shape[0]
    sq = torch.stack(torch._foreach_norm([s for g in grads for s in g.unbind(0)])).view(len(grads), T).square()
    total = sq[0].clone()
    for row in sq[1:]:
        total += row
    norm = total.sqrt()
    scale = (max_norm / (norm + 1e-6)).clamp(max=1.0)
    if lazy and bool((scale == 1.0).all()):
        return
    for g in grads:
        g.mul_(scale.view(shape(g)))


def _stack_stepper(trials: list[TrialConfig]) -> Callable[[], None]:
    """One training step of ``trials`` stacked (forward, backward, clipping, AdamW) on fixed random data
    of their shapes, as a closure: what the step timers time. Touches no global random stream."""
    cfg, T = trials[0], len(trials)
    t = cfg.task
    code_dim = encoding_dim(t.encoding, t.M, t.K, (t.input_dim, t.output_dim), t.n_shots)
    gens = [torch.Generator().manual_seed(i) for i in range(T)]
    model = build_model(cfg.model, code_dim, t.input_dim, t.output_dim, t.M, gens)
    opt = make_optimizer(model, [x.train for x in trials])
    clip = torch.ones(T) if cfg.train.grad_clip is not None else None
    alive = torch.ones(T, dtype=torch.bool)
    B, S = cfg.train.batch_tasks, t.samples_per_task
    g = torch.Generator().manual_seed(0)
    code, x, y = (torch.rand(T, B, code_dim, generator=g), torch.rand(T, B, S, t.input_dim, generator=g),
                  torch.rand(T, B, S, t.output_dim, generator=g))

    def step() -> None:
        loss = (model(code, x) - y).pow(2).mean(dim=(1, 2, 3)).sum()
        opt.zero_grad()
        loss.backward()
        clip_and_mask(model, alive, clip)
        opt.step()

    return step


def stack_step_timer(trials: list[TrialConfig]) -> Callable[[int, int], float]:
    """``timer(n, k)``: seconds of ``k`` training steps of ``trials`` stacked at ``n`` torch threads,
    here and now, after one untimed step at ``n`` threads (:func:`_stack_stepper`; the process's thread
    setting is restored after each call)."""
    return step_timer(_stack_stepper(trials))  # bindscale.train.speed
