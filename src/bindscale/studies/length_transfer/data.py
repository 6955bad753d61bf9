"""The data of one ``length_transfer`` trial (from-scratch or pretrained: :mod:`.trial`, :mod:`.lmtrial`) and the
small helpers both trial kinds share: the exact-match windows (:func:`length_metrics`; the head maps: :func:`.heads.head_record`).

After Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer in Transformers" (arXiv
2506.09251); the data's streams and splits are described in :mod:`.trial`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bindscale.kit import rng

from . import tasks as T
from .config import LengthTransferTrial


class LengthData(NamedTuple):
    """A trial's data (:func:`make_data`). ``test``/``aux_test``: length → examples (aux: task → length → …);
    ``ablate_*``/``reference_*``: examples at training lengths; ``max_len``: the model's position table."""

    train: list[T.Example]
    test: dict[int, list[T.Example]]
    aux_test: dict[str, dict[int, list[T.Example]]]
    ablate_main: list[T.Example]
    ablate_aux: list[T.Example]
    reference_main: list[T.Example]
    reference_aux: list[T.Example]
    max_len: int


def make_data(trial: LengthTransferTrial) -> LengthData:
    """Every example of a trial (see the module docstring); train and test are disjoint by prompt."""
    t = trial.task
    aux = list(t.aux_tasks)
    train_rng = rng(trial.seed, "train")
    n_aux = round(t.n_train * t.aux_share) if aux else 0
    train = T.sample_set([t.main], t.main_len, t.n_train - n_aux, train_rng)
    if aux:
        train += T.sample_set(aux, t.aux_len, n_aux, train_rng)
    seen = {ex.prompt for ex in train}
    test_rng = rng(trial.seed, "test")
    lengths = range(2, t.test_max + 1)
    test = {n: T.sample_unseen(t.main, n, t.n_test, test_rng, seen) for n in lengths}
    aux_test = {a: {n: T.sample_unseen(a, n, t.n_test, test_rng, seen) for n in lengths} for a in aux}
    ab, ref = rng(trial.seed, "heldout"), rng(trial.seed, "probe")
    data = LengthData(
        train, test, aux_test,
        T.sample_set([t.main], t.main_len, t.n_ablate, ab),
        T.sample_set(aux, t.aux_len, t.n_ablate, ab) if aux else [],
        T.sample_set([t.main], t.main_len, t.n_reference, ref),
        T.sample_set(aux, t.aux_len, t.n_reference, ref) if aux else [],
        0,
    )
    longest = max(T.sequence_length(task, t.test_max) for task in [t.main, *aux])
    return data._replace(max_len=longest + 8)


def longest_train_sequence(t) -> int:
    """Longest training sequence of the trial's tasks (main up to ``main_len``, auxiliaries up to ``aux_len``)."""
    k = t.task
    return max([T.sequence_length(k.main, k.main_len)] + [T.sequence_length(a, k.aux_len) for a in k.aux_tasks])


def window_mean(table: dict[str, list], lo: int, hi: int) -> float:
    """Mean over lengths ``lo..hi`` (each length weighted equally) of ``{length: [n, acc]}``; NaN when none."""
    vals = [acc for k, (_, acc) in table.items() if lo <= int(k) <= hi]
    return float(np.mean(vals)) if vals else float("nan")


def _map_dict(imp: np.ndarray) -> dict[str, dict[str, list[float]]]:
    return {str(i): {str(h): [float(imp[i, h, 0]), float(imp[i, h, 1])] for h in range(imp.shape[1])}
            for i in range(imp.shape[0])}


def length_metrics(task, acc_by_length: dict[str, list], aux_acc_by_length: dict[str, dict[str, list]]) -> dict:
    """The exact-match record of a trained model, from-scratch or fine-tuned alike: the tables by length, the
    windows within L (2..``main_len``), beyond L (``main_len``+1..``aux_len``) and past the auxiliary's length,
    the auxiliaries' mean within their own lengths, and the trial's condition (alone / related / unrelated).

    Args:
        task: the trial's ``task`` section.
        acc_by_length: ``{length: [n, exact match]}`` of the main task.
        aux_acc_by_length: per auxiliary task the same table (empty for a main task alone).
    """
    m: dict = {"acc_by_length": acc_by_length,
               "acc_in": window_mean(acc_by_length, 2, task.main_len),
               "acc_beyond": window_mean(acc_by_length, task.main_len + 1, task.aux_len),
               "acc_past": window_mean(acc_by_length, task.aux_len + 1, task.test_max),
               "condition": T.relation(task.main, task.aux_tasks)}
    if aux_acc_by_length:
        m["aux_acc_by_length"] = aux_acc_by_length
        m["aux_acc_in"] = float(np.mean([window_mean(t, 2, task.aux_len) for t in aux_acc_by_length.values()]))
    return m
