"""The modularity contrasts' floors, ceilings and seeds: shares at the floor or ceiling, lost seeds of a side."""

from __future__ import annotations

import pytest

from bindscale.verdicts.engine import compute_verdicts
from bindscale.studies.modularity.verdicts import pretraining_reliability, structure_grows_with_width

from .test_verdicts import P_DIFF, _table

RULES = (structure_grows_with_width, pretraining_reliability)


def through_engine(df, claim: str) -> dict:
    return compute_verdicts(df, {"verdicts": {claim: {"margin": 0.1, "min_base_acc": 0.95}}}, n_boot=200)[0]


def test_true_and_false_still_decide():
    grows = _table(robust={(16, "none"): 0.2, (64, "none"): 0.6, (16, "match_count"): 0.2, (64, "match_count"): 0.6})
    assert through_engine(grows, "structure_grows_with_width")["verdict"] == "supported"
    assert through_engine(_table(), "structure_grows_with_width")["verdict"] == "not_supported"


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("bound,word", [(0.0, "floor"), (1.0, "ceiling")])
def test_both_sides_at_the_floor_or_ceiling_is_inconclusive(rule, bound, word):
    out = rule(_table(robust=bound, robust_spread=0.0), P_DIFF, 200, 0)
    assert out.outcome == "inconclusive" and word in out.details["reason"], out.details["reason"]


def test_five_of_eight_failed_seeds_on_the_wide_side_are_inconclusive():
    grows = _table(robust={(16, "none"): 0.2, (64, "none"): 0.6, (16, "match_count"): 0.2, (64, "match_count"): 0.6})
    grows.loc[(grows["width"] == 64) & (grows["pretraining"] == "none") & (grows["seed"] < 5), "status"] = "failed"
    v = through_engine(grows, "structure_grows_with_width")
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "5 of 8 seeds of the deciding cell (architecture mlp, width 64, pretraining none)" in v["details"]["reason"]


def test_structure_emerges_with_five_of_eight_failed_seeds_in_a_cell_is_inconclusive():
    claim = {"structure_emerges": {"margin": 0.02, "min_base_acc": 0.95}}
    good = _table()
    assert compute_verdicts(good, {"verdicts": claim}, n_boot=200)[0]["verdict"] == "supported"
    good.loc[(good["width"] == 64) & (good["pretraining"] == "none") & (good["seed"] < 5), "status"] = "failed"
    v = compute_verdicts(good, {"verdicts": claim}, n_boot=200)[0]
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "5 of 8 seeds of the deciding cell (architecture mlp, width 64, pretraining none)" in v["details"]["reason"]


@pytest.mark.parametrize("rule", RULES)
def test_near_the_ceiling_no_room_for_the_margin_is_inconclusive(rule):
    """One seed just off the ceiling escapes the exact-bound check; the room check catches it: a gain of
    the margin cannot happen above a lower side that already averages ~1."""
    near = _table(robust=1.0, robust_spread=0.0)
    near.loc[near.index[0], "frac_robust"] = 0.999
    out = rule(near, P_DIFF, 200, 0)
    assert out.outcome == "inconclusive" and "no model could exceed it by the margin" in out.details["reason"], \
        out.details["reason"]


def test_seeds_the_accuracy_filter_dropped_are_named_as_such():
    grows = _table(robust={(16, "none"): 0.2, (64, "none"): 0.6, (16, "match_count"): 0.2, (64, "match_count"): 0.6})
    grows.loc[(grows["width"] == 64) & (grows["pretraining"] == "none") & (grows["seed"] < 3), "base_acc_test"] = 0.6
    v = through_engine(grows, "structure_grows_with_width")
    lost = v["details"]["lost_seeds_by_cell"]["architecture mlp, width 64, pretraining none"]
    assert lost["statuses"] == {"ok but below the accuracy filter (min_base_acc)": 3} and lost["used"] == 5
    assert v["verdict"] == "inconclusive" and "below the accuracy filter" in v["details"]["reason"]
