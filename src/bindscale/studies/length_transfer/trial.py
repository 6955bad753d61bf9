"""One trial of the ``length_transfer`` study: co-train a transformer on a main task (lengths ≤ L)
and auxiliary tasks (lengths ≤ aux_len), then measure length extrapolation and head reuse.

Claim under test (Cai et al. 2025, "Extrapolation by Association: Length Generalization
Transfer in Transformers", arXiv 2506.09251): a main task trained only up to length L
extrapolates beyond L when trained jointly with a related auxiliary task seen at longer
lengths; unrelated auxiliaries give no transfer; tasks that transfer reuse the same heads.

Data (independent seed streams, :mod:`bindscale.core.seeding`): a fixed training set ("train"
stream) of main examples at lengths 1..L and auxiliary examples at 1..aux_len (tasks in turn);
test examples ("test" stream) at every length 2..test_max whose prompt is not in the training
set; the examples scored under head ablation ("heldout" stream, training lengths); the
reference batch whose mean head outputs replace a head ("probe" stream, training lengths).
The ablation and reference examples are drawn independently of the training set, not excluded
from it: at short lengths many of them are training examples (review item 12: 42 of the 96 main
ablation examples of the default copy trial at L = 4, whose short lengths have few distinct
strings). Head importance is therefore measured on seen and unseen examples alike — on the
computation the model uses at training lengths, not on held-out generalization.
Training (``init`` and ``train`` streams) is the shared sequence trainer, loss on the answer.

Metrics: exact match of the main task by length (teacher forcing, equal to greedy exact match:
:func:`.heads.answer_scores`) and its means over lengths in training (``acc_in``: 2..L), beyond L
within the auxiliary's range (``acc_beyond``: L+1..aux_len) and past it (``acc_past``); the same
for every auxiliary (``aux_acc_by_length``, ``aux_acc_in``); per-head mean-ablation importance
maps of the main task and of the auxiliaries pooled (``heads_main``, ``heads_aux``), and their
similarity: Pearson correlation of the loss-rise maps (``head_corr``), of the exact-match-drop
maps (``head_corr_em``) and the top-k Jaccard overlap (``head_jaccard``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from bindscale.models.transformer import Transformer
from bindscale.kit import TrialResult, generator, Prepared, run_alone, run_group as run_stack_group

from . import tasks as T
from .config import LengthTransferTrial
from .data import LengthData, length_metrics, make_data
from .heads import answer_scores, head_importance, head_record


def task_family(trial: LengthTransferTrial, device: str | torch.device = "cpu") -> LengthData:
    """The trial's data (:class:`LengthData`; fixed sets, ``device`` unused)."""
    return make_data(trial)


def build_model(trial: LengthTransferTrial, max_len: int) -> Transformer:
    """The trial's transformer ("init" stream) with its position scheme."""
    m = trial.model
    return Transformer(T.VOCAB_SIZE, m.n_layers, m.d_model, m.n_heads, m.mlp_ratio, max_len=max_len,
                       generator=generator(trial.seed, "init"), pos=m.pos)


def untrained_model(trial: LengthTransferTrial, max_len: int | None = None) -> Transformer:
    """The trial's transformer as :func:`run_trial` initialises it, on the CPU."""
    return build_model(trial, make_data(trial).max_len if max_len is None else max_len)


def _acc_table(model: Transformer, by_len: dict[int, list[T.Example]], device) -> dict[str, list]:
    """``{str(length): [n, exact match]}`` over the lengths that have examples."""
    out = {}
    for n, exs in by_len.items():
        if exs:
            tok, mask = T.pack(exs)
            ok, _ = answer_scores(model.to(device), tok, mask)
            out[str(n)] = [len(exs), float(ok.mean())]
    return out


def evaluate(trial: LengthTransferTrial, model: Transformer, data: LengthData, device="cpu") -> dict:
    """Every metric of the module docstring for a trained model."""
    t = trial.task
    model.eval()
    aux = {a: _acc_table(model, by_len, device) for a, by_len in data.aux_test.items()}
    m = length_metrics(t, _acc_table(model, data.test, device), aux)
    main_map = head_importance(model, *T.pack(data.ablate_main), T.pack(data.reference_main)[0])
    aux_map = (head_importance(model, *T.pack(data.ablate_aux), T.pack(data.reference_aux)[0])
               if data.ablate_aux else None)
    m |= head_record(main_map, aux_map)
    return m


def run_trial(trial: LengthTransferTrial, device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> TrialResult:
    """Train and evaluate one trial alone; a non-finite loss gives status ``diverged``.

    ``return_models``: also hand back the trained transformer (``TrialResult.model``, eval mode;
    ``model_kwargs`` holds its ``max_len``). A pretrained model's trial (``model.kind: pretrained``) is
    fine-tuned and measured the same way by :func:`.lmtrial.run_lm_trial`.
    """
    from .lmtrial import is_lm_trial, run_lm_trial

    if is_lm_trial(trial):
        return run_lm_trial(trial, device, progress, return_models)
    return run_alone(trial, device, progress, return_models, prepare=_prepare, finish=_result)


def _prepare(trial: LengthTransferTrial) -> Prepared:
    """The trial's untrained model and training tensors (its own task mixture, "train" stream); context:
    its :class:`LengthData`."""
    data = make_data(trial)
    return Prepared(build_model(trial, data.max_len), *T.pack(data.train), data)


def _result(trial: LengthTransferTrial, prepared: Prepared, model: Transformer, fit: dict, t_train: float,
            device: str | torch.device, return_models: bool) -> TrialResult:
    """A trained trial's record: its training summary and, unless it diverged, :func:`evaluate`'s metrics
    (exact match by length, head ablations) on ``model`` (the trial's own, or its stack member).

    ``t_train``: seconds from the start of the trial (its stack's, when stacked) to the end of training.
    """
    data = prepared.context
    t1 = time.perf_counter()
    kept = {"model": model, "model_kwargs": {"max_len": data.max_len}} if return_models else {}
    metrics = {"n_params": model.n_params(), "final_loss": fit["final_loss"],
               "curve_steps": [s for s, _ in fit["loss_curve"]], "curve_loss": [v for _, v in fit["loss_curve"]],
               "steps_per_s": fit["steps_per_s"], "n_train_examples": len(data.train),
               "max_train_len_main": max(ex.length for ex in data.train if ex.task == trial.task.main)}
    if fit["status"] != "ok":
        model.eval()
        return TrialResult(status=fit["status"], diverged_step=fit.get("diverged_step"), metrics=metrics, **kept)
    metrics |= evaluate(trial, model, data, device)
    metrics["timings"] = {"train_s": t_train, "eval_s": time.perf_counter() - t1}
    return TrialResult(status="ok", metrics=metrics, **kept)


def run_group(trials: list[LengthTransferTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """A job's trials, in order: those of one stack key (:func:`.plan.group_key`: same task mixture and
    lengths, same model, differing in seed or per-trial training fields) train as one stacked transformer,
    each on its own data stream, and are each evaluated (exact match, head ablations) on their own member;
    the others train alone (:func:`bindscale.train.stack.run_group`). A record is the same either way, up to
    float rounding. A pretrained model's trial runs alone (:func:`.lmtrial.run_lm_trial`), in its place."""
    from .lmtrial import is_lm_trial, run_lm_trial
    from .plan import group_key

    scratch = [t for t in trials if not is_lm_trial(t)]
    done = iter(run_stack_group(scratch, device, progress, return_models, key=group_key, prepare=_prepare,
                                 finish=_result) if scratch else [])
    return [run_lm_trial(t, device, progress, return_models) if is_lm_trial(t) else next(done) for t in trials]
