"""``scale_partially_overcomes_binding`` reads the size sweep at the depth with the most budgets; a larger plain
model at another depth (the one ``binding_beats_plain_on_scan`` calls the largest plain model) makes it inconclusive
(a hostile review's table: the 400k plain model at depth 4 closes the gap the depth-2 sweep leaves open)."""

import pandas as pd

from bindscale.verdicts.engine import compute_verdicts
from tests.studies.binding_scan.test_verdicts import _table

SPL = ("addprim_jump", "around_right")


def _run(df):
    return compute_verdicts(df, {"verdicts": {"scale_partially_overcomes_binding": {}}}, n_boot=200)[0]


def _sweep():
    cells = {}
    for sp in SPL:
        cells[(sp, "transformer", 25_000)] = 0.05
        cells[(sp, "transformer", 50_000)] = 0.15
        cells[(sp, "transformer", 100_000)] = (0.6, 0.98)
    return _table(cells)


def _big(status="ok"):
    big = _table({(sp, "transformer", 400_000): (0.97, 0.98) for sp in SPL}, seed=3)
    big["layers"], big["trial_id"] = 4, big["trial_id"] + "-L4"
    if status != "ok":
        big["status"] = status
        big[["acc_test", "acc_id"]] = float("nan")
    return big


def test_sweep_alone_decides():
    assert _run(_sweep())["verdict"] == "supported"


def test_a_larger_plain_model_outside_the_sweep_makes_it_inconclusive():
    v = _run(pd.concat([_sweep(), _big()], ignore_index=True))
    assert v["verdict"] == "inconclusive"  # was "supported", read at 100k while the 400k model closes the gap
    assert "plain budget 400000 at 4 layers" in v["details"]["reason"]
    assert "value_below_largest_plain_model" in v["details"]


def test_a_failed_larger_plain_model_outside_the_sweep_makes_it_inconclusive_too():
    v = _run(pd.concat([_sweep(), _big("failed")], ignore_index=True))
    assert v["verdict"] == "inconclusive" and "8 failed" in v["details"]["reason"]
