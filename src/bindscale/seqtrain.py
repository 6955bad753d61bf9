"""Training and greedy evaluation of ONE sequence model on a fixed training set.

Studies that train a model from scratch on a *fixed* set of examples (where
the number of training examples can be an axis) share this loop: nothing is
sampled online, mini-batches are drawn from the N given sequences in
shuffled epochs.

Sequences are right-padded with :data:`PAD_ID`. A boolean loss mask says which
next-token predictions count: ``loss_mask[n, t]`` True means the logits at
position ``t`` are scored on token ``t + 1`` (typically the answer and its
stop token, not the prompt). Optimisation is AdamW (Loshchilov & Hutter 2019)
with weight decay on matrices and embeddings only, linear warm-up then cosine
decay to :data:`MIN_LR_RATIO` of the peak (Hoffmann et al. 2022, "Training
Compute-Optimal Large Language Models", decay to 10%), and gradient-norm
clipping. A non-finite loss stops training with status ``"diverged"``; it never
raises.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from . import seeding
from .models.transformer import Transformer

#: Padding token id: sequences are right-padded with it.
PAD_ID = 0
#: Cosine decay ends at this fraction of the peak learning rate.
MIN_LR_RATIO = 0.1
#: Points in the returned loss curve.
N_CURVE_POINTS = 20
#: Steps between host reads of the loss on an accelerator (on the CPU every step is read: it is free).
SYNC_EVERY = 25
#: AdamW betas of GPT-3 (Brown et al. 2020), steadier than (0.9, 0.999) for transformers.
BETAS = (0.9, 0.95)


def pack_sequences(seqs: list[tuple[list[int], list[int]]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Prompt–target pairs of token ids → training tensors for :func:`train_seq_model`.

    Args:
        seqs: per example ``(prompt ids, target ids)``; the target usually ends with a stop token.

    Returns:
        ``tokens`` ``(N, L)`` (prompt then target, right-padded with :data:`PAD_ID`; ``L`` is the longest
        pair plus one) and the loss mask ``(N, L)``, True at the positions whose next token is a target token.
    """
    L = max(len(a) + len(b) for a, b in seqs) + 1
    tokens = torch.full((len(seqs), L), PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.bool)
    for n, (a, b) in enumerate(seqs):
        tokens[n, :len(a) + len(b)] = torch.tensor(a + b)
        mask[n, len(a) - 1:len(a) + len(b) - 1] = True
    return tokens, mask


def lr_at(step: int, *, lr: float, warmup_steps: int, steps: int, min_lr_ratio: float = MIN_LR_RATIO) -> float:
    """Learning rate at ``step`` (1-based): linear warm-up to ``lr`` over ``warmup_steps``,
    then cosine decay reaching ``min_lr_ratio · lr`` at ``steps``."""
    if step <= warmup_steps:
        return lr * step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, steps - warmup_steps))
    return lr * (min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def sequence_lengths(tokens: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Positions each sequence needs, ``(N,)``: up to its last non-pad token and to the
    target of its last masked position, whichever is later (so trimming never drops a target)."""
    pos = torch.arange(tokens.shape[1], device=tokens.device)
    last_token = torch.where(tokens != PAD_ID, pos, -1).amax(dim=1) + 1
    last_target = torch.where(loss_mask, pos, -1).amax(dim=1) + 2
    return torch.maximum(last_token, last_target).clamp(min=2)


def seq_loss(model: torch.nn.Module, tokens: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats per target token) of next-token predictions where ``loss_mask`` is True.

    Args:
        model: maps ``(B, L-1)`` token ids to ``(B, L-1, V)`` logits.
        tokens: ``(B, L)`` token ids.
        loss_mask: ``(B, L)`` bool; ``[n, t]`` True scores the prediction of
            token ``t + 1``. The last column has no next token and is ignored.

    Returns:
        A scalar; 0 (not NaN) when no position is masked in.
    """
    logits = model(tokens[:, :-1])  # (B, L-1, V)
    targets = torch.where(loss_mask[:, :-1], tokens[:, 1:], -100)  # -100: cross_entropy's ignore_index
    total = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100, reduction="sum")
    return total / loss_mask[:, :-1].sum().clamp(min=1)


def batch_indices(N: int, steps: int, batch_size: int, g: torch.Generator) -> torch.Tensor:
    """Example indices of every training step: shuffled epochs over ``0..N-1``, concatenated and cut.

    Every example is seen once per epoch before any is seen again; the permutations are drawn from
    ``g`` (on its device), so the schedule is reproducible from the generator's seed.

    Returns:
        ``(steps, batch_size)`` int64 CPU tensor.

    Raises:
        ZeroDivisionError: ``N`` is 0 (no examples to draw from).
    """
    need = steps * batch_size
    perms = [torch.randperm(N, generator=g, device=g.device) for _ in range(-(-need // N))]
    return torch.cat(perms)[:need].view(steps, batch_size).cpu()


def _curve(losses: list[float], n_points: int = N_CURVE_POINTS) -> list[tuple[int, float]]:
    """``(step, mean batch loss over the steps since the previous point)`` at up to ``n_points`` steps."""
    n = len(losses)
    ends = sorted({max(1, round(n * (k + 1) / n_points)) for k in range(n_points)}) if n else []
    out, prev = [], 0
    for e in ends:
        out.append((e, sum(losses[prev:e]) / (e - prev)))
        prev = e
    return out


def train_seq_model(
    model: Transformer,
    tokens: torch.Tensor,
    loss_mask: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    warmup_steps: int,
    grad_clip: float | None,
    generator: torch.Generator,
    device: str | torch.device = "cpu",
    on_step: Callable[[int, float], None] | None = None,
) -> dict:
    """Train ``model`` in place on a fixed set of token sequences.

    Args:
        model: maps ``(B, L)`` token ids to ``(B, L, V)`` logits; moved to ``device``.
        tokens: LongTensor ``(N, L)``, right-padded with :data:`PAD_ID`.
        loss_mask: BoolTensor ``(N, L)``; ``[n, t]`` True makes token ``t + 1`` a target.
        steps: optimizer steps.
        batch_size: sequences per step, drawn with ``generator`` in shuffled epochs;
            each batch is trimmed to its longest sequence.
        lr: peak learning rate (after ``warmup_steps`` of linear warm-up; cosine decay after).
        weight_decay: AdamW decoupled decay, applied to matrices and embeddings only.
        grad_clip: largest global gradient norm; None turns clipping off.
        generator: source of the mini-batch order.
        device: where to train.
        on_step: called as ``on_step(step, loss)`` for each step (on an
            accelerator in bursts every :data:`SYNC_EVERY` steps, to avoid a
            host sync per step).

    Returns:
        ``status`` ("ok" or "diverged"), ``final_loss`` (mean batch loss over
        the last curve window; the non-finite value if diverged),
        ``loss_curve`` (a list of :data:`N_CURVE_POINTS` ``(step, mean loss of
        the window ending there)``), ``steps_per_s``, ``tokens_per_s`` (input
        positions after trimming), ``steps_done``, ``diverged_step`` (first
        non-finite step or None) and ``train_seconds``.

    Raises:
        ValueError: mismatched or empty inputs, a masked last column, no
            masked position at all, or non-positive steps / batch size.
    """
    if tokens.dim() != 2 or tokens.shape != loss_mask.shape:
        raise ValueError(f"tokens and loss_mask must both be (N, L); got {tuple(tokens.shape)} and {tuple(loss_mask.shape)}")
    if tokens.shape[0] == 0 or tokens.shape[1] < 2:
        raise ValueError(f"need at least one sequence of length >= 2; got tokens of shape {tuple(tokens.shape)}")
    if loss_mask.dtype != torch.bool:
        raise ValueError(f"loss_mask must be a bool tensor, got {loss_mask.dtype}")
    if bool(loss_mask[:, -1].any()):
        raise ValueError("loss_mask[:, -1] must be False: the last position has no next token to predict")
    if not bool(loss_mask.any()):
        raise ValueError("loss_mask selects no position: nothing to train on")
    if steps < 1 or batch_size < 1 or warmup_steps < 0:
        raise ValueError(f"need steps >= 1, batch_size >= 1, warmup_steps >= 0; got {steps}, {batch_size}, {warmup_steps}")

    device = torch.device(device)
    model.to(device).train()
    N = tokens.shape[0]
    # Batch order and trimmed lengths are fixed up front, on the host: the loop never waits for them.
    idx = batch_indices(N, steps, batch_size, generator)  # (steps, B)
    lengths = sequence_lengths(tokens.cpu(), loss_mask.cpu())[idx].amax(dim=1).tolist()  # per step
    tokens, loss_mask = tokens.to(device), loss_mask.to(device)

    def batch_loss(step: int, b: torch.Tensor) -> torch.Tensor:
        L = lengths[step]
        return seq_loss(model, tokens[b, :L], loss_mask[b, :L])

    out = fit_minibatches(list(model.parameters()), batch_loss, idx, lr=lr, weight_decay=weight_decay,
                          warmup_steps=warmup_steps, grad_clip=grad_clip, device=device, on_step=on_step)
    n_tokens = batch_size * sum(L - 1 for L in lengths[:out["steps_done"]])
    out["tokens_per_s"] = n_tokens / out["train_seconds"]
    return out


def train_from_config(
    model: Transformer,
    tokens: torch.Tensor,
    loss_mask: torch.Tensor,
    train,
    *,
    seed: int,
    device: str | torch.device = "cpu",
    progress: Callable[[int], None] | None = None,
) -> dict:
    """:func:`train_seq_model` with a trial's training section — the one call every sequence study makes.

    Args:
        train: anything with ``steps``, ``batch_size``, ``lr``, ``weight_decay``, ``warmup_steps`` and
            ``grad_clip`` (e.g. :class:`bindscale.trials.SeqTrainConfig`); warm-up is capped at half the
            steps so that a short (quick) run still decays.
        seed: the trial's root seed; the mini-batch order is its ``"train"`` stream.
        progress: called as ``progress(1)`` once per step.

    Returns and raises as :func:`train_seq_model`.
    """
    return train_seq_model(
        model, tokens, loss_mask, steps=train.steps, batch_size=train.batch_size, lr=train.lr,
        weight_decay=train.weight_decay, warmup_steps=min(train.warmup_steps, train.steps // 2),
        grad_clip=train.grad_clip, generator=seeding.generator(seed, "train"), device=device,
        on_step=(lambda step, loss: progress(1)) if progress else None,
    )


def fit_minibatches(
    params: list[torch.nn.Parameter],
    batch_loss: Callable[[int, torch.Tensor], torch.Tensor],
    idx: torch.Tensor,
    *,
    lr: float,
    weight_decay: float,
    warmup_steps: int,
    grad_clip: float | None,
    device: str | torch.device = "cpu",
    on_step: Callable[[int, float], None] | None = None,
) -> dict:
    """The optimisation loop of :func:`train_seq_model`, for any loss on index batches.

    AdamW (decay on parameters of 2+ dimensions only), warm-up then cosine decay,
    optional gradient clipping; a non-finite loss stops the loop (status "diverged").

    Args:
        params: the parameters to train (those without ``requires_grad`` are skipped).
        batch_loss: ``batch_loss(step, rows) -> scalar loss``; ``step`` is 0-based,
            ``rows`` a LongTensor of example indices on ``device``.
        idx: ``(steps, B)`` example indices of every step (e.g. :func:`batch_indices`).
        lr, weight_decay, warmup_steps, grad_clip, device, on_step: as in :func:`train_seq_model`.

    Returns:
        ``status``, ``final_loss``, ``loss_curve``, ``steps_per_s``, ``steps_done``,
        ``diverged_step`` and ``train_seconds`` (see :func:`train_seq_model`).
    """
    device = torch.device(device)
    steps = idx.shape[0]
    idx = idx.to(device)
    params = [p for p in params if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},  # biases, LayerNorm
    ]
    opt = torch.optim.AdamW(groups, lr=lr, betas=BETAS, fused=device.type in ("cpu", "cuda"))
    sync_every = 1 if device.type == "cpu" else SYNC_EVERY

    losses = torch.empty(steps, device=device)
    status, diverged_step, done = "ok", None, 0
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, lr=lr, warmup_steps=warmup_steps, steps=steps)
        loss = batch_loss(step - 1, idx[step - 1])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
        losses[step - 1] = loss.detach()
        if step % sync_every == 0 or step == steps:
            for s, v in enumerate(losses[done:step].tolist(), start=done + 1):
                if not math.isfinite(v):
                    status, diverged_step = "diverged", s
                    break
                if on_step is not None:
                    on_step(s, v)
            done = step
            if diverged_step is not None:
                break
    seconds = time.perf_counter() - t0

    curve_losses = losses[:diverged_step or done].tolist()
    if diverged_step is not None:
        final = curve_losses[-1]
        curve_losses = curve_losses[:-1]
    curve = _curve(curve_losses)
    if diverged_step is None:
        final = curve[-1][1]
    return {
        "status": status,
        "final_loss": float(final),
        "loss_curve": curve,
        "steps_per_s": done / seconds,
        "steps_done": done,
        "diverged_step": diverged_step,
        "train_seconds": seconds,
    }


def greedy_predictions(model: Transformer, prompts: list[list[int]], max_new_tokens: int, stop_id: int,
                       batch_size: int = 256, *, ablate: dict[int, list[int]] | None = None,
                       ablate_with: dict[int, torch.Tensor] | None = None) -> list[list[int]]:
    """Greedy continuations of ``prompts`` (see :meth:`Transformer.generate`), ``batch_size`` at a time.

    Prompts are sorted by length before chunking so that each chunk holds few
    distinct lengths (``generate`` batches one length at a time); results come
    back in input order and include the stop token when it was emitted.
    """
    order = sorted(range(len(prompts)), key=lambda n: len(prompts[n]))
    out: list[list[int]] = [[] for _ in prompts]
    for c in range(0, len(order), batch_size):
        chunk = order[c:c + batch_size]
        preds = model.generate([prompts[n] for n in chunk], max_new_tokens, stop_id,
                               ablate=ablate, ablate_with=ablate_with)
        for n, p in zip(chunk, preds):
            out[n] = p
    return out
