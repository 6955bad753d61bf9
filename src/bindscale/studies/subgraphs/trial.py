"""One trial of the ``subgraphs`` study: train a transformer on a multi-step task, then dissect its errors.

Claim under test (Dziri et al., NeurIPS 2023, "Faith and Fate: Limits of
Transformers on Compositionality"): transformers trained on multi-step tasks
succeed in distribution by matching computation subgraphs seen in training,
fail on larger compositions, and their errors compound with depth.

Data (independent seed streams, :mod:`bindscale.core.seeding`): a fixed training
set of ``n_train`` in-distribution examples ("train" stream) and, per size
cell, ``n_test`` test examples ("test" stream) that are not in the training
set, in distribution (sizes ≤ ``id_max``) and out of it (up to ``ood_max``).
The model ("init" stream) is trained on prompt → target with the loss on the
target only, then decodes greedily. Metrics (all on the test examples):

- exact match of the final answer, in / out of distribution, by size cell, by
  graph depth and by graph width; for multiplication also by depth under
  Faith and Fate's graph convention (``acc_by_depth_source``,
  :func:`bindscale.studies.subgraphs.tasks.multiplication.source_depth`), to set beside the
  paper's figures;
- the error-compounding fit accuracy ≈ (1 − ε)^depth (ε per trial, bindscale's depth);
- node error taxonomy on predicted scratchpads (correct / local / propagation
  / restoration / missing) by depth, with Dziri et al.'s definitions
  (``taxonomy_dziri_by_depth``) and bindscale's recomputed ones
  (``taxonomy_by_depth``), see :mod:`bindscale.studies.subgraphs.analysis`;
- subgraph coverage: the share of non-input nodes whose whole ancestor
  computation occurs in the training graphs, among correct vs wrong nodes,
  overall and matched by depth (:func:`depth_matched_gap`);
- relative information gain of each answer digit given one or two input
  digits, computed from the training data (a property of the task, not the model).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd
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
)

from .analysis import TAXONOMIES, fit_compounding, label_table, rig_table, subgraph_coverage
from .config import SubgraphsTrial
from .tasks import charvocab, maxsubseq, multiplication
from .tasks.compgraph import Example, predicted_answer, read_values

#: Tries per test example to find one that is not in the training set.
_TRIES = 20
#: Training examples used for the (data-only) information-gain table.
_RIG_EXAMPLES = 2000


def size_cells(trial: SubgraphsTrial) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """In-distribution and out-of-distribution size cells of a trial's task.

    Multiplication: ``(digits_a, digits_b)`` pairs, OOD when either exceeds ``id_max``;
    maxsubseq: ``(length,)``.
    """
    t = task = trial.task
    if task.family == "multiplication":
        cells = multiplication.size_grid(t.ood_max, t.ood_max)
        return [c for c in cells if max(c) <= t.id_max], [c for c in cells if max(c) > t.id_max]
    return [(n,) for n in range(1, t.id_max + 1)], [(n,) for n in range(t.id_max + 1, t.ood_max + 1)]


def _sample_cell(family: str, cell: tuple[int, ...], rng: np.random.Generator, n: int) -> list:
    if family == "multiplication":
        return multiplication.sample_at_sizes(rng, cell[0], cell[1], n)
    return maxsubseq.sample_at_length(rng, cell[0], n)


def _make(family: str, items: list, scratchpad: bool, reverse: bool = False) -> list[Example]:
    if family == "multiplication":
        return multiplication.make_examples(items, scratchpad, reverse)
    return maxsubseq.make_examples(items, scratchpad)


def make_data(trial: SubgraphsTrial) -> tuple[list[Example], list[Example], list[bool]]:
    """Training examples, test examples and, per test example, whether it is in distribution.

    Training sizes are drawn uniformly over the in-distribution cells, then the
    operands uniformly at that size. Test examples whose prompt is in the training
    set are redrawn (up to a few tries each), so a small cell may hold fewer.
    """
    t = trial.task
    id_cells, ood_cells = size_cells(trial)
    train_rng = rng(trial.seed, "train")
    picks = train_rng.integers(0, len(id_cells), size=t.n_train)
    train_items: list = []
    for i, cell in enumerate(id_cells):
        train_items += _sample_cell(t.family, cell, train_rng, int((picks == i).sum()))
    train = _make(t.family, train_items, t.scratchpad, t.reverse)
    seen = {ex.prompt for ex in train}
    test_rng = rng(trial.seed, "test")
    test, in_dist = [], []
    for cell in id_cells + ood_cells:
        got: list[Example] = []
        for _ in range(_TRIES):
            cand = _make(t.family, _sample_cell(t.family, cell, test_rng, t.n_test), t.scratchpad, t.reverse)
            got += [ex for ex in cand if ex.prompt not in seen and ex.prompt not in {g.prompt for g in got}]
            if len(got) >= t.n_test:
                break
        got = got[: t.n_test]
        test += got
        in_dist += [cell in id_cells] * len(got)
    return train, test, in_dist


class SeqData(NamedTuple):
    """A trial's data as its trainer builds it (:func:`make_data`): the fixed training set, the test
    examples and, per test example, whether it is in distribution; ``max_len`` is the model's."""

    train: list[Example]
    test: list[Example]
    in_dist: list[bool]
    max_len: int


def model_max_len(train: list[Example], test: list[Example]) -> int:
    """Longest sequence the trial's model is built for: training or test prompt plus target, plus slack."""
    tokens, _ = charvocab.pack(train)
    return max(tokens.shape[1], max(len(ex.prompt) + len(ex.target) for ex in test)) + 8


def task_family(trial: SubgraphsTrial, device: str | torch.device = "cpu") -> SeqData:
    """The trial's data (:class:`SeqData`; the sets are fixed, so nothing is left to sample; ``device`` is unused)."""
    train, test, in_dist = make_data(trial)
    return SeqData(train, test, in_dist, model_max_len(train, test))


def untrained_model(trial: SubgraphsTrial, max_len: int | None = None) -> Transformer:
    """The trial's transformer as :func:`run_trial` initialises it ("init" stream), on the CPU.

    ``max_len`` (the rotary table's length; :func:`model_max_len`) changes no weight; without it,
    it is computed from the trial's data (seconds to a minute for multiplication).
    """
    if max_len is None:
        max_len = task_family(trial).max_len
    return build_model(trial, max_len)


def build_model(trial: SubgraphsTrial, max_len: int) -> Transformer:
    m = trial.model
    return Transformer(charvocab.VOCAB_SIZE, m.n_layers, m.d_model, m.n_heads, m.mlp_ratio, max_len=max_len,
                       generator=generator(trial.seed, "init"))


def _size_key(ex: Example) -> str:
    return "x".join(map(str, ex.sizes))


def _acc_by(examples: list[Example], correct: np.ndarray, key: Callable[[Example], object]) -> dict[str, list]:
    """``{key: [n, accuracy]}`` (JSON-friendly)."""
    out: dict[str, list] = {}
    keys = [str(key(ex)) for ex in examples]
    for k in sorted(set(keys), key=lambda s: [int(p) for p in s.split("x")]):
        sel = np.array([kk == k for kk in keys])
        out[k] = [int(sel.sum()), float(correct[sel].mean())]
    return out


def evaluate(model: Transformer, train: list[Example], test: list[Example], in_dist: list[bool],
             device: str | torch.device = "cpu") -> dict:
    """Every metric of the module docstring for a trained model (see there)."""
    prompts = [charvocab.encode(ex.prompt) for ex in test]
    max_new = max(len(ex.target) for ex in test) + 4
    preds = [charvocab.decode(ids) for ids in greedy_predictions(model, prompts, max_new, charvocab.STOP_ID)]
    correct = np.array([predicted_answer(p) == ex.answer for p, ex in zip(preds, test)])
    ind = np.array(in_dist)
    m: dict = {
        "acc_id": float(correct[ind].mean()) if ind.any() else float("nan"),
        "acc_ood": float(correct[~ind].mean()) if (~ind).any() else float("nan"),
        "n_test_id": int(ind.sum()), "n_test_ood": int((~ind).sum()),
        "acc_by_size": _acc_by(test, correct, _size_key),
        "acc_by_depth": _acc_by(test, correct, lambda ex: ex.depth),
        "acc_by_width": _acc_by(test, correct, lambda ex: ex.width),
    }
    if test and all(ex.depth_source is not None for ex in test):
        m["acc_by_depth_source"] = _acc_by(test, correct, lambda ex: ex.depth_source)
    depth = m["acc_by_depth"]
    eps, r2 = fit_compounding([float(d) for d in depth], [a for _, a in depth.values()],
                              weights=[n for n, _ in depth.values()])
    m |= {"compound_eps": float(eps), "compound_r2": float(r2)}

    values = [read_values(ex, p) for ex, p in zip(test, preds)]
    labels = {name: [classify(ex, v) for ex, v in zip(test, values)] for name, classify in TAXONOMIES.items()}
    for name, key in (("recomputed", "taxonomy_by_depth"), ("dziri", "taxonomy_dziri_by_depth")):
        table = label_table(test, labels[name])
        m[key] = {str(int(d)): {r.label: float(r.share) for r in g.itertuples()} for d, g in table.groupby("depth")}
    # Both taxonomies split right from wrong nodes identically (COARSE), so coverage uses either.
    nodes, _ = subgraph_coverage(train, test, labels["recomputed"])
    nodes = nodes[(nodes["op"] != "input") & nodes["label"].isin(["correct", "wrong"])]
    for lab in ("correct", "wrong"):
        sel = nodes[nodes["label"] == lab]
        m[f"seen_{lab}"] = float(sel["seen"].mean()) if len(sel) else float("nan")
        m[f"n_nodes_{lab}"] = int(len(sel))
    m["seen_gap_depth"] = depth_matched_gap(nodes)
    m["coverage_by_depth"] = {
        str(int(d)): {lab: [int(len(g2)), float(g2["seen"].mean())] for lab, g2 in g.groupby("label")}
        for d, g in nodes.groupby("depth")
    }
    m["examples"] = [{"prompt": ex.prompt, "gold": ex.target, "pred": p} for ex, p in list(zip(test, preds))[:: max(1, len(test) // 8)]]
    return m


def depth_matched_gap(nodes: pd.DataFrame) -> float:
    """Seen share of correct minus wrong nodes *at equal depth*, averaged over depths.

    Deep nodes are both rarely seen and more often wrong, so the raw difference
    mixes "seen" with "shallow". Per depth ``d`` holding both kinds of node the
    gap ``seen(correct, d) − seen(wrong, d)`` is weighted by ``min(n_correct, n_wrong)``
    (the pairs a matched comparison can form). NaN when no depth has both.

    Args:
        nodes: one row per node with ``depth``, ``label`` ("correct"/"wrong") and ``seen``.
    """
    num = den = 0.0
    for _, g in nodes.groupby("depth"):
        c, w = g[g["label"] == "correct"], g[g["label"] == "wrong"]
        if len(c) and len(w):
            weight = min(len(c), len(w))
            num += weight * (float(c["seen"].mean()) - float(w["seen"].mean()))
            den += weight
    return num / den if den else float("nan")


def run_trial(trial: SubgraphsTrial, device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> TrialResult:
    """Train and evaluate one subgraphs trial alone; a non-finite loss gives status ``diverged``.

    ``return_models``: also hand back the trained transformer (``TrialResult.model``, eval mode;
    ``model_kwargs`` holds its ``max_len``); the metrics are the same either way.
    """
    return run_alone(trial, device, progress, return_models, prepare=_prepare, finish=_result)


def _prepare(trial: SubgraphsTrial) -> Prepared:
    """The trial's untrained model and training tensors; context: ``(train, test, in_dist, max_len)``."""
    train, test, in_dist = make_data(trial)
    max_len = model_max_len(train, test)
    return Prepared(build_model(trial, max_len), *charvocab.pack(train), (train, test, in_dist, max_len))


def _result(trial: SubgraphsTrial, prepared: Prepared, model: Transformer, fit: dict, t_train: float,
            device: str | torch.device, return_models: bool) -> TrialResult:
    """A trained trial's result: its training summary and, unless it diverged, every metric of :func:`evaluate`.

    ``t_train``: seconds from the start of the trial (its stack's, when stacked) to the end of training.
    """
    train, test, in_dist, max_len = prepared.context
    t1 = time.perf_counter()
    kept = {"model": model, "model_kwargs": {"max_len": max_len}} if return_models else {}
    metrics = {"n_params": model.n_params(), "final_loss": fit["final_loss"],
               "curve_steps": [st for st, _ in fit["loss_curve"]],
               "curve_loss": [loss for _, loss in fit["loss_curve"]], "steps_per_s": fit["steps_per_s"],
               "n_train_examples": len(train), "max_target_len": max(len(ex.target) for ex in train)}
    if fit["status"] != "ok":
        return TrialResult(status=fit["status"], diverged_step=fit.get("diverged_step"), metrics=metrics,
                           **_eval_mode(kept))
    metrics |= evaluate(model, train, test, in_dist, device)
    rig = rig_table(train[:_RIG_EXAMPLES], max_order=2)
    metrics["rig_top"] = _rig_summary(rig)
    metrics["timings"] = {"train_s": t_train, "eval_s": time.perf_counter() - t1}
    return TrialResult(status="ok", metrics=metrics, **_eval_mode(kept))


def _eval_mode(kept: dict) -> dict:
    if kept:
        kept["model"].eval()
    return kept


def _rig_summary(rig: pd.DataFrame) -> dict:
    """Per answer digit, the largest RIG from one input and from a pair of inputs."""
    out = {}
    for out_digit, g in rig.groupby("output"):
        best = {}
        for order, g2 in g.groupby("order"):
            top = g2.sort_values("rig", ascending=False).iloc[0]
            best[str(int(order))] = [str(top["inputs"]), float(top["rig"])]
        out[str(out_digit)] = best
    return out


def run_group(trials: list[SubgraphsTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """Train and evaluate a job's trials; results in the order of ``trials``.

    Trials sharing a stack key (:func:`bindscale.studies.subgraphs.plan.group_key`: they differ only in
    seed, learning rate, weight decay, warm-up or clipping) train as one
    :class:`~bindscale.models.stacked_transformer.StackedTransformer` and are each evaluated on their own
    member; a trial without a partner trains alone (:func:`bindscale.train.stack.run_group`). Either way a
    trial's record holds the same metrics, equal up to float rounding. ``return_models``: see :func:`run_trial`.
    """
    from .plan import group_key

    return run_stack_group(trials, device, progress, return_models, key=group_key, prepare=_prepare,
                            finish=_result)
