"""Guard of ``scale_does_not_lift_ood``: the largest planned model size must be among the sizes the rule decided on
(a hostile review's tables: the largest size failed, was never recorded, or ran only with a smaller training set)."""

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts
from tests.studies.subgraphs.test_verdicts import BIG, EIGHT, HUGE, SEEN_C, SEEN_W, SHAPE, SMALL, _plus, _rows

METRICS = ("acc_ood", "acc_id", "seen_correct", "seen_wrong", "seen_gap_depth")


def _run(df, unrecorded=None):
    return compute_verdicts(df, {"verdicts": {"scale_does_not_lift_ood": {}}}, n_boot=200,
                            unrecorded=unrecorded)[0]


def _tables():
    df = _rows(EIGHT, _plus(EIGHT[::-1], 0.01), SEEN_C, SEEN_W, sizes=(SMALL, BIG))
    big = df[df.n_params == BIG].copy()
    big["n_params"], big["layers"], big["d_model"] = HUGE, *SHAPE[HUGE]
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
        unrec = big[["n_params", "layers", "d_model", "heads", "n_train", "scratchpad", "seed"]].assign(
            status="missing", trial_id=[f"u{i}" for i in range(len(big))])
    else:
        table = pd.concat([df, big.assign(n_train=1000)])
    v = _run(table, unrec)
    assert v["verdict"] == "inconclusive"  # was "supported", answered at the smaller sizes
    assert "largest planned model size (4 layers × d_model 192, heads 2)" in v["details"]["reason"]
    assert "value_without_largest_planned_size" in v["details"]


def test_sizes_named_by_config_columns_when_the_failed_trials_have_no_n_params():
    df, big = _tables()
    lost = big.assign(status="failed")
    for c in (*METRICS, "n_params"):
        lost[c] = math.nan
    v = _run(pd.concat([df, lost]))
    assert v["verdict"] == "inconclusive"
    assert "4 layers × d_model 192" in v["details"]["reason"] and "8 failed" in v["details"]["reason"]
    alone = _run(df)  # nothing planned beyond the decided sizes: the guard is silent
    assert "largest planned" not in alone["details"]["reason"]
    assert "value_without_largest_planned_size" not in alone["details"]
