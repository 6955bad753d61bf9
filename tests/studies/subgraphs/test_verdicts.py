"""Verdict rules of the subgraphs study (Dziri et al. 2023, "Faith and Fate") on synthetic results tables."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts
from bindscale.studies.subgraphs.verdicts import correct_steps_seen_in_training, scale_does_not_lift_ood


def _rows(ood_small, ood_large, seen_c, seen_w, acc_id=(0.97, 0.99), gap=None, sizes=(1e5, 1e6), task=None):
    """Two model sizes, one seed per index; ``gap`` defaults to seen_c − seen_w − 0.1."""
    rows = []
    for i, (a, b) in enumerate(zip(ood_small, ood_large)):
        for n_params, ood, id_acc in ((sizes[0], a, acc_id[0]), (sizes[1], b, acc_id[1])):
            # final_loss: every real record carries one (distinct per trained model), so equal metrics at two seeds
            # (EIGHT and JIT repeat values) are not read as a record copied under another seed number
            rows.append({"status": "ok", "n_params": n_params, "n_train": 4000, "scratchpad": True, "acc_id": id_acc,
                         "final_loss": 0.1 + 0.001 * i + 1e-9 * n_params,
                         "acc_ood": ood, "seen_correct": seen_c[i], "seen_wrong": seen_w[i],
                         "seen_gap_depth": seen_c[i] - seen_w[i] - 0.1 if gap is None else gap[i], "seed": i}
                        | ({"task": task} if task else {}))
    return pd.DataFrame(rows)


OOD = {"margin": 0.05, "ood_floor": 0.05, "min_id_acc": 0.95, "min_ood_drop": 0.2}
STEPS = {"margin": 0.05, "min_id_acc": 0.95}
EIGHT = [0.30, 0.31, 0.29, 0.30, 0.32, 0.28, 0.30, 0.31]
JIT = [0.01 * k for k in (0, 1, -1, 2, -2, 1, 0, -1)]  # seed-to-seed spread, mean 0
SEEN_C = [0.6 + j for j in JIT]
SEEN_W = [0.2 - j for j in JIT]  # gap seen_c − seen_w − 0.1 = 0.3 + 2 j: varies across seeds


def _plus(values, d):
    return [v + d for v in values]


def test_scale_does_not_lift_ood_holds_when_ood_accuracy_is_flat_above_the_floor():
    df = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W)
    result = scale_does_not_lift_ood(df, OOD, 500, 0)
    stat, verdict, (value, lo, hi), n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert value == pytest.approx(0.0) and hi < 0.05 and verdict == "supported" and n == 16
    assert details["seeds_per_cell"] == 8 and details["best_ood_cell"] == pytest.approx(0.30125)
    assert details["parts"] == {"no_size_lifts_ood": "supported", "ood_stays_low": "supported"}


def test_scale_does_not_lift_ood_fails_where_scale_lifts_ood_accuracy():
    # The source's claim is false here: the largest model gains 0.4 out of distribution.
    df = _rows([0.1, 0.2, 0.15], [0.5, 0.6, 0.55], SEEN_C, SEEN_W)
    result = scale_does_not_lift_ood(df, OOD, 500, 0)
    stat, verdict, (value, lo, hi), n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert value == pytest.approx(0.4) and lo > 0.05 and verdict == "not_supported" and n == 6
    assert details["seeds_per_cell"] == 3


def test_all_zero_ood_accuracy_is_inconclusive_not_a_confirmation():
    # Before: "not supported" (scale does not help) with interval [0, 0], i.e. Faith and Fate confirmed by default.
    df = _rows([0.0] * 8, [0.0] * 8, SEEN_C, SEEN_W)
    result = scale_does_not_lift_ood(df, OOD, 500, 0)
    stat, verdict, (value, lo, hi), n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "inconclusive" and details["best_ood_cell"] == 0.0
    # Just below the floor everywhere: still inconclusive; lower the floor in the study file and it decides.
    low = _rows(_plus(JIT, 0.04), _plus(JIT[::-1], 0.04), SEEN_C, SEEN_W)
    assert scale_does_not_lift_ood(low, OOD, 500, 0).outcome == "inconclusive"
    assert "floor" in scale_does_not_lift_ood(low, OOD, 500, 0).details["reason"]
    assert scale_does_not_lift_ood(low, {**OOD, "ood_floor": 0.03}, 500, 0).outcome == "supported"


@pytest.mark.parametrize("spoil", ["nan_large", "nan_small", "inf_small", "missing_column", "one_size",
                                   "few_seeds", "one_scratchpad_size"])
def test_scale_does_not_lift_ood_is_inconclusive_on_missing_or_unusable_data(spoil):
    df = _rows(EIGHT, EIGHT, SEEN_C, SEEN_W)
    if spoil == "nan_large":
        df.loc[df.index[df.n_params == 1e6][0], "acc_ood"] = math.nan
    elif spoil == "nan_small":
        df.loc[df.index[df.n_params == 1e5][0], "acc_ood"] = math.nan
    elif spoil == "inf_small":
        df.loc[df.index[df.n_params == 1e5][0], "acc_id"] = math.inf
    elif spoil == "missing_column":
        df = df.drop(columns="acc_ood")
    elif spoil == "one_size":
        df = df[df.n_params == 1e6]
    elif spoil == "few_seeds":
        df = df[df.seed < 2]
    elif spoil == "one_scratchpad_size":  # two sizes, but only one of them with the scratchpad
        df.loc[df.n_params == 1e5, "scratchpad"] = False
    result = scale_does_not_lift_ood(df, OOD, 500, 0)
    stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "inconclusive" and details["reason"] and "seeds_per_cell" in details


# --------------------------------------------- review 2, items 13-17: scale_does_not_lift_ood

def test_high_ood_accuracy_contradicts_the_claim_that_it_stays_low():
    # Item 13. OOD ≈ 0.9 at both sizes, ID 0.99: flat, but not low. Before: supported.
    df = _rows(_plus(EIGHT, 0.6), _plus(EIGHT[::-1], 0.6), SEEN_C, SEEN_W)
    result = scale_does_not_lift_ood(df, OOD, 500, 0)
    stat, verdict, (value, lo, hi), n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "not_supported" and details["parts"]["ood_stays_low"] == "not_supported"
    assert value == pytest.approx(0.99 - 0.90125) and hi < OOD["min_ood_drop"] and stat == "id_minus_ood_acc_largest_model"
    # The same table with a smaller required drop: both parts hold.
    assert scale_does_not_lift_ood(df, {**OOD, "min_ood_drop": 0.05}, 500, 0).outcome == "supported"


def test_statement_and_study_file_say_that_ood_accuracy_stays_low():
    import yaml

    from bindscale.core import registry
    from bindscale.studies.subgraphs.verdicts import STATEMENTS, __file__ as module

    assert "stays low" in STATEMENTS["scale_does_not_lift_ood"] and "no model size" in STATEMENTS["scale_does_not_lift_ood"]
    assert "min_ood_drop" in registry.claim("scale_does_not_lift_ood")[1].thresholds
    study = yaml.safe_load((Path(module).parent / "subgraphs.yaml").read_text())
    assert study["verdicts"]["scale_does_not_lift_ood"]["min_ood_drop"] == 0.2


def test_a_middle_model_size_that_lifts_ood_accuracy_contradicts_the_claim():
    # Item 14. Ends flat at 0.3, the middle size at 0.8. Before: supported (only the ends were compared).
    ends = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W)
    middle = _rows(EIGHT, _plus(EIGHT, 0.5), SEEN_C, SEEN_W, sizes=(1e5, 3e5)).query("n_params == 3e5")
    result = scale_does_not_lift_ood(pd.concat([ends, middle]), OOD, 500, 0)
    stat, verdict, (value, lo, hi), n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "not_supported" and details["deciding_size"] == "300000" and value == pytest.approx(0.5)
    assert set(details["ood_gain_over_smallest"]) == {"300000", "1000000"} and n == 24


def test_tasks_are_decided_separately_never_compared():
    # Item 15. Multiplication: scale lifts OOD 0.3 → 0.8 (1e5 → 1e6); max-subsequence only at 1e7.
    # Before: 1e5 (multiplication) was compared with 1e7 (max-subsequence): gain 0, supported.
    mult = _rows(EIGHT, _plus(EIGHT, 0.5), SEEN_C, SEEN_W, task="multiplication")
    dp = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W, sizes=(1e6, 1e7), task="maxsubseq").query("n_params == 1e7")
    result = scale_does_not_lift_ood(pd.concat([mult, dp]), OOD, 500, 0)
    stat, verdict, (value, lo, hi), n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "not_supported" and details["task_used"] == "multiplication" and value == pytest.approx(0.5)
    assert details["by_task"]["maxsubseq"]["verdict"] == "inconclusive" and stat == "ood_acc_gain_best_size_vs_smallest"
    # Opposite effects in two tasks: pooled they cancelled (before: inconclusive); per task one contradicts.
    up = _rows(_plus(EIGHT, -0.2), _plus(EIGHT, 0.3), SEEN_C, SEEN_W, task="multiplication")
    down = _rows(_plus(EIGHT, 0.3), _plus(EIGHT, -0.2), SEEN_C, SEEN_W, task="maxsubseq")
    assert scale_does_not_lift_ood(pd.concat([up, down]), OOD, 500, 0).outcome == "not_supported"
    # Flat in each task but at different levels and sizes: before, 0.1 (task A, 1e5) vs 0.6 (task B, 1e7) was
    # "scale lifts OOD"; each task on its own is flat, so the claim holds in both.
    a = _rows(_plus(JIT, 0.1), _plus(JIT[::-1], 0.1), SEEN_C, SEEN_W, task="multiplication")
    b = _rows(_plus(JIT, 0.6), _plus(JIT[::-1], 0.6), SEEN_C, SEEN_W, sizes=(1e6, 1e7), task="maxsubseq")
    result = scale_does_not_lift_ood(pd.concat([a, b]), OOD, 500, 0)
    stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and set(details["by_task"]) == {"multiplication", "maxsubseq"}


def test_ood_accuracy_constant_across_seeds_is_inconclusive():
    # Item 16. Before: supported with a zero-width interval.
    for large in ([0.3] * 8, [0.31] * 8):
        result = scale_does_not_lift_ood(_rows([0.3] * 8, large, SEEN_C, SEEN_W), OOD, 500, 0)
        stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
        assert verdict == "inconclusive" and "degenerate" in details["reason"]


def test_seeds_are_counted_and_duplicate_records_averaged():
    # Item 17. Two seeds, seed 0 recorded twice: before, three rows passed as three seeds (supported).
    two = _rows([0.3, 0.32], [0.31, 0.29], SEEN_C, SEEN_W)
    dup = pd.concat([two, two[two.seed == 0]])
    for rule, p in ((scale_does_not_lift_ood, OOD), (correct_steps_seen_in_training, STEPS)):
        result = rule(dup, p, 500, 0)
        stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
        assert verdict == "inconclusive" and details["seeds_per_cell"] == 2
    # Repeated records do not narrow the interval: four copies of three seeds = three seeds.
    three = _rows([0.30, 0.36, 0.24], [0.31, 0.37, 0.25], SEEN_C, SEEN_W)
    once, four = (scale_does_not_lift_ood(d, OOD, 500, 0) for d in (three, pd.concat([three] * 4)))
    assert four.interval == pytest.approx(once.interval) and four.n_trials == once.n_trials == 6
    assert four.details["seeds_per_cell"] == 3
    # No seed column: replicates cannot be told apart (directly and through compute_verdicts).
    no_seed = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W).drop(columns="seed")
    for rule, p in ((scale_does_not_lift_ood, OOD), (correct_steps_seen_in_training, STEPS)):
        assert rule(no_seed, p, 500, 0).outcome == "inconclusive"
    out = compute_verdicts(no_seed, {"verdicts": {"scale_does_not_lift_ood": {}, "correct_steps_seen_in_training": {}}})
    assert [o["verdict"] for o in out] == ["inconclusive", "inconclusive"]


# --------------------------------------------- correct_steps_seen_in_training

def test_correct_steps_seen_in_training_compares_correct_and_wrong_nodes():
    seen_c, seen_w = [0.6, 0.7, 0.65], [0.2, 0.32, 0.25]
    df = _rows([0.1] * 3, [0.2] * 3, seen_c, seen_w)
    result = correct_steps_seen_in_training(df, STEPS, 500, 0)
    stat, verdict, (value, lo, hi), n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    # The deciding number is the depth-matched gap (mean of the two size cells); the raw gap is reported beside it.
    assert value == pytest.approx(np.mean([0.3, 0.28, 0.3])) and verdict == "supported" and n == 6
    assert details["raw_gap_all_depths"]["value"] == pytest.approx(np.mean([0.4, 0.38, 0.4]))
    assert details["seeds_per_cell"] == 3 and details["cells"] == 2
    # The source's claim false: wrong steps are seen as often as correct ones at equal depth.
    same = _rows([0.1] * 3, [0.2] * 3, [0.6, 0.7, 0.65], [0.6, 0.7, 0.65], gap=[0.0, 0.01, -0.01])
    assert correct_steps_seen_in_training(same, STEPS, 500, 0).outcome == "not_supported"


@pytest.mark.parametrize("spoil", ["all_seen", "none_seen", "all_nan", "missing_column", "answer_only"])
def test_correct_steps_seen_in_training_is_inconclusive_without_evidence(spoil):
    df = _rows([0.1] * 4, [0.2] * 4, SEEN_C, SEEN_W)
    if spoil in ("all_seen", "none_seen"):  # seen-ness does not vary: the gap is 0 by construction
        share = 1.0 if spoil == "all_seen" else 0.0
        df[["seen_correct", "seen_wrong", "seen_gap_depth"]] = [share, share, 0.0]
    elif spoil == "all_nan":
        df["seen_gap_depth"] = math.nan
    elif spoil == "missing_column":
        df = df.drop(columns="seen_gap_depth")
    elif spoil == "answer_only":
        df["scratchpad"] = False
    result = correct_steps_seen_in_training(df, STEPS, 500, 0)
    stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "inconclusive" and details["reason"]


@pytest.mark.parametrize("case", ["constant_gap", "all_zero_gap", "nan_share_all_seen", "plus_inf", "minus_inf",
                                  "inf_share"])
def test_correct_steps_bad_or_degenerate_data_is_inconclusive(case):
    # Item 18. Before: supported (constant gap, ±inf gaps dropped and the rest decided) or not supported
    # (all-zero gap; every node seen but one NaN share skipped the "seen-ness does not vary" guard).
    seen_c, seen_w, gap = SEEN_C, SEEN_W, None
    if case == "constant_gap":
        gap = [0.3] * 8
    elif case == "all_zero_gap":
        seen_c, seen_w, gap = [0.5] * 8, [0.5] * 8, [0.0] * 8
    elif case == "nan_share_all_seen":
        seen_c, seen_w, gap = [1.0] * 8, [math.nan] + [1.0] * 7, [0.0] * 8
    elif case in ("plus_inf", "minus_inf"):
        gap = [0.3, 0.31, 0.29] + [math.inf if case == "plus_inf" else -math.inf] * 5
    elif case == "inf_share":
        seen_w = [math.inf] + SEEN_W[1:]
    result = correct_steps_seen_in_training(
        _rows(EIGHT, EIGHT, seen_c, seen_w, gap=gap), STEPS, 500, 0)
    stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "inconclusive" and details["reason"]


def test_trials_without_a_gap_are_left_out_and_counted():
    # A NaN gap (no depth with both correct and wrong nodes) is not bad data: the trial is left out.
    gap = [0.3 + j for j in JIT[:6]] + [math.nan] * 2
    seen_w = SEEN_W[:6] + [math.nan] * 2  # no wrong nodes in those trials
    result = correct_steps_seen_in_training(
        _rows(EIGHT, EIGHT, SEEN_C, seen_w, gap=gap), STEPS, 500, 0)
    stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and details["trials_without_a_gap"] == 4 and details["seeds_per_cell"] == 6


def test_correct_steps_must_mostly_be_seen_ones():
    # Item 19. Seen share of correct steps ≈ 0.08, of wrong steps ≈ 0.01: seen steps help, but correct steps are
    # mostly unseen ones, so "correct steps are mostly seen ones" is false. Before: supported (gap 0.07 > 0.05).
    seen_c = [0.08 + j / 4 for j in JIT]
    seen_w = [0.01] * 8
    gap = [0.07 + 0.002 * i for i in range(8)]
    result = correct_steps_seen_in_training(
        _rows(EIGHT, EIGHT, seen_c, seen_w, gap=gap), STEPS, 500, 0)
    stat, verdict, (value, lo, hi), n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "not_supported" and details["parts"]["correct_mostly_seen"] == "not_supported"
    assert value == pytest.approx(0.08) and hi < 0.5 and stat == "seen_share_correct"
    from bindscale.studies.subgraphs.verdicts import STATEMENTS

    assert "most correct steps are seen ones" in STATEMENTS["correct_steps_seen_in_training"]


@pytest.mark.parametrize("col", ["n_params", "seen_correct", "seen_wrong", "seed"])
def test_missing_columns_are_inconclusive_never_a_crash(col):
    # Item 19. Before: KeyError (seen_correct, seen_wrong) or ValueError on NaN n_params through compute_verdicts.
    df = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W).drop(columns=col)
    assert correct_steps_seen_in_training(df, STEPS, 500, 0).outcome == "inconclusive"
    out = compute_verdicts(df, {"verdicts": {"scale_does_not_lift_ood": {}, "correct_steps_seen_in_training": {}}})
    assert out[1]["verdict"] == "inconclusive"
    if col in ("n_params", "seed"):
        assert out[0]["verdict"] == "inconclusive"


@pytest.mark.parametrize("value, scratchpad_trials", [(math.nan, False), ("False", False), ("false", False),
                                                      ("no", False), ("True", True), (1, True), (1.0, True)])
def test_the_scratchpad_flag_is_read_robustly(value, scratchpad_trials):
    # Item 19. Before: NaN and the string "False" were truthy, so answer-only trials counted as scratchpad ones.
    df = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W)
    df["scratchpad"] = value
    result = correct_steps_seen_in_training(df, STEPS, 500, 0)
    stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert (verdict == "supported") == scratchpad_trials
    if not scratchpad_trials:
        assert "scratchpad" in details["reason"]


def test_subgraph_claims_are_named_after_the_source_with_statements_and_params():
    import yaml

    from bindscale.core import registry
    from bindscale.core.study import resolve
    from bindscale.studies.subgraphs import verdicts as sv

    assert set(sv.STATEMENTS) == set(sv.RULES) == set(sv.DEFAULTS)
    assert all("Dziri et al. 2023" in text for text in sv.STATEMENTS.values())
    for claim, params in sv.DEFAULTS.items():
        plugin, c = registry.claim(claim)
        assert plugin.name == "subgraphs" and resolve(c.rule) is sv.RULES[claim] and dict(c.defaults) == params
        assert set(c.thresholds) == set(params)
    for old in ("ood_scaling", "seen_subgraphs"):  # renamed: the old names are aliases, not claims
        with pytest.raises(KeyError):
            registry.claim(old)
    study = yaml.safe_load((Path(sv.__file__).parent / "subgraphs.yaml").read_text())
    assert list(study["verdicts"]) == list(sv.RULES) and set(study["anchors"]) == set(sv.RULES)


def test_trials_without_a_task_name_are_not_pooled_with_a_named_task():
    # Item 15. A NaN task could be any task: with one named task, such trials were pooled into its cells.
    named = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W, task="maxsubseq")
    unnamed = _rows(EIGHT, _plus(EIGHT, 0.5), SEEN_C, SEEN_W, sizes=(1e5, 3e5)).query("n_params == 3e5")
    unnamed = unnamed.assign(task=math.nan)
    result = scale_does_not_lift_ood(pd.concat([named, unnamed]), OOD, 500, 0)
    stat, verdict, triple, n, details = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and details["trials_without_a_task"] == 8 and details["task_used"] == "maxsubseq"


# --------------------------------------------- competence gates and reasons in numbers

BOTH = {"verdicts": {"scale_does_not_lift_ood": {}, "correct_steps_seen_in_training": {}}}


def test_both_claims_are_gated_on_in_distribution_exact_match_at_095():
    import yaml

    from bindscale.core import registry
    from bindscale.studies.subgraphs.verdicts import __file__ as module

    study = yaml.safe_load((Path(module).parent / "subgraphs.yaml").read_text())
    for name in BOTH["verdicts"]:
        c = registry.claim(name)[1]
        (gate,) = c.gates
        assert gate.metric == "acc_id" and gate.threshold == "min_id_acc" and "Dziri et al. 2023" in gate.source
        assert c.defaults["min_id_acc"] == study["verdicts"][name]["min_id_acc"] == 0.95


@pytest.mark.parametrize("small, large", [(0.2, 0.99), (0.9, 0.99), (0.99, 0.2)])
def test_a_size_that_did_not_learn_in_distribution_makes_both_claims_inconclusive(small, large):
    """Every size is gated, not only the largest (the old 0.5 check read the largest only, so a
    smallest model at 0.2 or 0.9 in distribution decided "no gain over the smallest")."""
    df = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W, acc_id=(small, large))
    for v in compute_verdicts(df, BOTH):
        assert v["verdict"] == "inconclusive", v["claim"]
        missed = "100000" if small < 0.95 else "1000000"
        assert f"n_train 4000, n_params {missed}" in v["details"]["reason"] or \
            f"n_params {missed}" in v["details"]["reason"]
        assert f"in-distribution exact match (problem sizes up to the training maximum) {min(small, large):g} < 0.95" \
            in v["details"]["reason"]
    learned = compute_verdicts(_rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W), BOTH)
    assert [v["verdict"] for v in learned] == ["supported", "supported"]


def test_every_tasks_cells_are_gated():
    """The claim holds only when it holds in every task: an unlearned second task stops it."""
    a = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W, task="maxsubseq")
    b = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W, task="multiplication", acc_id=(0.4, 0.5))
    v = compute_verdicts(pd.concat([a, b]), {"verdicts": {"scale_does_not_lift_ood": {}}})[0]
    assert v["verdict"] == "inconclusive" and "task multiplication" in v["details"]["reason"]
    assert len(v["details"]["gates"][0]["cells"]) == 4


def test_the_answer_only_control_of_the_same_shape_is_not_in_the_gated_cell():
    df = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W).assign(layers=2)
    df["d_model"] = np.where(df.n_params == 1e5, 32, 64)
    control = df[df.n_params == 1e6].assign(scratchpad=False, acc_id=0.1)  # the answer-only control learns little
    v = compute_verdicts(pd.concat([df, control]), BOTH)
    assert [x["verdict"] for x in v] == ["supported", "supported"], [x["details"]["reason"] for x in v]
    assert all("scratchpad True" in k for k in v[0]["details"]["gates"][0]["cells"])


def test_reasons_state_the_findings_in_numbers():
    """A reason states the numbers found, not the rule restated."""
    d = scale_does_not_lift_ood(_rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W), OOD, 500, 0).details
    assert d["reason"].startswith("OOD exact match by size 100,000: 0.301, 1,000,000: 0.301 (in distribution 0.970, "
                                  "0.990); the largest gain over the smallest, at 1,000,000 parameters, +0.000 [")
    assert "against the margin 0.05 (holds)" in d["reason"] and "the largest model's ID − OOD 0.689" in d["reason"]
    d = correct_steps_seen_in_training(_rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W), STEPS, 500, 0).details
    assert d["reason"].startswith("over 2 cells (16 seeds): correct steps' whole computation seen in training 0.600 [")
    assert "(wrong steps 0.200) against 0.5 (holds); at equal depth correct minus wrong +0.300 [" in d["reason"]


# ----------------------------------------------------------- competence gates per model, not per cell mean --

LARGE = "n_train 4000, scratchpad True, n_params 1000000"


def _large_fits(per_seed):
    df = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W)
    m = df.n_params == 1e6
    df.loc[m, "acc_id"] = [per_seed[s] for s in df.loc[m, "seed"]]
    return df


def test_half_the_largest_models_below_the_gate_decide_nothing_though_their_mean_passes():
    """4 of 8 largest models at 0.92 in distribution, 4 at 0.99: the mean 0.955 passed the old gate of the cell's
    mean; per model, four did not learn, 4 of 8 remain where 6 are needed: both claims inconclusive."""
    df = _large_fits([0.92] * 4 + [0.99] * 4)
    for v in compute_verdicts(df, BOTH):
        d = v["details"]
        assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["claim"]
        assert f"4 of 8 seeds of the deciding cell ({LARGE})" in d["reason"] and "4 remain" in d["reason"]
        assert "4 missed a competence gate" in d["reason"]
        assert d["lost_to_gates_by_cell"][LARGE] == {"lost": 4, "planned_ok": 8, "by_gate": {"acc_id": 4}}


def test_one_largest_model_below_the_gate_is_left_out_and_both_claims_still_decided():
    df = _large_fits([0.3] + [0.99] * 7)
    for v in compute_verdicts(df, BOTH):
        assert v["verdict"] == "supported", (v["claim"], v["details"]["reason"])
        assert v["details"]["lost_seeds_by_cell"][LARGE]["statuses"] == {"missed a competence gate": 1}


def test_a_smallest_model_at_the_ood_ceiling_leaves_no_room_for_a_gain():
    """The smallest model already solves the OOD split (0.97): no size can gain the margin 0.05 over it, so a flat
    curve is the ceiling's, not evidence that scale does not lift OOD accuracy: inconclusive."""
    high = [0.97, 0.98, 0.96, 0.97, 0.97, 0.98, 0.96, 0.97]
    v = scale_does_not_lift_ood(_rows(high, high[::-1], SEEN_C, SEEN_W, acc_id=(0.99, 0.99)), OOD, 500, 0)
    assert v.outcome == "inconclusive" and "no model could exceed it by the margin" in v.details["reason"]


# ------------------------------------- what a "not supported" of correct_steps_seen_in_training says, and how

STEPS_CLAIM = "correct_steps_seen_in_training"
#: A depth-matched gap of about zero (seed-to-seed spread, mean 0): at equal depth wrong steps are seen as often
#: as correct ones, while correct steps are still mostly seen ones (0.6) and the raw gap is large (0.4).
NO_GAP = [0.5 * j for j in JIT]


def _answer_sides(tmp_path, verdicts):
    """The answer page's synthesis of ``verdicts`` (from :func:`compute_verdicts`) as a firm run of the shipped
    subgraphs study: its sides' tallies."""
    import json

    import yaml

    from bindscale.core.studyfile import resolve_study
    from bindscale.report.answer import build_answer

    run = tmp_path / "subgraphs"
    run.mkdir()
    (run / "study.yaml").write_text(yaml.safe_dump(resolve_study("subgraphs").model_dump(mode="json"),
                                                   sort_keys=False))
    (run / "summary.json").write_text(json.dumps({
        "study": "subgraphs", "verdicts": verdicts, "n_trials": 32, "n_ok": 32, "n_failed": 0, "n_diverged": 0,
        "quick": False, "n_planned": 32, "n_missing": 0}, default=float))
    data = build_answer(tmp_path)
    (row,) = [c for c in data["claims"] if c["claim"] == STEPS_CLAIM]
    assert row["firm"], row["run_status"]
    return data["synthesis"]["sides"]["where_scale_stops"]


@pytest.mark.parametrize("case", ["no_gap_at_equal_depth", "mostly_unseen"])
def test_a_false_steps_claim_reads_not_supported_and_counts_as_a_missed_level(tmp_path, case):
    """Two tables where the source's claim is false: at equal depth correct steps are no more often seen than wrong
    ones (while most correct steps are seen ones: that part is met), or most correct steps are unseen (while the
    gap at equal depth is met). The verdict is "not supported"; the met part is never worded as holding; the
    answer's synthesis does not count it against "where scale stops" (the rule compares no sizes: the source's
    mechanism is missing, which is no evidence that scale goes further)."""
    if case == "no_gap_at_equal_depth":
        df = _rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W, gap=NO_GAP)
        met, contradicted = "against 0.5 (met on its own, but the claim needs both parts)", "margin 0.05 (contradicted)"
        says = "not supported: at equal depth correct steps are not seen in training more often than wrong steps"
    else:
        df = _rows(EIGHT, EIGHT[::-1], _plus(SEEN_C, -0.3), _plus(SEEN_W, -0.15))  # gap 0.3 + 2j, share 0.3
        met, contradicted = "margin 0.05 (met on its own, but the claim needs both parts)", "against 0.5 (contradicted)"
        says = "not supported: most correct steps are not ones seen in training"
    (v,) = compute_verdicts(df, {"verdicts": {STEPS_CLAIM: {}}})
    reason = v["details"]["reason"]
    assert v["verdict"] == "not_supported", reason
    assert met in reason and contradicted in reason and says in reason
    assert "(holds)" not in reason
    sides = _answer_sides(tmp_path, [v])
    assert sides["missed_level"] == [STEPS_CLAIM] and sides["against"] == [] and sides["for"] == []
    assert sides["state"] == "open"


def test_a_supported_steps_claim_reads_holds_and_counts_for_where_scale_stops(tmp_path):
    """The source's claim holds (correct steps mostly seen ones, and more often than wrong ones at equal depth):
    both parts hold, the reason says so and no more, and the synthesis counts it for "where scale stops"."""
    (v,) = compute_verdicts(_rows(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W), {"verdicts": {STEPS_CLAIM: {}}})
    reason = v["details"]["reason"]
    assert v["verdict"] == "supported", reason
    assert "against 0.5 (holds)" in reason and "margin 0.05 (holds)" in reason
    assert "not supported" not in reason and "met on its own" not in reason
    sides = _answer_sides(tmp_path, [v])
    assert sides["for"] == [STEPS_CLAIM] and sides["against"] == [] and sides["missed_level"] == []


def test_a_met_part_of_the_scale_claim_is_not_worded_as_holding_when_the_claim_fails():
    """scale_does_not_lift_ood: where a larger model lifts OOD accuracy the claim is not supported; its other part
    (OOD stays low) is met, and the reason says it is met on its own, not that it holds."""
    reason = scale_does_not_lift_ood(_rows(EIGHT, _plus(EIGHT, 0.3), SEEN_C, SEEN_W), OOD, 500, 0).details["reason"]
    assert "(contradicted)" in reason and "0.2 (met on its own, but the claim needs both parts)" in reason
    assert "(holds)" not in reason
