"""Subgraphs trials of one task and shape train as one stacked transformer: every record (accuracies,
taxonomies, coverage, examples) is the one the trial gives alone and in a stack of one (losses within 1e-5
relative over 50 steps, at two shapes)."""

import pytest

from bindscale.studies.subgraphs import trial as sg
from bindscale.studies.subgraphs.config import SubgraphsTrial

from ..stacking import check_stack_of_one_and_four

#: Two shapes: one layer x 16 (two heads); two layers x 32 (four heads, MLP ratio 2).
SHAPES = {"1x16": {"n_layers": 1, "d_model": 16, "n_heads": 2},
          "2x32": {"n_layers": 2, "d_model": 32, "n_heads": 4, "mlp_ratio": 2}}
TASK = {"family": "maxsubseq", "scratchpad": True, "n_train": 200, "id_max": 3, "ood_max": 4, "n_test": 4}


def trials(shape: str) -> list[SubgraphsTrial]:
    """Four trials of one stack key: seeds 0..3, three learning rates, two weight decays."""
    return [SubgraphsTrial(task=TASK, model=SHAPES[shape], seed=s,
                           train={"steps": 50, "batch_size": 8, "warmup_steps": 5, "lr": lr, "weight_decay": wd})
            for s, lr, wd in ((0, 3e-3, 0.1), (1, 3e-3, 0.1), (2, 1e-3, 0.0), (3, 5e-3, 0.1))]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_subgraphs_trials_give_the_same_records_alone_in_a_stack_of_one_and_of_four(shape):
    check_stack_of_one_and_four(sg, trials(shape))
