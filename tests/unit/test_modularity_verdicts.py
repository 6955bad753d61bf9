import math

import pandas as pd
import pytest

from bindscale.report.modularity_verdicts import (
    fill_untrained,
    pretraining_reliability,
    structure_emerges,
    structure_grows_with_width,
)
from bindscale.report.verdicts import compute_verdicts

P_EMERGE = {"min_fraction": 0.5, "min_base_acc": 0.95}
P_DIFF = {"margin": 0.1, "min_base_acc": 0.95}

# Per-trial share of runs meeting both criteria, 3 base seeds per (width, pretraining) cell (MLP).
SHARES = {
    (16, "none"): [0.0, 0.5, 0.5],  # mean 1/3
    (64, "none"): [1.0, 1.0, 0.5],  # 5/6
    (16, "subroutines"): [0.5, 0.5, 1.0],  # 2/3
    (64, "subroutines"): [1.0, 1.0, 1.0],  # 1
}


def _table(shares=SHARES, random=0.0, untrained=0.0, arch="mlp", acc=1.0):
    rows = []
    for (width, pre), vals in shares.items():
        for seed, v in enumerate(vals):
            rows.append({"status": "ok", "architecture": arch, "width": width, "depth": 3, "pretraining": pre,
                         "seed": seed, "base_acc_test": acc, "frac_structural": v, "frac_structural_A": v,
                         "frac_structural_B": v, "random_frac_structural": random,
                         "untrained_frac_structural": untrained, "sub_diff": 0.4, "abl_diff": -0.2})
    return pd.DataFrame(rows)


def test_structure_emerges_is_the_mean_over_cells_with_controls_beside_it():
    stat, verdict, (value, lo, hi), n, d = structure_emerges(_table(), P_EMERGE, 1000, 0)
    assert value == pytest.approx((1 / 3 + 5 / 6 + 2 / 3 + 1) / 4)  # 17/24
    assert lo <= value <= hi and n == 12
    assert d["share_subroutine_A"]["value"] == pytest.approx(17 / 24)
    assert d["control_random_mask_share"]["value"] == 0 and d["control_untrained_share"]["value"] == 0
    assert d["gap_to_controls"]["value"] == pytest.approx(17 / 24)
    assert d["share_by_cell"]["mlp/16/none"]["value"] == pytest.approx(1 / 3)
    # a stratified bootstrap: the worst resample takes each cell's lowest seed, (0 + .5 + .5 + 1) / 4
    assert lo >= 0.5 - 1e-12
    low = structure_emerges(_table(), {"min_fraction": 0.2, "min_base_acc": 0.95}, 1000, 0)
    assert low[1] == "supported"


def test_structure_emerges_not_supported_when_nothing_is_structural():
    zeros = {k: [0.0, 0.0, 0.0] for k in SHARES}
    _, verdict, (value, lo, hi), _, d = structure_emerges(_table(zeros), P_EMERGE, 500, 0)
    assert (value, lo, hi) == (0.0, 0.0, 0.0) and verdict == "not_supported"


def test_controls_as_structural_as_the_trained_nets_leave_it_open():
    ones = {k: [1.0, 1.0, 1.0] for k in SHARES}
    assert structure_emerges(_table(ones), P_EMERGE, 500, 0)[1] == "supported"
    # the untrained network passes as often: the test cannot tell structure from chance
    stat, verdict, triple, n, d = structure_emerges(_table(ones, untrained=1.0), P_EMERGE, 500, 0)
    assert verdict == "inconclusive" and d["gap_to_controls"]["value"] == 0.0
    assert "controls" in d["reason"]
    assert structure_emerges(_table(ones, random=1.0), P_EMERGE, 500, 0)[1] == "inconclusive"


def test_untrained_networks_and_thin_cells_are_left_out():
    df = _table()
    bad = df.iloc[:3].assign(base_acc_test=0.6, frac_structural=1.0, width=256)  # never learned the task
    thin = df.iloc[:2].assign(architecture="transformer", frac_structural=1.0)  # 2 base seeds only
    stat, verdict, (value, *_), n, d = structure_emerges(pd.concat([df, bad, thin]), P_EMERGE, 500, 0)
    assert value == pytest.approx(17 / 24) and n == 12 and d["n_below_min_base_acc"] == 3
    none = structure_emerges(df.assign(base_acc_test=0.5), P_EMERGE, 500, 0)
    assert none[1] == "inconclusive" and math.isnan(none[2][0]) and "learned" in none[4]["reason"]


def test_width_difference_per_stratum_then_averaged():
    stat, verdict, (value, lo, hi), n, d = structure_grows_with_width(_table(), P_DIFF, 1000, 0)
    # (5/6 − 1/3) from scratch, (1 − 2/3) pretrained → mean 5/12
    assert value == pytest.approx(5 / 12) and lo <= value <= hi and n == 12
    assert d["by_stratum"]["mlp/none (width 64 − 16)"]["value"] == pytest.approx(0.5)
    assert d["by_stratum"]["mlp/subroutines (width 64 − 16)"]["value"] == pytest.approx(1 / 3)
    assert d["control_untrained_difference"]["value"] == 0.0
    # worst resample: (.5 − .5 + 1 − 1) / 2 = 0 ≤ lo; best: (1 − 0 + 1 − .5) / 2 = .75 ≥ hi
    assert 0.0 <= lo and hi <= 0.75
    assert verdict == ("supported" if lo > 0.1 else "inconclusive")
    flat = {k: [0.5, 0.5, 0.5] for k in SHARES}
    _, verdict, triple, _, d = structure_grows_with_width(_table(flat), P_DIFF, 500, 0)
    assert triple == (0.0, 0.0, 0.0) and verdict == "not_supported"
    clear = {(16, "none"): [0.0, 0.0, 0.0], (64, "none"): [1.0, 1.0, 1.0]}
    assert structure_grows_with_width(_table(clear), P_DIFF, 500, 0)[1:3] == ("supported", (1.0, 1.0, 1.0))


def test_pretraining_difference_per_stratum_then_averaged():
    stat, verdict, (value, lo, hi), n, d = pretraining_reliability(_table(), P_DIFF, 1000, 0)
    # width 16: 2/3 − 1/3; width 64: 1 − 5/6 → mean 1/4
    assert value == pytest.approx(0.25) and lo <= value <= hi
    assert set(d["by_stratum"]) == {"mlp/16 (pretrained − scratch)", "mlp/64 (pretrained − scratch)"}
    zeros = {k: [0.0, 0.0, 0.0] for k in SHARES}
    _, verdict, triple, _, d = pretraining_reliability(_table(zeros), P_DIFF, 500, 0)
    assert verdict == "not_supported" and "nothing to grow" in d["reason"]
    clear = {(16, "none"): [0.0, 0.0, 0.0], (16, "subroutines"): [1.0, 1.0, 1.0]}
    assert pretraining_reliability(_table(clear), P_DIFF, 500, 0)[1] == "supported"


def test_a_side_with_too_few_seeds_or_one_condition_is_inconclusive():
    only_scratch = {k: v for k, v in SHARES.items() if k[1] == "none"}
    _, verdict, triple, n, d = pretraining_reliability(_table(only_scratch), P_DIFF, 500, 0)
    assert verdict == "inconclusive" and math.isnan(triple[0]) and "both pretraining" in d["reason"]
    two_seeds = {k: v[:2] for k, v in SHARES.items()}
    assert structure_grows_with_width(_table(two_seeds), P_DIFF, 500, 0)[1] == "inconclusive"


def test_registered_rules_take_their_defaults():
    df = _table()
    out = compute_verdicts(df, {"verdicts": {"structure_emerges": {}, "structure_grows_with_width": None,
                                             "pretraining_reliability": {"margin": 0.9}}})
    assert [v["claim"] for v in out] == ["structure_emerges", "structure_grows_with_width",
                                         "pretraining_reliability"]
    assert out[0]["value"] == pytest.approx(17 / 24) and out[1]["details"]["reason"].startswith("margin 0.1")
    # the best resample of the pretraining difference is ((1 − 0) + (1 − .5)) / 2 = .75 < .9
    assert out[2]["verdict"] == "not_supported" and out[2]["ci_high"] <= 0.75


def test_a_pretrained_trial_without_the_control_shares_its_twins_untrained_network():
    df = _table(untrained=0.0)
    pre = df["pretraining"] == "subroutines"
    df.loc[pre, "untrained_frac_structural"] = float("nan")  # the control ran in the scratch trials only
    df.loc[~pre & (df["width"] == 16) & (df["seed"] == 0), "untrained_frac_structural"] = 1.0
    filled = fill_untrained(df)
    twin = filled[pre & (filled["width"] == 16) & (filled["seed"] == 0)]
    assert twin["untrained_frac_structural"].tolist() == [1.0]
    assert filled["untrained_frac_structural"].notna().all()
    # the gap to the controls uses the twin's value: mlp/16/subroutines seed 0 has share .5 − 1
    d = structure_emerges(df, P_EMERGE, 500, 0)[4]
    # per trial: share − max(random 0, untrained); only seed 0 at width 16 has an untrained 1
    gaps = {(16, "none"): [0 - 1, .5, .5], (64, "none"): [1, 1, .5], (16, "subroutines"): [.5 - 1, .5, 1],
            (64, "subroutines"): [1, 1, 1]}
    expected = sum(sum(v) / 3 for v in gaps.values()) / 4
    assert d["gap_to_controls"]["value"] == pytest.approx(expected)


def test_the_share_beyond_noise_is_reported_beside_the_sign_criterion():
    df = _table().assign(frac_robust=0.25, random_frac_robust=0.0, noise_tolerance=0.045)
    d = structure_emerges(df, P_EMERGE, 500, 0)[4]
    assert d["share_beyond_noise"]["value"] == 0.25 and d["control_random_share_beyond_noise"]["value"] == 0
    assert "0.045" in d["share_beyond_noise_note"]
