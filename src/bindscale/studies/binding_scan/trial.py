"""One trial of the ``binding_scan`` study: a decoder-only model (plain, syntactic attention or
TP-Transformer) trained on one SCAN split with the command as prompt, scored by greedy exact match.

Sequences are ``command <sep> actions <eos>``, the loss on the actions and ``<eos>`` only
(:func:`bindscale.kit.pack_sequences`, :func:`bindscale.kit.train_from_config`), exactly as the ``depth``
study trains its plain transformers; the plain model is the shared
:class:`bindscale.models.transformer.Transformer` at the depth study's shapes, the binding models those of
:mod:`bindscale.models.binding` at the same non-embedding budget (:mod:`bindscale.models.binding_shapes`).

Data (:mod:`bindscale.train.scan`, the kit's ``scan``, and :func:`bindscale.kit.scan_data`, as the ``depth``
study draws it): with ``task.eval_seed`` fixed (the same for every trial of a study), ``n_id`` distinct
training commands that occur once are withheld as the in-distribution check set ("heldout" stream) and
``n_test`` test examples are drawn once ("test" stream); the trial's seed sets the initial weights ("init")
and the mini-batch order ("train").

Metrics (greedy decoding up to ``<eos>``): ``acc_test`` / ``acc_id`` exact match of the whole action
sequence (Lake & Baroni 2018, §3), ``tok_acc_test`` / ``tok_acc_id`` token accuracy (pooled over gold
tokens), ``acc_by_length`` test exact match by gold output length, the model's ``n_params`` and
``n_params_nonembed`` (the record: :func:`bindscale.kit.scan_result`, the vocabulary, packing and scoring the
kit's SCAN helpers, :mod:`bindscale.train.seqdata`, the same code as the ``depth`` study's).

Trials of the plain model with equal stack keys (:func:`.plan.group_key`) train as one stacked transformer
(:func:`bindscale.kit.run_group`); the binding models have no stacked form and train alone.

A recurrent trial (``model.kind: lstm_seq2seq``, Lake & Baroni 2018's encoder-decoder) trains and is scored by
:mod:`.rnn_trial` on the same data, with the same record.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from bindscale.kit import (
    Prepared,
    ScanData,
    TrialResult,
    generator,
    pack_pairs,
    run_alone,
    scan,
    scan_data,
    scan_result,
)
from bindscale.kit import run_group as run_stack_group
from bindscale.models.binding import MODELS
from bindscale.models.binding_shapes import shape_for_budget
from bindscale.models.transformer import Transformer

from . import rnn_trial
from .config import BindingTrial


def make_data(trial: BindingTrial) -> ScanData:
    """The trial's three disjoint sets of its generated split (:func:`bindscale.kit.scan_data`)."""
    return scan_data(*scan.make_split(trial.task.split, trial.task.split_seed), trial.task)


def build_model(trial: BindingTrial, vocab_size: int, max_len: int) -> torch.nn.Module:
    """The trial's untrained model ("init" stream): kind, depth and budget → width and MLP width (a recurrent
    trial's: :func:`.rnn_trial.build_model`, on its data's vocabulary)."""
    m = trial.model
    if trial.recurrent():
        data = make_data(trial)
        if len(data.vocab) != vocab_size:
            raise ValueError(f"vocab_size {vocab_size} is not the trial's data's {len(data.vocab)}")
        return rnn_trial.build_model(trial, data)
    s = shape_for_budget(m.kind, m.budget, m.n_layers, m.n_heads)
    g = generator(trial.seed, "init")
    if m.kind == "transformer":
        return Transformer(vocab_size, s.n_layers, s.d_model, s.n_heads, max_len=max_len, pos=m.pos, d_ff=s.d_ff,
                           generator=g)
    return MODELS[m.kind](vocab_size, s.n_layers, s.d_model, s.n_heads, s.d_ff, max_len=max_len, pos=m.pos,
                          generator=g)


def task_family(trial: BindingTrial, device: str | torch.device = "cpu") -> ScanData:
    """The trial's data (:class:`ScanData`; ``device`` unused)."""
    return make_data(trial)


def untrained_model(trial: BindingTrial, vocab_size: int | None = None, max_len: int | None = None) -> torch.nn.Module:
    """The trial's model as :func:`run_trial` initialises it (vocabulary and ``max_len`` from its data when
    not given)."""
    if vocab_size is None or max_len is None:
        data = make_data(trial)
        vocab_size, max_len = len(data.vocab), data.max_len
    return build_model(trial, vocab_size, max_len)


def _prepare(trial: BindingTrial) -> Prepared:
    data = make_data(trial)
    return Prepared(build_model(trial, len(data.vocab), data.max_len), *pack_pairs(data.train, data.vocab), data)


#: A trained trial's record: the kit's :func:`bindscale.kit.scan_result` (the SCAN studies' one record), under
#: the name a study's ``finish`` has beside its ``_prepare``.
_result = scan_result


def run_trial(trial: BindingTrial, device: str | torch.device = "cpu", progress: Callable[[int], None] | None = None,
              return_models: bool = False) -> TrialResult:
    """Train and score one trial alone; a non-finite loss gives status ``diverged`` (never raises for it)."""
    if trial.recurrent():
        return rnn_trial.run_alone(trial, make_data(trial), device, progress, return_models)
    return run_alone(trial, device, progress, return_models, prepare=_prepare, finish=_result)


def run_group(trials: list[BindingTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """A job's trials, in order: plain ones of one stack key as one stacked transformer, the others alone
    (:func:`.plan.group_key` gives every binding and recurrent trial a key of its own)."""
    from .plan import group_key

    out: list = [None] * len(trials)
    decoders = [i for i, t in enumerate(trials) if not t.recurrent()]
    for i, t in enumerate(trials):
        if t.recurrent():
            out[i] = run_trial(t, device, progress, return_models)
    if decoders:
        results = run_stack_group([trials[i] for i in decoders], device, progress, return_models, key=group_key,
                                  prepare=_prepare, finish=_result)
        for i, r in zip(decoders, results):
            out[i] = r
    return out
