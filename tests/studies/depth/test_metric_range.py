"""Accuracies outside [0, 1] (percent units) make the depth claims inconclusive instead of deciding (a hostile
review's table: Lake & Baroni's own numbers entered in percent)."""

from bindscale.verdicts.engine import compute_verdicts
from tests.studies.depth.test_verdicts import _families, _rows, _sweep


def _run(df, claim):
    return compute_verdicts(df, {"verdicts": {claim: {}}}, n_boot=200)[0]


def test_seq2seq_claim_in_percent_units_is_inconclusive():
    df = _sweep(0.138, 0.012, noise=0.005)
    assert _run(df, "seq2seq_fails_scan_splits")["verdict"] == "supported"
    pct = df.copy()
    pct["acc_test"] *= 100
    pct["acc_id"] *= 100
    v = _run(pct, "seq2seq_fails_scan_splits")
    assert v["verdict"] == "inconclusive" and "outside [0, 1]" in v["details"]["reason"]


def test_depth_claim_in_percent_units_is_inconclusive():
    df = _rows(_families(0.3, 0.2))
    df["acc_test"] *= 100
    v = _run(df, "deeper_composes_better_at_equal_params")
    assert v["verdict"] == "inconclusive" and "outside [0, 1]" in v["details"]["reason"]
