"""One trial of the ``depth`` study: a decoder-only transformer trained on one SCAN split, scored by
greedy exact match.

Model: the shared :class:`bindscale.models.transformer.Transformer`, decoder-only, with the command
as prompt: ``command <sep> actions <eos>``, the loss on the actions and ``<eos>`` only
(:func:`bindscale.train.loop.train_seq_model`). Decoder-only rather than encoder-decoder because it is
the shape the depth claims are about (MobileLLM, Liu et al. 2024, and Petty et al. 2024 vary the
depth of decoder-only language models), because one stack makes "depth" one number (an
encoder-decoder has two depths to trade), and because the project has one transformer, which is
causal. Lake & Baroni 2018 used encoder-decoder RNNs; their numbers are printed as anchors only.

Data (:mod:`.scan`): the split's training and test sets (or the files of ``data``). With a fixed
``task.eval_seed`` (the same for every trial of a study, so every cell is scored on the same
examples), ``n_id`` distinct training commands are withheld from training as the in-distribution
check set ("heldout" stream; lines repeated in training, such as an add-primitive split's
primitive, are never withheld) and ``n_test`` test examples are drawn once ("test" stream). The
trial's own seed sets the initialisation ("init") and the mini-batch order ("train").

Metrics (every one on greedy decoding up to ``<eos>``):

- ``acc_test`` / ``acc_id``: exact match, the whole predicted action sequence equal to the gold
  one (Lake & Baroni 2018, §3: "accuracy ... exact match of the entire output sequence").
- ``tok_acc_test`` / ``tok_acc_id``: token-level accuracy (:func:`token_accuracy`).
- ``acc_by_length``: test exact match by gold output length (Lake & Baroni 2018, Fig. 2 / §4.2,
  accuracy by action-sequence length on the length split), ``{length: [n, acc]}``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import torch

from bindscale.models.transformer import Transformer
from bindscale.kit import (
    TrialResult,
    greedy_predictions,
    generator,
    rng,
    Prepared,
    run_alone,
    run_group as run_stack_group,
    PAD_ID,
    pack_sequences,
)

from . import scan
from .config import DepthTrial
from bindscale.models.shapes import shape_for_budget

#: Special tokens: padding (id 0, :data:`bindscale.train.loop.PAD_ID`), prompt end, output end.
PAD, SEP, EOS = "<pad>", "<sep>", "<eos>"


class Vocab:
    """Token ↔ id for one trial's data: the three specials, then every token seen, sorted."""

    def __init__(self, pairs: Sequence[scan.Pair]):
        tokens = sorted({t for p in pairs for t in p.src + p.tgt} - {PAD, SEP, EOS})
        self.itos = [PAD, SEP, EOS, *tokens]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        assert self.stoi[PAD] == PAD_ID

    def __len__(self) -> int:
        return len(self.itos)

    def ids(self, tokens: Sequence[str]) -> list[int]:
        return [self.stoi[t] for t in tokens]

    def prompt(self, p: scan.Pair) -> list[int]:
        """``command <sep>`` as ids."""
        return self.ids(p.src) + [self.stoi[SEP]]

    def target(self, p: scan.Pair) -> list[int]:
        """``actions <eos>`` as ids."""
        return self.ids(p.tgt) + [self.stoi[EOS]]


class ScanData(NamedTuple):
    """A trial's data: training pairs (withheld ones removed), the in-distribution check set, the
    scored test subsample, the vocabulary and the model's ``max_len``."""

    train: list[scan.Pair]
    id_check: list[scan.Pair]
    test: list[scan.Pair]
    vocab: Vocab
    max_len: int


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
    """Training set, in-distribution check set and test subsample (see the module docstring).

    The in-distribution check set is drawn among training commands that occur once and are not
    test commands; every copy of a withheld command leaves the training set, so the three sets
    share no command.
    """
    train, test = split_pairs(trial)
    t = trial.task
    test_srcs = {p.src for p in test}
    train = [p for p in train if p.src not in test_srcs]  # a file pair that overlaps: test wins
    counts = Counter(p.src for p in train)
    single = sorted({p for p in train if counts[p.src] == 1})
    held_rng = rng(t.eval_seed, "heldout")
    n_id = min(t.n_id, max(0, len(single) - 1))
    picked = [single[i] for i in sorted(held_rng.choice(len(single), size=n_id, replace=False))] if n_id else []
    withheld = {p.src for p in picked}
    train = [p for p in train if p.src not in withheld]
    test_sorted = sorted(set(test))
    if t.n_test and t.n_test < len(test_sorted):
        idx = rng(t.eval_seed, "test").choice(len(test_sorted), size=t.n_test, replace=False)
        test_sorted = [test_sorted[i] for i in sorted(idx)]
    vocab = Vocab(train + picked + test_sorted)
    everything = train + picked + test_sorted
    max_len = max(len(p.src) for p in everything) + max(len(p.tgt) for p in everything) + 4
    return ScanData(train, picked, test_sorted, vocab, max_len)


def pack(pairs: Sequence[scan.Pair], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Training tensors: ``tokens`` ``(N, L)`` (``command <sep> actions <eos>``, right-padded) and the
    loss mask ``(N, L)``, True at the positions whose next token is an action or ``<eos>``."""
    return pack_sequences([(vocab.prompt(p), vocab.target(p)) for p in pairs])


def token_accuracy(preds: Sequence[Sequence[int]], golds: Sequence[Sequence[int]]) -> float:
    """Token-level accuracy: predicted tokens equal to the gold token at the same position, over all
    gold tokens (pooled over examples; the end token counts as a token; a prediction that stops
    early scores its missing positions wrong, extra predicted tokens past the gold end are ignored).

    A per-position complement to exact match, in the sense of the "token-level accuracy" reported
    beside sequence accuracy for SCAN-style tasks (e.g. Ontañón et al. 2022, "Making Transformers
    Solve Compositional Tasks", ACL); this pooled-over-tokens convention is bindscale's.
    NaN when there is no gold token.
    """
    hits = total = 0
    for p, g in zip(preds, golds, strict=True):
        total += len(g)
        hits += sum(1 for a, b in zip(p, g) if a == b)
    return hits / total if total else float("nan")


def score(model: Transformer, pairs: Sequence[scan.Pair], vocab: Vocab) -> tuple[np.ndarray, float, list[list[int]]]:
    """Greedy decoding of ``pairs``: per-example exact match ``(N,)`` bool, token accuracy, predictions."""
    if not pairs:
        return np.zeros(0, dtype=bool), float("nan"), []
    golds = [vocab.target(p) for p in pairs]
    max_new = max(len(g) for g in golds) + 2
    preds = greedy_predictions(model, [vocab.prompt(p) for p in pairs], max_new, vocab.stoi[EOS])
    exact = np.array([p == g for p, g in zip(preds, golds)], dtype=bool)
    return exact, token_accuracy(preds, golds), preds


def acc_by_length(pairs: Sequence[scan.Pair], exact: np.ndarray) -> dict[str, list]:
    """``{gold output length: [n, exact-match accuracy]}`` (JSON-friendly, keys in length order)."""
    lengths = np.array([len(p.tgt) for p in pairs])
    return {str(int(n)): [int((lengths == n).sum()), float(exact[lengths == n].mean())] for n in np.unique(lengths)}


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


def run_trial(trial: DepthTrial, device: str | torch.device = "cpu", progress: Callable[[int], None] | None = None,
              return_models: bool = False) -> TrialResult:
    """Train and score one trial alone; a non-finite loss gives status ``diverged`` (never raises for it)."""
    return run_alone(trial, device, progress, return_models, prepare=_prepare, finish=_result)


def _prepare(trial: DepthTrial) -> Prepared:
    """The trial's untrained model and training tensors; context: its :class:`ScanData`."""
    data = make_data(trial)
    return Prepared(build_model(trial, len(data.vocab), data.max_len), *pack(data.train, data.vocab), data)


def _result(trial: DepthTrial, prepared: Prepared, model: Transformer, fit: dict, t_train: float,
            device: str | torch.device, return_models: bool) -> TrialResult:
    """A trained trial's record: its training summary and, unless it diverged, its scores (module docstring).

    ``t_train``: seconds from the start of the trial (its stack's, when stacked) to the end of training.
    """
    data = prepared.context
    t1 = time.perf_counter()
    kept = {"model": model, "model_kwargs": {"vocab_size": len(data.vocab), "max_len": data.max_len}} if return_models else {}
    metrics = {"n_params": model.n_params(), "n_params_nonembed": model.n_params_nonembedding(),
               "d_model": model.d_model, "d_ff": model.d_ff, "final_loss": fit["final_loss"],
               "curve_steps": [s for s, _ in fit["loss_curve"]], "curve_loss": [v for _, v in fit["loss_curve"]],
               "steps_per_s": fit["steps_per_s"], "n_train_examples": len(data.train)}
    if fit["status"] != "ok":
        if kept:
            model.eval()
        return TrialResult(status=fit["status"], diverged_step=fit.get("diverged_step"), metrics=metrics, **kept)
    exact_id, tok_id, _ = score(model, data.id_check, data.vocab)
    exact, tok, preds = score(model, data.test, data.vocab)
    nan = float("nan")
    metrics |= {
        "acc_id": float(exact_id.mean()) if exact_id.size else nan, "tok_acc_id": tok_id, "n_id": int(exact_id.size),
        "acc_test": float(exact.mean()) if exact.size else nan, "tok_acc_test": tok, "n_test": int(exact.size),
        "acc_by_length": acc_by_length(data.test, exact),
        "examples": [{"command": " ".join(p.src), "gold": " ".join(p.tgt),
                      "pred": " ".join(data.vocab.itos[i] for i in pr)}
                     for p, pr in list(zip(data.test, preds))[:: max(1, len(preds) // 6)]],
        "timings": {"train_s": t_train, "eval_s": time.perf_counter() - t1},
    }
    if kept:
        model.eval()
    return TrialResult(status="ok", metrics=metrics, **kept)


def run_group(trials: list[DepthTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """A job's trials, in order: those of one stack key (:func:`.plan.group_key`: same split, data and
    model, differing in seed or per-trial training fields) train as one stacked transformer and are each
    scored on their own member, the others alone (:func:`bindscale.train.stack.run_group`); a trial's record
    is the same either way, up to float rounding."""
    from .plan import group_key

    return run_stack_group(trials, device, progress, return_models, key=group_key, prepare=_prepare,
                            finish=_result)
