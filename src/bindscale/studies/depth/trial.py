"""One trial of the ``depth`` study: a decoder-only transformer trained on one SCAN split, scored by
greedy exact match.

Model: the shared :class:`bindscale.models.transformer.Transformer`, decoder-only, with the command
as prompt: ``command <sep> actions <eos>``, the loss on the actions and ``<eos>`` only
(:func:`bindscale.train.loop.train_seq_model`). Decoder-only rather than encoder-decoder because it is
the shape the depth claims are about (MobileLLM, Liu et al. 2024, and Petty et al. 2024 vary the
depth of decoder-only language models), because one stack makes "depth" one number (an
encoder-decoder has two depths to trade), and because the project has one transformer, which is
causal. Lake & Baroni 2018 used encoder-decoder RNNs; their numbers are printed as anchors only.

Data (:mod:`bindscale.train.scan`, the kit's ``scan``; :func:`bindscale.kit.scan_data`): the split's
training and test sets (or the files of ``data``). With a fixed
``task.eval_seed`` (the same for every trial of a study, so every cell is scored on the same
examples), ``n_id`` distinct training commands are withheld from training as the in-distribution
check set ("heldout" stream; lines repeated in training, such as an add-primitive split's
primitive, are never withheld) and ``n_test`` test examples are drawn once ("test" stream). The
trial's own seed sets the initialisation ("init") and the mini-batch order ("train").

Metrics (every one on greedy decoding up to ``<eos>``):

- ``acc_test`` / ``acc_id``: exact match, the whole predicted action sequence equal to the gold
  one (Lake & Baroni 2018, §3: "accuracy ... exact match of the entire output sequence").
- ``tok_acc_test`` / ``tok_acc_id``: token-level accuracy (:func:`bindscale.kit.token_accuracy`).
- ``acc_by_length``: test exact match by gold output length (Lake & Baroni 2018, Fig. 2 / §4.2,
  accuracy by action-sequence length on the length split), ``{length: [n, acc]}``.

The vocabulary, packing, scoring and the record are the kit's SCAN helpers (:mod:`bindscale.train.seqdata`),
shared with the ``binding_scan`` study.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from bindscale.models.transformer import Transformer
from bindscale.kit import (
    ScanData,
    TrialResult,
    generator,
    Prepared,
    run_alone,
    run_group as run_stack_group,
    pack_pairs,
    scan,
    scan_data,
    scan_result,
)

from .config import DepthTrial
from bindscale.models.shapes import shape_for_budget


def split_pairs(trial: DepthTrial) -> tuple[list[scan.Pair], list[scan.Pair]]:
    """The full ``(train, test)`` of the trial: its data files, or the generated split.

    Raises:
        bindscale.core.errors.ConfigError: a data file is missing or malformed.
    """
    if trial.data.train is not None:
        return (scan.load_pairs(trial.data.train, trial.data.format),
                scan.load_pairs(trial.data.test, trial.data.format))
    return scan.make_split(trial.task.split, trial.task.split_seed)


def make_data(trial: DepthTrial) -> ScanData:
    """Training set, in-distribution check set and test subsample of the trial's split or files
    (:func:`bindscale.kit.scan_data`; the three sets share no command)."""
    return scan_data(*split_pairs(trial), trial.task)


def build_model(trial: DepthTrial, vocab_size: int, max_len: int) -> Transformer:
    """The trial's transformer ("init" stream): depth and budget → width and MLP width."""
    m = trial.model
    s = shape_for_budget(m.budget, m.n_layers, m.n_heads)
    return Transformer(vocab_size, s.n_layers, s.d_model, s.n_heads, max_len=max_len, pos=m.pos, d_ff=s.d_ff,
                       generator=generator(trial.seed, "init"))


def task_family(trial: DepthTrial, device: str | torch.device = "cpu") -> ScanData:
    """The trial's data (:class:`ScanData`; fixed sets, ``device`` unused)."""
    return make_data(trial)


def untrained_model(trial: DepthTrial, vocab_size: int | None = None, max_len: int | None = None) -> Transformer:
    """The trial's transformer as :func:`run_trial` initialises it (vocabulary and ``max_len`` from its data
    when not given)."""
    if vocab_size is None or max_len is None:
        data = make_data(trial)
        vocab_size, max_len = len(data.vocab), data.max_len
    return build_model(trial, vocab_size, max_len)


#: A trained trial's record: the kit's :func:`bindscale.kit.scan_result` (the SCAN studies' one record), under
#: the name a study's ``finish`` has beside its ``_prepare``.
_result = scan_result


def run_trial(trial: DepthTrial, device: str | torch.device = "cpu", progress: Callable[[int], None] | None = None,
              return_models: bool = False) -> TrialResult:
    """Train and score one trial alone; a non-finite loss gives status ``diverged`` (never raises for it)."""
    return run_alone(trial, device, progress, return_models, prepare=_prepare, finish=_result)


def _prepare(trial: DepthTrial) -> Prepared:
    """The trial's untrained model and training tensors; context: its :class:`ScanData`."""
    data = make_data(trial)
    return Prepared(build_model(trial, len(data.vocab), data.max_len), *pack_pairs(data.train, data.vocab), data)


def run_group(trials: list[DepthTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """A job's trials, in order: those of one stack key (:func:`.plan.group_key`: same split, data and
    model, differing in seed or per-trial training fields) train as one stacked transformer and are each
    scored on their own member, the others alone (:func:`bindscale.train.stack.run_group`); a trial's record
    is the same either way, up to float rounding."""
    from .plan import group_key

    return run_stack_group(trials, device, progress, return_models, key=group_key, prepare=_prepare,
                            finish=_result)
