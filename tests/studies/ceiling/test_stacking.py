"""Ceiling transformer trials of one task and shape train as one stacked transformer: every record (scores on
test, held-out and training instances) is the one the trial gives alone and in a stack of one (losses within
1e-5 relative over 50 steps, at two shapes); a real-model trial is never stacked."""

import pytest

from bindscale.studies.ceiling import plan
from bindscale.studies.ceiling import trial as ceiling
from bindscale.studies.ceiling.config import CeilingTrial

from ..stacking import check_stack_of_one_and_four

#: Two shapes: one layer at a 4k budget; two layers at an 8k budget (four heads).
SHAPES = {"1_layer_4k": {"n_layers": 1, "budget": 4000, "n_heads": 2},
          "2_layers_8k": {"n_layers": 2, "budget": 8000, "n_heads": 4}}
TASK = {"families": "knapsack,assignment", "max_difficulty": 1, "n_train": 12, "n_test": 4, "n_heldout": 3}


def trials(shape: str) -> list[CeilingTrial]:
    """Four trials of one stack key: seeds 0..3, three learning rates, two warm-ups."""
    return [CeilingTrial(task=TASK, model=SHAPES[shape], seed=s,
                         train={"steps": 50, "batch_size": 8, "warmup_steps": w, "lr": lr})
            for s, lr, w in ((0, 3e-3, 5), (1, 3e-3, 5), (2, 1e-3, 10), (3, 5e-3, 5))]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_ceiling_trials_give_the_same_records_alone_in_a_stack_of_one_and_of_four(shape):
    check_stack_of_one_and_four(ceiling, trials(shape))


def test_ceiling_stack_keys_match_task_and_shape_and_never_stack_a_real_model():
    t = trials("1_layer_4k")
    assert len({plan.group_key(x) for x in t}) == 1
    other = [t[0].model_copy(update={"task": t[0].task.model_copy(update={"n_train": 24})}),
             t[0].model_copy(update={"model": t[0].model.model_copy(update={"budget": 8000})})]
    assert all(plan.group_key(o) != plan.group_key(t[0]) for o in other)
    lm = [CeilingTrial(task=TASK, model={"kind": "lm"}, seed=s) for s in (0, 1)]
    assert plan.group_key(lm[0]) != plan.group_key(lm[1])
    assert plan.stack_step_seconds(t[:2], window=0.01, rounds=1) > 0
