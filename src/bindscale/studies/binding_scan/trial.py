"""One trial of the ``binding_scan`` study: a decoder-only model (plain, syntactic attention or
TP-Transformer) trained on one SCAN split with the command as prompt, scored by greedy exact match.

Sequences are ``command <sep> actions <eos>``, the loss on the actions and ``<eos>`` only
(:func:`bindscale.kit.pack_sequences`, :func:`bindscale.kit.train_from_config`), exactly as the ``depth``
study trains its plain transformers; the plain model is the shared
:class:`bindscale.models.transformer.Transformer` at the depth study's shapes, the binding models those of
:mod:`bindscale.models.binding` at the same non-embedding budget (:mod:`bindscale.models.binding_shapes`).

Data (:mod:`.scan`): with ``task.eval_seed`` fixed (the same for every trial of a study), ``n_id`` distinct
training commands that occur once are withheld as the in-distribution check set ("heldout" stream) and
``n_test`` test examples are drawn once ("test" stream); the trial's seed sets the initial weights ("init")
and the mini-batch order ("train").

Metrics (greedy decoding up to ``<eos>``): ``acc_test`` / ``acc_id`` exact match of the whole action
sequence (Lake & Baroni 2018, §3), ``tok_acc_test`` / ``tok_acc_id`` token accuracy (pooled over gold
tokens), ``acc_by_length`` test exact match by gold output length, the model's ``n_params`` and
``n_params_nonembed``.

Trials of the plain model with equal stack keys (:func:`.plan.group_key`) train as one stacked transformer
(:func:`bindscale.kit.run_group`); the binding models have no stacked form and train alone.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import torch

from bindscale.kit import PAD_ID, Prepared, TrialResult, generator, greedy_predictions, pack_sequences, rng, run_alone
from bindscale.kit import run_group as run_stack_group
from bindscale.models.binding import MODELS
from bindscale.models.binding_shapes import shape_for_budget
from bindscale.models.transformer import Transformer

from . import scan
from .config import BindingTrial

#: Special tokens: padding (id 0, the trainer's PAD_ID), prompt end, output end.
PAD, SEP, EOS = "<pad>", "<sep>", "<eos>"


class Vocab:
    """Token ↔ id: the three specials, then every token of the data, sorted."""

    def __init__(self, pairs: Sequence[scan.Pair]):
        tokens = sorted({t for p in pairs for t in p.src + p.tgt} - {PAD, SEP, EOS})
        self.itos = [PAD, SEP, EOS, *tokens]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        assert self.stoi[PAD] == PAD_ID

    def __len__(self) -> int:
        return len(self.itos)

    def prompt(self, p: scan.Pair) -> list[int]:
        """``command <sep>`` as ids."""
        return [self.stoi[t] for t in p.src] + [self.stoi[SEP]]

    def target(self, p: scan.Pair) -> list[int]:
        """``actions <eos>`` as ids."""
        return [self.stoi[t] for t in p.tgt] + [self.stoi[EOS]]


class ScanData(NamedTuple):
    """Training pairs (withheld ones removed), the in-distribution check set, the scored test subsample,
    the vocabulary and the model's ``max_len``."""

    train: list[scan.Pair]
    id_check: list[scan.Pair]
    test: list[scan.Pair]
    vocab: Vocab
    max_len: int


def make_data(trial: BindingTrial) -> ScanData:
    """The trial's three disjoint sets (module docstring): withheld commands leave training entirely."""
    t = trial.task
    train, test = scan.make_split(t.split, t.split_seed)
    counts = Counter(p.src for p in train)
    single = sorted({p for p in train if counts[p.src] == 1})
    n_id = min(t.n_id, max(0, len(single) - 1))
    picked = ([single[i] for i in sorted(rng(t.eval_seed, "heldout").choice(len(single), size=n_id, replace=False))]
              if n_id else [])
    withheld = {p.src for p in picked}
    train = [p for p in train if p.src not in withheld]
    test = sorted(set(test))
    if t.n_test and t.n_test < len(test):
        idx = rng(t.eval_seed, "test").choice(len(test), size=t.n_test, replace=False)
        test = [test[i] for i in sorted(idx)]
    everything = train + picked + test
    max_len = max(len(p.src) for p in everything) + max(len(p.tgt) for p in everything) + 4
    return ScanData(train, picked, test, Vocab(everything), max_len)


def pack(pairs: Sequence[scan.Pair], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Training tensors ``(N, L)``: tokens (right-padded) and the loss mask (True where the next token is an
    action or ``<eos>``)."""
    return pack_sequences([(vocab.prompt(p), vocab.target(p)) for p in pairs])


def token_accuracy(preds: Sequence[Sequence[int]], golds: Sequence[Sequence[int]]) -> float:
    """Predicted tokens equal to the gold token at the same position, over all gold tokens (a short
    prediction scores its missing positions wrong; tokens past the gold end are ignored); NaN without gold."""
    hits = total = 0
    for p, g in zip(preds, golds, strict=True):
        total += len(g)
        hits += sum(1 for a, b in zip(p, g) if a == b)
    return hits / total if total else float("nan")


def score(model: torch.nn.Module, pairs: Sequence[scan.Pair], vocab: Vocab) -> tuple[np.ndarray, float, list]:
    """Greedy decoding of ``pairs``: per-example exact match ``(N,)``, token accuracy, predictions."""
    if not pairs:
        return np.zeros(0, dtype=bool), float("nan"), []
    golds = [vocab.target(p) for p in pairs]
    preds = greedy_predictions(model, [vocab.prompt(p) for p in pairs], max(len(g) for g in golds) + 2,
                               vocab.stoi[EOS])
    return np.array([p == g for p, g in zip(preds, golds)], dtype=bool), token_accuracy(preds, golds), preds


def acc_by_length(pairs: Sequence[scan.Pair], exact: np.ndarray) -> dict[str, list]:
    """``{gold output length: [n, exact match]}`` in length order."""
    lengths = np.array([len(p.tgt) for p in pairs])
    return {str(int(n)): [int((lengths == n).sum()), float(exact[lengths == n].mean())] for n in np.unique(lengths)}


def build_model(trial: BindingTrial, vocab_size: int, max_len: int) -> torch.nn.Module:
    """The trial's untrained model ("init" stream): kind, depth and budget → width and MLP width."""
    m = trial.model
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
    return Prepared(build_model(trial, len(data.vocab), data.max_len), *pack(data.train, data.vocab), data)


def _result(trial: BindingTrial, prepared: Prepared, model: torch.nn.Module, fit: dict, t_train: float,
            device: str | torch.device, return_models: bool) -> TrialResult:
    """A trained trial's record: its training summary and, unless it diverged, its scores."""
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


def run_trial(trial: BindingTrial, device: str | torch.device = "cpu", progress: Callable[[int], None] | None = None,
              return_models: bool = False) -> TrialResult:
    """Train and score one trial alone; a non-finite loss gives status ``diverged`` (never raises for it)."""
    return run_alone(trial, device, progress, return_models, prepare=_prepare, finish=_result)


def run_group(trials: list[BindingTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """A job's trials, in order: plain ones of one stack key as one stacked transformer, the others alone
    (:func:`.plan.group_key` gives every binding trial a key of its own)."""
    from .plan import group_key

    return run_stack_group(trials, device, progress, return_models, key=group_key, prepare=_prepare,
                           finish=_result)
