"""deeper_composes_better_at_equal_params at the metric's floor or ceiling, and with seeds lost in a deciding cell."""

from __future__ import annotations

import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts

from .test_verdicts import _families, _rows, depth

CLAIM = "deeper_composes_better_at_equal_params"


def through_engine(df: pd.DataFrame) -> dict:
    return compute_verdicts(df, {"verdicts": {CLAIM: {}}}, n_boot=200)[0]


def test_true_and_false_still_decide():
    assert through_engine(_rows(_families(0.6, 0.5, base=0.2)))["verdict"] == "supported"
    assert through_engine(_rows(_families(0.2, -0.6, base=0.7)))["verdict"] == "not_supported"


@pytest.mark.parametrize("bound,word", [(0.0, "floor"), (1.0, "ceiling")])
def test_deep_and_shallow_all_at_the_floor_or_ceiling_is_inconclusive_and_says_so(bound, word):
    df = _rows(_families(0.6, 0.5, base=0.2))
    df.loc[df["split"] == "addprim_jump", "acc_test"] = bound
    v = depth(df)
    assert v.outcome == "inconclusive" and word in v.details["reason"], v.details["reason"]


def test_one_member_at_zero_still_decides():
    df = _rows(_families(0.6, 0.5, base=0.2))
    df.loc[(df["split"] == "addprim_jump") & (df["layers"] == 1), "acc_test"] = 0.0
    assert depth(df).outcome == "supported"


def test_five_of_eight_failed_seeds_of_the_deepest_member_are_inconclusive():
    df = _rows(_families(0.6, 0.5, base=0.2))
    lost = (df["split"] == "addprim_jump") & (df["layers"] == 8) & (df["seed"] < 5)
    df.loc[lost, "status"] = "failed"
    v = through_engine(df)
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "5 of 8 seeds of the deciding cell (split addprim_jump, budget 100000, layers 8" in v["details"]["reason"]


def test_scan_failure_claim_with_five_of_eight_failed_seeds_of_the_largest_model_is_inconclusive():
    claim = "seq2seq_fails_scan_splits"
    cells = {("length", 100_000, 4): 0.1, ("addprim_jump", 100_000, 4): 0.05}
    df = _rows(cells, id_acc=0.98, noise=0.01)
    assert compute_verdicts(df, {"verdicts": {claim: {}}}, n_boot=200)[0]["verdict"] == "supported"
    df.loc[(df["split"] == "length") & (df["seed"] < 5), "status"] = "failed"
    v = compute_verdicts(df, {"verdicts": {claim: {}}}, n_boot=200)[0]
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "5 of 8 seeds of the deciding cell (split length, budget 100000, layers 4" in v["details"]["reason"]
