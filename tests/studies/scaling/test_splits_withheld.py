"""Withheld module pairs: out-of-hull held-out combinations in every seed."""

import itertools

import numpy as np
import pytest

from bindscale.core.errors import SplitError
from bindscale.studies.scaling.tasks.splits import (
    all_combinations,
    in_hull,
    is_compositional,
    is_connected,
    make_split,
)


@pytest.mark.parametrize("holdout", [0.25, 0.5, 0.75])
def test_a_random_holdout_often_has_no_out_of_hull_combination_but_a_withheld_pair_always_does(holdout):
    none_without = 0
    for seed in range(8):
        plain = make_split(8, 3, "random", holdout, np.random.default_rng(seed))
        none_without += plain.n_outhull == 0
        s = make_split(8, 3, "random", holdout, np.random.default_rng(seed), withheld_pairs=1)
        assert len(s.heldout) == round(holdout * 92) and len(s.train) + len(s.heldout) == 92
        assert not set(s.train) & set(s.heldout)
        assert is_compositional(s.train, 8) and is_connected(s.train, 8)
        # The withheld pair: its 2-combination and its 6 triples are held out, all out-of-hull, at two arities.
        train_pairs = {p for c in s.train for p in itertools.combinations(c, 2)}
        withheld = [p for p in itertools.combinations(range(8), 2) if p not in train_pairs]
        assert len(withheld) >= 1
        out = [c for c, inh in zip(s.heldout, s.inhull) if not inh]
        assert s.n_outhull >= 7 and {len(c) for c in out} >= {2, 3}
        assert all(in_hull(c, s.train) == inh for c, inh in zip(s.heldout, s.inhull))
    if holdout == 0.25:
        assert none_without == 8  # why the study withholds a pair: a plain 25% hold-out has none in any seed


def test_withheld_pairs_are_refused_where_they_cannot_apply():
    with pytest.raises(SplitError, match="withheld_pairs needs split 'random'"):
        make_split(8, 3, "disconnected", 0.25, np.random.default_rng(0), withheld_pairs=1)
    with pytest.raises(SplitError, match="K>=2"):
        make_split(8, 1, "random", 0.25, np.random.default_rng(0), withheld_pairs=1)
    assert len(all_combinations(8, 3)) == 92
