"""Lost seeds on constraint_satisfaction_plateaus: seeds lost at a size of the sweep are counted."""

from __future__ import annotations

from .test_review import plateau, verdict


def test_five_of_eight_diverged_seeds_at_the_largest_size_are_inconclusive():
    df = plateau()
    df.loc[(df.budget == 1.6e6) & (df.seed < 5), "status"] = "diverged"
    v = verdict(df)
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "5 of 8 seeds of the deciding cell" in v["details"]["reason"] and "budget 1600000" in v["details"]["reason"]
    assert v["details"]["lost_seeds_by_cell"]["budget 1600000"]["statuses"] == {"diverged": 5}


def test_one_lost_seed_still_decides():
    df = plateau()
    df.loc[(df.budget == 1.6e6) & (df.seed == 0), "status"] = "failed"
    v = verdict(df)
    assert v["verdict"] == "supported", v["details"]["reason"]
