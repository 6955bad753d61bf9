"""Verdict rules of the modularity study on synthetic results tables."""

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.studies.modularity.verdicts import (
    DEFAULTS,
    RULES,
    STATEMENTS,
    fill_untrained,
    pretraining_reliability,
    structure_emerges,
    structure_grows_with_width,
)
from bindscale.verdicts.engine import compute_verdicts

P_EMERGE = {"margin": 0.02, "min_base_acc": 0.95}
P_DIFF = {"margin": 0.1, "min_base_acc": 0.95}
SEEDS = 8
JITTER = np.linspace(-0.01, 0.01, SEEDS)  # seed-to-seed spread, mean 0


def _table(sub=0.3, abl=-0.2, robust=0.5, raw=0.75, widths=(16, 64), pre=("none", "match_count"), acc=1.0,
           untrained=(0.0, 0.0), arch="mlp", robust_spread=1.0, **cols):
    """One row per (width, pretraining, seed); a value may be a dict keyed by (width, pretraining).

    Every deciding value varies over seeds (``JITTER``, mean 0; ``robust_spread`` scales it for the
    noise-robust share): identical seeds are a broken pipeline and make the rules inconclusive.
    """
    def at(v, key):
        return v[key] if isinstance(v, dict) else v

    rows = []
    for w in widths:
        for p in pre:
            for s in range(SEEDS):
                key = (w, p)
                rows.append({"status": "ok", "architecture": arch, "width": w, "depth": 3, "pretraining": p,
                             "seed": s, "base_acc_test": acc, "sub_diff": at(sub, key) + JITTER[s],
                             "abl_diff": at(abl, key) - JITTER[s],
                             "frac_robust": at(robust, key) + robust_spread * JITTER[s],
                             "frac_structural": at(raw, key), "random_frac_structural": 0.25,
                             "random_frac_robust": 0.0, "random_sub_diff": 0.0, "random_abl_diff": 0.0,
                             "untrained_sub_diff": untrained[0], "untrained_abl_diff": untrained[1],
                             "untrained_frac_robust": 0.0, "untrained_frac_structural": 0.25,
                             "noise_tolerance": 0.045} | {c: at(v, key) for c, v in cols.items()})
    return pd.DataFrame(rows)


# ------------------------------------------------------------ structure_emerges


def test_structure_emerges_is_decided_on_the_mean_differences_with_the_shares_beside():
    result = structure_emerges(_table(), P_EMERGE, 1000, 0)
    stat, verdict, (value, lo, hi), n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and n == 2 * 2 * SEEDS and d["seeds_per_cell"] == SEEDS
    assert d["mean_sub_diff"]["value"] == pytest.approx(0.3) and d["mean_abl_diff"]["value"] == pytest.approx(-0.2)
    assert d["mean_sub_diff"]["ci_low"] > 0 and d["mean_abl_diff"]["ci_high"] < 0
    assert value == pytest.approx(0.2) and lo <= value <= hi  # the weaker effect, min(SubDiff, −AblDiff)
    assert d["share_beyond_noise"]["value"] == 0.5 and d["share_raw_signs"]["value"] == 0.75
    assert "0.045" in d["share_beyond_noise_note"]
    assert d["control_untrained_abl_diff"]["value"] == 0 and d["control_random_mask_frac_structural"]["value"] == .25
    assert set(d["by_cell"]) == {"mlp/16/none", "mlp/16/match_count", "mlp/64/none", "mlp/64/match_count"}


def test_structure_emerges_fails_when_the_ablation_spares_nothing_whatever_the_sign_share():
    # SubDiff clearly positive, AblDiff ≈ 0: the raw sign share (0.5) would count chance noise as structure
    result = structure_emerges(_table(abl=0.0, raw=0.5, robust=0.0), P_EMERGE, 1000, 0)
    verdict, (value, lo, hi), d = result.outcome, result.interval, result.details
    assert verdict == "not_supported" and hi < P_EMERGE["margin"]
    assert "margin" in d["reason"]
    # an ablation that hurts the *other* subroutine more (AblDiff > 0) fails as well
    assert structure_emerges(_table(abl=0.2), P_EMERGE, 1000, 0).outcome == "not_supported"
    # a subnetwork that solves the other subroutine better (SubDiff < 0)
    assert structure_emerges(_table(sub=-0.2), P_EMERGE, 1000, 0).outcome == "not_supported"


def test_structure_emerges_is_inconclusive_on_missing_nan_or_all_zero_differences():
    zeros = _table(sub=0.0, abl=0.0, robust=0.0, raw=0.0).assign(sub_diff=0.0, abl_diff=0.0)
    result = structure_emerges(zeros, P_EMERGE, 500, 0)
    verdict, triple, d = result.outcome, result.interval, result.details
    assert verdict == "inconclusive" and math.isnan(triple[0]) and "zero spread" in d["reason"]
    nan = _table().assign(sub_diff=float("nan"))
    result = structure_emerges(nan, P_EMERGE, 500, 0)
    verdict, triple, d = result.outcome, result.interval, result.details
    assert verdict == "inconclusive" and math.isnan(triple[1]) and "sub_diff" in d["reason"]
    missing = _table().drop(columns=["abl_diff"])
    assert structure_emerges(missing, P_EMERGE, 500, 0).outcome == "inconclusive"
    assert structure_emerges(_table().iloc[0:0], P_EMERGE, 500, 0).outcome == "inconclusive"


def test_noisy_effects_straddling_zero_are_inconclusive():
    df = _table(sub=0.3, abl=-0.05)
    df["abl_diff"] = -0.05 + np.tile(np.linspace(-0.3, 0.3, SEEDS), len(df) // SEEDS)
    result = structure_emerges(df, P_EMERGE, 1000, 0)
    verdict, (_, lo, hi), d = result.outcome, result.interval, result.details
    assert d["mean_abl_diff"]["ci_low"] < 0 < d["mean_abl_diff"]["ci_high"] and verdict == "inconclusive"


def test_untrained_networks_thin_cells_and_subroutine_heads_do_not_decide():
    null = _table(abl=0.0, robust=0.0)
    bad = _table(acc=0.6, widths=(256,))  # strong "structure", but the base network never learned the task
    thin = _table(arch="transformer").query("seed < 2")  # 2 base seeds only
    heads = _table(pre=("subroutines",))  # the labelled extra: strong structure
    result = structure_emerges(pd.concat([null, bad, thin, heads]), P_EMERGE, 500, 0)
    verdict, n, d = result.outcome, result.n_trials, result.details
    assert verdict == "not_supported" and n == len(null)
    assert d["n_below_min_base_acc"] == len(bad)
    assert d["extra_subroutine_heads"]["mean_abl_diff"]["value"] == pytest.approx(-0.2)
    none = structure_emerges(null.assign(base_acc_test=0.5), P_EMERGE, 500, 0)
    assert none.outcome == "inconclusive" and "learned" in none.details["reason"]


# ------------------------------------------------------------- contrasts


def test_width_difference_of_the_noise_robust_share_per_stratum_then_averaged():
    robust = {(16, "none"): 0.2, (64, "none"): 0.6, (16, "match_count"): 0.3, (64, "match_count"): 0.5}
    result = structure_grows_with_width(_table(robust=robust), P_DIFF, 1000, 0)
    stat, verdict, (value, lo, hi), n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert value == pytest.approx(0.3) and P_DIFF["margin"] < lo < 0.3 < hi and verdict == "supported"
    assert d["by_stratum"]["mlp/none (width 64 − 16)"]["value"] == pytest.approx(0.4)
    assert d["seeds_per_cell"] == SEEDS and d["raw_sign_share_difference"]["value"] == 0
    flat = structure_grows_with_width(_table(robust=0.5, raw=robust), P_DIFF, 500, 0)
    assert flat.outcome == "not_supported" and flat.interval[0] == pytest.approx(0.0)  # the raw share's growth does not count


def test_pretraining_reliability_is_decided_by_generic_pretraining_not_subroutine_heads():
    robust = {(w, p): {"none": 0.2, "match_count": 0.2, "subroutines": 0.9}[p] for w in (16, 64)
              for p in ("none", "match_count", "subroutines")}
    df = _table(robust=robust, pre=("none", "match_count", "subroutines"))
    result = pretraining_reliability(df, P_DIFF, 500, 0)
    stat, verdict, triple, n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert stat == "share_structural_gain_pretrained_vs_scratch" and verdict == "not_supported"
    assert triple[0] == pytest.approx(0.0)
    assert d["extra_subroutine_heads"]["difference"]["value"] == pytest.approx(0.7)
    assert set(d["by_stratum"]) == {"mlp/16 (match_count − scratch)", "mlp/64 (match_count − scratch)"}
    up = {k: v + 0.5 * (k[1] == "match_count") for k, v in robust.items()}
    assert pretraining_reliability(_table(robust=up, pre=("none", "match_count")), P_DIFF, 500, 0).outcome == "supported"
    only_heads = _table(robust=robust, pre=("none", "subroutines"))
    result = pretraining_reliability(only_heads, P_DIFF, 500, 0)
    verdict, triple, d = result.outcome, result.interval, result.details
    assert verdict == "inconclusive" and math.isnan(triple[0]) and "match_count" in d["reason"]


def test_contrasts_are_inconclusive_on_missing_nan_or_all_zero_shares():
    for rule in (structure_grows_with_width, pretraining_reliability):
        zeros = rule(_table(robust=0.0, robust_spread=0.0), P_DIFF, 500, 0)  # the share's floor
        assert zeros.outcome == "inconclusive" and "floor" in zeros.details["reason"]
        assert rule(_table(robust=float("nan")), P_DIFF, 500, 0).outcome == "inconclusive"
        assert rule(_table().drop(columns=["frac_robust"]), P_DIFF, 500, 0).outcome == "inconclusive"
        assert rule(_table().query("seed < 2"), P_DIFF, 500, 0).outcome == "inconclusive"


# ------------------------------------------------------------- registration


def test_every_claim_has_a_statement_naming_its_source_and_rules_take_their_defaults():
    assert set(STATEMENTS) == set(RULES) == set(DEFAULTS)
    for claim, text in STATEMENTS.items():
        assert "Lepori, Serre, Pavlick (2023)" in text, claim
    assert "Not a claim" in STATEMENTS["structure_grows_with_width"]
    out = compute_verdicts(_table(), {"verdicts": {"structure_emerges": {}, "structure_grows_with_width": None,
                                                   "pretraining_reliability": {"margin": 0.9}}})
    assert [v["claim"] for v in out] == list(RULES)
    assert out[0]["verdict"] == "supported" and "margin 0.1" in out[1]["details"]["reason"]


def test_a_pretrained_trial_without_the_control_shares_its_twins_untrained_network():
    df = _table()
    pre = df["pretraining"] == "match_count"
    df.loc[pre, "untrained_abl_diff"] = float("nan")  # the control ran in the scratch trials only
    df.loc[~pre & (df["width"] == 16) & (df["seed"] == 0), "untrained_abl_diff"] = -1.0
    filled = fill_untrained(df)
    twin = filled[pre & (filled["width"] == 16) & (filled["seed"] == 0)]
    assert twin["untrained_abl_diff"].tolist() == [-1.0]
    assert filled["untrained_abl_diff"].notna().all()


def test_contrasts_without_a_pretraining_column_are_inconclusive():
    for rule in (structure_grows_with_width, pretraining_reliability):
        out = rule(_table().drop(columns=["pretraining"]), P_DIFF, 200, 0)
        assert out.outcome == "inconclusive" and "pretraining" in out.details["reason"]


# ------------------------------------------------------------- review 2: synthetic tables that must not decide


def _seeded_noise(seed: int, sub: float = 0.04, abl: float = -0.04, sd: float = 0.1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = _table()
    return df.assign(sub_diff=sub + rng.normal(0, sd, len(df)), abl_diff=abl + rng.normal(0, sd, len(df)))


def test_structure_that_the_untrained_network_shows_as_well_is_not_supported():
    # The anchor of Lepori, Serre, Pavlick (2023): a random-init network does not pass the ablation test.
    result = structure_emerges(_table(untrained=(0.3, -0.2)), P_EMERGE, 500, 0)
    verdict, (_, lo, hi), d = result.outcome, result.interval, result.details
    assert verdict == "not_supported" and hi < P_EMERGE["margin"] and "untrained" in d["weakest"]
    assert d["beyond_untrained_control"]["value"] == pytest.approx(0.0, abs=1e-12)
    # the same trained effect far beyond an untrained network that shows none: supported
    assert structure_emerges(_table(), P_EMERGE, 500, 0).outcome == "supported"
    # without the random-mask control the anchor cannot be checked: never supported
    no_random = _table().drop(columns=[c for c in _table() if c.startswith("random_")])
    result = structure_emerges(no_random, P_EMERGE, 500, 0)
    verdict, d = result.outcome, result.details
    assert verdict == "inconclusive" and "random mask" in d["reason"]


def test_the_verdict_follows_the_reported_number_and_the_margin():
    # the source's test passes (both means beyond 0 with their intervals) but the effect is below the margin
    tiny = _table(sub=0.002, abl=-0.002).assign(sub_diff=lambda t: 0.002 + t["seed"] * 1e-4 - 3.5e-4,
                                                abl_diff=lambda t: -0.002 - t["seed"] * 1e-4 + 3.5e-4)
    result = structure_emerges(tiny, P_EMERGE, 500, 0)
    verdict, (value, lo, hi), d = result.outcome, result.interval, result.details
    assert d["source_test"]["sub_diff_above_0"] and d["source_test"]["abl_diff_below_0"]
    assert verdict == "not_supported" and hi < P_EMERGE["margin"]
    # supported only with the whole interval of the reported number above the margin; not supported only with
    # it below; the two never overlap (noisy small effects: 40 synthetic studies)
    for s in range(40):
        result = structure_emerges(_seeded_noise(s), P_EMERGE, 500, 0)
        verdict, (value, lo, hi), d = result.outcome, result.interval, result.details
        assert lo <= value <= hi
        assert (verdict == "supported") == (lo > P_EMERGE["margin"]), s
        assert (verdict == "not_supported") == (hi < P_EMERGE["margin"]), s


def test_non_finite_seeds_make_the_verdict_inconclusive_instead_of_being_dropped():
    df = _table()
    contrary = df["seed"] >= 3
    df.loc[contrary, ["sub_diff", "abl_diff"]] = [-0.5, 0.5]
    assert structure_emerges(df, P_EMERGE, 500, 0).outcome == "not_supported"
    for bad in (float("nan"), float("inf")):
        hidden = df.copy()
        hidden.loc[contrary, "sub_diff"] = bad
        result = structure_emerges(hidden, P_EMERGE, 500, 0)
        verdict, triple, d = result.outcome, result.interval, result.details
        assert verdict == "inconclusive" and math.isnan(triple[0]) and d["n_nonfinite"] == int(contrary.sum())
    for rule in (structure_grows_with_width, pretraining_reliability):
        shares = _table()
        shares.loc[shares["seed"] == 0, "frac_robust"] = float("inf")
        out = rule(shares, P_DIFF, 200, 0)
        assert out.outcome == "inconclusive" and out.details["n_nonfinite"] == 4


def test_constant_seeds_or_all_zero_deciding_strata_are_inconclusive():
    constant = _table().assign(sub_diff=0.3, abl_diff=-0.2)
    result = structure_emerges(constant, P_EMERGE, 500, 0)
    verdict, triple, d = result.outcome, result.interval, result.details
    assert verdict == "inconclusive" and math.isnan(triple[0]) and "zero spread" in d["reason"]
    # all-zero deciding strata; a thin (2-seed, not deciding) architecture with nonzero shares beside them
    zeros = _table(robust=0.0, robust_spread=0.0)
    thin = _table(arch="transformer", robust=0.7, widths=(16,)).query("seed < 2")
    for rule in (structure_grows_with_width, pretraining_reliability):
        out = rule(pd.concat([zeros, thin]), P_DIFF, 200, 0)
        assert out.outcome == "inconclusive" and "floor" in out.details["reason"]
        flat = rule(_table(robust_spread=0.0), P_DIFF, 200, 0)  # 0.5 in every seed of every cell
        assert flat.outcome == "inconclusive"


def test_repeated_records_of_a_base_model_count_once():
    once = _table(sub=0.1, abl=-0.1).query("seed < 3").copy()
    once["sub_diff"] = 0.1 + np.tile([-0.2, 0.0, 0.2], len(once) // 3)
    once["abl_diff"] = -0.1 + np.tile([0.2, 0.0, -0.2], len(once) // 3)
    five = pd.concat([once] * 5, ignore_index=True).assign(trial_id=lambda t: range(len(t)))  # re-runs
    a, b = structure_emerges(once, P_EMERGE, 500, 0), structure_emerges(five, P_EMERGE, 500, 0)
    assert a.outcome == b.outcome == "inconclusive" and a.interval == pytest.approx(b.interval)
    assert b.n_trials == len(once) and b.details["n_repeated_records"] == 4 * len(once) and b.details["seeds_per_cell"] == 3
    up = {(w, p): 0.2 + 0.4 * (w == 64) for w in (16, 64) for p in ("none", "match_count")}
    c = structure_grows_with_width(_table(robust=up), P_DIFF, 200, 0)
    d = structure_grows_with_width(pd.concat([_table(robust=up)] * 3), P_DIFF, 200, 0)
    assert c.interval == pytest.approx(d.interval) and d.n_trials == c.n_trials


def test_intervals_are_t_intervals_over_base_seeds():
    from scipy import stats

    from bindscale.verdicts.stats import mean_ci, mean_diff_ci

    one = _table(widths=(16,), pre=("none",))
    rng = np.random.default_rng(0)
    one["sub_diff"] = 0.3 + rng.normal(0, 0.05, len(one))
    d = structure_emerges(one, P_EMERGE, 500, 0).details
    # The t interval (Hall's skewness-corrected form, bindscale.verdicts.stats.mean_ci) of the per-seed values.
    ref = mean_ci(one["sub_diff"])
    assert (d["mean_sub_diff"]["ci_low"], d["mean_sub_diff"]["ci_high"]) == pytest.approx(ref[1:])
    assert ref[1:] == pytest.approx(tuple(stats.ttest_1samp(one["sub_diff"], 0).confidence_interval(0.95)), abs=0.01)
    df = _table(widths=(16, 64), pre=("none",))
    df["frac_robust"] = 0.3 + rng.normal(0, 0.05, len(df)) + 0.3 * (df["width"] == 64)
    out = structure_grows_with_width(df, P_DIFF, 500, 0)
    hi_s, lo_s = (df.loc[df["width"] == w, "frac_robust"] for w in (64, 16))
    ref = mean_diff_ci(hi_s, lo_s)  # Welch's interval, skewness-corrected (bindscale.verdicts.stats)
    assert ref[1:] == pytest.approx(tuple(stats.ttest_ind(hi_s, lo_s, equal_var=False).confidence_interval(0.95)), abs=0.01)
    trained = out.details["trained_difference"]
    assert (trained["ci_low"], trained["ci_high"]) == pytest.approx(ref[1:])
    # the deciding number is the weakest of it and its nets of the controls (here 0): the same low end, a
    # Bonferroni-adjusted high end
    (value, lo, hi) = out.interval
    assert lo == pytest.approx(ref[1]) and hi > ref[2]


def test_a_largest_width_without_usable_trials_makes_the_width_contrast_inconclusive():
    robust = {(w, p): {16: 0.1, 64: 0.5, 256: 0.1}[w] for w in (16, 64, 256) for p in ("none", "match_count")}
    df = _table(widths=(16, 64, 256), robust=robust, robust_spread=5.0)
    assert structure_grows_with_width(df, P_DIFF, 200, 0).outcome == "not_supported"  # 256 − 16: no growth
    df.loc[df["width"] == 256, "base_acc_test"] = 0.9
    result = structure_grows_with_width(df, P_DIFF, 200, 0)
    verdict, triple, d = result.outcome, result.interval, result.details
    assert verdict == "inconclusive" and math.isnan(triple[0]) and "width 256" in d["reason"]


def test_survivors_of_the_accuracy_filter_are_reported_and_a_thinned_side_is_inconclusive():
    up = {(w, p): 0.2 + 0.4 * (p == "match_count") for w in (16, 64) for p in ("none", "match_count")}
    df = _table(robust=up)
    df.loc[(df["pretraining"] == "none") & (df["seed"] < 5), "base_acc_test"] = 0.5  # 3 of 8 survive
    result = pretraining_reliability(df, P_DIFF, 200, 0)
    verdict, d = result.outcome, result.details
    assert d["seeds_learned_per_side"]["mlp/16 (match_count − scratch)"] == {"seeds_run": [8, 8],
                                                                            "seeds_learned": [8, 3]}
    assert "caveat_selection" in d and verdict == "supported"
    thin = _table(robust=up)
    thin.loc[(thin["pretraining"] == "none") & (thin["width"] == 16) & (thin["seed"] < 6), "base_acc_test"] = 0.5
    result = pretraining_reliability(thin, P_DIFF, 200, 0)
    verdict, d = result.outcome, result.details  # 2 of 8 survive at width 16
    assert verdict == "inconclusive" and "mlp/16" in d["reason"]
    cell = _table()
    cell.loc[(cell["width"] == 16) & (cell["pretraining"] == "none") & (cell["seed"] < 6), "base_acc_test"] = 0.5
    result = structure_emerges(cell, P_EMERGE, 200, 0)
    verdict, d = result.outcome, result.details
    assert verdict == "inconclusive" and d["seeds_learned_per_cell"]["mlp/16/none"]["seeds_learned"] == 2
    # tables concatenated without a new index (repeated labels) are matched trial by trial all the same
    halves = [cell.iloc[: len(cell) // 2], cell.iloc[len(cell) // 2:].reset_index(drop=True)]
    assert structure_emerges(pd.concat(halves), P_EMERGE, 200, 0).details["seeds_learned_per_cell"] == \
        d["seeds_learned_per_cell"]


@pytest.mark.parametrize("col", ["base_acc_test", "pretraining", "architecture", "seed", "width"])
def test_a_missing_column_is_inconclusive_and_named(col):
    for claim, rule in RULES.items():
        out = rule(_table().drop(columns=[col]), DEFAULTS[claim], 200, 0)
        assert out.outcome == "inconclusive" and col in out.details["reason"], claim
    out = compute_verdicts(_table().drop(columns=[col]), {"verdicts": dict.fromkeys(RULES)})
    assert {v["verdict"] for v in out} == {"inconclusive"} and all(col in v["details"]["reason"] for v in out)


def test_a_trial_without_its_seed_or_cell_is_not_dropped_silently():
    df = _table()
    df.loc[df["seed"] >= 3, "seed"] = float("nan")  # 5 seeds of 8 cannot be placed
    for claim, rule in RULES.items():
        out = rule(df, DEFAULTS[claim], 200, 0)
        assert out.outcome == "inconclusive" and out.details["n_without_cell_or_seed"] == 20, claim


def test_the_raw_sign_share_is_not_needed_to_decide():
    # frac_structural is reported beside, never deciding: without it the verdicts stand (the old reason
    # "no trial learned the compound task" was wrong)
    out = compute_verdicts(_table().drop(columns=["frac_structural"]), {"verdicts": dict.fromkeys(RULES)})
    assert [v["verdict"] for v in out] == ["supported", "not_supported", "not_supported"]
    assert "share_raw_signs" not in out[0]["details"]


def test_a_largest_width_whose_trials_all_failed_is_named_for_compute_verdicts():
    from bindscale.studies.modularity.verdicts import lost_planned_width

    robust = {(w, p): {16: 0.1, 64: 0.5, 256: 0.1}[w] for w in (16, 64, 256) for p in ("none", "match_count")}
    df = _table(widths=(16, 64, 256), robust=robust, robust_spread=5.0)
    df.loc[df["width"] == 256, "status"] = "error"
    out = compute_verdicts(df, {"verdicts": {"structure_grows_with_width": {}}})[0]
    assert out["details"]["largest_width"] == {"mlp/match_count": 64, "mlp/none": 64}
    # compute_verdicts, which holds the whole table, makes it inconclusive (it said supported at 64 vs 16)
    assert out["verdict"] == "inconclusive" and "width 256 planned, 64 compared" in out["details"]["reason"]
    why = lost_planned_width(df, out["details"])
    assert why is not None and "width 256 planned, 64 compared" in why
    assert lost_planned_width(df[df["status"] == "ok"], out["details"]) is None


# ------------------------------------------------------------- gates, dropped seeds, controls


def test_a_cell_whose_base_networks_did_not_learn_makes_every_claim_inconclusive_naming_its_fit():
    up = {(w, p): 0.2 + 0.4 * (w == 64) + 0.3 * (p == "match_count") for w in (16, 64) for p in ("none", "match_count")}
    df = _table(robust=up)
    assert [v["verdict"] for v in compute_verdicts(df, {"verdicts": dict.fromkeys(RULES)})] == ["supported"] * 3
    low = (df["width"] == 16) & (df["pretraining"] == "none") & (df["seed"] < 3)
    df.loc[low, "base_acc_test"] = 0.6  # 3 of 8 base networks at width 16 from scratch never learned the task
    for v in compute_verdicts(df, {"verdicts": dict.fromkeys(RULES)}):
        assert v["verdict"] == "inconclusive", v["claim"]
        reason = v["details"]["reason"]
        # the gate reads the seeds the accuracy filter kept; the 3 it dropped are lost seeds, named as such
        assert "3 of 8 seeds of the deciding cell" in reason and "below the accuracy filter" in reason, v["claim"]
        assert "width 16, pretraining none" in reason and "did not learn" not in reason
        # the seeds the accuracy filter dropped count against min_seeds (5 of 8 left; 6 needed)
        (lost,) = [c for k, c in v["details"]["lost_seeds_by_cell"].items() if "width 16" in k and "none" in k]
        assert lost["planned"] == 8 and lost["used"] == 5 and lost["needed"] == 6, v["claim"]
    # the study file sets the level: at 0.5 every base network learned, and the claims stand
    out = compute_verdicts(df, {"verdicts": {k: {"min_base_acc": 0.5} for k in RULES}})
    assert [v["verdict"] for v in out] == ["supported"] * 3
    assert all(v["details"]["gates"][0]["level"] == 0.5 for v in out)


def test_one_dropped_seed_counts_but_leaves_enough():
    df = _table()
    df.loc[(df["width"] == 16) & (df["pretraining"] == "none") & (df["seed"] == 0), "base_acc_test"] = 0.9
    (v,) = compute_verdicts(df, {"verdicts": {"structure_emerges": {}}})
    assert v["verdict"] == "supported"  # 7 of 8 learned (6 needed); the cell's mean fit 0.9875 passes the gate
    assert v["details"]["lost_seeds_by_cell"]["architecture mlp, width 16, pretraining none"]["used"] == 7


@pytest.mark.parametrize("control", ["untrained_frac_robust", "random_frac_robust"])
def test_contrasts_whose_control_moves_like_the_trained_share_are_not_supported(control):
    """The untrained-network or random-mask control as structural as the trained networks
    on both sides explains the difference without training."""
    for rule, up in ((structure_grows_with_width,
                      {(w, p): 0.2 + 0.4 * (w == 64) for w in (16, 64) for p in ("none", "match_count")}),
                     (pretraining_reliability,
                      {(w, p): 0.2 + 0.4 * (p == "match_count") for w in (16, 64) for p in ("none", "match_count")})):
        df = _table(robust=up)
        assert rule(df, P_DIFF, 200, 0).outcome == "supported"
        same = df.assign(**{control: df["frac_robust"]})  # the control equals the trained share, seed by seed
        out = rule(same, P_DIFF, 200, 0)
        assert out.outcome == "not_supported", (rule.__name__, out.details["reason"])
        assert out.details["trained_difference"]["value"] == pytest.approx(0.4)
        assert "net of the" in out.details["weakest"] and "0.000" in out.details["reason"]
        # a control at the trained share on the wider / pretrained side only: the trained networks there are no
        # more structural than the control
        hi = (df["width"] == 64) if rule is structure_grows_with_width else (df["pretraining"] == "match_count")
        one = df.copy()
        one.loc[hi, control] = one.loc[hi, "frac_robust"]
        assert rule(one, P_DIFF, 200, 0).outcome == "not_supported"
        # without the control in a deciding base model the difference is never supported
        gone = df.copy()
        gone.loc[gone["seed"] == 0, control] = float("nan")
        gone.loc[gone["seed"] == 0, control.replace("frac_robust", "sub_diff")] = float("nan")
        out = rule(gone, P_DIFF, 200, 0)
        assert out.outcome == "inconclusive" and "control is missing" in out.details["reason"], rule.__name__


def test_reasons_state_the_finding_with_numbers():
    up = {(w, p): 0.2 + 0.4 * (w == 64) for w in (16, 64) for p in ("none", "match_count")}
    reason = structure_grows_with_width(_table(robust=up), P_DIFF, 200, 0).details["reason"]
    assert "width 64 − 16" in reason and "0.400 [" in reason and "margin 0.1" in reason
    reason = structure_emerges(_table(), P_EMERGE, 200, 0).details["reason"]
    assert "−AblDiff" in reason and "0.200 [" in reason and "SubDiff 0.300 [" in reason
    thin = _table()
    thin.loc[(thin["width"] == 16) & (thin["pretraining"] == "none") & (thin["seed"] < 6), "base_acc_test"] = 0.5
    assert "mlp/16/none: 2 of 8 learned the task" in structure_emerges(thin, P_EMERGE, 200, 0).details["reason"]
    assert "mlp/16 (match_count − scratch): 8/2 of 8/8 learned" in \
        pretraining_reliability(thin, P_DIFF, 200, 0).details["reason"]


def test_half_the_base_networks_below_the_gate_decide_nothing_though_their_mean_passes():
    """Per model, not per cell mean: 4 of 8 base networks at width 16 from scratch at 0.92 held-out accuracy, 4 at
    1.0 (mean 0.96, above min_base_acc 0.95): the four that did not learn are left out seed by seed (the rule's
    accuracy filter, then the engine's gate on the seeds kept) and 4 of 8 remain where 6 are needed."""
    up = {(w, p): 0.2 + 0.4 * (w == 64) + 0.3 * (p == "match_count") for w in (16, 64) for p in ("none", "match_count")}
    df = _table(robust=up)
    cell = (df["width"] == 16) & (df["pretraining"] == "none")
    df.loc[cell, "base_acc_test"] = np.where(df.loc[cell, "seed"] < 4, 0.92, 1.0)
    assert df.loc[cell, "base_acc_test"].mean() >= 0.95
    for v in compute_verdicts(df, {"verdicts": dict.fromkeys(RULES)}):
        assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["claim"]
        reason = v["details"]["reason"]
        assert "4 of 8 seeds of the deciding cell" in reason and "4 ok but below the accuracy filter" in reason
        assert "4 remain" in reason, v["claim"]


@pytest.mark.parametrize("rule, params", [(structure_emerges, P_EMERGE), (structure_grows_with_width, P_DIFF),
                                          (pretraining_reliability, P_DIFF)])
def test_a_table_in_percent_units_decides_nothing(rule, params):
    """Range check (review): accuracies and shares entered in percent (and differences of them) are refused,
    where the same table in shares decides."""
    def outcome(df):
        r = rule(df, params, 200, 0)
        return r.outcome if hasattr(r, "outcome") else r[0]

    df = _table(robust={(16, "none"): 0.2, (64, "none"): 0.6, (16, "match_count"): 0.7, (64, "match_count"): 0.9})
    pct = df.copy()
    for c in ("base_acc_test", "sub_diff", "abl_diff", "frac_robust", "frac_structural"):
        pct[c] = pct[c] * 100
    r = rule(pct, params, 200, 0)
    details = r.details if hasattr(r, "details") else r[3]
    assert outcome(pct) == "inconclusive" and "outside [0, 1]" in details["reason"]  # the gate's accuracy first
    assert outcome(df) != "inconclusive"  # the same table in shares decides
