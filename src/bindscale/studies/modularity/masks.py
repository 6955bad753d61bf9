"""Weight masks found by continuous sparsification (Savarese, Silva, Maire, NeurIPS
2020, "Winning the Lottery with Continuous Sparsification"), as used by Lepori,
Serre, Pavlick, NeurIPS 2023, "Break It Down" to find the subnetwork that
computes one subroutine.

The base model stays frozen. Every weight ``w`` of the chosen parameters gets a
mask logit ``s``; the forward pass uses ``w · sigmoid(β s)`` through
:func:`torch.func.functional_call`, and the logits minimise

    task loss  +  λ · Σ sigmoid(β s) / n_masked

(BCE with logits for one output, cross entropy for several). The penalty is
the L0 relaxation of the paper, divided by the number of masked weights so
that ``λ`` is the price, in nats of task loss, of keeping *every* weight — the
same ``λ`` means the same thing at any width. ``β`` grows geometrically from
``beta_start`` to ``beta_end`` (×200 by default) so the soft mask ends
effectively binary; at evaluation the mask is hard: keep ``w`` where ``s > 0``.

Calling convention. ``forward_fn(f, inputs) -> logits`` runs a model-like
callable ``f`` (same signature as ``model.forward``) on a batch and returns
logits ``(N,)`` (binary; ``(N, 1)`` is squeezed) or ``(N, C)``. It lets one
search serve any architecture: ``lambda f, x: f(x)`` for a plain module;
for bindscale's stacked models (a leading trial dimension ``T = 1``)
``lambda f, x: f(x[None], x.new_zeros(1, len(x), 1, 0)).reshape(-1)``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call

ForwardFn = Callable[[Callable[..., torch.Tensor], torch.Tensor], torch.Tensor]
Data = tuple[torch.Tensor, torch.Tensor]
MODES = ("soft", "hard", "complement")


def default_forward(f: Callable[..., torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
    """``f(inputs)``: the forward function of a module that takes one input tensor."""
    return f(inputs)


def beta_schedule(step: int, steps: int, beta_start: float = 1.0, beta_end: float = 200.0) -> float:
    """Temperature ``β`` at ``step`` (0-based) of ``steps``: geometric from ``beta_start`` to ``beta_end``.

    ``β_t = beta_start · (beta_end / beta_start)^(t / (steps − 1))``: the last step
    uses exactly ``beta_end``; a single step uses ``beta_end``. (Savarese et al.
    multiply β by a constant factor per epoch; this is the same curve per step.)

    Raises:
        ValueError: ``steps < 1`` or a non-positive temperature.
    """
    if steps < 1:
        raise ValueError(f"steps={steps} must be at least 1")
    if beta_start <= 0 or beta_end <= 0:
        raise ValueError(f"temperatures must be positive (beta_start={beta_start}, beta_end={beta_end})")
    if steps == 1:
        return float(beta_end)
    return float(beta_start * (beta_end / beta_start) ** (step / (steps - 1)))


class MaskedModel(nn.Module):
    """A frozen base model plus one mask logit per weight of ``param_names``.

    The base model is *not* registered as a submodule: ``parameters()`` are the
    mask logits only, so an optimiser built on them cannot touch the base
    weights, and the base weights enter the forward pass detached.

    Args:
        model: the base model (left unmodified).
        param_names: names from ``model.named_parameters()`` to mask.
        init_logit: initial value of every logit ``s`` (soft mask ``sigmoid(β s)``).

    Raises:
        ValueError: ``param_names`` is empty, has duplicates or names no parameter of ``model``.
    """

    def __init__(self, model: nn.Module, param_names: list[str], init_logit: float = 0.5):
        super().__init__()
        named = dict(model.named_parameters())
        names = list(param_names)
        if not names:
            raise ValueError("param_names is empty: nothing to mask")
        if len(set(names)) != len(names):
            raise ValueError(f"param_names has duplicates: {names}")
        unknown = [n for n in names if n not in named]
        if unknown:
            raise ValueError(f"no parameter named {unknown} in the model; known: {', '.join(named)}")
        object.__setattr__(self, "base", model)  # deliberately not a submodule (see above)
        self.param_names = names
        self.logits = nn.ParameterList(
            [nn.Parameter(torch.full_like(named[n], float(init_logit), requires_grad=True)) for n in names]
        )
        self.beta = 1.0

    @property
    def n_masked(self) -> int:
        """Number of masked weights."""
        return sum(s.numel() for s in self.logits)

    def soft_masks(self, beta: float | None = None) -> dict[str, torch.Tensor]:
        """``sigmoid(β s)`` per parameter (β defaults to the current ``self.beta``)."""
        b = self.beta if beta is None else beta
        return {n: torch.sigmoid(b * s) for n, s in zip(self.param_names, self.logits)}

    def hard_masks(self) -> dict[str, torch.Tensor]:
        """Boolean mask ``s > 0`` per parameter (same shape as the parameter)."""
        return {n: (s > 0).detach().clone() for n, s in zip(self.param_names, self.logits)}

    def penalty(self) -> torch.Tensor:
        """Mean soft mask ``Σ sigmoid(β s) / n_masked`` (a scalar in [0, 1])."""
        return sum(m.sum() for m in self.soft_masks().values()) / self.n_masked

    def forward(self, *args, mode: str = "soft", **kwargs):
        """Run the base model with masked weights.

        Args:
            mode: "soft" (``w · sigmoid(β s)``, differentiable in ``s``), "hard"
                (``w · [s > 0]``) or "complement" (``w · [s ≤ 0]``, the ablation).

        Raises:
            ValueError: unknown mode.
        """
        if mode not in MODES:
            raise ValueError(f"unknown mask mode {mode!r}; allowed: {MODES}")
        if mode == "soft":
            masks = self.soft_masks()
        else:
            hard = {n: (s > 0).to(s.dtype) for n, s in zip(self.param_names, self.logits)}
            masks = hard if mode == "hard" else {n: 1 - m for n, m in hard.items()}
        return functional_call(self.base, _masked_params(self.base, masks), args, kwargs)


@dataclass
class MaskResult:
    """Outcome of one mask search.

    Attributes:
        masks: hard masks, name → bool tensor shaped like the parameter (True = kept).
        logits: final mask logits ``s`` (detached).
        beta_end: the final temperature.
        density: kept fraction of all masked weights.
        densities: kept fraction per parameter.
        loss: objective on the last step (soft mask at ``beta_end``: task loss + λ·penalty).
        task_loss: task loss of the hard-masked model on the whole search data.
        accuracy: accuracy of the hard-masked model on the whole search data.
    """

    masks: dict[str, torch.Tensor]
    logits: dict[str, torch.Tensor]
    beta_end: float
    density: float
    densities: dict[str, float]
    loss: float
    task_loss: float
    accuracy: float

    def soft_masks(self, beta: float | None = None) -> dict[str, torch.Tensor]:
        """``sigmoid(β s)`` per parameter, at ``beta_end`` by default."""
        b = self.beta_end if beta is None else beta
        return {n: torch.sigmoid(b * s) for n, s in self.logits.items()}

    def binary_fraction(self, tol: float = 1e-2) -> float:
        """Fraction of weights whose soft mask at ``beta_end`` is within ``tol`` of the hard mask."""
        soft = self.soft_masks()
        close = sum(int(((soft[n] - self.masks[n].to(soft[n].dtype)).abs() <= tol).sum()) for n in soft)
        return close / sum(m.numel() for m in self.masks.values())


def find_mask(
    model: nn.Module,
    param_names: list[str],
    forward_fn: ForwardFn | None,
    data: Data,
    *,
    lambda_l0: float = 1.0,
    steps: int = 1000,
    lr: float = 0.05,
    beta_start: float = 1.0,
    beta_end: float = 200.0,
    init_logit: float = 0.5,
    batch_size: int | None = None,
    generator: torch.Generator | None = None,
) -> MaskResult:
    """Search a binary weight mask under which ``model`` solves ``data``.

    Adam (learning rate ``lr``) on the mask logits only, for ``steps`` steps,
    with ``β`` from :func:`beta_schedule`. The model is put in eval mode during
    the search (dropout off) and its flags are restored afterwards; its weights,
    gradients and ``requires_grad`` flags are never touched.

    Defaults come from a pilot on the compound task (3-hidden-layer ReLU MLPs of
    width 64 and 256 trained to 100%): ``lambda_l0 = 1`` gave 100% subroutine
    accuracy at ~8–20% density where ``1e-2`` kept over half the weights. Use
    1000–2000 steps with ``batch_size=256``: at width 256, 300–600 steps left
    masks that still half-solved the other subroutine.

    Args:
        model: the frozen base model.
        param_names: names from ``model.named_parameters()`` to mask (typically the weight
            matrices; unmasked parameters, e.g. biases, are used as they are).
        forward_fn: ``forward_fn(f, inputs) -> logits`` (see the module docstring); None = ``f(inputs)``.
        data: ``(inputs, labels)``; labels ``(N,)`` in {0, 1} (binary) or class ids (``(N, C)`` logits).
        lambda_l0: weight of the mean soft-mask penalty (the price of keeping all weights).
        steps: optimisation steps.
        lr: Adam learning rate on the logits.
        beta_start, beta_end: temperature schedule endpoints.
        init_logit: initial logit (initial soft mask ``sigmoid(beta_start · init_logit)``).
        batch_size: rows per step, drawn without replacement each step; None = the whole data.
        generator: draws the minibatches (unused for full-batch search).

    Returns:
        A :class:`MaskResult`.

    Raises:
        ValueError: bad ``param_names``, ``steps < 1``, non-positive temperatures, empty data,
            or logits whose shape does not fit the labels.
    """
    forward_fn = forward_fn or default_forward
    inputs, labels = data
    N = len(labels)
    if N == 0:
        raise ValueError("data is empty")
    beta_schedule(0, steps, beta_start, beta_end)  # validates steps and temperatures
    masked = MaskedModel(model, param_names, init_logit)
    opt = torch.optim.Adam(masked.parameters(), lr=lr)
    with _eval_mode(model):
        for t in range(steps):
            masked.beta = beta_schedule(t, steps, beta_start, beta_end)
            if batch_size is None or batch_size >= N:
                xb, yb = inputs, labels
            else:
                idx = torch.randperm(N, generator=generator)[:batch_size].to(labels.device)
                xb, yb = inputs[idx], labels[idx]
            loss = task_loss(forward_fn(lambda *a, **k: masked(*a, mode="soft", **k), xb), yb)
            loss = loss + lambda_l0 * masked.penalty()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        loss_value = float(loss.detach())  # the last step's objective, at beta_end
        with torch.no_grad():
            out = forward_fn(lambda *a, **k: masked(*a, mode="hard", **k), inputs)
            hard_loss, acc = float(task_loss(out, labels)), accuracy_of(out, labels)
    masks = masked.hard_masks()
    kept = {n: int(m.sum()) for n, m in masks.items()}
    return MaskResult(
        masks=masks,
        logits={n: s.detach().clone() for n, s in zip(masked.param_names, masked.logits)},
        beta_end=float(masked.beta),
        density=sum(kept.values()) / masked.n_masked,
        densities={n: kept[n] / masks[n].numel() for n in masks},
        loss=loss_value,
        task_loss=hard_loss,
        accuracy=acc,
    )


def apply_mask(model: nn.Module, masks: Mapping[str, torch.Tensor], complement: bool = False) -> nn.Module:
    """A copy of ``model`` with masked weights: ``w · m`` or, with ``complement``, ``w · (1 − m)``.

    The complement is Break It Down's *ablated model*: the base model with the
    found subnetwork's weights set to zero and every other weight kept — the
    weights the mask removed stay, the ones it kept go. Only parameters named in
    ``masks`` change; the rest (e.g. unmasked biases) are copied as they are.
    ``model`` itself is never modified.

    Args:
        model: the base model.
        masks: name → hard mask (bool or 0/1 values) shaped like the parameter.

    Raises:
        ValueError: a name is not a parameter of ``model``, a shape differs, or a mask is not binary.
    """
    named = dict(model.named_parameters())
    for n, m in masks.items():
        if n not in named:
            raise ValueError(f"mask for unknown parameter {n!r}")
        if m.shape != named[n].shape:
            raise ValueError(f"mask {n!r} has shape {tuple(m.shape)}, parameter has {tuple(named[n].shape)}")
        if m.dtype != torch.bool and not bool(((m == 0) | (m == 1)).all()):
            raise ValueError(f"mask {n!r} is not binary; pass a hard mask")
    out = copy.deepcopy(model)
    params = dict(out.named_parameters())
    with torch.no_grad():
        for n, m in masks.items():
            keep = m.to(device=params[n].device, dtype=torch.bool)
            params[n].mul_((~keep if complement else keep).to(params[n].dtype))
    return out


def random_mask_like(mask, generator: torch.Generator):
    """A uniformly random hard mask keeping as many weights as ``mask``, per parameter.

    The control of Break It Down: a subnetwork of equal size per parameter
    chosen without looking at the task.

    Args:
        mask: one bool/0-1 tensor, or a mapping name → tensor (e.g. ``MaskResult.masks``).
        generator: CPU generator drawing the permutations (parameters in mapping order).

    Returns:
        The same structure, bool tensors of the same shapes and kept counts.
    """
    if isinstance(mask, Mapping):
        return {n: random_mask_like(m, generator) for n, m in mask.items()}
    k = int((mask != 0).sum())
    out = torch.zeros(mask.numel(), dtype=torch.bool)
    out[torch.randperm(mask.numel(), generator=generator)[:k]] = True
    return out.view(mask.shape).to(mask.device)


def task_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """BCE with logits for ``(N,)`` / ``(N, 1)`` logits, cross entropy for ``(N, C)``.

    Raises:
        ValueError: the logits do not fit ``labels`` ``(N,)``.
    """
    logits = _squeeze_binary(logits, labels)
    if logits.ndim == 1:
        return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    return nn.functional.cross_entropy(logits, labels.long())


def accuracy_of(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Accuracy: ``logit > 0`` for binary logits, argmax for ``(N, C)``."""
    logits = _squeeze_binary(logits, labels)
    pred = (logits > 0).long() if logits.ndim == 1 else logits.argmax(-1)
    return float((pred == labels.long()).float().mean())


@torch.no_grad()
def accuracy(model: nn.Module, forward_fn: ForwardFn | None, data: Data) -> float:
    """Accuracy of ``model`` (in eval mode, flags restored) on ``(inputs, labels)``."""
    forward_fn = forward_fn or default_forward
    inputs, labels = data
    with _eval_mode(model):
        return accuracy_of(forward_fn(model, inputs), labels)


def _squeeze_binary(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    if logits.ndim == 2 and logits.shape[1] == 1:
        logits = logits[:, 0]
    if logits.shape[0] != labels.shape[0] or logits.ndim not in (1, 2):
        raise ValueError(f"logits of shape {tuple(logits.shape)} do not fit labels of shape {tuple(labels.shape)}; "
                         "forward_fn must return (N,) or (N, C)")
    return logits


def _masked_params(model: nn.Module, masks: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # Every parameter is passed detached, so no gradient ever reaches the base model.
    params = {n: p.detach() for n, p in model.named_parameters()}
    for n, m in masks.items():
        params[n] = params[n] * m
    return params


@contextlib.contextmanager
def _eval_mode(model: nn.Module) -> Iterator[None]:
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, f in flags:
            m.training = f


__all__ = [
    "MaskedModel", "MaskResult", "find_mask", "apply_mask", "random_mask_like", "beta_schedule",
    "task_loss", "accuracy", "accuracy_of", "default_forward",
]
