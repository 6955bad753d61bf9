import itertools
from math import comb

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


@pytest.mark.parametrize("M,K,n", [(16, 3, 696), (8, 3, 92), (5, 1, 5), (4, 4, 15)])
def test_combination_counts(M, K, n):
    combos = all_combinations(M, K)
    assert len(combos) == n == sum(comb(M, k) for k in range(1, K + 1))
    assert len(set(combos)) == n and all(list(c) == sorted(c) for c in combos)


@pytest.mark.parametrize("holdout", [0.25, 0.5, 0.75])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_split_is_compositional_connected_and_partitions(holdout, seed):
    split = make_split(8, 3, "random", holdout, np.random.default_rng(seed))
    allc = all_combinations(8, 3)
    assert len(split.heldout) == round(holdout * 92)
    assert set(split.train).isdisjoint(split.heldout)
    assert set(split.train) | set(split.heldout) == set(allc)
    assert is_compositional(split.train, 8) and is_connected(split.train, 8)
    assert len(split.inhull) == len(split.heldout)


def test_hull_labels_hand_worked():
    train = [(0, 1), (1, 2), (3,)]
    assert in_hull((0, 1), train)  # the pair itself was trained
    assert in_hull((1,), train) and in_hull((3,), train)
    assert not in_hull((0, 2), train)  # 0 and 2 never together
    assert not in_hull((0, 1, 2), train)  # needs the unseen pair (0, 2)
    assert not in_hull((1, 3), train)
    assert not in_hull((4,), train)  # module never seen
    assert in_hull((0, 1, 2), [(0, 1, 3), (1, 2), (0, 2)])


def test_hull_labels_match_split_definition():
    split = make_split(8, 3, "random", 0.75, np.random.default_rng(3))
    pairs = {p for c in split.train for p in itertools.combinations(c, 2)}
    for c, lab in zip(split.heldout, split.inhull):
        assert lab == all(p in pairs for p in itertools.combinations(c, 2))
    assert split.n_inhull + split.n_outhull == len(split.heldout)


def test_disconnected_split_holds_out_every_mixed_combination():
    split = make_split(8, 3, "disconnected", 0.0, np.random.default_rng(0))
    assert not is_connected(split.train, 8)
    assert is_compositional(split.train, 8)
    assert split.n_inhull == 0 and split.n_outhull == len(split.heldout) > 0


def test_non_compositional_split_never_trains_one_module():
    split = make_split(8, 3, "non_compositional", 0.25, np.random.default_rng(0))
    seen = set().union(*map(set, split.train))
    assert len(seen) == 7
    (unseen,) = set(range(8)) - seen
    assert all(unseen not in c for c in split.train)
    for c, lab in zip(split.heldout, split.inhull):
        if unseen in c:
            assert not lab


@pytest.mark.parametrize("M,K,kind,holdout", [(8, 1, "random", 0.25), (8, 3, "random", 0.99), (3, 2, "disconnected", 0.0)])
def test_impossible_splits_raise(M, K, kind, holdout):
    with pytest.raises(SplitError):
        make_split(M, K, kind, holdout, np.random.default_rng(0), max_tries=50)


def test_split_is_deterministic_in_its_seed():
    a = make_split(8, 3, "random", 0.5, np.random.default_rng(7))
    b = make_split(8, 3, "random", 0.5, np.random.default_rng(7))
    c = make_split(8, 3, "random", 0.5, np.random.default_rng(8))
    assert a == b and a.heldout != c.heldout


def _in_hull_by_definition(combo, train):
    """The module docstring's definition, checked against each training combination one by one."""
    seen = {m for c in train for m in c}
    return all(m in seen for m in combo) and all(any(a in c and b in c for c in train)
                                                 for a, b in itertools.combinations(combo, 2))


@pytest.mark.parametrize("M,K,kind,holdout,pairs", [(16, 3, "random", 0.25, 0), (16, 3, "random", 0.5, 0),
                                                    (8, 3, "random", 0.75, 1), (8, 3, "non_compositional", 0.25, 0),
                                                    (8, 3, "disconnected", 0.0, 0), (6, 2, "random", 0.5, 0)])
@pytest.mark.parametrize("seed", [0, 1])
def test_hull_labels_follow_the_definition(M, K, kind, holdout, pairs, seed):
    from bindscale.studies.scaling.tasks.splits import hull_labels

    split = make_split(M, K, kind, holdout, np.random.default_rng(seed), withheld_pairs=pairs)
    want = [_in_hull_by_definition(c, split.train) for c in split.heldout]
    assert split.inhull == want == hull_labels(split.heldout, split.train)
    assert [in_hull(c, split.train) for c in split.heldout] == want
    if kind == "disconnected":
        assert not any(want)  # every mixed combination needs a pair never trained together
    assert hull_labels([], split.train) == [] and hull_labels([(0,)], []) == [False]
