"""Training and greedy evaluation of sequence models on a fixed training set, one trial alone or a stack.

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

Stacked training (:func:`train_stacked_from_config`, :func:`train_stacked_seq_model`,
:func:`fit_stacked_minibatches`) trains ``T`` same-shape trials as one
:class:`~bindscale.models.stacked_transformer.StackedTransformer`, each trial as it would train
alone up to float rounding: its own training set and batch order, the sum (never the mean) of the
per-trial losses, per-trial gradient clipping (:func:`clip_per_trial_`), per-trial AdamW state,
learning rate and weight decay (:class:`PerTrialAdamW`, the project's one per-trial AdamW,
:mod:`bindscale.train.stacked_adamw`), and per-trial divergence (a trial whose loss is non-finite is recorded
``"diverged"`` at that step and frozen; the stack carries on). A study's grouping of trials into stacks
and its train-then-evaluate loop over members are :mod:`bindscale.train.stack`'s.

The loops (:func:`fit_minibatches`, :func:`fit_stacked_minibatches`) hold the optimisation only; every speed
setting (CPU process settings, threads, precision, fused kernels, host syncs) is :mod:`bindscale.train.speed`'s,
entered once per loop as ``with speed.training_settings(device, precision=...) as s``.

Precision (a training section's ``precision``, :class:`bindscale.train.sections.SeqTrainConfig`): ``fp32`` by
default; ``bf16`` runs each step's forward pass and loss under bf16 autocast (:meth:`speed.TrainingSettings.autocast`)
while the parameters, their gradients and the AdamW state stay fp32 (master weights: autocast casts a weight to
bf16 for each matrix product, and the backward pass returns fp32 gradients to the fp32 leaves). The loss stays
fp32: ``F.cross_entropy`` is on autocast's fp32 list (it reads the bf16 logits and computes the log-softmax and
the per-token losses in fp32), and the sums and means after it are of fp32 tensors. ``tf32`` (CUDA only) keeps
fp32 tensors with TF32 matmuls; on CUDA an fp32 trial trains with TF32 off. ``auto``: bf16 where the device has
bf16 matrix units (:func:`speed.fast_bf16`) and bf16 pays for the model (:func:`bf16_pays_for`), else fp32. Greedy
evaluation (:func:`greedy_predictions`) runs outside the loop, in fp32, whatever the training precision.

Packing (a training section's ``pack``, opt-in, off by default): a right-padded mini-batch computes every
example at the batch's longest length, so about half of its positions are padding at the studies' shapes
(benchmarks/flops.py). With ``pack`` on, each step's batch (the same examples, drawn by the same
:func:`batch_indices`) is laid into as few rows as first-fit-decreasing bin packing finds
(:func:`first_fit_decreasing`; at most 11/9 of the fewest possible plus one, Dósa 2007, "The Tight Bound of
First Fit Decreasing Bin-Packing Algorithm Is FFD(I) ≤ 11/9 OPT(I) + 6/9"), each row no longer than the padded
batch's (:func:`packed_batch`). The model gets per-token positions that restart at 0 for each example and
attends block-diagonally causally (:meth:`bindscale.models.transformer.Transformer.forward`'s ``positions``;
Krell et al. 2021, "Efficient Sequence Packing without Cross-contamination: Accelerating Large Language
Models without Impacting Performance"), so each example's logits are those it has alone; the loss is the same
sum over the same target tokens divided by the same count (:func:`packed_seq_loss`). Losses and gradients equal
the padded step's up to float rounding (the sums run in another order), not bit for bit; with ``pack`` off
nothing changes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from bindscale.core import seeding
from bindscale.models.transformer import Transformer
from bindscale.train import speed
from bindscale.train.stacked_adamw import StackedAdamW

#: Padding token id: sequences are right-padded with it.
PAD_ID = 0
#: Cosine decay ends at this fraction of the peak learning rate.
MIN_LR_RATIO = 0.1
#: Points in the returned loss curve.
N_CURVE_POINTS = 20
#: AdamW betas of GPT-3 (Brown et al. 2020), steadier than (0.9, 0.999) for transformers.
BETAS = (0.9, 0.95)
#: Narrowest transformer (``d_model``) for which ``precision: auto`` trains in bf16 on bf16 matrix units
#: (benchmarks/seq_precision.py; see :func:`bf16_pays_for`).
BF16_MIN_D_MODEL = 128


def bf16_pays_for(model: torch.nn.Module) -> bool:
    """Whether bf16 autocast is measured to pay for training ``model`` (``precision: auto``): a
    :class:`~bindscale.models.transformer.Transformer` or stacked one of ``d_model`` at least
    :data:`BF16_MIN_D_MODEL`. Any other module (a pretrained model, a study's own network): False, since not
    measured; ``auto`` then trains it in fp32."""
    d = getattr(model, "d_model", None)
    return isinstance(d, int) and d >= BF16_MIN_D_MODEL


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


def first_fit_decreasing(sizes: list[int], capacity: int) -> list[list[int]]:
    """Bin packing, first fit decreasing: items longest first (ties in input order), each into the first bin
    (in order of opening) with room for it, a new bin where none has.

    Args:
        sizes: each item's size, positive and at most ``capacity``.
        capacity: every bin's size.

    Returns:
        Per bin, the indices of its items in the order placed: every item in exactly one bin, no bin's sizes
        summing past ``capacity``.

    Raises:
        ValueError: an item larger than ``capacity`` or not positive.
    """
    bad = [n for n in sizes if not 0 < n <= capacity]
    if bad:
        raise ValueError(f"items must have sizes in 1..{capacity}; got {bad}")
    bins: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):  # sorted() is stable: ties keep input order
        j = next((j for j, r in enumerate(room) if r >= sizes[i]), len(bins))
        if j == len(bins):
            bins.append([])
            room.append(capacity)
        bins[j].append(i)
        room[j] -= sizes[i]
    return bins


def pack_plan(sizes: list[int], width: int) -> tuple[list[int], list[int], int]:
    """Where each example of a batch goes in packed rows of ``width`` positions (:func:`first_fit_decreasing`).

    Args:
        sizes: per example, the input positions it needs (:func:`sequence_lengths` less 1), each at most ``width``.

    Returns:
        Per example its row and first column, and the number of rows; a row's examples sit side by side,
        in the order packed.
    """
    row, col = [0] * len(sizes), [0] * len(sizes)
    bins = first_fit_decreasing(sizes, width)
    for r, items in enumerate(bins):
        c = 0
        for i in items:
            row[i], col[i] = r, c
            c += sizes[i]
    return row, col, len(bins)


def packed_batch(tokens: torch.Tensor, loss_mask: torch.Tensor, rows: torch.Tensor, sizes: torch.Tensor,
                 row_of: torch.Tensor, col_of: torch.Tensor, n_rows: int,
                 width: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step's examples of ``T`` trials laid into packed rows (a single trial: ``T`` = 1).

    Example ``e`` (of ``n = sizes`` input positions) fills columns ``c .. c+n-1`` of its row: its tokens
    ``0 .. n-1`` as inputs, its tokens ``1 .. n`` as targets where ``loss_mask`` scores them, and positions
    ``0 .. n-1``. A slot no example fills holds :data:`PAD_ID`, target -100 (not scored) and position 0.

    Args:
        tokens: ``(T, N, L)`` token ids, right-padded; ``L`` greater than every ``sizes`` entry.
        loss_mask: ``(T, N, L)`` bool, ``[t, n, l]`` True scores the prediction of token ``l + 1``.
        rows: ``(T, B)`` example indices of the step (every trial's own).
        sizes: ``(T, B)`` input positions each example needs (:func:`sequence_lengths` less 1), each at most ``width``.
        row_of, col_of: ``(T, B)`` each example's row and first column (:func:`pack_plan`).
        n_rows, width: rows ``R`` per trial and positions ``W`` per row.

    Returns:
        ``inputs`` ``(T, R, W)`` token ids, ``targets`` ``(T, R, W)`` next-token ids (-100 where not scored:
        ``F.cross_entropy``'s ignore_index) and ``positions`` ``(T, R, W)`` (each example's count from 0).
        No host sync: every index is computed on ``tokens``' device.
    """
    T = rows.shape[0]
    device = tokens.device
    k = torch.arange(width, device=device)  # (W,) position in the example
    t = torch.arange(T, device=device)[:, None, None]  # (T, 1, 1)
    e = rows[:, :, None]  # (T, B, 1)
    inp = tokens[t, e, k]  # (T, B, W): each example's tokens from position 0, right-padded
    tgt = torch.where(loss_mask[t, e, k], tokens[t, e, k + 1], -100)  # (T, B, W)
    size = T * n_rows * width
    # Flat slot of each (example, position) in the (T, R, W) rows; positions past an example's end go to a
    # spare slot at index `size`, dropped after (no boolean indexing, hence no host sync).
    slot = (t * n_rows + row_of[:, :, None].long()) * width + col_of[:, :, None].long() + k  # (T, B, W)
    slot = torch.where(k < sizes[:, :, None], slot, size)
    out = []
    for src, fill in ((inp, PAD_ID), (tgt, -100), (k.expand_as(inp), 0)):
        flat = torch.full((size + 1,), fill, dtype=torch.long, device=device)
        flat[slot] = src
        out.append(flat[:size].view(T, n_rows, width))
    inputs, targets, positions = out
    return inputs, targets, positions


def packed_seq_loss(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor,
                    positions: torch.Tensor) -> torch.Tensor:
    """:func:`seq_loss` on packed rows (:func:`packed_batch`, one trial): mean cross-entropy over the scored targets.

    Args:
        model: maps ``(R, W)`` token ids and ``positions=`` ``(R, W)`` to ``(R, W, V)`` logits.
        inputs, targets, positions: ``(R, W)`` each (targets -100 where not scored).

    Returns:
        A scalar: the sum over scored targets divided by their number (0, not NaN, when there is none).
    """
    logits = model(inputs, positions=positions)  # (R, W, V)
    total = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100, reduction="sum")
    return total / (targets != -100).sum().clamp(min=1)


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
    precision: str = "fp32",
    pack: bool = False,
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
            accelerator in bursts every :data:`bindscale.train.speed.SYNC_EVERY` steps, to avoid a
            host sync per step).
        precision: ``fp32``, ``bf16``, ``tf32`` (CUDA) or ``auto`` (module doc; ``auto`` asks
            :func:`bf16_pays_for` of ``model``).
        pack: lay each step's batch into packed rows (module doc; ``model`` must take ``positions=``,
            ``supports_packing``); the same losses and gradients up to float rounding.

    Returns:
        ``status`` ("ok" or "diverged"), ``final_loss`` (mean batch loss over
        the last curve window; the non-finite value if diverged),
        ``loss_curve`` (a list of :data:`N_CURVE_POINTS` ``(step, mean loss of
        the window ending there)``), ``steps_per_s``, ``tokens_per_s`` (input
        positions after trimming; packed: the rows' positions), ``steps_done``, ``diverged_step`` (first
        non-finite step or None), ``train_seconds`` and ``precision`` (the one
        trained in: ``auto`` resolved).

    Raises:
        ValueError: mismatched or empty inputs, a masked last column, no
            masked position at all, or non-positive steps / batch size;
            ``tf32`` off CUDA; ``pack`` with a model that takes no positions.
    """
    _check_training_set(tokens, loss_mask, steps, batch_size, warmup_steps)
    if pack:
        _check_packable(model)
    device = torch.device(device)
    speed.training_precision(precision, device, False)  # ValueError: tf32 off CUDA, before any work
    model.to(device).train()
    N = tokens.shape[0]
    # Batch order and trimmed lengths are fixed up front, on the host: the loop never waits for them.
    idx = batch_indices(N, steps, batch_size, generator)  # (steps, B)
    lengths = sequence_lengths(tokens.cpu(), loss_mask.cpu())[idx].amax(dim=1).tolist()  # per step
    tokens, loss_mask = tokens.to(device), loss_mask.to(device)

    def batch_loss(step: int, b: torch.Tensor) -> torch.Tensor:
        L = lengths[step]
        return seq_loss(model, tokens[b, :L], loss_mask[b, :L])

    if pack:
        sizes = sequence_lengths(tokens, loss_mask) - 1  # (N,) input positions per example, on device
        row_of, col_of, n_rows = _plan_packing(sizes.cpu()[idx][None], [L - 1 for L in lengths])
        row_of, col_of = row_of[0].to(device), col_of[0].to(device)  # (steps, B) each

        def batch_loss(step: int, b: torch.Tensor) -> torch.Tensor:  # the packed step
            inputs, targets, positions = packed_batch(tokens[None], loss_mask[None], b[None], sizes[b][None],
                                                      row_of[step][None], col_of[step][None], n_rows[step],
                                                      lengths[step] - 1)
            return packed_seq_loss(model, inputs[0], targets[0], positions[0])

    out = fit_minibatches(list(model.parameters()), batch_loss, idx, lr=lr, weight_decay=weight_decay,
                          warmup_steps=warmup_steps, grad_clip=grad_clip, device=device, on_step=on_step,
                          precision=precision, bf16_pays=bf16_pays_for(model))
    if pack:
        n_tokens = sum(R * (L - 1) for R, L in zip(n_rows[:out["steps_done"]], lengths))
    else:
        n_tokens = batch_size * sum(L - 1 for L in lengths[:out["steps_done"]])
    out["tokens_per_s"] = n_tokens / out["train_seconds"]
    return out


def _check_packable(model: torch.nn.Module) -> None:
    """Refuse ``pack`` for a model whose ``forward`` takes no ``positions=`` (its class sets no
    ``supports_packing``: e.g. a pretrained language model, or a study's own network)."""
    if not getattr(model, "supports_packing", False):
        raise ValueError(f"train.pack needs a model that takes packed rows (positions=); {type(model).__name__} "
                         "does not: train it with pack off")


def _plan_packing(sizes: torch.Tensor, widths: list[int]) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Every step's packed layout (:func:`pack_plan`) for ``T`` trials, on the host, before the loop.

    Args:
        sizes: ``(T, steps, B)`` input positions of each example drawn (:func:`sequence_lengths` less 1).
        widths: per step, the row width (the step's longest example: no row is longer than the padded batch's).

    Returns:
        ``row_of`` and ``col_of``, ``(T, steps, B)`` int32 (each example's row and first column), and per step
        the number of rows (the most any trial's batch packs into; a trial needing fewer has empty rows).
    """
    T = sizes.shape[0]
    per = sizes.tolist()
    rows, cols, n_rows = [[] for _ in range(T)], [[] for _ in range(T)], []
    for step, w in enumerate(widths):
        R = 1
        for t in range(T):
            r, c, n = pack_plan(per[t][step], w)
            rows[t].append(r)
            cols[t].append(c)
            R = max(R, n)
        n_rows.append(R)
    return torch.tensor(rows, dtype=torch.int32), torch.tensor(cols, dtype=torch.int32), n_rows


def _check_training_set(tokens: torch.Tensor, loss_mask: torch.Tensor, steps: int, batch_size: int,
                        warmup_steps: int) -> None:
    """The checks of :func:`train_seq_model`'s inputs (see its Raises)."""
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
            ``grad_clip`` (e.g. :class:`bindscale.train.sections.SeqTrainConfig`), and optionally ``precision``
            (fp32 where it has none) and ``pack`` (off where it has none); warm-up is capped at half the steps
            so that a short (quick) run still decays.
        seed: the trial's root seed; the mini-batch order is its ``"train"`` stream.
        progress: called as ``progress(1)`` once per step.

    Returns and raises as :func:`train_seq_model`.
    """
    return train_seq_model(
        model, tokens, loss_mask, steps=train.steps, batch_size=train.batch_size, lr=train.lr,
        weight_decay=train.weight_decay, warmup_steps=min(train.warmup_steps, train.steps // 2),
        grad_clip=train.grad_clip, generator=seeding.generator(seed, "train"), device=device,
        on_step=(lambda step, loss: progress(1)) if progress else None, precision=getattr(train, "precision", "fp32"),
        pack=getattr(train, "pack", False),
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
    precision: str = "fp32",
    bf16_pays: bool = False,
    betas: tuple[float, float] = BETAS,
    schedule: str = "warmup_cosine",
) -> dict:
    """The optimisation loop of :func:`train_seq_model`, for any loss on index batches.

    AdamW (decay on parameters of 2+ dimensions only), warm-up then cosine decay,
    optional gradient clipping; a non-finite loss stops the loop (status "diverged").
    With ``weight_decay=0``, ``betas=(0.9, 0.999)`` and ``schedule="constant"`` it is Adam at a fixed learning
    rate (Kingma & Ba 2015's defaults; AdamW without decay is Adam), as recurrent seq2seq training on SCAN
    (Lake & Baroni 2018) used.
    ``batch_loss`` runs under the precision's autocast (bf16: the parameters, gradients and AdamW state stay
    fp32; a loss computed in bf16 is cast to fp32 before it is read, but its reduction is the caller's: use
    losses that autocast runs in fp32, such as ``F.cross_entropy``).

    Args:
        params: the parameters to train (those without ``requires_grad`` are skipped).
        batch_loss: ``batch_loss(step, rows) -> scalar loss``; ``step`` is 0-based,
            ``rows`` a LongTensor of example indices on ``device``.
        idx: ``(steps, B)`` example indices of every step (e.g. :func:`batch_indices`).
        lr, weight_decay, warmup_steps, grad_clip, device, on_step, precision: as in :func:`train_seq_model`.
        bf16_pays: whether ``auto`` takes bf16 on bf16 matrix units (the caller's rule, e.g. :func:`bf16_pays_for`).
        betas: AdamW's (β1, β2); :data:`BETAS` by default.
        schedule: ``"warmup_cosine"`` (:func:`lr_at`) or ``"constant"`` (``lr`` at every step; no warm-up).

    Returns:
        ``status``, ``final_loss``, ``loss_curve``, ``steps_per_s``, ``steps_done``,
        ``diverged_step``, ``train_seconds`` and ``precision`` (see :func:`train_seq_model`).

    Raises:
        ValueError: ``tf32`` off CUDA; an unknown schedule.
    """
    if schedule not in ("warmup_cosine", "constant"):
        raise ValueError(f"schedule must be warmup_cosine or constant, got {schedule!r}")
    device = torch.device(device)
    steps = idx.shape[0]
    idx = idx.to(device)
    params = [p for p in params if p.requires_grad]
    precision = speed.training_precision(precision, device, bf16_pays)
    with speed.training_settings(device, precision=precision) as s:
        opt = torch.optim.AdamW(_decay_groups(params, weight_decay), lr=lr, betas=betas, fused=s.fused)
        losses = torch.empty(steps, device=device)
        diverged_step, done = None, 0
        t0 = time.perf_counter()
        for step in range(1, steps + 1):
            with s.autocast():
                loss = batch_loss(step - 1, idx[step - 1]).float()  # batch, forward, loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(params, grad_clip)
            for group in opt.param_groups:  # the schedule
                group["lr"] = lr if schedule == "constant" else lr_at(step, lr=lr, warmup_steps=warmup_steps,
                                                                      steps=steps)
            opt.step()
            losses[step - 1] = loss.detach()
            if step % s.sync_every == 0 or step == steps:  # on the host: divergence check, progress
                diverged_step = _read_losses(losses[done:step].tolist(), done + 1, on_step)
                done = step
                if diverged_step is not None:
                    break
        seconds = time.perf_counter() - t0
    return _fit_summary(losses[:diverged_step or done].tolist(), diverged_step, done, seconds) | {
        "precision": precision}


def _decay_groups(params: list[torch.nn.Parameter], weight_decay: float) -> list[dict]:
    """AdamW's parameter groups: ``weight_decay`` on parameters of two or more dimensions (matrices,
    embeddings), none on the others (biases, LayerNorm)."""
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


def _read_losses(values: list[float], first: int, on_step: Callable[[int, float], None] | None) -> int | None:
    """The batch losses of steps ``first, first + 1, ...``, read on the host: the step of the first
    non-finite one (None if all are finite); ``on_step(step, loss)`` for each finite one before it."""
    for step, v in enumerate(values, start=first):
        if not math.isfinite(v):
            return step
        if on_step is not None:
            on_step(step, v)
    return None


def _fit_summary(curve_losses: list[float], diverged_step: int | None, done: int, seconds: float) -> dict:
    """The summary :func:`fit_minibatches` returns, from the batch losses of steps ``1..done``
    (the last one non-finite when ``diverged_step`` is set)."""
    if diverged_step is not None:
        final = curve_losses[-1]
        curve_losses = curve_losses[:-1]
    curve = _curve(curve_losses)
    if diverged_step is None:
        final = curve[-1][1]
    return {
        "status": "ok" if diverged_step is None else "diverged",
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


# ---------------------------------------------------------------------------------------------------
# Stacked training: T same-shape trials as one StackedTransformer.
#
# Each trial is trained exactly as train_seq_model would train it alone, up to float rounding: its own
# training set and batch order (its own generator), its own learning rate schedule, weight decay and
# clipping threshold, AdamW state of its own, and gradients of its own loss only. The stack's loss is the
# SUM of the per-trial losses (never their mean: a mean would scale every trial's gradient by 1/T), and
# trial t's logits depend on trial t's weights alone, so d(sum)/d(trial t's weights) = d(loss_t)/d(...).
# ---------------------------------------------------------------------------------------------------


def stacked_seq_loss(model: torch.nn.Module, tokens: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Per-trial mean cross-entropy (nats per target token) where ``loss_mask`` is True (:func:`seq_loss` per trial).

    Args:
        model: maps ``(T, B, L-1)`` token ids to ``(T, B, L-1, V)`` logits (a stacked model).
        tokens: ``(T, B, L)`` token ids.
        loss_mask: ``(T, B, L)`` bool; ``[t, n, l]`` True scores the prediction of token ``l + 1``.

    Returns:
        ``(T,)`` losses; 0 (not NaN) for a trial with no masked position.
    """
    T = tokens.shape[0]
    logits = model(tokens[:, :, :-1])  # (T, B, L-1, V)
    targets = torch.where(loss_mask[:, :, :-1], tokens[:, :, 1:], -100)
    ce = F.cross_entropy(logits.flatten(0, 2), targets.flatten(), ignore_index=-100, reduction="none")
    return ce.view(T, -1).sum(dim=1) / loss_mask[:, :, :-1].flatten(1).sum(dim=1).clamp(min=1)


def stacked_packed_seq_loss(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor,
                            positions: torch.Tensor) -> torch.Tensor:
    """:func:`stacked_seq_loss` on packed rows (:func:`packed_batch`): per trial, the mean cross-entropy over its
    scored targets.

    Args:
        model: maps ``(T, R, W)`` token ids and ``positions=`` ``(T, R, W)`` to ``(T, R, W, V)`` logits.
        inputs, targets, positions: ``(T, R, W)`` each (targets -100 where not scored).

    Returns:
        ``(T,)`` losses; 0 (not NaN) for a trial with no scored target.
    """
    T = inputs.shape[0]
    logits = model(inputs, positions=positions)  # (T, R, W, V)
    ce = F.cross_entropy(logits.flatten(0, 2), targets.flatten(), ignore_index=-100, reduction="none")
    return ce.view(T, -1).sum(dim=1) / (targets != -100).flatten(1).sum(dim=1).clamp(min=1)


def _per_trial(v, T: int, name: str) -> list:
    """One value per trial: a scalar (shared) or a sequence of ``T`` values."""
    if isinstance(v, (list, tuple)):
        if len(v) != T:
            raise ValueError(f"{name} has {len(v)} values for a stack of {T} trials")
        return list(v)
    return [v] * T


class PerTrialAdamW(StackedAdamW):
    """The project's per-trial AdamW (:class:`bindscale.train.stacked_adamw.StackedAdamW`) as :func:`fit_minibatches`
    configures torch's for one trial: betas :data:`BETAS`, weight decay on parameters whose per-trial slice
    has two or more dimensions (matrices and embeddings), the fused kernel on CPU and CUDA.

    Trial ``t``'s update is the one ``torch.optim.AdamW`` gives that trial alone, bit for bit, given the same
    gradients; :meth:`step` takes each step's per-trial learning rates (the schedule, :func:`lr_at`) and the
    trials to update (the others, diverged, are frozen with their state).

    Args:
        params: stacked parameters, each ``(T, ...)``; those without ``requires_grad`` are left out.
        weight_decay: per trial (or one shared value).
        betas, eps: as ``torch.optim.AdamW``'s.
        fused: use the fused kernel; None: on CPU and CUDA.

    Raises:
        ValueError: as :class:`~bindscale.train.stacked_adamw.StackedAdamW`.
    """

    def __init__(self, params: list[torch.Tensor], weight_decay, betas=BETAS, eps: float = 1e-8,
                 fused: bool | None = None):
        # lr 0: every step passes its own rates (the schedule), never the constructor's.
        super().__init__(params, 0.0, weight_decay, betas, eps, decay_min_dim=2, fused=fused)


@torch.no_grad()
def clip_per_trial_(params: list[torch.Tensor], max_norm: list[float | None]) -> torch.Tensor:
    """Scale each trial's gradients so that the norm over its slice of every parameter is at most ``max_norm[t]``.

    ``torch.nn.utils.clip_grad_norm_`` applied to each trial alone (coefficient ``max_norm / (norm + 1e-6)``,
    capped at 1); a trial with ``max_norm`` None is not clipped. Not the norm of the whole stack: one
    trial's large gradient never shrinks another's.

    Returns:
        ``(T,)`` per-trial gradient norms before clipping.
    """
    grads = [p.grad for p in params if p.grad is not None]
    T = grads[0].shape[0]
    norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), 2, dim=1) for g in grads])  # (P, T)
    total = torch.linalg.vector_norm(norms, 2, dim=0)  # (T,)
    limit = torch.tensor([math.inf if c is None else float(c) for c in max_norm], dtype=total.dtype,
                         device=total.device)
    coef = torch.where(torch.isinf(limit), 1.0, limit / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(T, *([1] * (g.dim() - 1))))
    return total


def fit_stacked_minibatches(
    params: list[torch.nn.Parameter],
    batch_loss: Callable[[int, torch.Tensor], torch.Tensor],
    idx: torch.Tensor,
    *,
    lr,
    weight_decay,
    warmup_steps,
    grad_clip,
    device: str | torch.device = "cpu",
    on_step: Callable[[int, int, float], None] | None = None,
    precision: str = "fp32",
    bf16_pays: bool = False,
) -> list[dict]:
    """:func:`fit_minibatches` for ``T`` stacked trials: one summary per trial, each as its own loop's.

    Per trial: learning-rate schedule (peak ``lr[t]``, ``warmup_steps[t]``), AdamW
    (:class:`PerTrialAdamW`, decay ``weight_decay[t]``), gradient clipping at ``grad_clip[t]``
    (:func:`clip_per_trial_`) and divergence: a trial whose loss is non-finite at a step is recorded
    as ``diverged`` at that step and frozen (no further update; the others carry on, untouched).
    The losses are read on the host every step (one sync per step, on an accelerator too).

    Args:
        params: stacked parameters, each ``(T, ...)``.
        batch_loss: ``batch_loss(step, rows) -> (T,) losses``; ``step`` 0-based, ``rows`` ``(T, B)``
            example indices of every trial on ``device``.
        idx: ``(T, steps, B)`` example indices (each trial's own :func:`batch_indices`).
        lr, weight_decay, warmup_steps, grad_clip: one value per trial, or one shared value.
        on_step: called as ``on_step(trial, step, loss)`` for each trial's finite losses.
        precision, bf16_pays: the stack's, as :func:`fit_minibatches`' (one precision for every trial).

    Returns:
        Per trial, :func:`fit_minibatches`' summary. ``train_seconds`` is the stack's time until the
        trial stopped and ``steps_per_s`` its steps over that time (every trial advances one step per
        stack step: the stack's rate, not a T-th of it).
    """
    device = torch.device(device)
    T, steps = idx.shape[0], idx.shape[1]
    idx = idx.to(device)
    params = [p for p in params if p.requires_grad]
    lrs, wds = _per_trial(lr, T, "lr"), _per_trial(weight_decay, T, "weight_decay")
    warm, clips = _per_trial(warmup_steps, T, "warmup_steps"), _per_trial(grad_clip, T, "grad_clip")
    precision = speed.training_precision(precision, device, bf16_pays)
    with speed.training_settings(device, precision=precision) as s:
        opt = PerTrialAdamW(params, wds, fused=s.fused)
        losses: list[list[float]] = [[] for _ in range(T)]
        active = list(range(T))
        diverged: list[int | None] = [None] * T
        done, seconds = [0] * T, [0.0] * T
        t0 = time.perf_counter()
        for step in range(1, steps + 1):
            with s.autocast():
                loss = batch_loss(step - 1, idx[:, step - 1]).float()  # (T,): batch, forward, loss
            opt.zero_grad()
            loss.sum().backward()  # a sum: each trial gets its own loss's gradient
            # Divergence check (before the update: a trial non-finite at this step is frozen here), progress.
            vals = loss.detach().tolist()
            for t in list(active):
                v = vals[t]
                losses[t].append(v)
                done[t] = step
                if not math.isfinite(v):
                    diverged[t], seconds[t] = step, time.perf_counter() - t0
                    active.remove(t)  # frozen: never updated again
                elif on_step is not None:
                    on_step(t, step, v)
            if not active:
                break
            if any(clips[t] is not None for t in active):
                clip_per_trial_(params, clips)
            # The schedule (each trial's own) and the step, of the trials still active.
            opt.step([lr_at(step, lr=lrs[t], warmup_steps=warm[t], steps=steps) for t in range(T)], active)
        end = time.perf_counter() - t0
    return [_fit_summary(losses[t], diverged[t], done[t], seconds[t] if diverged[t] else end) | {"precision": precision}
            for t in range(T)]


def train_stacked_seq_model(
    model,
    data: list[tuple[torch.Tensor, torch.Tensor]],
    *,
    steps: int,
    batch_size: int,
    lr,
    weight_decay,
    warmup_steps,
    grad_clip,
    generators: list[torch.Generator],
    device: str | torch.device = "cpu",
    on_step: Callable[[int, int, float], None] | None = None,
    precision: str = "fp32",
    pack: bool = False,
) -> list[dict]:
    """:func:`train_seq_model` for the ``T`` trials of a :class:`~bindscale.models.stacked_transformer.StackedTransformer`.

    Trial ``t`` trains on its own set ``data[t] = (tokens, loss_mask)`` (``(N_t, L_t)`` each, as
    :func:`train_seq_model` takes) in its own batch order (``generators[t]``), with its own learning
    rate, weight decay, warm-up and clipping (one value per trial, or one shared); ``steps`` and
    ``batch_size`` are the stack's. Each step's batch is trimmed to the longest sequence any trial
    draws; a trial's shorter sequences are padded, which changes none of its losses or gradients
    (attention is causal and padded positions are not targets) beyond float rounding. ``precision`` is the
    stack's (as :func:`train_seq_model`'s; ``auto`` asks :func:`bf16_pays_for` of the stack, whose ``d_model`` is
    its members'). ``pack``: each trial's batch is packed alone (:func:`pack_plan`) into rows of the stack's
    width, and every trial gets the rows the most packed one needs (the others' extra rows are empty).

    Returns:
        Per trial, :func:`train_seq_model`'s summary (see :func:`fit_stacked_minibatches` for the
        timings; ``tokens_per_s`` counts the trial's own trimmed positions; packed: the stack's rows' positions).

    Raises:
        ValueError: as :func:`train_seq_model`, for any trial; a number of data sets or per-trial
            values other than the stack's ``T``.
    """
    T = model.n_trials
    if len(data) != T or len(generators) != T:
        raise ValueError(f"a stack of {T} trials needs {T} training sets and generators; "
                         f"got {len(data)} and {len(generators)}")
    for tokens, loss_mask in data:
        _check_training_set(tokens, loss_mask, steps, batch_size, 0)
    for w in _per_trial(warmup_steps, T, "warmup_steps"):
        if w < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {w}")
    if pack:
        _check_packable(model)
    device = torch.device(device)
    speed.training_precision(precision, device, False)  # ValueError: tf32 off CUDA, before any work
    model.to(device).train()
    N, L = max(tok.shape[0] for tok, _ in data), max(tok.shape[1] for tok, _ in data)
    tokens = torch.full((T, N, L), PAD_ID, dtype=torch.long)
    mask = torch.zeros((T, N, L), dtype=torch.bool)
    idx, own_lengths = [], []
    for t, (tok, m) in enumerate(data):
        tokens[t, :tok.shape[0], :tok.shape[1]], mask[t, :m.shape[0], :m.shape[1]] = tok.cpu(), m.cpu()
        idx.append(batch_indices(tok.shape[0], steps, batch_size, generators[t]))  # (steps, B)
        own_lengths.append(sequence_lengths(tok.cpu(), m.cpu())[idx[-1]].amax(dim=1))  # (steps,)
    idx = torch.stack(idx)  # (T, steps, B)
    own = torch.stack(own_lengths)  # (T, steps)
    lengths = own.amax(dim=0).tolist()
    tokens, mask = tokens.to(device), mask.to(device)
    trial = torch.arange(T, device=device)[:, None]

    def batch_loss(step: int, rows: torch.Tensor) -> torch.Tensor:
        L = lengths[step]
        return stacked_seq_loss(model, tokens[trial, rows, :L], mask[trial, rows, :L])

    if pack:
        sizes = sequence_lengths(tokens.flatten(0, 1), mask.flatten(0, 1)).view(T, N) - 1  # (T, N), on device
        sizes_cpu = sizes.cpu()
        drawn = torch.stack([sizes_cpu[t][idx[t]] for t in range(T)])  # (T, steps, B)
        row_of, col_of, n_rows = _plan_packing(drawn, [L - 1 for L in lengths])
        row_of, col_of = row_of.to(device), col_of.to(device)  # (T, steps, B) each

        def batch_loss(step: int, rows: torch.Tensor) -> torch.Tensor:  # the packed step
            inputs, targets, positions = packed_batch(tokens, mask, rows, sizes[trial, rows], row_of[:, step],
                                                      col_of[:, step], n_rows[step], lengths[step] - 1)
            return stacked_packed_seq_loss(model, inputs, targets, positions)

    out = fit_stacked_minibatches(list(model.parameters()), batch_loss, idx, lr=lr, weight_decay=weight_decay,
                                  warmup_steps=warmup_steps, grad_clip=grad_clip, device=device, on_step=on_step,
                                  precision=precision, bf16_pays=bf16_pays_for(model))
    for t, o in enumerate(out):
        if pack:
            positions = sum(R * (L - 1) for R, L in zip(n_rows[:o["steps_done"]], lengths))
        else:
            positions = batch_size * int((own[t, :o["steps_done"]] - 1).sum())
        o["tokens_per_s"] = positions / o["train_seconds"]
    return out


def train_stacked_from_config(
    model,
    data: list[tuple[torch.Tensor, torch.Tensor]],
    trains: list,
    *,
    seeds: list[int],
    device: str | torch.device = "cpu",
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """:func:`train_from_config` for a stack: trial ``t`` with training section ``trains[t]`` and root
    seed ``seeds[t]`` (its batch order is its own ``"train"`` stream), on ``data[t]``.

    Every trial must share ``steps``, ``batch_size``, ``precision`` (fp32 where a section has none) and ``pack``
    (off where a section has none);
    ``lr``, ``weight_decay``, ``warmup_steps`` (capped at half the steps, as alone) and ``grad_clip`` are per trial.
    ``progress``: called as ``progress(1)`` for each trial's step.

    Returns:
        Per trial, the dict :func:`train_from_config` returns for that trial alone (up to float rounding
        and timings).

    Raises:
        ValueError: trials with different ``steps``, ``batch_size``, ``precision`` or ``pack``; as
            :func:`train_stacked_seq_model`.
    """
    shared = {(tr.steps, tr.batch_size, getattr(tr, "precision", "fp32")) for tr in trains}
    if len(shared) != 1:
        raise ValueError(f"a stack's trials share steps, batch_size and precision; got {sorted(shared)}")
    packs = {getattr(tr, "pack", False) for tr in trains}
    if len(packs) != 1:
        raise ValueError("a stack's trials share train.pack; got trials with it on and off")
    steps, batch_size, precision = shared.pop()
    return train_stacked_seq_model(
        model, data, steps=steps, batch_size=batch_size, lr=[tr.lr for tr in trains],
        weight_decay=[tr.weight_decay for tr in trains],
        warmup_steps=[min(tr.warmup_steps, steps // 2) for tr in trains], grad_clip=[tr.grad_clip for tr in trains],
        generators=[seeding.generator(s, "train") for s in seeds], device=device,
        on_step=(lambda t, step, loss: progress(1)) if progress else None, precision=precision, pack=packs.pop(),
    )
