"""Chance baselines of the ``ceiling`` study: what answers that learned nothing score on the test instances.

Per family, on the very test instances the trained models answer (:func:`.data.eval_sets`):

- *random*: every variable drawn uniformly from ``0 .. n_values - 1``, averaged over :data:`N_DRAWS` seeded
  draws (stream ``("test", family, 1000)`` of ``eval_seed``, a sub-stream no test set uses: deterministic);
- *trivial*: every variable 0 (colouring: one colour for every node; knapsack: the empty selection, which
  meets the capacity, so knapsack satisfaction and feasibility are 1; assignment: every task to worker 0).

The verdict's *chance level* of a metric is the better of the two (:func:`chance`): a model whose asymptote
is not above it has not been shown to learn anything (:mod:`.verdicts`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from bindscale.kit import rng

from .data import eval_sets
from .problems import FAMILIES
from .scoring import evaluate

#: Uniform-random answer sets averaged per family.
N_DRAWS = 20
#: Metrics reported per baseline.
BASE_METRICS = ("sat", "feas", "optimal")


@lru_cache(maxsize=16)
def baselines(family: str, max_difficulty: int, n_test: int, eval_seed: int) -> dict[str, dict[str, float]]:
    """``{"random": {metric: value}, "trivial": {...}}`` on the family's test set (see the module docstring)."""
    test, _ = eval_sets(family, int(max_difficulty), int(n_test), 0, int(eval_seed))
    gen = rng(int(eval_seed), "test", FAMILIES.index(family), 1000)  # key 1000: no difficulty uses it
    draws = [evaluate(test, [tuple(int(v) for v in gen.integers(0, p.n_values, p.n_vars)) for p in test])
             for _ in range(N_DRAWS)]
    zero = evaluate(test, [(0,) * p.n_vars for p in test])
    return {"random": {m: float(np.mean([d[m] for d in draws])) for m in BASE_METRICS},
            "trivial": {m: float(zero[m]) for m in BASE_METRICS}}


def chance(b: dict[str, dict[str, float]], metric: str) -> float:
    """The better of the random and trivial baselines on ``metric``."""
    return max(b["random"][metric], b["trivial"][metric])
