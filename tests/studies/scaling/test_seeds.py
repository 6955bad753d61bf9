"""The scaling study's seeds: lost seeds, the grid a claim speaks of, a seed counted once.

Each table is ``make_results`` (``test_verdicts.py``: the claims planted, 8 seeds per cell) damaged one way.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts

from .test_verdicts import STUDY, _cell, by_claim, make_results

N_BOOT = 300


def verdicts(df: pd.DataFrame, study: dict = STUDY) -> dict[str, dict]:
    return by_claim(compute_verdicts(df, study, n_boot=N_BOOT))


def widest_cell(df: pd.DataFrame) -> pd.Series:
    return (df["model"] == "mlp") & (df["width"] == 256) & (df["holdout"] == 0.25) & (df["status"] == "ok")


def test_the_planted_table_decides():
    v = verdicts(make_results(effect=True, problems=False))
    assert v["scaling"]["verdict"] == v["binding"]["verdict"] == "supported"
    assert "lost_seeds_by_cell" not in v["scaling"]["details"] and "duplicate_records" not in v["scaling"]["details"]
    assert verdicts(make_results(effect=False, problems=False))["scaling"]["verdict"] == "not_supported"


@pytest.mark.parametrize("how", ["nan", "failed_and_diverged"])
def test_five_of_eight_lost_seeds_in_the_widest_cell_are_inconclusive(how):
    df = make_results(effect=True, problems=False)
    lost = widest_cell(df) & (df["seed"] < 5)
    if how == "nan":
        df.loc[lost, "r2_heldout"] = math.nan
    else:
        df.loc[lost & (df["seed"] < 3), "status"] = "failed"
        df.loc[lost & (df["seed"] >= 3), "status"] = "diverged"
    v = verdicts(df)
    for claim in ("scaling", "binding"):
        d = v[claim]["details"]
        assert v[claim]["verdict"] == "inconclusive", d["reason"]
        assert "5 of 8 seeds of the deciding cell" in d["reason"] and "width 256" in d["reason"]
        assert "at least 6 of 8 are needed, 3 remain" in d["reason"]
        (cell,) = [c for c in d["lost_seeds_by_cell"].values() if c["lost"] == 5]
        assert cell["planned"] == 8 and cell["used"] == 3
        words = "ok but NaN" if how == "nan" else "failed"
        assert words in d["reason"] and words in cell["statuses"]
        assert math.isnan(v[claim]["value"]) and d["value_with_the_lost_seeds"]["n"] > 0


def test_one_lost_seed_is_reported_and_the_claim_still_decides():
    df = make_results(effect=True, problems=False)
    df.loc[widest_cell(df) & (df["seed"] == 0), "status"] = "failed"
    v = verdicts(df)["scaling"]
    assert v["verdict"] == "supported", v["details"]["reason"]
    (cell,) = v["details"]["lost_seeds_by_cell"].values()
    assert cell == {"planned": 8, "used": 7, "lost": 1, "needed": 6, "statuses": {"failed": 1}}


def test_the_study_file_sets_the_minimum():
    df = make_results(effect=True, problems=False)
    df.loc[widest_cell(df) & (df["seed"] < 3), "r2_heldout"] = math.nan  # 5 of 8 left
    strict = {**STUDY, "verdicts": {"scaling": {"r2_threshold": 0.9, "min_seeds": 8}}}
    loose = {**STUDY, "verdicts": {"scaling": {"r2_threshold": 0.9, "min_seeds": 0.5}}}
    assert verdicts(df, strict)["scaling"]["verdict"] == "inconclusive"
    assert verdicts(df, loose)["scaling"]["verdict"] == "supported"
    assert verdicts(df)["scaling"]["verdict"] == "inconclusive"  # default 0.75: 6 of 8


@pytest.mark.parametrize("how", ["one_holdout", "failed_holdouts", "no_holdout_column", "one_width"])
def test_scaling_needs_the_coverage_and_width_axes(how):
    df = make_results(effect=True, problems=False)
    if how == "one_holdout":
        df = df[df["holdout"] == 0.25]
    elif how == "failed_holdouts":
        df.loc[df["holdout"] > 0.25, "status"] = "failed"
    elif how == "no_holdout_column":
        df = df[df["holdout"] == 0.25].drop(columns="holdout")
    else:
        df = df[df["width"] == 256]
    v = verdicts(df)["scaling"]
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    axis = "width" if how == "one_width" else "hold-out"
    assert axis in v["details"]["reason"]


def _three_seed_table() -> pd.DataFrame:
    rows: list[dict] = []
    _cell(rows, "mlp", 16, 0.25, [0.2, 0.3, 0.4])
    _cell(rows, "mlp", 64, 0.25, [0.91, 0.95, 0.99])
    _cell(rows, "mlp", 64, 0.5, [0.5, 0.6, 0.7])
    return pd.DataFrame(rows)


def test_records_copied_under_new_trial_ids_count_once():
    df = _three_seed_table()
    study = {"verdicts": {"scaling": {}}}
    before = verdicts(df, study)["scaling"]
    assert before["verdict"] == "inconclusive"  # three seeds: the interval reaches below 0.9
    copied = pd.concat([df.assign(trial_id=df["trial_id"] + f"-copy{k}") for k in range(4)], ignore_index=True)
    after = verdicts(copied, study)["scaling"]
    assert after["verdict"] == "inconclusive", after["details"]["reason"]
    assert (after["ci_low"], after["ci_high"]) == pytest.approx((before["ci_low"], before["ci_high"]))
    assert after["details"]["duplicate_records"] == 3 * len(df)
    assert "repeat the configuration and seed" in after["details"]["reason"]


def test_a_rerun_of_the_same_configuration_and_seed_counts_once():
    """A real results table has every config column: same config and seed, other metrics, is one unit."""
    df = make_results(effect=True, problems=False)
    df["activation"], df["batch_tasks"], df["withheld_pairs"] = "relu", 32, 0
    rerun = df[widest_cell(df)].assign(trial_id=lambda d: d["trial_id"] + "-rerun",
                                       r2_heldout=lambda d: d["r2_heldout"] + 0.001)
    v = verdicts(pd.concat([df, rerun], ignore_index=True))["scaling"]
    assert v["details"]["duplicate_records"] == 8 and v["details"]["n_seeds_top_cell"] == 8


def test_decodability_with_five_of_eight_failed_seeds_in_a_cell_is_inconclusive():
    df = make_results(effect=True, problems=False)
    assert verdicts(df)["decodability"]["verdict"] == "supported"
    df.loc[(df["model"] == "mlp") & (df["width"] == 64) & (df["holdout"] == 0.5) & (df["seed"] < 5), "status"] = "failed"
    v = verdicts(df)["decodability"]
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "5 of 8 seeds of the deciding cell" in v["details"]["reason"] and "width 64" in v["details"]["reason"]
