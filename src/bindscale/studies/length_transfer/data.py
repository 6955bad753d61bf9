"""The data of one ``length_transfer`` trial (from-scratch or pretrained: :mod:`.trial`, :mod:`.lmtrial`) and the
small helpers both trial kinds share: the exact-match window mean and the head-map record.

After Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer in Transformers" (arXiv
2506.09251); the data's streams and splits are described in :mod:`.trial`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bindscale import seeding

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
    rng = seeding.rng(trial.seed, "train")
    n_aux = round(t.n_train * t.aux_share) if aux else 0
    train = T.sample_set([t.main], t.main_len, t.n_train - n_aux, rng)
    if aux:
        train += T.sample_set(aux, t.aux_len, n_aux, rng)
    seen = {ex.prompt for ex in train}
    test_rng = seeding.rng(trial.seed, "test")
    lengths = range(2, t.test_max + 1)
    test = {n: T.sample_unseen(t.main, n, t.n_test, test_rng, seen) for n in lengths}
    aux_test = {a: {n: T.sample_unseen(a, n, t.n_test, test_rng, seen) for n in lengths} for a in aux}
    ab, ref = seeding.rng(trial.seed, "heldout"), seeding.rng(trial.seed, "probe")
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
