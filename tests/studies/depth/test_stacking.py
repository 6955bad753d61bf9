"""Depth trials of one split and shape train as one stacked transformer: each record is the one the trial
gives alone and in a stack of one (losses within 1e-5 relative over 50 steps, at two shapes)."""

import pytest

from bindscale.kit import scan
from bindscale.studies.depth import plan
from bindscale.studies.depth import trial as depth
from bindscale.studies.depth.config import DepthTrial

from ..stacking import check_stack_of_one_and_four

#: Two shapes: rotary positions, one layer; learned positions, two layers (a smaller budget, so thinner).
SHAPES = {"rope_1": {"n_layers": 1, "budget": 4000, "n_heads": 2, "pos": "rope"},
          "learned_2": {"n_layers": 2, "budget": 3000, "n_heads": 2, "pos": "learned"}}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A small SCAN split on disk (the generated split takes seconds per trial to rebuild)."""
    train, test = scan.make_split("length")
    d = tmp_path_factory.mktemp("scan")
    (d / "tr.txt").write_text("\n".join(p.line() for p in train[:200]) + "\n")
    (d / "te.txt").write_text("\n".join(p.line() for p in test[:30]) + "\n")
    return {"train": str(d / "tr.txt"), "test": str(d / "te.txt")}


def trials(files, shape: str) -> list[DepthTrial]:
    """Four trials of one stack key: seeds 0..3, two learning rates, two weight decays."""
    return [DepthTrial(task={"split": "length", "n_test": 12, "n_id": 8}, data=files, model=SHAPES[shape],
                       seed=s, train={"steps": 50, "batch_size": 8, "warmup_steps": 5, "lr": lr, "weight_decay": wd})
            for s, lr, wd in ((0, 3e-3, 0.1), (1, 3e-3, 0.1), (2, 1e-3, 0.0), (3, 5e-3, 0.1))]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_depth_trials_give_the_same_records_alone_in_a_stack_of_one_and_of_four(files, shape):
    check_stack_of_one_and_four(depth, trials(files, shape))


def test_depth_stack_keys_match_split_data_and_shape_only(files):
    t = trials(files, "rope_1")
    assert len({plan.group_key(x) for x in t}) == 1
    other = [t[0].model_copy(update={"task": t[0].task.model_copy(update={"split": "simple"})}),
             t[0].model_copy(update={"model": t[0].model.model_copy(update={"budget": 8000})}),
             t[0].model_copy(update={"train": t[0].train.model_copy(update={"steps": 60})}),
             t[0].model_copy(update={"data": t[0].data.model_copy(update={"train": None, "test": None})})]
    assert all(plan.group_key(o) != plan.group_key(t[0]) for o in other)
    assert plan.stack_step_seconds(t[:2], window=0.01, rounds=1) > 0
