"""The length_transfer rules' seeds: floors and ceilings, lost seeds, a seed counted once.

Tables from ``table`` (``test_verdicts.py``: the deciding pair at two sizes, 8 seeds per cell).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts
from bindscale.studies.length_transfer import CLAIMS

from .test_verdicts import R, U, table

GAINS = ("length_transfer_exists", "unrelated_aux_no_transfer", "transfer_grows_with_size")


def verdicts(df: pd.DataFrame, claims=None) -> dict[str, dict]:
    study = {"verdicts": {c.name: {} for c in CLAIMS if claims is None or c.name in claims}}
    return {v["claim"]: v for v in compute_verdicts(df, study, n_boot=300)}


def test_true_and_false_claims_still_decide():
    assert {k: v["verdict"] for k, v in verdicts(table(), GAINS).items()} == dict.fromkeys(GAINS, "supported")
    flat = verdicts(table(related=(0.0, 0.0)), ("length_transfer_exists",))
    assert flat["length_transfer_exists"]["verdict"] == "not_supported"
    shrinks = verdicts(table(related=(0.45, 0.05)), ("transfer_grows_with_size",))
    assert shrinks["transfer_grows_with_size"]["verdict"] == "not_supported"
    assert verdicts(table(unrelated=(0.3, 0.4)), ("unrelated_aux_no_transfer",))[
        "unrelated_aux_no_transfer"]["verdict"] == "not_supported"


@pytest.mark.parametrize("bound,word", [(0.0, "floor"), (1.0, "ceiling")])
def test_every_model_at_the_floor_or_ceiling_beyond_L_is_inconclusive(bound, word):
    out = verdicts(table().assign(acc_beyond=bound), ("length_transfer_exists", "transfer_grows_with_size"))
    for claim, v in out.items():
        assert v["verdict"] == "inconclusive", (claim, v["details"]["reason"])
        assert f"exactly {bound:g}" in v["details"]["reason"] and word in v["details"]["reason"]


def test_unrelated_control_at_the_floor_with_alone_says_nothing():
    """Neither the unrelated nor the alone arm learned anything beyond L: no evidence that unrelated does not
    transfer, even though the related arm does."""
    df = table()
    df.loc[df["aux"].isin(["none", U]), "acc_beyond"] = 0.0
    v = verdicts(df, ("unrelated_aux_no_transfer", "length_transfer_exists"))
    assert v["length_transfer_exists"]["verdict"] == "supported"  # one arm off the floor: decides
    u = v["unrelated_aux_no_transfer"]
    assert u["verdict"] == "inconclusive" and "floor" in u["details"]["reason"], u["details"]["reason"]


@pytest.mark.parametrize("how", ["nan", "failed"])
def test_five_of_eight_lost_related_seeds_at_the_largest_size_are_inconclusive(how):
    df = table()
    lost = (df["aux"] == R) & (df["d_model"] == 64) & (df["seed"] < 5)
    if how == "nan":
        df.loc[lost, "acc_beyond"] = np.nan
    else:
        df.loc[lost, "status"] = np.where(df.loc[lost, "seed"] < 3, "failed", "diverged")
    for claim, v in verdicts(df, GAINS).items():
        d = v["details"]
        assert v["verdict"] == "inconclusive", (claim, d["reason"])
        assert "5 of 8 seeds of the deciding cell" in d["reason"] and "at least 6 of 8" in d["reason"]


def test_one_lost_seed_is_reported_and_decides():
    df = table()
    df.loc[(df["aux"] == R) & (df["d_model"] == 64) & (df["seed"] == 0), "acc_beyond"] = np.nan
    v = verdicts(df, ("length_transfer_exists",))["length_transfer_exists"]
    assert v["verdict"] == "supported", v["details"]["reason"]
    (cell,) = v["details"]["lost_seeds_by_cell"].values()
    assert cell["lost"] == 1 and cell["statuses"] == {"ok but NaN": 1}


def _copies(df: pd.DataFrame, k: int) -> pd.DataFrame:
    return pd.concat([df.assign(trial_id=df["trial_id"] + f"-copy{i}") for i in range(k)], ignore_index=True)


def test_head_reuse_counts_a_copied_record_once():
    name = "head_reuse_predicts_transfer"
    # A weak within-cell correlation on 3 seeds: 12 co-trained trials, the interval straddles the margin.
    df = table(related=(0.2, 0.45), seeds=3, reuse=0.05, seed=0)
    before = verdicts(df, (name,))[name]
    after = verdicts(_copies(df, 6), (name,))[name]
    assert after["verdict"] == before["verdict"] == "inconclusive", after["details"]["reason"]
    assert after["n_trials"] == before["n_trials"]
    assert (after["ci_low"], after["ci_high"]) == pytest.approx((before["ci_low"], before["ci_high"]))
    assert after["details"]["duplicate_records"] == 5 * len(df)


def test_head_reuse_with_five_of_eight_failed_seeds_in_a_cell_is_inconclusive():
    name = "head_reuse_predicts_transfer"
    df = table(related=(0.2, 0.45))
    assert verdicts(df, (name,))[name]["verdict"] == "supported"
    df.loc[(df["aux"] == R) & (df["d_model"] == 64) & (df["seed"] < 5), "status"] = "failed"
    v = verdicts(df, (name,))[name]
    assert v["verdict"] == "inconclusive" and "5 of 8 seeds of the deciding cell" in v["details"]["reason"]


def test_near_the_ceiling_no_room_for_the_margin_is_inconclusive():
    """Every seed at 1 beyond L but one at 0.999 (the exact-bound check does not fire), and alone already at
    0.99 with a margin of 0.05: neither can show the claimed gain, so neither says not_supported."""
    near = table(related=(0.0, 0.0))
    near["acc_beyond"] = 1.0
    near.loc[near.index[0], "acc_beyond"] = 0.999
    high = table(related=(0.0, 0.0), noise=0.003).assign(acc_beyond=lambda d: np.clip(d["acc_beyond"] + 0.94, 0, 1))
    for df in (near, high):
        out = verdicts(df, GAINS)
        for claim in GAINS:
            assert out[claim]["verdict"] == "inconclusive", (claim, out[claim]["details"]["reason"])
    # alone at ~0.99 is off the exact bound: the room check says why
    assert "no model could exceed it by the margin" in verdicts(high, GAINS)["length_transfer_exists"]["details"]["reason"]
