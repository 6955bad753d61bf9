"""SCAN-style sequence tasks as a decoder-only model trains on and is scored on them, shared by the SCAN
studies (``depth``, ``binding_scan``; the kit exports every name here).

A task is a list of :class:`bindscale.train.scan.Pair` (input tokens, output tokens); the model sees
``input <sep> output <eos>``, with the input as prompt and the loss on the output and ``<eos>`` only
(:func:`pack_pairs`, :func:`bindscale.train.loop.pack_sequences`).

- :class:`Vocab`: token ↔ id, the three specials (:data:`PAD`, :data:`SEP`, :data:`EOS`) then every token
  of the data, sorted.
- :func:`scan_data`: a split's training set, in-distribution check set and scored test subsample
  (:class:`ScanData`), drawn once from the task's ``eval_seed``.
- :func:`score_pairs`: greedy exact match, the whole predicted output equal to the gold one (Lake & Baroni
  2018, §3: "accuracy ... exact match of the entire output sequence"), and :func:`token_accuracy`.
- :func:`acc_by_length`: exact match by gold output length (Lake & Baroni 2018, Fig. 2 / §4.2).
- :func:`scan_result`: a trained trial's record from all of these (the ``finish`` of
  :func:`bindscale.train.stack.run_alone` / :func:`bindscale.train.stack.run_group`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch

from bindscale.core.seeding import rng
from bindscale.train.loop import PAD_ID, greedy_predictions, pack_sequences
from bindscale.train.result import TrialResult
from bindscale.train.scan import Pair, ScanTaskConfig

if TYPE_CHECKING:
    from bindscale.train.stack import Prepared

#: Special tokens: padding (id 0, :data:`bindscale.train.loop.PAD_ID`), prompt end, output end.
PAD, SEP, EOS = "<pad>", "<sep>", "<eos>"


class Vocab:
    """Token ↔ id for one trial's data: the three specials, then every token seen, sorted."""

    def __init__(self, pairs: Sequence[Pair]):
        tokens = sorted({t for p in pairs for t in p.src + p.tgt} - {PAD, SEP, EOS})
        self.itos = [PAD, SEP, EOS, *tokens]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        assert self.stoi[PAD] == PAD_ID

    def __len__(self) -> int:
        return len(self.itos)

    def ids(self, tokens: Sequence[str]) -> list[int]:
        return [self.stoi[t] for t in tokens]

    def prompt(self, p: Pair) -> list[int]:
        """``command <sep>`` as ids."""
        return self.ids(p.src) + [self.stoi[SEP]]

    def target(self, p: Pair) -> list[int]:
        """``actions <eos>`` as ids."""
        return self.ids(p.tgt) + [self.stoi[EOS]]


class ScanData(NamedTuple):
    """A trial's data: training pairs (withheld ones removed), the in-distribution check set, the
    scored test subsample, the vocabulary and the model's ``max_len``."""

    train: list[Pair]
    id_check: list[Pair]
    test: list[Pair]
    vocab: Vocab
    max_len: int


def scan_data(train: Sequence[Pair], test: Sequence[Pair], task: ScanTaskConfig) -> ScanData:
    """Training set, in-distribution check set and test subsample of a split's full ``(train, test)``.

    With ``task.eval_seed`` (the same for every trial of a study, so every cell is scored on the same
    examples), ``task.n_id`` distinct training commands are withheld from training as the in-distribution
    check set ("heldout" stream), drawn among training commands that occur once and are not test commands
    (lines repeated in training, such as an add-primitive split's primitive, are never withheld), and
    ``task.n_test`` test examples are drawn once ("test" stream; 0: all). Every copy of a withheld command
    leaves the training set and a training pair whose command is also a test command is dropped (a pair
    of data files that overlap: test wins), so the three sets share no command.
    """
    t = task
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


def pack_pairs(pairs: Sequence[Pair], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
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


def score_pairs(model: torch.nn.Module, pairs: Sequence[Pair], vocab: Vocab) -> tuple[np.ndarray, float, list[list[int]]]:
    """Greedy decoding of ``pairs``: per-example exact match ``(N,)`` bool, token accuracy, predictions."""
    if not pairs:
        return np.zeros(0, dtype=bool), float("nan"), []
    golds = [vocab.target(p) for p in pairs]
    max_new = max(len(g) for g in golds) + 2
    preds = greedy_predictions(model, [vocab.prompt(p) for p in pairs], max_new, vocab.stoi[EOS])
    exact = np.array([p == g for p, g in zip(preds, golds)], dtype=bool)
    return exact, token_accuracy(preds, golds), preds


def acc_by_length(pairs: Sequence[Pair], exact: np.ndarray) -> dict[str, list]:
    """``{gold output length: [n, exact-match accuracy]}`` (JSON-friendly, keys in length order)."""
    lengths = np.array([len(p.tgt) for p in pairs])
    return {str(int(n)): [int((lengths == n).sum()), float(exact[lengths == n].mean())] for n in np.unique(lengths)}


def scan_result(trial: Any, prepared: Prepared, model: torch.nn.Module, fit: dict, t_train: float,
                device: str | torch.device, return_models: bool) -> TrialResult:
    """A trained trial's record: its training summary and, unless it diverged, its scores (``prepared.context``
    is the trial's :class:`ScanData`; the ``finish`` of :func:`bindscale.train.stack.run_alone`).

    Metrics: ``n_params``, ``n_params_nonembed``, ``d_model``, ``d_ff``, ``final_loss``, the loss curve
    (``curve_steps``, ``curve_loss``), ``steps_per_s``, ``n_train_examples``; unless diverged, exact match
    ``acc_id`` / ``acc_test`` (:func:`score_pairs`), token accuracy ``tok_acc_id`` / ``tok_acc_test``, the set
    sizes ``n_id`` / ``n_test``, ``acc_by_length`` on the test set, a few decoded ``examples`` and the
    ``timings``. ``t_train``: seconds from the start of the trial (its stack's, when stacked) to the end of
    training.
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
    exact_id, tok_id, _ = score_pairs(model, data.id_check, data.vocab)
    exact, tok, preds = score_pairs(model, data.test, data.vocab)
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
