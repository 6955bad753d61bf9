import math

import numpy as np
import pytest
import torch

from bindscale.studies.modularity.analysis import (
    SubroutineResult,
    abl_diff,
    chance_level,
    fraction_structural,
    structural,
    sub_diff,
    subroutine_modularity,
)
from bindscale.studies.modularity.tasks import CompoundTask, make_datasets

from .test_masks import C, S, hand_built, squeeze

MASKED = ["0.weight", "2.weight"]


@pytest.fixture(scope="module")
def data():
    # Most of the tiny 4 x 4 scene space for the masks' training sets: every hand-built unit fires there.
    return make_datasets(CompoundTask(S, C), np.random.default_rng(0), 400, 400, fractions=(0.1, 0.6, 0.3))


def run(net, data, target, other, **kw):
    return subroutine_modularity(
        net, MASKED, squeeze, data[f"sub_{target}_train"].xy(), data[f"sub_{target}_test"].xy(),
        data[f"sub_{other}_test"].xy(), subroutine=target, steps=200,
        mask_generator=torch.Generator().manual_seed(0), **kw,
    )


def test_worked_example_of_the_docstring():
    # subnetwork: 0.95 on its target, 0.45 on the other subroutine
    assert sub_diff(0.95, 0.45, 0.5) == pytest.approx(0.45)
    # ablated model: 0.52 on the target, 0.90 on the other
    assert abl_diff(0.52, 0.90, 0.5) == pytest.approx(-0.38)
    assert structural(0.45, -0.38)


def test_chance_floor_and_sign_conventions():
    # below-chance accuracies count as chance
    assert sub_diff(0.40, 0.30, 0.5) == 0.0
    assert sub_diff(0.90, 0.10, 0.5) == pytest.approx(0.40)
    assert abl_diff(0.20, 0.90, 0.5) == pytest.approx(-0.40)
    # target minus other, never the reverse
    assert sub_diff(0.6, 0.9, 0.5) == pytest.approx(-0.3)
    assert abl_diff(0.9, 0.6, 0.5) == pytest.approx(0.3)
    # another chance level
    assert sub_diff(0.80, 0.60, 0.75) == pytest.approx(0.05)
    assert abl_diff(0.70, 0.95, 0.75) == pytest.approx(-0.20)


def test_structural_needs_both_criteria_strictly():
    assert structural(0.1, -0.1)
    assert not structural(0.0, -0.4)  # subnetwork no better on its target
    assert not structural(0.4, 0.0)  # ablation hurts both alike
    assert not structural(0.4, 0.2)
    assert not structural(-0.2, -0.4)
    assert not structural(math.nan, -0.4)


def test_fraction_over_seeds():
    rows = [{"sub_diff": 0.4, "abl_diff": -0.3}, {"sub_diff": 0.4, "abl_diff": 0.0},
            {"sub_diff": 0.0, "abl_diff": -0.3}, {"sub_diff": 0.2, "abl_diff": -0.01}]
    assert fraction_structural(rows) == 0.5
    assert math.isnan(fraction_structural([]))
    res = SubroutineResult("A", 0.5, 1, 0.5, 0.5, 1, 0.5, -0.5, True, 0.1, 1.0)
    assert fraction_structural([res, rows[1]]) == 0.5


def test_chance_level_is_the_majority_rate():
    assert chance_level(torch.tensor([1, 1, 0])) == pytest.approx(2 / 3)
    assert chance_level(torch.tensor([0, 2, 2, 1])) == 0.5
    with pytest.raises(ValueError):
        chance_level(torch.tensor([], dtype=torch.long))


@pytest.mark.parametrize("target,other", [("A", "B"), ("B", "A")])
def test_modular_hand_built_net_scores_as_computed_by_hand(data, target, other):
    # "violation" net: logit = K (1/2 − diff_A − diff_B); the mask for A keeps A's branch.
    # Subnetwork: on the A set (B true) it computes A → 1.0; on the B set (A true) the logit
    # is K/2 everywhere → always 1 → 0.5. Ablation (A's branch zeroed): the A set → always
    # 1 → 0.5; the B set → computes B → 1.0. SubDiff = 1 − 0.5, AblDiff = 0.5 − 1.
    net = hand_built(CompoundTask(S, C), "violation")
    r = run(net, data, target, other)
    assert (r.acc_sub_target, r.acc_sub_other, r.acc_abl_target, r.acc_abl_other) == (1.0, 0.5, 0.5, 1.0)
    assert r.sub_diff == 0.5 and r.abl_diff == -0.5 and r.structural
    assert r.chance == 0.5 and r.mask_accuracy == 1.0
    assert r.density == pytest.approx(3 * S / (net[0].weight.numel() + S + C))
    # random mask of the same size: no subnetwork that does the target
    assert r.mask.masks["0.weight"].sum() == 2 * S
    assert r.random_acc_sub_target == 0.5 and not r.random_structural
    m = r.metrics()
    assert "mask" not in m and m["sub_diff"] == 0.5 and m["structural"] is True


def test_entangled_hand_built_net_is_not_structural(data):
    # "and" net: logit = K (same_A + same_B − 3/2). On the A set B is true, and the output
    # needs B's evidence too, so the mask for A must keep both branches: the subnetwork
    # also solves B (SubDiff = 1 − 1 = 0) and the ablation leaves only the biases,
    # a constant "no" (AblDiff = 0.5 − 0.5 = 0).
    net = hand_built(CompoundTask(S, C), "and")
    r = run(net, data, "A", "B", random_control=False)
    assert (r.acc_sub_target, r.acc_sub_other, r.acc_abl_target, r.acc_abl_other) == (1.0, 1.0, 0.5, 0.5)
    assert r.sub_diff == 0.0 and r.abl_diff == 0.0 and not r.structural
    assert math.isnan(r.random_sub_diff)


def test_untrained_net_is_not_structural(data):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2 * (S + C), 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    r = run(net, data, "A", "B", random_control=False)
    assert not r.structural and r.abl_diff >= 0


def test_unequal_chance_levels_need_an_explicit_floor(data):
    net = hand_built(CompoundTask(S, C), "violation")
    x, y = data["sub_B_test"].xy()
    skewed = (x[:300], y[:300].clone().fill_(1))
    with pytest.raises(ValueError, match="chance"):
        subroutine_modularity(net, MASKED, squeeze, data["sub_A_train"].xy(), data["sub_A_test"].xy(), skewed)
