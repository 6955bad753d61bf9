"""Verdict rules of the geometry study on synthetic results tables: true, false, missing, NaN, all-zero."""

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.report.verdicts import ok_rows

from bindscale.studies.geometry.verdicts import geometry_grows_with_scale, polar_beats_structural

SIZES = (20_000, 80_000, 300_000, 900_000)


def table(polar_by_size, structural_by_size, seeds=8, noise=0.02, seed=0):
    """One row per (size, seed): polar and structural LAS around the given means."""
    rng = np.random.default_rng(seed)
    rows = []
    for size, pm, sm in zip(SIZES, polar_by_size, structural_by_size):
        for s in range(seeds):
            p, q = pm + noise * rng.normal(), sm + noise * rng.normal()
            rows.append({"status": "ok", "trial_id": f"{size}-{s}", "n_params": size, "seed": s, "steps": 800,
                         "polar_las_pp": p, "structural_las_pp": q, "polar_minus_structural_las_pp": p - q,
                         "polar_minus_structural_las_hm": p - q - 0.01, "identity_las_pp": 0.1,
                         "untrained_polar_las_pp": 0.05 + 0.01 * rng.normal()})
    return pd.DataFrame(rows)


def run(rule, df):
    """As the verdict engine calls a rule: on the ok rows (the study's prepare_rows)."""
    return rule(ok_rows(df), {}, 200, 0)


def test_polar_beats_structural_supported_and_not():
    stat, verdict, (v, lo, hi), n, d = run(polar_beats_structural, table([.3, .4, .5, .6], [.2, .25, .3, .35]))
    assert verdict == "supported" and lo > 0 and n == 8 and d["largest_model_params"] == SIZES[-1]
    assert set(d["by_size"]) == {str(s) for s in SIZES} and d["seeds_per_cell"] == 8
    _, verdict, (v, lo, hi), _, _ = run(polar_beats_structural, table([.3, .4, .5, .5], [.3, .45, .5, .6]))
    assert verdict == "not_supported" and hi < 0
    _, verdict, _, _, _ = run(polar_beats_structural, table([.3, .4, .5, .6], [.3, .4, .5, .6], noise=0.05))
    assert verdict in ("inconclusive", "not_supported", "supported")  # equal means: decided by chance at most 5%


def test_growth_supported_and_not():
    _, verdict, (v, lo, hi), n, d = run(geometry_grows_with_scale, table([.2, .3, .4, .5], [.1] * 4))
    assert verdict == "supported" and lo > 0.02 and n == 16 and "untrained_model_gain" in d
    _, verdict, (v, lo, hi), _, _ = run(geometry_grows_with_scale, table([.5, .45, .4, .3], [.1] * 4))
    assert verdict == "not_supported" and hi < 0.02


@pytest.mark.parametrize("rule", [polar_beats_structural, geometry_grows_with_scale])
def test_missing_nan_zero_and_too_few_seeds_are_inconclusive(rule):
    good = table([.2, .3, .4, .5], [.1, .1, .1, .1])
    for broken in (good.drop(columns=["polar_las_pp", "polar_minus_structural_las_pp"]),
                   good.assign(polar_las_pp=np.nan, polar_minus_structural_las_pp=np.nan),
                   good.assign(polar_las_pp=0.0, structural_las_pp=0.0, polar_minus_structural_las_pp=0.0),
                   good[good["seed"] < 2],
                   good.iloc[0:0],
                   good.assign(status="failed")):
        stat, verdict, triple, n, d = run(rule, broken)
        assert verdict == "inconclusive" and all(math.isnan(x) for x in triple), d.get("reason")
        assert d["reason"]
    one = good.copy()
    one.loc[one.index[3], "polar_las_pp"] = np.inf
    one.loc[one.index[3], "polar_minus_structural_las_pp"] = np.inf
    assert run(rule, one)[1] == "inconclusive"


def test_growth_needs_two_sizes_and_other_settings_are_fixed():
    df = table([.2, .3, .4, .5], [.1] * 4)
    one = df[df["n_params"] == SIZES[-1]]
    assert run(geometry_grows_with_scale, one)[1] == "inconclusive"
    assert run(polar_beats_structural, one)[1] == "supported"  # decided at the largest model alone
    extra = df[df["n_params"] == SIZES[-1]].assign(steps=200, polar_minus_structural_las_pp=-0.5,
                                                    trial_id=lambda x: x["trial_id"] + "-short")
    _, verdict, _, _, d = run(polar_beats_structural, pd.concat([df, extra]))
    assert verdict == "supported" and d["steps_used"] == 800  # the steps axis is fixed at its most common value


def test_figures_render_on_a_table_and_skip_missing_data():
    from bindscale.studies.geometry.figures import figures

    df = table([.2, .3, .4, .5], [.1] * 4)
    figs = figures({})
    assert figs["geo_best_layer"][0](df)  # a base64 PNG
    assert figs["geo_by_layer"][0](df) is None and figs["geo_confusion"][0](df) is None  # no per-trial tables
    assert all(fn(df.iloc[0:0]) is None for fn, _ in figs.values())
