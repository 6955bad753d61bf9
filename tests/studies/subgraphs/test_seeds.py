"""Lost seeds on scale_does_not_lift_ood: seeds lost at a deciding size are counted, not dropped."""

from __future__ import annotations

import numpy as np

from bindscale.verdicts.engine import compute_verdicts

from .test_verdicts import BIG, EIGHT, OOD, SEEN_C, SEEN_W, _rows

CLAIM = "scale_does_not_lift_ood"


def through_engine(df) -> dict:
    return compute_verdicts(df, {"verdicts": {CLAIM: dict(OOD)}}, n_boot=200)[0]


def test_a_lift_still_refutes_and_a_flat_curve_is_not_read_as_one():
    # A flat curve at 8 seeds is undecided (the bounded interval's width, see the rule's docstring), never refuted.
    assert through_engine(_rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W))["verdict"] == "inconclusive"
    lifted = _rows(EIGHT, [v + 0.5 for v in EIGHT], SEEN_C, SEEN_W)
    assert through_engine(lifted)["verdict"] == "not_supported"


def test_five_of_eight_failed_or_diverged_seeds_of_the_largest_model_are_inconclusive():
    df = _rows(EIGHT, [v + 0.5 for v in EIGHT], SEEN_C, SEEN_W)  # decided (not supported) with every seed
    lost = (df["n_params"] == BIG) & (df["seed"] < 5)
    df.loc[lost, "status"] = np.where(df.loc[lost, "seed"] < 2, "failed", "diverged")
    v = through_engine(df)
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "5 of 8 seeds of the deciding cell" in v["details"]["reason"]
    assert "2 failed" in v["details"]["reason"] and "3 diverged" in v["details"]["reason"]


def test_steps_claim_with_five_of_eight_failed_seeds_in_a_cell_is_inconclusive():
    claim = {"correct_steps_seen_in_training": {"margin": 0.05}}
    df = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W)
    assert compute_verdicts(df, {"verdicts": claim}, n_boot=200)[0]["verdict"] == "supported"
    df.loc[(df["n_params"] == BIG) & (df["seed"] < 5), "status"] = "failed"
    v = compute_verdicts(df, {"verdicts": claim}, n_boot=200)[0]
    assert v["verdict"] == "inconclusive" and "5 of 8 seeds of the deciding cell" in v["details"]["reason"]
