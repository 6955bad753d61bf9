"""One trial of the ``ceiling`` study: a transformer trained from scratch to answer constrained problems,
or a real language model (:mod:`.llm`) answering the same test instances.

Trained model: the project's decoder-only :class:`bindscale.models.transformer.Transformer` sized by its
non-embedding budget (:func:`bindscale.models.shapes.shape_for_budget`), one model per trial
for all the trial's families at once (the prompt's first token names the family). Sequence:
``instance tokens <sep> solution <eos>`` (:meth:`.problems.Problem.tokens`; the solution is one token
per variable), loss on the solution and ``<eos>`` only, trained by
:func:`bindscale.train.loop.train_from_config` on the fixed training set (``task.n_train`` per family:
the data axis). Labels are the solver's optima (:mod:`.problems`), so the model learns to emit an
optimal solution; greedy decoding up to ``<eos>``; outputs parsed by :func:`.scoring.parse_tokens`
and scored by :func:`.scoring.trial_metrics` on the test and held-out sets and on up to
:data:`N_TRAIN_CHECK` training instances per family (``*_train`` columns, same parser and checker: did the model
fit its data? The claim's competence gates read them, :mod:`.verdicts`; about a tenth of the test set's cost).
Chance levels on the same test instances: ``chance_<metric>_<family>`` (the better of uniform-random and
all-zero answers) and ``random_<metric>_<family>`` (uniform-random), :mod:`.baselines`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch

from bindscale.models.transformer import Transformer
from bindscale.kit import (
    TrialResult,
    greedy_predictions,
    generator,
    Prepared,
    run_alone,
    run_group as run_stack_group,
    PAD_ID,
    pack_sequences,
)

from bindscale.models.shapes import shape_for_budget
from .config import CeilingTrial
from .baselines import BASE_METRICS, baselines, chance
from .data import InstanceSets, instance_sets
from .problems import Problem
from .scoring import parse_tokens, trial_metrics

#: Special tokens (``<pad>`` is id 0, :data:`bindscale.train.loop.PAD_ID`).
PAD, SEP, EOS = "<pad>", "<sep>", "<eos>"
#: Structure words of the serialisations (:meth:`.problems.Problem.tokens`) and the numbers they use.
WORDS = ("COL", "KNA", "ASG", "n", "k", "e", "cap", "it", "t", "c", "x", "y")
MAX_NUMBER = 99
#: Training instances per family scored as the fit check.
N_TRAIN_CHECK = 100


class Vocab:
    """A fixed vocabulary: the specials, :data:`WORDS` and the numbers ``0 .. MAX_NUMBER`` (the same for every
    trial, so it never depends on the data drawn)."""

    def __init__(self):
        self.itos = [PAD, SEP, EOS, *WORDS, *map(str, range(MAX_NUMBER + 1))]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        assert self.stoi[PAD] == PAD_ID

    def __len__(self) -> int:
        return len(self.itos)

    def prompt(self, p: Problem) -> list[int]:
        """``instance <sep>`` as ids.

        Raises:
            KeyError: a number above :data:`MAX_NUMBER` (a difficulty beyond the vocabulary).
        """
        return [self.stoi[t] for t in p.tokens()] + [self.stoi[SEP]]

    def target(self, p: Problem) -> list[int]:
        """``solution <eos>`` as ids."""
        return [self.stoi[str(v)] for v in p.optimum] + [self.stoi[EOS]]


VOCAB = Vocab()


def pack(problems: Sequence[Problem], vocab: Vocab = VOCAB) -> tuple[torch.Tensor, torch.Tensor]:
    """Training tensors ``tokens`` ``(N, L)`` (right-padded) and loss mask ``(N, L)`` (True where the next
    token is a solution token or ``<eos>``)."""
    return pack_sequences([(vocab.prompt(p), vocab.target(p)) for p in problems])


def sequence_length(sets: InstanceSets, vocab: Vocab = VOCAB) -> int:
    """Positions the model needs: the longest prompt plus solution plus end, over all sets."""
    return max(len(vocab.prompt(p)) + p.n_vars + 2 for s in sets for ps in s.values() for p in ps)


def answers(model: Transformer, problems: Sequence[Problem], vocab: Vocab = VOCAB) -> list[tuple[int, ...] | None]:
    """Greedy answers to ``problems``, parsed (None: unparsable)."""
    if not problems:
        return []
    longest = max(p.n_vars for p in problems) + 2
    preds = greedy_predictions(model, [vocab.prompt(p) for p in problems], longest, vocab.stoi[EOS])
    out = []
    for p, pred in zip(problems, preds):
        toks = [vocab.itos[i] for i in pred]
        toks = toks[:toks.index(EOS)] if EOS in toks else toks + ["<no-eos>"]  # no end token: unparsable
        out.append(parse_tokens(toks, p))
    return out


def build_model(trial: CeilingTrial, vocab_size: int, max_len: int) -> Transformer:
    """The trial's transformer ("init" stream)."""
    m = trial.model
    s = shape_for_budget(m.budget, m.n_layers, m.n_heads)
    return Transformer(vocab_size, s.n_layers, s.d_model, s.n_heads, max_len=max_len, d_ff=s.d_ff,
                       generator=generator(trial.seed, "init"))


def task_family(trial: CeilingTrial, device: str | torch.device = "cpu") -> InstanceSets:
    """The trial's instance sets (``device`` unused)."""
    return instance_sets(trial.task)


def untrained_model(trial: CeilingTrial, vocab_size: int | None = None, max_len: int | None = None) -> Transformer:
    """The trial's transformer as :func:`run_trial` initialises it."""
    if max_len is None:
        max_len = sequence_length(instance_sets(trial.task))
    return build_model(trial, vocab_size or len(VOCAB), max_len)


def run_trial(trial: CeilingTrial, device: str | torch.device = "cpu", progress: Callable[[int], None] | None = None,
              return_models: bool = False) -> TrialResult:
    """Train and score one transformer trial alone; a non-finite loss gives status ``diverged`` (never raises for it)."""
    return run_alone(trial, device, progress, return_models, prepare=_prepare, finish=_result)


def _prepare(trial: CeilingTrial) -> Prepared:
    """The trial's untrained model and training tensors; context: ``(instance sets, max_len, training
    problems, seconds spent building the sets)``."""
    t0 = time.perf_counter()
    sets = instance_sets(trial.task)
    t_data = time.perf_counter() - t0
    L = sequence_length(sets)
    train = [p for f in trial.task.family_list for p in sets.train[f]]
    return Prepared(build_model(trial, len(VOCAB), L), *pack(train), (sets, L, train, t_data))


def _result(trial: CeilingTrial, prepared: Prepared, model: Transformer, fit: dict, t_train: float,
            device: str | torch.device, return_models: bool) -> TrialResult:
    """A trained trial's record: its training summary and, unless it diverged, its scores and chance levels
    (module docstring) on ``model`` (the trial's own, or its stack member).

    ``t_train``: seconds from the start of the trial (its stack's, when stacked) to the end of training,
    data included; the record's ``timings.train_s`` leaves this trial's data time out.
    """
    sets, L, train, t_data = prepared.context
    t1 = time.perf_counter()
    kept = {"model": model, "model_kwargs": {"vocab_size": len(VOCAB), "max_len": L}} if return_models else {}
    metrics = {"n_params": model.n_params(), "n_params_nonembed": model.n_params_nonembedding(),
               "d_model": model.d_model, "d_ff": model.d_ff, "final_loss": fit["final_loss"],
               "curve_steps": [s for s, _ in fit["loss_curve"]], "curve_loss": [v for _, v in fit["loss_curve"]],
               "steps_per_s": fit["steps_per_s"], "n_train_examples": len(train)}
    if fit["status"] != "ok":
        return TrialResult(status=fit["status"], diverged_step=fit.get("diverged_step"), metrics=metrics, **kept)
    model.eval()
    scored = {"test": sets.test, "heldout": sets.heldout,
              "train": {f: ps[::max(1, len(ps) // N_TRAIN_CHECK)][:N_TRAIN_CHECK] for f, ps in sets.train.items()}}
    got = {split: {f: answers(model, ps) for f, ps in fams.items()} for split, fams in scored.items()}
    metrics |= trial_metrics(scored, got)
    task = trial.task
    for f in task.family_list:  # chance levels on these very test instances (the verdict's floor, .baselines)
        b = baselines(f, task.max_difficulty, task.n_test, task.eval_seed)
        metrics |= {f"chance_{m}_{f}": chance(b, m) for m in BASE_METRICS}
        metrics |= {f"random_{m}_{f}": b["random"][m] for m in BASE_METRICS}  # the figures' dotted line
    metrics["examples"] = [{"family": f, "prompt": " ".join(ps[0].tokens()), "gold": " ".join(map(str, ps[0].optimum)),
                            "pred": " ".join(map(str, got["test"][f][0])) if got["test"][f][0] else "(unparsable)"}
                           for f, ps in sets.test.items() if ps]
    metrics["timings"] = {"data_s": t_data, "train_s": t_train - t_data, "eval_s": time.perf_counter() - t1}
    return TrialResult(status="ok", metrics=metrics, **kept)


def run_group(trials: list[CeilingTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """A job's trials, in order. A real-model trial (``model.kind: lm``) runs :func:`.llm.run_lm_trial`;
    transformer trials of one stack key (:func:`.plan.group_key`: same task and model, differing in seed or
    per-trial training fields) train as one stacked transformer and are each scored on their own member, the
    others alone (:func:`bindscale.train.stack.run_group`): a record is the same either way, up to float rounding."""
    from .plan import group_key

    out: list = [None] * len(trials)
    trained = [i for i, t in enumerate(trials) if t.model.kind != "lm"]
    for i, t in enumerate(trials):
        if t.model.kind == "lm":
            from .llm import run_lm_trial

            out[i] = run_lm_trial(t, progress)
    results = run_stack_group([trials[i] for i in trained], device, progress, return_models, key=group_key,
                               prepare=_prepare, finish=_result)
    for i, res in zip(trained, results):
        out[i] = res
    return out
