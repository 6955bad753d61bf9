"""The plateau question over real models' sizes: ``lm_constraint_satisfaction_plateaus`` on
planted tables of real-model rows — a plateau inside the band, a rising metric, too few sizes, every answer
unparsable, NaN, chance level everywhere, a plateau below the band, unknown sizes — through the report's engine
(its gate and deciding cells included)."""

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts
from bindscale.studies.ceiling import CLAIMS
from bindscale.studies.ceiling import verdicts as cv
from bindscale.studies.ceiling.problems import FAMILIES

CLAIM = next(c for c in CLAIMS if c.name == "lm_constraint_satisfaction_plateaus")
TH = dict(CLAIM.defaults)
SIZES = (22.7e6, 135e6, 360e6, 1.7e9)


def lm_table(rates, sizes=SIZES, n=2000, unparsable=0.0, chance=0.07):
    """One real-model row per size; ``rates[i]``: every family's verdict metric at size ``i`` (a float, or a
    dict family -> float)."""
    rows = []
    for i, (s, r) in enumerate(zip(sizes, rates)):
        row = {"trial_id": f"lm{i}", "status": "ok", "model.kind": "lm", "model_name": f"m{i}", "seed": 0,
               "lm_model": f"model-{cv.size_words(s)}", "n_params": s, "lm_parsed": 1.0 - unparsable,
               "task.families": ",".join(FAMILIES), "lm_backend": "local"}
        for f in FAMILIES:
            v = r[f] if isinstance(r, dict) else r
            m = cv.VERDICT_METRIC[f]
            row[f"{m}_{f}"] = v
            if m != "feas":
                row[f"feas_{f}"] = 1.0
            row[f"sat_{f}"] = v
            row[f"n_{f}"] = n
            row[f"unparsable_{f}"] = unparsable
            for k in ("sat", "feas", "optimal"):
                row[f"chance_{k}_{f}"] = chance
        rows.append(row)
    return pd.DataFrame(rows)


def verdict(df, **th):
    return compute_verdicts(df, {"verdicts": {CLAIM.name: {**TH, **th}}}, n_boot=500)[0]


def test_a_plateau_inside_the_band_over_real_sizes_is_supported():
    v = verdict(lm_table([0.57, 0.575, 0.575, 0.58]))
    assert v["verdict"] == "supported", v["details"]["reason"]
    assert v["statistic"] == "lm_largest_feas"
    assert 0.55 < v["value"] < 0.61 and v["ci_low"] < v["value"] < v["ci_high"]
    e = v["details"]["by_family"]["colouring"]
    assert e["state"] == "plateau" and -0.05 <= e["range_gain"]["ci_low"] <= e["range_gain"]["ci_high"] <= 0.05
    assert e["size_ratio"] == pytest.approx(1.7e9 / 22.7e6)
    assert v["details"]["gates"][0]["metric"] == "lm_parsed"  # the engine read the claim's gate


def test_a_rising_metric_is_not_supported():
    v = verdict(lm_table([0.20, 0.35, 0.45, 0.58]))
    assert v["verdict"] == "not_supported", v["details"]["reason"]
    assert "still rises" in v["details"]["reason"]


def test_a_largest_model_above_the_band_is_not_supported():
    v = verdict(lm_table([0.5, 0.7, 0.85, 0.86]))
    assert v["verdict"] == "not_supported"
    assert "above the claimed band" in v["details"]["reason"]


def test_a_flat_level_below_the_band_is_not_supported():
    v = verdict(lm_table([0.34, 0.35, 0.35, 0.35]))
    assert v["verdict"] == "not_supported"
    assert "below the claimed band" in v["details"]["reason"]


def test_two_sizes_are_inconclusive_and_the_reason_names_them():
    v = verdict(lm_table([0.4, 0.58], sizes=(22.7e6, 135e6)))
    assert v["verdict"] == "inconclusive"
    assert "2 real model sizes with valid answers (22.7M, 135M): the plateau needs at least 3" in v["details"]["reason"]
    assert math.isnan(v["value"])


def test_the_same_size_twice_counts_once():
    v = verdict(lm_table([0.5, 0.58, 0.58], sizes=(22.7e6, 135e6, 135e6)))
    assert v["verdict"] == "inconclusive"
    assert "2 real model sizes" in v["details"]["reason"] and "same size" in v["details"]["reason"]


def test_every_answer_unparsable_decides_nothing():
    v = verdict(lm_table([0.0, 0.0, 0.0, 0.0], unparsable=1.0))
    assert v["verdict"] == "inconclusive"
    assert "0 real model sizes with valid answers (none)" in v["details"]["reason"]
    assert "below min_parsed" in v["details"]["reason"]


def test_mostly_unparsable_models_are_left_out_by_the_gate():
    df = lm_table([0.30, 0.50, 0.575, 0.58, 0.44], sizes=(*SIZES, 7e9))
    df.loc[df.index[0], "lm_parsed"] = 0.2  # the smallest answers 20% in the format: it decides nothing
    v = verdict(df)
    assert v["details"]["sizes"] == [135e6, 360e6, 1.7e9, 7e9]
    assert "22.7M): 20% of its answers parsable" in v["details"]["reason"]


@pytest.mark.parametrize("damage", ["gated_out", "unknown_size"])
def test_a_largest_model_left_out_blocks_the_verdict(damage):
    """The three smaller models plateau inside the band; the largest (7B) would read 0.44 (a plateau below the
    band) but fails the parse gate, or has no parameter count: the claim is not read on the next size down."""
    df = lm_table([0.40, 0.50, 0.58, 0.58, 0.44], sizes=(*SIZES, 7e9))
    if damage == "gated_out":
        df.loc[df.index[-1], "lm_parsed"] = 0.45
    else:
        df.loc[df.index[-1], "n_params"] = np.nan
    v = verdict(df)
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "below the largest size tested" in v["details"]["reason"]


def test_a_plateau_set_by_parse_failures_decides_nothing():
    """60% parsable passes a gate lowered to 0.5; the rate over all instances (0.55) lies in the band, but among the
    parsable answers it is 0.55 / 0.6 = 0.92, far above it: the "plateau" is the parse failures'."""
    v = verdict(lm_table([0.55, 0.55, 0.55, 0.55], unparsable=0.4), min_parsed=0.5)
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "depends on parse failures" in v["details"]["reason"]


def test_a_chance_level_inside_the_band_decides_nothing():
    v = verdict(lm_table([0.55, 0.58, 0.58, 0.58], chance=0.55))
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "not below the claimed band" in v["details"]["reason"]


def test_the_gate_reads_the_parse_share_from_the_unparsable_columns_when_lm_parsed_is_missing():
    v = verdict(lm_table([0.57, 0.575, 0.575, 0.58], unparsable=0.02).drop(columns="lm_parsed"))
    assert v["verdict"] == "supported", v["details"]["reason"]
    (g,) = v["details"]["gates"]
    assert all(x == pytest.approx(0.98) for x in g["cells"].values()) and not g["missed"]


@pytest.mark.parametrize("where", ["one_family", "every_family"])
def test_nan_is_inconclusive(where):
    df = lm_table([0.57, 0.575, 0.575, 0.58])
    cols = ["feas_colouring"] if where == "one_family" else [f"{cv.VERDICT_METRIC[f]}_{f}" for f in FAMILIES]
    df.loc[df.index[1:], cols] = np.nan
    v = verdict(df)
    assert v["verdict"] == "inconclusive"
    assert "the plateau needs at least 3" in v["details"]["reason"]


def test_chance_level_everywhere_is_a_floor_and_decides_nothing():
    v = verdict(lm_table([0.07, 0.07, 0.07, 0.07], chance=0.07))
    assert v["verdict"] == "inconclusive"
    assert "floor decides nothing" in v["details"]["reason"]


def test_all_zero_is_a_floor_too():
    v = verdict(lm_table([0.0, 0.0, 0.0, 0.0], chance=0.0))
    assert v["verdict"] == "inconclusive" and "floor" in v["details"]["reason"]


def test_no_chance_level_is_inconclusive():
    df = lm_table([0.30, 0.50, 0.575, 0.58]).drop(columns=[c for c in lm_table([0]).columns if c.startswith("chance_")])
    v = verdict(df)
    assert v["verdict"] == "inconclusive" and "no chance level" in v["details"]["reason"]


def test_unknown_sizes_and_no_real_rows():
    df = lm_table([0.30, 0.50, 0.575, 0.58])
    df["n_params"] = np.nan  # endpoints without model.params
    v = verdict(df)
    assert v["verdict"] == "inconclusive" and "parameter count unknown" in v["details"]["reason"]
    v = verdict(df.iloc[0:0])
    assert v["verdict"] == "inconclusive"


def test_few_instances_leave_it_open():
    v = verdict(lm_table([0.30, 0.50, 0.575, 0.58], n=20))  # intervals far wider than the band
    assert v["verdict"] == "inconclusive", v["details"]["reason"]


def test_the_report_lists_each_model_with_name_params_chance_and_parse_failures():
    d = verdict(lm_table([0.30, 0.50, 0.575, 0.58], unparsable=0.05))["details"]
    m = d["models"][1]
    assert m["model"] == "model-135M" and m["n_params"] == 135e6 and m["n_params_words"] == "135M"
    assert m["chance_feas_colouring"] == 0.07 and m["unparsable_colouring"] == 0.05
    assert m["params"].startswith("counted")
    assert d["by_family"]["knapsack"]["models"][0]["unparsable"] == 0.05


def test_the_from_scratch_verdict_is_unchanged_by_real_rows():
    from tests.studies.ceiling.test_review import plateau, verdict as ladder

    both = pd.concat([plateau(), lm_table([0.2, 0.35, 0.45, 0.58])], ignore_index=True)
    assert ladder(both)["verdict"] == ladder(plateau())["verdict"] == "supported"


def test_size_words():
    assert [cv.size_words(x) for x in (134_515_008, 22.7e6, 1.7e9, 8e4, math.nan)] == \
        ["135M", "22.7M", "1.7B", "80k", "unknown"]


def test_the_real_model_figure_draws_models_of_known_and_unknown_size_and_nothing_without_them():
    from bindscale.studies.ceiling.figures import figures, fig_lm_vs_params

    df = lm_table([0.30, 0.50, 0.575], n=30, unparsable=0.2)
    df.loc[df.index[-1], "n_params"] = np.nan
    assert fig_lm_vs_params(df)
    assert fig_lm_vs_params(df.assign(**{"model.kind": "transformer"})) is None
    assert "ceiling_lm_vs_params" in figures() and "ceiling_lm_vs_params" in CLAIM.figures


def test_a_flat_last_step_at_the_top_of_a_climbing_curve_is_no_plateau():
    """0.30 → 0.50 → 0.575 → 0.58 over 75x in size: the last step is flat, the range climbs. Read from the last step
    (as before) it was a plateau; over the range it still rises: not supported, and the opposite finding."""
    v = verdict(lm_table([0.30, 0.50, 0.575, 0.58]))
    assert v["verdict"] == "not_supported", v["details"]["reason"]
    assert "still rises over the size range" in v["details"]["reason"]
    assert v["details"]["not_supported_means"] == "opposite"


def test_sizes_closer_than_the_stated_ratio_decide_nothing():
    """Four models within 6% of each other in size: flat inside the band, but no evidence of "whatever the size"."""
    v = verdict(lm_table([0.57, 0.575, 0.575, 0.58], sizes=(1.60e9, 1.64e9, 1.67e9, 1.70e9)))
    assert v["verdict"] == "inconclusive" and "a range of at least 10x" in v["details"]["reason"]
    ok = verdict(lm_table([0.57, 0.575, 0.575, 0.58], sizes=(1.60e9, 1.64e9, 1.67e9, 1.70e9)), min_size_ratio=1.05)
    assert ok["verdict"] == "supported"


def test_a_smaller_model_above_the_band_contradicts_whatever_the_size():
    """The largest model sits in the band but a smaller one lies above it: not "55-60% whatever the size"."""
    v = verdict(lm_table([0.575, 0.80, 0.575, 0.58]))
    assert v["verdict"] == "not_supported" and "already above the claimed band" in v["details"]["reason"]
    assert "135M" in v["details"]["reason"] and v["details"]["not_supported_means"] == "missed_level"


@pytest.mark.parametrize("order", ["low_first", "high_first"])
def test_two_records_of_one_model_that_disagree_make_it_inconclusive(order):
    """The same model read twice (locally and through an endpoint) at 0.58 and 0.85: which one decided used to
    depend on the table's order; now neither does."""
    base = lm_table([0.57, 0.575, 0.575, 0.58])
    twin = base.iloc[[3]].copy()
    twin["trial_id"] = "lm3b"
    for f in FAMILIES:
        twin[f"{cv.VERDICT_METRIC[f]}_{f}"] = 0.85
    df = pd.concat([base, twin] if order == "low_first" else [twin, base], ignore_index=True)
    v = verdict(df)
    assert v["verdict"] == "inconclusive" and "two records disagree" in v["details"]["reason"]
