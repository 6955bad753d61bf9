"""Stacked training of a transformer study's trials: stack keys, step timing, and the train-then-evaluate loop.

Every study that trains one :class:`~bindscale.models.transformer.Transformer` per trial on a fixed set
of sequences (subgraphs, depth, length_transfer, ceiling, geometry) runs a job the same way: trials
that share a *stack key* train together as one
:class:`~bindscale.models.stacked_transformer.StackedTransformer`
(:func:`bindscale.train.loop.train_stacked_from_config`), and each is then evaluated alone, on its own
member (:meth:`~bindscale.models.stacked_transformer.StackedTransformer.member`), by the code that
evaluates it when it trains alone. A trial's record is therefore the same, up to float rounding, in a
stack of any size. What is the study's own is two functions:

- ``prepare(trial) -> Prepared``: the trial's untrained model, its training tensors and whatever its
  evaluation needs (its data, built from its own seed streams);
- ``finish(trial, prepared, model, fit, t_train, device, return_models) -> TrialResult``: the record of
  a trained model (``fit``: :func:`bindscale.train.loop.train_from_config`'s summary).

This module holds the rest, once: :func:`stack_key` (which config sections must match), :func:`run_group`,
:func:`run_alone`, :func:`run_stack` and the planner's step timer :func:`stack_step_seconds`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

#: Training fields that may differ inside a stack: each trial keeps its own
#: (per trial in :func:`bindscale.train.loop.train_stacked_from_config`); steps and batch size are the stack's.
PER_TRIAL_FIELDS = frozenset({"lr", "weight_decay", "warmup_steps", "grad_clip"})


def stack_key(trial: Any, sections: Sequence[str]) -> tuple:
    """The stack key of a trial: its config ``sections`` (e.g. ``("task", "model")``) and its ``train``
    section without :data:`PER_TRIAL_FIELDS`, as JSON strings.

    Trials with equal keys may train as one stack; what the key leaves out (the seed: data, data order and
    initial weights; learning rate, weight decay, warm-up and clipping) stays the trial's own. A study
    names in ``sections`` whatever fixes the model's shape (vocabulary, ``max_len`` with learned
    positions) and what it wants to match for speed (a stack trains every step at the longest sequence
    any of its trials draws, so trials of very different lengths waste each other's time).
    """
    return (*(getattr(trial, s).model_dump_json() for s in sections),
            trial.train.model_dump_json(exclude=set(PER_TRIAL_FIELDS)))


class Prepared(NamedTuple):
    """What a study's ``prepare`` gives for one trial.

    Attributes:
        model: the trial's untrained :class:`~bindscale.models.transformer.Transformer` (its "init" stream;
            on the CPU). Alone it is trained in place; in a stack it is copied into the stack and left
            untouched.
        tokens: ``(N, L)`` int64 training sequences, right-padded with :data:`bindscale.train.loop.PAD_ID`.
        loss_mask: ``(N, L)`` bool, True where the next token is scored.
        context: anything the study's ``finish`` needs (test data, vocabulary, timings...).
    """

    model: Any
    tokens: Any
    loss_mask: Any
    context: Any = None


#: ``prepare(trial) -> Prepared``.
Prepare = Callable[[Any], Prepared]
#: ``finish(trial, prepared, trained model, fit summary, t_train seconds, device, return_models) -> TrialResult``.
Finish = Callable[..., Any]


def run_alone(trial: Any, device, progress: Callable[[int], None] | None, return_models: bool, *,
              prepare: Prepare, finish: Finish) -> Any:
    """Train one trial alone (:func:`bindscale.train.loop.train_from_config`) and hand it to ``finish``.

    ``t_train`` (passed to ``finish``): seconds from the start of :func:`run_alone` (data included) to the
    end of training.
    """
    from bindscale.train.loop import train_from_config

    t0 = time.perf_counter()
    p = prepare(trial)
    model = p.model.to(device)
    fit = train_from_config(model, p.tokens, p.loss_mask, trial.train, seed=trial.seed, device=device,
                            progress=progress)
    return finish(trial, p, model, fit, time.perf_counter() - t0, device, return_models)


def run_stack(trials: Sequence[Any], device, progress: Callable[[int], None] | None, return_models: bool, *,
              prepare: Prepare, finish: Finish) -> list:
    """Trials of one stack key trained as one stacked transformer, each then finished on its own member.

    Trial ``t`` keeps everything it has alone: its data and initial weights (``prepare``), batch order,
    learning-rate schedule, clipping, AdamW state and divergence
    (:func:`bindscale.train.loop.train_stacked_from_config`). ``finish`` gets member ``t``
    (:meth:`~bindscale.models.stacked_transformer.StackedTransformer.member` with the trial's own
    ``max_len``: a plain transformer, a copy of its weights), its fit summary (``steps_per_s`` is the stack's
    rate: every member advances one step per stack step) and ``t_train``, the stack's seconds from the
    start to the end of training.

    Raises:
        ValueError: trials of different shapes, or with different steps or batch size (a wrong stack key).
    """
    from bindscale.models.stacked_transformer import StackedTransformer
    from bindscale.train.loop import train_stacked_from_config

    t0 = time.perf_counter()
    ps = [prepare(t) for t in trials]
    stack = StackedTransformer.from_members([p.model for p in ps]).to(device)
    fits = train_stacked_from_config(stack, [(p.tokens, p.loss_mask) for p in ps], [t.train for t in trials],
                                     seeds=[t.seed for t in trials], device=device, progress=progress)
    t_train = time.perf_counter() - t0
    return [finish(t, p, stack.member(i, max_len=p.model.max_len), fit, t_train, device, return_models)
            for i, (t, p, fit) in enumerate(zip(trials, ps, fits))]


def run_group(trials: Sequence[Any], device, progress: Callable[[int], None] | None, return_models: bool, *,
              key: Callable[[Any], tuple], prepare: Prepare, finish: Finish) -> list:
    """A job's trials, results in the order of ``trials``: those sharing ``key`` train as one stack
    (:func:`run_stack`), a trial without a partner alone (:func:`run_alone`)."""
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(trials):
        groups.setdefault(key(t), []).append(i)
    out: list = [None] * len(trials)
    for rows in groups.values():
        if len(rows) == 1:
            out[rows[0]] = run_alone(trials[rows[0]], device, progress, return_models, prepare=prepare, finish=finish)
        else:
            results = run_stack([trials[i] for i in rows], device, progress, return_models, prepare=prepare,
                                finish=finish)
            for i, res in zip(rows, results):
                out[i] = res
    return out


def hook_model(**model_kwargs: Any) -> Callable[[Any, int], Any]:
    """A ``build`` for :func:`stack_step_seconds`: the trial's untrained model from its study's ``models`` hook
    (:meth:`bindscale.core.study.StudyPlugin.build_model`) with ``max_len`` and ``model_kwargs``. Resolved through
    the registry, so that a study's light ``plan`` module never imports its ``trial`` module (which imports
    ``plan`` to group its trials)."""
    from bindscale.core import registry

    return lambda trial, max_len: registry.for_trial(trial).build_model(trial, max_len=max_len, **model_kwargs)


def stack_step_seconds(trials: Sequence[Any], build: Callable[[Any, int], Any], length: int,
                       window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` stacked, here and now, at the calling process's threads.

    Forward, backward, per-trial clipping and AdamW of the stacked transformer on random tokens of
    ``length`` positions (a rough training length of the trials' data; no data generation or evaluation:
    those cost the same per trial in any stack); the best of ``rounds`` timings of as many steps as fill
    ``window`` seconds (at least one, at most 50), after one warm-up step, in the trials' training precision
    (``train.precision``: the forward pass under bf16 autocast where they train in bf16, as
    :func:`bindscale.train.loop.fit_stacked_minibatches` runs it on the CPU; ``tf32`` is timed as fp32). The
    planner compares stack sizes with it (:func:`bindscale.run.planner.measured_stack_cap`); no trial's
    numbers depend on it.

    Args:
        trials: trials of one stack key (the batch size is the first's; weight decay and clipping each one's).
        build: ``build(trial, max_len)``: the trial's untrained transformer (built under a forked RNG,
            so the global one does not move).
        length: positions of a training sequence (``max_len`` is ``length + 1``).
    """
    from contextlib import nullcontext

    import torch

    from bindscale.models.stacked_transformer import StackedTransformer
    from bindscale.train import speed
    from bindscale.train.loop import PerTrialAdamW, bf16_pays_for, clip_per_trial_, stacked_seq_loss

    with torch.random.fork_rng(devices=[]):
        model = StackedTransformer.from_members([build(t, length + 1) for t in trials])
        tokens = torch.randint(1, model.vocab_size, (len(trials), trials[0].train.batch_size, length + 1))
    mask = torch.ones_like(tokens, dtype=torch.bool)
    mask[:, :, -1] = False
    params = list(model.parameters())
    opt = PerTrialAdamW(params, [t.train.weight_decay for t in trials])
    lrs, active, clips = [1e-6] * len(trials), list(range(len(trials))), [t.train.grad_clip for t in trials]
    precision = getattr(trials[0].train, "precision", "fp32")
    if precision == "tf32":  # a CUDA setting: the CPU times it as fp32
        precision = "fp32"
    bf16 = speed.training_precision(precision, "cpu", bf16_pays_for(model)) == "bf16"

    def step() -> None:
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext():
            loss = stacked_seq_loss(model, tokens, mask).sum()
        loss.backward()
        clip_per_trial_(params, clips)
        opt.step(lrs, active)

    def timed(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            step()
        return time.perf_counter() - start

    first = timed(1)
    steps = max(1, min(50, int(window / max(first, 1e-6))))
    return min(timed(steps) / steps for _ in range(rounds))
