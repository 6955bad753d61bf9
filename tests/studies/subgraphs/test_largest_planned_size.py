"""Guard of ``scale_does_not_lift_ood``: the largest planned model size must be among the sizes the rule decided on
(a hostile review's tables: the largest size failed, was never recorded, or ran only with a smaller training set)."""

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts
from tests.studies.subgraphs.test_verdicts import EIGHT, SEEN_C, SEEN_W, _plus, _rows

METRICS = ("acc_ood", "acc_id", "seen_correct", "seen_wrong", "seen_gap_depth")


def _run(df, unrecorded=None):
    return compute_verdicts(df, {"verdicts": {"scale_does_not_lift_ood": {}}}, n_boot=200,
                            unrecorded=unrecorded)[0]


def _tables():
    df = _rows(EIGHT, _plus(EIGHT[::-1], 0.01), SEEN_C, SEEN_W, sizes=(1e5, 1e6))
    big = df[df.n_params == 1e6].copy()
    big["n_params"] = 1e7
    big["acc_ood"] += 0.5  # where OOD lifts: the source's claim is contradicted at the largest size
    return df, big


def test_with_the_largest_size_present_the_claim_is_contradicted():
    df, big = _tables()
    assert _run(pd.concat([df, big]))["verdict"] == "not_supported"


@pytest.mark.parametrize("how", ["failed", "unrecorded", "smaller_n_train"])
def test_largest_planned_size_without_a_deciding_trial_is_inconclusive(how):
    df, big = _tables()
    unrec = None
    if how == "failed":
        lost = big.assign(status="failed")
        for c in METRICS:
            lost[c] = math.nan
        table = pd.concat([df, lost])
    elif how == "unrecorded":
        table = df
        unrec = big[["n_params", "n_train", "scratchpad", "seed"]].assign(
            status="missing", trial_id=[f"u{i}" for i in range(len(big))])
    else:
        table = pd.concat([df, big.assign(n_train=1000)])
    v = _run(table, unrec)
    assert v["verdict"] == "inconclusive"  # was "supported", answered at 1e6 parameters
    assert "largest planned model size (10,000,000 parameters)" in v["details"]["reason"]
    assert "value_without_largest_planned_size" in v["details"]


def test_sizes_named_by_config_columns_when_the_failed_trials_have_no_n_params():
    df, big = _tables()
    shape = {1e5: (2, 32), 1e6: (4, 64), 1e7: (8, 128)}
    lost = big.assign(status="failed")
    for c in (*METRICS, "n_params"):
        lost[c] = math.nan
    lost["layers"], lost["d_model"], lost["heads"] = 8, 128, 4
    df["layers"] = df["n_params"].map(lambda s: shape[s][0])
    df["d_model"] = df["n_params"].map(lambda s: shape[s][1])
    df["heads"] = 4
    v = _run(pd.concat([df, lost]))
    assert v["verdict"] == "inconclusive"
    assert "8 layers × d_model 128" in v["details"]["reason"] and "8 failed" in v["details"]["reason"]
    assert _run(df)["verdict"] == "supported"  # nothing planned beyond the decided sizes: the guard is silent
