import itertools

import numpy as np
import pytest

from bindscale.studies.subgraphs.tasks import maxsubseq
from bindscale.studies.subgraphs.tasks.compgraph import check_consistency, parents


def _brute_force(xs):
    # Largest sum over all index sets with no two neighbours (the empty set gives 0).
    best = 0
    for r in range(1, len(xs) + 1):
        for idx in itertools.combinations(range(len(xs)), r):
            if all(j - i > 1 for i, j in zip(idx, idx[1:])):
                best = max(best, sum(xs[i] for i in idx))
    return best


def test_hand_worked_dp():
    ex = maxsubseq.make_example([3, -1, 4, -5, 2], scratchpad=True)
    g = ex.graph
    # dp0 = max(0, 3) = 3; dp1 = max(3, -1) = 3; dp2 = max(3, 3 + 4) = 7; dp3 = max(7, 3 - 5) = 7; dp4 = max(7, 7 + 2) = 9.
    assert [g.nodes[f"dp{i}"]["value"] for i in range(5)] == [3, 3, 7, 7, 9]
    assert g.nodes["y"]["value"] == 9 and g.nodes["y"]["answer"]
    assert ex.prompt == "3,-1,4,-5,2=" and ex.target == "3;3;7;7;9;9$" and ex.answer == "9"
    assert ex.sizes == (5,) and (ex.depth, ex.width) == (6, 5)
    assert parents(g, "dp2") == ["x2", "dp1", "dp0"] and parents(g, "dp1") == ["x1", "dp0"] and parents(g, "dp0") == ["x0"]
    assert g.nodes["dp3"]["span"] == (6, 7)
    assert maxsubseq.make_example([3, -1, 4, -5, 2], scratchpad=False).target == "9$"
    # All negative: take nothing.
    neg = maxsubseq.make_example([-2, -3, -1], scratchpad=True)
    assert neg.target == "0;0;0;0$"
    # Two-digit cells: 5 + 5 + 5 = 15.
    assert maxsubseq.make_example([5, 1, 5, 1, 5], scratchpad=True).target == "5;5;10;10;15;15$"
    with pytest.raises(ValueError):
        maxsubseq.make_example([], True)


def test_answers_match_brute_force_and_round_trip():
    rng = np.random.default_rng(0)
    for xs in maxsubseq.sample_sequences(rng, 9, 150):
        for scratchpad in (True, False):
            ex = maxsubseq.make_example(xs, scratchpad)
            g = ex.graph
            assert ex.answer == str(_brute_force(xs))
            inputs = {f"x{i}" for i in range(len(xs))}
            written = {n for n, d in g.nodes(data=True) if "span" in d}
            assert written == (set(g.nodes) - inputs if scratchpad else {"y"})
            check_consistency(ex)
            assert ex.depth == len(xs) + 1


def test_samplers():
    rng = np.random.default_rng(1)
    seqs = maxsubseq.sample_sequences(rng, 7, 300, min_len=3)
    assert {len(s) for s in seqs} == set(range(3, 8))
    assert min(min(s) for s in seqs) == -5 and max(max(s) for s in seqs) == 5
    exact = maxsubseq.sample_at_length(rng, 4, 20, low=0, high=2)
    assert all(len(s) == 4 and set(s) <= {0, 1, 2} for s in exact)
    assert maxsubseq.sample_sequences(np.random.default_rng(2), 5, 10) == maxsubseq.sample_sequences(np.random.default_rng(2), 5, 10)
    with pytest.raises(ValueError):
        maxsubseq.sample_sequences(rng, 2, 5, min_len=3)
