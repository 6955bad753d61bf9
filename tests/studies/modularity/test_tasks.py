import numpy as np
import pytest
import torch

from bindscale.studies.modularity.tasks import (
    DATASETS,
    KINDS,
    PARTS,
    CompoundTask,
    all_scenes,
    make_datasets,
    partition_scenes,
)


def rng(seed=0):
    return np.random.default_rng(seed)


def truth(ds):
    """Recompute A (same shape) and B (same colour) from the tokens."""
    t = ds.tokens
    return t[:, 0] == t[:, 2], t[:, 1] == t[:, 3]


def test_views_have_the_documented_shapes_and_agree():
    task = CompoundTask(n_shapes=3, n_colours=5)
    ds = task.compound(60, rng())
    assert task.dim == 16 and task.seq_len == 4 and task.vocab_size == 8
    assert ds.tokens.shape == (60, 4) and ds.tokens.dtype == torch.int64
    assert ds.onehot.shape == (60, 16) and ds.onehot.dtype == torch.float32
    assert ds.labels.shape == (60,) and ds.labels.dtype == torch.int64
    assert set(ds.labels.tolist()) <= {0, 1}
    # shapes use ids [0, 3), colours [3, 8)
    assert ds.tokens[:, [0, 2]].max() < 3 and ds.tokens[:, [1, 3]].min() >= 3 and ds.tokens.max() < 8
    # one-hot: one 1 per slot, at the position the token names
    assert torch.equal(ds.onehot.sum(1), torch.full((60,), 4.0))
    offsets = torch.tensor([0, 3, 8, 11])
    values = ds.tokens - torch.tensor([0, 3, 0, 3])
    assert torch.all(ds.onehot.gather(1, values + offsets) == 1)
    x, y = ds.xy("tokens")
    assert x is ds.tokens and y is ds.labels
    with pytest.raises(ValueError, match="view"):
        ds.xy("pixels")


def test_factor_columns_hold_the_shapes_and_the_colours():
    task = CompoundTask(n_shapes=3, n_colours=5)
    ds = task.compound(40, rng())
    cols_a, cols_b = task.factor_columns("A"), task.factor_columns("B")
    assert sorted(cols_a + cols_b) == list(range(16)) and len(cols_a) == 6
    shape_part = ds.onehot[:, cols_a]
    assert torch.equal(shape_part[:, :3].argmax(1), ds.tokens[:, 0])
    assert torch.equal(shape_part[:, 3:].argmax(1), ds.tokens[:, 2])
    colour_part = ds.onehot[:, cols_b]
    assert torch.equal(colour_part[:, :5].argmax(1) + 3, ds.tokens[:, 1])


def test_compound_set_is_balanced_and_labelled_a_and_b():
    ds = CompoundTask(4, 4).compound(600, rng(1))
    a, b = truth(ds)
    assert torch.equal(a, ds.a) and torch.equal(b, ds.b)
    assert torch.equal(ds.labels.bool(), a & b)
    assert ds.labels.sum() == 300 and ds.chance == 0.5
    # the three kinds of negatives are equally frequent: no single factor gives the label away
    counts = [int((a & ~b).sum()), int((~a & b).sum()), int((~a & ~b).sum())]
    assert counts == [100, 100, 100]


def test_chance_is_the_majority_rate():
    ds = CompoundTask(4, 4).compound(5, rng())
    assert ds.labels.sum() == 2 and ds.chance == pytest.approx(0.6)


@pytest.mark.parametrize("factor", ["A", "B"])
def test_in_a_subroutine_set_only_that_factor_decides_the_label(factor):
    ds = CompoundTask(5, 3).subroutine(factor, 400, rng(2))
    a, b = truth(ds)
    target, other = (a, b) if factor == "A" else (b, a)
    assert other.all()  # the other factor is held true …
    assert torch.equal(ds.labels.bool(), target)  # … so the label is the target's truth value
    assert torch.equal(ds.labels.bool(), a & b)  # and it is still the compound label
    assert ds.labels.sum() == 200 and ds.chance == 0.5


@pytest.mark.parametrize("factor", ["A", "B"])
def test_pretraining_set_is_the_subroutine_alone_with_the_other_factor_varying(factor):
    ds = CompoundTask(4, 4).pretrain(factor, 400, rng(3))
    a, b = truth(ds)
    target, other = (a, b) if factor == "A" else (b, a)
    assert torch.equal(ds.labels.bool(), target)
    assert ds.chance == 0.5
    # the other factor is independent of the label: all four combinations equally frequent
    assert [int((target & other).sum()), int((target & ~other).sum()),
            int((~target & other).sum()), int((~target & ~other).sum())] == [100] * 4


def test_different_values_are_drawn_over_the_whole_vocabulary():
    ds = CompoundTask(6, 6).compound(600, rng(4))
    a, _ = truth(ds)
    second = ds.tokens[~a, 2]
    assert set(second.tolist()) == set(range(6))
    assert set(ds.tokens[:, 1].tolist()) == set(range(6, 12))


def test_make_datasets_is_seeded_and_seeds_differ():
    task = CompoundTask(4, 4)
    d1, d2, d3 = (make_datasets(task, rng(s), 40, 20) for s in (7, 7, 8))
    assert tuple(d1) == DATASETS
    assert len(d1["compound_train"]) == 40 and len(d1["sub_B_test"]) == 20 and len(d1["pretrain_A"]) == 40
    for k in DATASETS:
        assert torch.equal(d1[k].tokens, d2[k].tokens) and torch.equal(d1[k].labels, d2[k].labels)
    assert not torch.equal(d1["compound_train"].tokens, d3["compound_train"].tokens)
    # streams are independent within one seed: train and test differ
    assert not torch.equal(d1["sub_A_train"].tokens[:20], d1["sub_A_test"].tokens)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="n_shapes"):
        CompoundTask(n_shapes=1)
    with pytest.raises(ValueError, match="n_colours"):
        CompoundTask(n_colours=2.5)
    task = CompoundTask()
    with pytest.raises(ValueError, match="subroutine"):
        task.subroutine("C", 10, rng())
    with pytest.raises(ValueError, match="at least 1"):
        task.compound(0, rng())


# ------------------------------------------------- disjoint scene partition

TRAIN_SETS = ("compound_train", "pretrain_A", "pretrain_B", "sub_A_train", "sub_B_train")
TEST_SETS = ("compound_test", "sub_A_test", "sub_B_test")


def scene_set(ds):
    return set(map(tuple, ds.tokens.tolist()))


@pytest.mark.parametrize("shape", [(8, 8), (16, 16), (3, 5)])
def test_every_test_set_is_disjoint_from_every_training_set(shape):
    d = make_datasets(CompoundTask(*shape), rng(11), 2000, 1000)
    for test in TEST_SETS:
        for train in TRAIN_SETS:
            assert not scene_set(d[test]) & scene_set(d[train]), (test, train)
    # the masks' training scenes are not the base network's either
    base = set().union(*(scene_set(d[k]) for k in ("compound_train", "pretrain_A", "pretrain_B")))
    for k in ("sub_A_train", "sub_B_train"):
        assert not scene_set(d[k]) & base, k


def test_the_trial_data_of_the_default_study_are_disjoint():
    from bindscale.studies.modularity.config import ModularityTrial
    from bindscale.studies.modularity.trial import make_data

    t = ModularityTrial.model_validate({"task": {"n_shapes": 16, "n_colours": 16}, "seed": 3})
    d = make_data(t)
    train = set().union(*(scene_set(d[k]) for k in TRAIN_SETS))
    assert all(not scene_set(d[k]) & train for k in TEST_SETS)


def test_partition_puts_every_scene_in_exactly_one_part_stratified_by_kind():
    task = CompoundTask(4, 5)
    parts = partition_scenes(task, rng(2), (0.5, 0.25, 0.25))
    assert tuple(parts) == PARTS
    seen = [tuple(s) for p in parts.values() for pool in p.values() for s in pool.tolist()]
    assert len(seen) == len(set(seen)) == 4 * 4 * 5 * 5 == len(all_scenes(task))
    # kind sizes: both true 4*5 = 20, shapes only 4*5*4 = 80, colours only 4*3*5 = 60, neither 4*3*5*4 = 240
    for kind, n in zip(KINDS, (20, 80, 60, 240)):
        counts = [len(parts[p][kind]) for p in PARTS]
        assert sum(counts) == n and min(counts) >= 1
        assert abs(counts[0] - n / 2) <= 1 and abs(counts[1] - n / 4) <= 1
        for p in PARTS:  # each pool holds scenes of its kind only
            s = parts[p][kind]
            assert ((s[:, 0] == s[:, 2]) == kind[0]).all() and ((s[:, 1] == s[:, 3]) == kind[1]).all()
    again = partition_scenes(task, rng(2))
    assert all(np.array_equal(parts[p][k], again[p][k]) for p in PARTS for k in KINDS)


def test_datasets_draw_only_from_their_part():
    task = CompoundTask(5, 5)
    parts = partition_scenes(task, rng(4))
    ds = task.subroutine("A", 300, rng(5), parts["test"])
    allowed = {tuple(s) for pool in parts["test"].values() for s in pool.tolist()}
    attrs = ds.tokens - torch.tensor([0, 5, 0, 5])
    assert set(map(tuple, attrs.tolist())) <= allowed
    a, b = truth(ds)
    assert b.all() and ds.labels.sum() == 150  # still the subroutine set: B held true, A balanced


def test_partition_rejects_bad_fractions_and_too_small_spaces():
    with pytest.raises(ValueError, match="fractions"):
        partition_scenes(CompoundTask(4, 4), rng(), (0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="fractions"):
        partition_scenes(CompoundTask(4, 4), rng(), (1.0, 0.0, 0.0))
    # the smallest space (2 x 2) still has 4 scenes of every kind, enough for three parts
    assert all(len(pool) >= 1 for p in partition_scenes(CompoundTask(2, 2), rng()).values() for pool in p.values())
