"""Verdict rules of the depth study on synthetic tables: true, false, missing, NaN, all zero."""

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.core import registry
from bindscale.core.study import resolve
from bindscale.models.shapes import shape_for_budget
from bindscale.studies.depth import verdicts as V

DEPTH = {"margin": 0.0, "min_id_acc": 0.95}
SCALE = {"threshold": 0.5, "min_id_acc": 0.95}


def _rows(cells, seeds=8, id_acc=0.99, noise=0.03, pos="rope"):
    """cells: {(split, budget, layers): mean test accuracy}; one row per seed, 2 heads, each with the non-embedding
    count its shape has (``shape_for_budget``, which the rules check records against)."""
    rng = np.random.default_rng(0)
    out = []
    for (split, budget, layers), acc in cells.items():
        params = shape_for_budget(budget, layers, 2).n_params
        for s in range(seeds):
            out.append({"status": "ok", "trial_id": f"{split}-{budget}-{layers}-{s}-{pos}", "split": split,
                        "budget": budget, "layers": layers, "pos": pos, "seed": s,
                        "n_params_nonembed": params, "n_params": params + 1000 * layers,
                        "acc_test": float(np.clip(acc + noise * rng.standard_normal(), 0, 1)),
                        "acc_id": float(np.clip(id_acc + noise * rng.standard_normal(), 0, 1))})
    return pd.DataFrame(out)


def _families(deep_gain_length, deep_gain_jump, base=0.3):
    cells = {}
    for b in (25_000, 100_000):
        for L in (1, 2, 4, 8):
            cells[("length", b, L)] = base + deep_gain_length * math.log2(L) / 3
    for L in (1, 2, 4, 8):
        cells[("addprim_jump", 100_000, L)] = base + deep_gain_jump * math.log2(L) / 3
    cells[("simple", 100_000, 2)] = 0.95
    return cells


def depth(df, th=DEPTH):
    return V.deeper_composes_better_at_equal_params(V.prepare_rows(df), th)


def scale(df, th=SCALE):
    return V.seq2seq_fails_scan_splits(V.prepare_rows(df), th)


def test_depth_supported_when_deeper_wins_on_every_split():
    result = depth(_rows(_families(0.6, 0.5, base=0.2)))
    stat, verdict, (v, lo, hi), n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and lo > 0
    assert d["split_used"] == "addprim_jump" and v == pytest.approx(0.5, abs=0.05)  # the weaker split decides
    assert set(d["by_split"]) == {"length", "addprim_jump"}  # simple is not a generalization split
    assert d["seeds_per_cell"] == 8


def test_depth_not_supported_when_shallower_wins_on_one_split():
    result = depth(_rows(_families(0.2, -0.6, base=0.7)))
    verdict, (v, lo, hi), d = result.outcome, result.interval, result.details
    assert verdict == "not_supported" and d["split_used"] == "addprim_jump" and hi < 0


def test_depth_flat_is_not_supported_with_a_positive_margin_and_inconclusive_at_zero():
    df = _rows(_families(0.0, 0.0))
    # The bounded interval allows for unseen successful seeds: +-0.2 around a flat 0 at 8 seeds.
    assert depth(df, {"margin": 0.3, "min_id_acc": 0.5}).outcome == "not_supported"
    assert depth(df, {"margin": 0.1, "min_id_acc": 0.5}).outcome == "inconclusive"
    assert depth(df).outcome == "inconclusive"


def _engine(df, claim, **th):
    from bindscale.verdicts.engine import compute_verdicts

    return compute_verdicts(df, {"verdicts": {claim: th}})[0]


@pytest.mark.parametrize("id_acc", [0.2, 0.6])
def test_depth_inconclusive_when_models_did_not_learn_the_training_distribution(id_acc):
    """The gate is 0.95 (Lake & Baroni), checked by the engine on every deciding cell; a
    depth claim read off models at 0.6 in distribution (which passed the old 0.5 gate) is inconclusive."""
    df = _rows(_families(0.6, 0.5, base=0.2), id_acc=id_acc)
    assert depth(df).outcome == "supported"  # the rule answers; the engine's gate decides whether it stands
    out = _engine(df, "deeper_composes_better_at_equal_params")
    assert out["verdict"] == "inconclusive" and math.isnan(out["value"])
    # Gates per model: every seed of the six planned members misses, so each is named with its lost seeds.
    assert ("split length, budget 25000, layers 1, pos rope: no seed passed (8 missed it; in-distribution exact "
            "match") in out["details"]["reason"]
    assert "8 missed a competence gate" in out["details"]["reason"]
    (gate,) = out["details"]["gates"]
    assert gate["level"] == 0.95 and "Lake & Baroni" in gate["source"]
    planned = [f"split {s}, budget {b}, layers {L}, pos rope" for s, b in
               (("length", 25000), ("length", 100000), ("addprim_jump", 100000)) for L in (8, 1)]
    assert set(planned) <= set(gate["missed"]) and set(out["details"]["lost_to_gates_by_cell"]) == set(planned)
    assert all(abs(gate["cells_every_seed"][c] - id_acc) < 0.03 for c in planned)
    # The rule's second pass read the surviving depths 4 and 2, which did not learn either: never a verdict.
    assert set(gate["missed"]) == set(gate["cells"])


def test_depth_gate_names_the_one_family_member_that_did_not_learn():
    """Every deciding cell is gated, not a pool: depth 1 at 100k on the length split at 0.33 (the default
    budget's measured fit) makes the claim inconclusive, and only that cell is named."""
    df = _rows(_families(0.6, 0.5, base=0.2))
    m = (df["split"] == "length") & (df["budget"] == 100_000) & (df["layers"] == 1)
    df.loc[m, "acc_id"] = 0.33
    out = _engine(df, "deeper_composes_better_at_equal_params")
    reason = out["details"]["reason"]
    assert out["verdict"] == "inconclusive"
    assert ("split length, budget 100000, layers 1, pos rope: no seed passed (8 missed it; in-distribution exact "
            "match") in reason
    assert "0.33 < 0.95 over them" in reason and "layers 8" not in reason.split("(its own result")[0]
    # The rule's second pass substituted depth 2 for the member that did not learn: said after the gate, never
    # decided on.
    assert reason.index("no seed passed") < reason.index("compared depth 8 with 2, planned 8 with 1")
    assert out["details"]["lost_seeds_by_cell"]["split length, budget 100000, layers 1, pos rope"]["statuses"] == \
        {"missed a competence gate": 8}
    assert _engine(_rows(_families(0.6, 0.5, base=0.2)), "deeper_composes_better_at_equal_params")["verdict"] == "supported"


def test_depth_reasons_state_the_findings_in_numbers():
    """The reason gives each split's difference and each family's two members."""
    sup = depth(_rows(_families(0.6, 0.5, base=0.2), noise=0.001))
    assert sup.outcome == "supported", sup.details
    reason = sup.details["reason"]
    assert "split addprim_jump, deepest − shallowest test exact match: budget 100000 +0.500 [" in reason
    assert "(depth 8 0.699 vs depth 1 0.200)" in reason  # add-jump: 0.2 + 0.5
    assert "budget 25000 +0.601 [+0.188, +0.773] (depth 8 0.800 vs depth 1 0.200)" in reason  # length
    assert "(97.5% intervals, Bonferroni over 2 families)" in reason  # length's two families, not add-jump's one
    con = depth(_rows(_families(0.2, -0.6, base=0.7)))
    assert con.outcome == "not_supported" and "split addprim_jump, deepest − shallowest" in con.details["reason"]
    assert "other splits: split length" in con.details["reason"]
    sc = scale(_sweep(0.15, 0.02, noise=0.0001))
    assert sc.outcome == "supported"
    assert "at the largest budget (200000) every depth fails both splits" in sc.details["reason"]
    assert "length: depth 2 0.150 [0.021, 0.419] over 8 seeds (in-distribution 0.990)" in sc.details["reason"]
    solved = scale(_sweep(0.15, 0.9))
    assert "the depth-2 model solves the addprim_jump split" in solved.details["reason"]


@pytest.mark.parametrize("breakage", ["all_zero", "nan", "missing_column", "empty", "few_seeds", "copied"])
def test_depth_inconclusive_on_broken_tables(breakage):
    df = _rows(_families(0.6, 0.5, base=0.2))
    if breakage == "all_zero":
        df["acc_test"] = 0.0
    elif breakage == "nan":
        df.loc[df["layers"] == 8, "acc_test"] = np.nan
    elif breakage == "missing_column":
        df = df.drop(columns=["acc_test"])
    elif breakage == "empty":
        df = df.iloc[0:0]
    elif breakage == "few_seeds":
        df = df[df["seed"] < 2]
    elif breakage == "copied":
        df["acc_test"] = df.groupby(["split", "budget", "layers"])["acc_test"].transform("first")
    assert depth(df).outcome == "inconclusive", breakage


def test_depth_uses_rotary_rows_and_failed_trials_do_not_count():
    good = _rows(_families(0.6, 0.5, base=0.2))
    learned = _rows(_families(-0.6, -0.6, base=0.7), pos="learned")
    assert depth(pd.concat([good, learned])).outcome == "supported"
    failed = good.copy()
    failed["status"] = "failed"
    assert depth(failed).outcome == "inconclusive"


def _sweep(acc_length, acc_jump, id_acc=0.99, seeds=8, noise=0.02):
    cells = {("length", b, 2): acc_length * b / 200_000 for b in (25_000, 100_000, 200_000)}
    cells |= {("addprim_jump", b, 2): acc_jump * b / 200_000 for b in (25_000, 100_000, 200_000)}
    cells[("length", 100_000, 8)] = 0.99  # another depth at a smaller budget: not the largest model
    return _rows(cells, seeds=seeds, id_acc=id_acc, noise=noise)


def test_scale_claim_supported_when_the_largest_model_fails_both_splits():
    result = scale(_sweep(0.15, 0.02))
    stat, verdict, (v, lo, hi), n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and hi < 0.5 and d["budget_used"] == 200_000 and d["layers_used"] == 2
    assert d["split_used"] == "length"  # nearest to being solved
    assert n == 16


def test_scale_claim_not_supported_when_scale_solves_a_split():
    result = scale(_sweep(0.15, 0.9))
    verdict, (v, lo, hi), d = result.outcome, result.interval, result.details
    assert verdict == "not_supported" and d["split_used"] == "addprim_jump" and lo > 0.5


def test_scale_claim_all_zero_test_accuracy_with_learned_training_distribution_is_a_verdict():
    df = _sweep(0.0, 0.0, noise=0.0)
    df["acc_id"] = 0.8 + 0.02 * (df["seed"] % 4)  # varies across seeds: a real measurement
    assert scale(df).outcome == "supported"


@pytest.mark.parametrize("breakage", ["all_zero", "nan", "missing_column", "no_split", "few_seeds", "copied"])
def test_scale_claim_inconclusive_on_broken_tables(breakage):
    df = _sweep(0.15, 0.02)
    if breakage == "all_zero":
        df[["acc_test", "acc_id"]] = 0.0
    elif breakage == "nan":
        df.loc[df["budget"] == 200_000, "acc_test"] = np.nan
    elif breakage == "missing_column":
        df = df.drop(columns=["acc_id"])
    elif breakage == "no_split":
        df = df.assign(split="simple")
    elif breakage == "few_seeds":
        df = df[df["seed"] < 2]
    elif breakage == "copied":
        df["acc_test"] = 0.1
        df["acc_id"] = 0.9
    assert scale(df).outcome == "inconclusive", breakage


def test_scale_claim_inconclusive_when_the_interval_straddles_the_threshold():
    df = _sweep(0.5, 0.0, noise=0.2)
    assert scale(df).outcome == "inconclusive"


def test_claims_resolve_and_run_through_the_engine():
    from bindscale.verdicts.engine import compute_verdicts

    df = pd.concat([_rows(_families(0.6, 0.5, base=0.2)), _sweep(0.15, 0.02).assign(trial_id=lambda d: "s" + d["trial_id"])])
    out = compute_verdicts(df, {"verdicts": {"deeper_composes_better_at_equal_params": {},
                                             "seq2seq_fails_scan_splits": {}}})
    assert [v["claim"] for v in out] == ["deeper_composes_better_at_equal_params", "seq2seq_fails_scan_splits"]
    assert all(callable(resolve(c.rule)) for c in registry.get("depth").claims)  # rules by convention


def test_scale_claim_inconclusive_when_the_largest_planned_model_failed():
    from bindscale.verdicts.engine import compute_verdicts

    df = _sweep(0.15, 0.02, id_acc=0.97)  # above the default gate min_id_acc=0.95
    df.loc[df["budget"] == 200_000, "status"] = "failed"
    out = compute_verdicts(df, {"verdicts": {"seq2seq_fails_scan_splits": {}}})[0]
    assert out["verdict"] == "inconclusive" and "largest planned budget" in out["details"]["reason"]
    full = _sweep(0.15, 0.02, id_acc=0.97)
    assert compute_verdicts(full, {"verdicts": {"seq2seq_fails_scan_splits": {}}})[0]["verdict"] == "supported"


@pytest.mark.parametrize("deep_zero, expected", [(False, "supported"), (True, "not_supported")])
def test_depth_one_all_zero_cell_is_a_measurement_not_degenerate(deep_zero, expected):
    """Review item 2: a family member scoring 0.0 in every seed (SCAN's usual outcome) still decides."""
    # The member that does not score 0 stands well clear of it: the deep one at 0.8 (shallow zero), the shallow
    # one at 0.8 (deep zero; the length split then reads deeper worse as well).
    df = _rows(_families(-0.6, -0.6, base=0.8) if deep_zero else _families(0.6, 0.6, base=0.2))
    m = (df["split"] == "addprim_jump") & (df["layers"] == (8 if deep_zero else 1))
    df.loc[m, "acc_test"] = 0.0
    assert depth(df).outcome == expected


def test_scale_claim_test_zero_and_training_distribution_solved_in_every_seed_is_supported():
    """Review item 3: test 0.0 with in-distribution 1.0 in every seed (Lake & Baroni's outcome) decides."""
    df = _sweep(0.15, 0.02)
    df["acc_test"], df["acc_id"] = 0.0, 1.0
    result = scale(df)
    verdict, (v, lo, hi), d = result.outcome, result.interval, result.details
    # The bounded interval of eight zeros (one pseudo-seed at 0 and one at 1): [0, 0.1 + t_9 · 0.1].
    assert verdict == "supported" and v == 0.0 and lo == 0.0 and hi == pytest.approx(0.1 + 0.1 * 2.2621572, abs=1e-6)
    df["acc_test"] = 1.0  # one value everywhere stays degenerate
    assert scale(df).outcome == "inconclusive"


@pytest.mark.parametrize("drop", ["jump_at_largest_failed", "jump_missing", "length_missing"])
def test_scale_claim_needs_both_splits_at_the_largest_model(drop):
    """Review item 4: the claim is 'fails both'; one split alone never decides it."""
    from bindscale.verdicts.engine import compute_verdicts

    df = _sweep(0.15, 0.02)
    if drop == "jump_at_largest_failed":
        df.loc[(df["split"] == "addprim_jump") & (df["budget"] == 200_000), "status"] = "failed"
    elif drop == "jump_missing":
        df = df[df["split"] != "addprim_jump"]
    else:
        df = df[df["split"] != "length"]
    result = scale(df)
    verdict, d = result.outcome, result.details
    assert verdict == "inconclusive" and "claim is about both splits" in d["reason"]
    out = compute_verdicts(df, {"verdicts": {"seq2seq_fails_scan_splits": {}}})[0]
    assert out["verdict"] == "inconclusive"


@pytest.mark.parametrize("fail", ["depth8_everywhere", "depth8_at_25k", "split_jump", "shallow_at_100k"])
def test_depth_claim_inconclusive_when_a_planned_family_member_failed(fail):
    """Review item 5: no silent substitution of the surviving depths, budgets or splits."""
    from bindscale.verdicts.engine import compute_verdicts

    df = _rows(_families(0.6, 0.5, base=0.2))
    m = {"depth8_everywhere": df["layers"] == 8,
         "depth8_at_25k": (df["layers"] == 8) & (df["budget"] == 25_000),
         "split_jump": df["split"] == "addprim_jump",
         "shallow_at_100k": (df["layers"] == 1) & (df["budget"] == 100_000) & (df["split"] == "length")}[fail]
    df.loc[m, "status"] = "failed"
    assert depth(df).outcome == "supported"  # the rule alone answers on what survived
    out = compute_verdicts(df, {"verdicts": {"deeper_composes_better_at_equal_params": {}}})[0]
    assert out["verdict"] == "inconclusive" and "planned family member" in out["details"]["reason"], fail
    full = compute_verdicts(_rows(_families(0.6, 0.5, base=0.2)), {"verdicts": {"deeper_composes_better_at_equal_params": {}}})
    assert full[0]["verdict"] == "supported"


def test_scale_claim_gate_is_095_and_says_the_models_did_not_learn_their_training_distribution():
    """Review item 1: at acc_id ~0.6 the scale claim is inconclusive by default (was supported at 0.5)."""
    import yaml

    from bindscale.verdicts.engine import compute_verdicts

    claim = {c.name: c for c in V.CLAIMS}["seq2seq_fails_scan_splits"]
    from bindscale.studies.depth import STUDY

    shipped = yaml.safe_load((STUDY.directory / "depth.yaml").read_text())
    assert claim.defaults["min_id_acc"] == 0.95 == shipped["verdicts"]["seq2seq_fails_scan_splits"]["min_id_acc"]
    out = compute_verdicts(_sweep(0.15, 0.02, id_acc=0.6), {"verdicts": {"seq2seq_fails_scan_splits": {}}})[0]
    assert out["verdict"] == "inconclusive"
    assert "did not learn their training task" in out["details"]["reason"]
    assert ("split length, budget 200000, layers 2, pos rope: no seed passed (8 missed it; in-distribution exact "
            "match") in out["details"]["reason"]
    # Without them the rule answered at budget 100000: a consequence of the gate, said after it.
    reason = out["details"]["reason"]
    assert reason.index("no seed passed") < reason.index("the largest planned budget (200000) has no usable trial")
    # Not learned, and varying across seeds (the rule itself no longer gates: one piece of code, the engine's).
    df = _sweep(0.15, 0.02)
    df["acc_id"] = 0.1 + 0.01 * df["seed"]
    assert scale(df).outcome == "supported"
    assert compute_verdicts(df, {"verdicts": {"seq2seq_fails_scan_splits": {}}})[0]["verdict"] == "inconclusive"


def test_citations_and_parameter_counts():
    """Review item 8: Petty et al. is the source (MobileLLM context only); totals beside non-embedding
    counts in the details and the table; the YAML's width comments match the shapes."""
    import re

    from bindscale.studies.depth import STUDY, table

    claims = {c.name: c for c in V.CLAIMS}
    petty = claims["deeper_composes_better_at_equal_params"]
    assert "Petty" in petty.source and "MobileLLM" not in petty.source and "MobileLLM" not in petty.title
    assert "context" in petty.statement
    lake = claims["seq2seq_fails_scan_splits"].statement
    assert "1.2% exact match for the best model on that split" in lake and "13.8% for the overall-best" in lake
    df = _rows(_families(0.6, 0.5, base=0.2))
    df["n_params"] = df["budget"] + 1000 * df["layers"]
    d = depth(df).details["by_split"]["length"]["budget_25000"]
    assert d["params_total_deepest"] == 33_000 and d["params_total_shallowest"] == 26_000
    assert d["params_nonembed_deepest"] == shape_for_budget(25_000, 8, 2).n_params
    assert "n_params" in table.METRICS
    text = (STUDY.directory / "depth.yaml").read_text()
    for budget, k in ((25_000, "25k"), (100_000, "100k")):
        widths = "/".join(str(shape_for_budget(budget, L, 2).d_model) for L in (1, 2, 4, 8))
        assert re.search(rf"{k}: widths {widths}\b", text), (k, widths)
    assert f"200k, width {shape_for_budget(200_000, 2, 2).d_model})" in text


# ----------------------------------------------------------- competence gates per model, not per cell mean --

SHALLOW_100K = "split length, budget 100000, layers 1, pos rope"


def _learned_families():
    """A supported depth table (every family's deepest member 0.7 above its shallowest, so that one family member
    of 4 seeds still decides) with every model's in-distribution fit recorded above the gate (0.97-0.984)."""
    df = _rows(_families(0.75, 0.7, base=0.15))
    df["acc_id"] = 0.97 + 0.002 * df["seed"]
    return df


def test_half_the_models_of_a_family_member_below_the_gate_decide_nothing_though_their_mean_passes():
    """4 of 8 depth-1 models at 100k sit at 0.92 in distribution, 4 at 0.99: the mean 0.955 passed the old gate of
    the cell's mean; per model, those four did not learn, 4 of 8 seeds remain where 6 are needed."""
    df = _learned_families()
    m = (df["split"] == "length") & (df["budget"] == 100_000) & (df["layers"] == 1)
    df.loc[m, "acc_id"] = np.where(df.loc[m, "seed"] < 4, 0.92, 0.99)
    assert df.loc[m, "acc_id"].mean() >= 0.95
    out = _engine(df, "deeper_composes_better_at_equal_params")
    assert out["verdict"] == "inconclusive" and math.isnan(out["value"])
    reason = out["details"]["reason"]
    assert f"4 of 8 seeds of the deciding cell ({SHALLOW_100K})" in reason
    assert "4 missed a competence gate" in reason and "4 remain" in reason
    assert out["details"]["lost_to_gates_by_cell"][SHALLOW_100K] == {"lost": 4, "planned_ok": 8,
                                                                     "by_gate": {"acc_id": 4}}
    assert math.isfinite(out["details"]["value_with_every_model"]["value"])


def test_one_model_of_a_family_member_below_the_gate_is_left_out_and_the_claim_still_decided():
    df = _learned_families()
    m = (df["split"] == "length") & (df["budget"] == 100_000) & (df["layers"] == 1) & (df["seed"] == 0)
    df.loc[m, "acc_id"] = 0.5
    out = _engine(df, "deeper_composes_better_at_equal_params")
    assert out["verdict"] == "supported", out["details"]["reason"]
    assert out["details"]["lost_seeds_by_cell"][SHALLOW_100K]["statuses"] == {"missed a competence gate": 1}
    assert out["details"]["by_split"]["length"]["budget_100000"]["acc_id_shallowest"] > 0.95  # read without it
    alone = depth(df[~m])
    assert out["value"] == pytest.approx(alone.interval[0])


def _near_floor(deep_per_seed, shallow_per_seed):
    """Every family: the deepest member at ``deep_per_seed`` (one value per seed, 8 seeds), the shallowest at
    ``shallow_per_seed``, on both generalization splits; models learned their training distribution."""
    df = _rows(_families(0.6, 0.5, base=0.2))
    for split in ("length", "addprim_jump"):
        for layers, values in ((8, deep_per_seed), (1, shallow_per_seed)):
            m = (df["split"] == split) & (df["layers"] == layers)
            df.loc[m, "acc_test"] = np.asarray(values, float)[df.loc[m, "seed"].to_numpy()]
    return df


def test_depth_deep_at_0_of_300_against_shallow_at_1_of_300_decides_nothing():
    """Near-floor decision (review): both members within 0.02 of the floor in every seed measure the floor,
    not depth, though the interval of 0 − 1/300 lies below the margin."""
    out = depth(_near_floor([0.0] * 8, [0.0, 1 / 300, 1 / 300, 2 / 300, 1 / 300, 0.0, 1 / 300, 1 / 300]))
    assert out.outcome == "inconclusive"
    assert "within 0.02 of 0" in out.details["by_split"]["addprim_jump"]["problem"]


def test_depth_a_member_off_the_floor_still_decides_against_a_member_on_it():
    """The band only takes out comparisons where both sit near the bound: deep at 0 against shallow at 0.5 (a single
    family of 8 seeds a side finds a gap of 0.3 off a member at 0 only in about one table in ten)."""
    rng = np.random.default_rng(1)
    out = depth(_near_floor([0.0] * 8, 0.5 + 0.03 * rng.standard_normal(8)))
    assert out.outcome == "not_supported"



@pytest.mark.parametrize("deep_params, expected", [(130_000, "inconclusive"), (101_000, "supported")])
def test_depth_a_family_whose_members_differ_in_parameters_is_no_equal_parameter_comparison(deep_params, expected,
                                                                                            monkeypatch):
    """Review: the deepest member 30% larger than the shallowest compares size as well as depth; 1% apart is equal.
    No shape of the study is that far off its budget, so such counts are first miscounted records; the tolerance is
    read here on counts taken as their configs' (a shape rule that made one depth 30% larger)."""
    df = _rows(_families(0.6, 0.5, base=0.2))
    df.loc[(df["budget"] == 100_000) & (df["layers"] == 8), "n_params_nonembed"] = deep_params
    assert depth(df).outcome == "inconclusive" and "param_count_mismatch" in depth(df).details
    monkeypatch.setattr(V, "expected_nonembed_params", lambda row: int(row["n_params_nonembed"]))
    out = depth(df)
    assert out.outcome == expected
    if expected == "inconclusive":
        assert "beyond the tolerance 5% of an equal-parameter comparison" in out.details["reason"]


def test_depth_a_family_without_parameter_counts_decides_nothing():
    df = _rows(_families(0.6, 0.5, base=0.2)).drop(columns=["n_params_nonembed"])
    assert depth(df).outcome == "inconclusive"


# ----------------------------------------------------------- one training recipe per deciding cell --

def _two_recipes(table, missed):
    """``table`` trained at 2,000 steps, where the models of ``missed`` (a row mask) missed the competence gate, and
    the same design retrained at 4,000 steps, where every model learned (its test exact match a little higher)."""
    short = table.assign(steps=2000)
    short.loc[missed(short), "acc_id"] = 0.5
    long = table.assign(steps=4000, trial_id=table["trial_id"] + "-4k",
                        acc_test=(table["acc_test"] + 0.01).clip(0, 1))
    return pd.concat([short, long], ignore_index=True)


def test_depth_a_gate_miss_at_2000_steps_is_not_decided_by_the_family_at_4000_steps():
    """Review: cells were keyed without ``steps``. The deepest members missed the gate at 2,000 steps; the engine left
    them out, the rule's second pass took the most common step count of what was left (4,000) and decided there, on
    cells whose names were those of the 2,000-step cells: a model that did not learn was replaced by another
    recipe's. A table of two recipes decides nothing, and says which."""
    df = _two_recipes(_rows(_families(0.6, 0.5, base=0.2)), lambda d: d["layers"] == 8)
    out = _engine(df, "deeper_composes_better_at_equal_params")
    assert out["verdict"] == "inconclusive" and math.isnan(out["value"]), out["details"]["reason"]
    reason = out["details"]["reason"]
    assert "2 training recipes" in reason and "steps 2000" in reason and "steps 4000" in reason
    assert out["details"]["recipes"] == [{"steps": 2000}, {"steps": 4000}]
    # Each recipe alone decides (the 4,000-step one: supported; the 2,000-step one: its deepest models missed).
    alone = _engine(df[df["steps"] == 4000], "deeper_composes_better_at_equal_params")
    assert alone["verdict"] == "supported", alone["details"]["reason"]
    assert {c["cell"]["steps"] for c in alone["details"]["deciding_cells"]} == {4000}
    assert "steps 4000" in next(iter(alone["details"]["gates"][0]["cells"]))
    missed = _engine(df[df["steps"] == 2000], "deeper_composes_better_at_equal_params")
    assert missed["verdict"] == "inconclusive" and "split length, budget 25000, layers 8, pos rope, steps 2000: no " \
        "seed passed" in missed["details"]["reason"]


def test_scale_a_gate_miss_at_2000_steps_is_not_decided_by_the_largest_model_at_4000_steps():
    """The same for Lake & Baroni's claim: the largest model missed the gate at 2,000 steps and the rule answered on
    its 4,000-step records under the same cell names."""
    df = _two_recipes(_sweep(0.15, 0.02), lambda d: d["budget"] == 200_000)
    out = _engine(df, "seq2seq_fails_scan_splits")
    assert out["verdict"] == "inconclusive" and math.isnan(out["value"]), out["details"]["reason"]
    assert "steps 2000" in out["details"]["reason"] and "steps 4000" in out["details"]["reason"]
    assert _engine(df[df["steps"] == 4000], "seq2seq_fails_scan_splits")["verdict"] == "supported"


@pytest.mark.parametrize("column, values", [("lr", (0.005, 0.001)), ("train.batch_size", (32, 128))])
def test_depth_rows_of_one_step_count_but_another_recipe_are_not_pooled(column, values):
    """A recipe is the whole training section: one learning rate or batch size against another is two recipes."""
    table = _rows(_families(0.6, 0.5, base=0.2)).assign(steps=5000)
    a = table.assign(**{column: values[0]})
    b = table.assign(**{column: values[1]}, trial_id=table["trial_id"] + "-b")
    out = depth(pd.concat([a, b], ignore_index=True))
    assert out.outcome == "inconclusive" and "2 training recipes" in out.details["reason"]
    assert f"{column} {values[0]:g}" in out.details["reason"], out.details["reason"]
    assert depth(a).outcome == "supported"


def test_depth_packed_and_padded_rows_are_two_recipes():
    """``train.pack`` is part of the recipe (verdicts.RECIPE): the tiers train padded and ``--set train.pack=true`` packs,
    so a table holding both is two runs merged and decides nothing; each run's own rows decide. A table without the
    column (records from before the field) is one recipe."""
    table = _rows(_families(0.6, 0.5, base=0.2)).assign(steps=5000)
    padded = table.assign(**{"train.pack": False})
    packed = table.assign(**{"train.pack": True}, trial_id=table["trial_id"] + "-p")
    out = depth(pd.concat([padded, packed], ignore_index=True))
    assert out.outcome == "inconclusive" and "2 training recipes" in out.details["reason"], out.details.get("reason")
    assert "train.pack" in out.details["reason"]
    assert sorted(r["train.pack"] for r in out.details["recipes"]) == [False, True]
    assert depth(padded).outcome == depth(packed).outcome == depth(table).outcome == "supported"


def test_depth_failed_trials_of_another_recipe_are_no_planned_seeds_of_a_cell():
    """A cell is one recipe in the whole table too: 8 failed 700-step trials (seeds 8-15) are not seeds the
    5,000-step cells lost."""
    done = _rows(_families(0.6, 0.5, base=0.2)).assign(steps=5000)
    failed = done[done["split"] != "simple"].assign(steps=700, status="failed", seed=lambda d: d["seed"] + 8,
                                                    trial_id=lambda d: d["trial_id"] + "-700")
    out = _engine(pd.concat([done, failed], ignore_index=True), "deeper_composes_better_at_equal_params")
    assert out["verdict"] == "supported", out["details"]["reason"]
    lost = out["details"].get("lost_seeds_by_cell", {})  # (a seed or two below the gate: the fixture's noise)
    assert all(c["planned"] == 8 and "failed" not in c["statuses"] for c in lost.values()), lost


# ----------------------------------------------------------- parameter counts checked against the config --

def test_depth_a_miscounted_record_decides_nothing():
    """Review: ``n_params_nonembed`` was trusted as recorded. Records carrying the nominal budget instead of the
    model's count (25000 for a depth-8 model of 24,976 parameters) are named and decide nothing; the counts the
    configs give (``shape_for_budget``) decide."""
    df = _rows(_families(0.6, 0.5, base=0.2))
    assert depth(df).outcome == "supported"
    nominal = df.assign(n_params_nonembed=df["budget"])
    out = depth(nominal)
    assert out.outcome == "inconclusive" and math.isnan(out.interval[0])
    wrong = out.details["param_count_mismatch"]
    assert len(wrong) == 3 * 2 * 8  # every deciding record: three families, two members, eight seeds
    row = nominal[(nominal["split"] == "length") & (nominal["budget"] == 25_000) & (nominal["layers"] == 8)].iloc[0]
    expected = shape_for_budget(25_000, 8, 2).n_params
    assert expected != 25_000 and {"trial_id": row["trial_id"], "recorded": 25_000, "expected": expected}.items() <= \
        next(e for e in wrong if e["trial_id"] == row["trial_id"]).items()
    first = wrong[0]
    assert (f"{first['trial_id']} (split {first['split']}, budget {first['budget']}, layers {first['layers']}) "
            f"recorded {first['recorded']}, its config gives {first['expected']}") in out.details["reason"]
    # A deepest member recorded at a third of its size is named too (not only beyond the 5% tolerance).
    third = df.copy()
    deep = (third["budget"] == 100_000) & (third["layers"] == 8)
    third.loc[deep, "n_params_nonembed"] = third.loc[deep, "n_params_nonembed"] // 3
    out = _engine(third, "deeper_composes_better_at_equal_params")
    assert out["verdict"] == "inconclusive" and "deciding records carry a recorded n_params_nonembed" in \
        out["details"]["reason"]
    assert {e["trial_id"] for e in out["details"]["param_count_mismatch"]} == set(third.loc[deep, "trial_id"])


def test_depth_the_counter_reads_each_records_heads():
    """The count follows the record's own config: 4 heads give another width than the default 2."""
    df = _rows(_families(0.6, 0.5, base=0.2)).assign(heads=4)
    assert depth(df).outcome == "inconclusive"  # counts of 2-head shapes recorded for 4-head models
    df["n_params_nonembed"] = [shape_for_budget(b, L, 4).n_params for b, L in zip(df["budget"], df["layers"])]
    assert depth(df).outcome == "supported"


# ----------------------------------------------------------- every family decides, at a Bonferroni level --

def _two_budget_families(deep_25k, shallow_25k, deep_100k, shallow_100k, sd=0.02, seed=31):
    """Families at 25k and 100k (depths 1 and 8, 8 seeds) on both generalization splits, each member drawn around
    the given exact match; every model learned its training distribution."""
    rng = np.random.default_rng(seed)
    out = []
    for split in ("length", "addprim_jump"):
        for budget, members in ((25_000, {8: deep_25k, 1: shallow_25k}), (100_000, {8: deep_100k, 1: shallow_100k})):
            for layers, mean in members.items():
                params = shape_for_budget(budget, layers, 2).n_params
                for s in range(8):
                    out.append({"status": "ok", "trial_id": f"{split}-{budget}-{layers}-{s}", "split": split,
                                "budget": budget, "layers": layers, "pos": "rope", "heads": 2, "seed": s,
                                "steps": 5000, "train.batch_size": 32, "n_params_nonembed": params,
                                "n_params": params + 1000 * layers,
                                "acc_test": float(np.clip(mean + sd * rng.standard_normal(), 0, 1)),
                                "acc_id": float(np.clip(0.985 + 0.005 * rng.standard_normal(), 0.951, 1))})
    return pd.DataFrame(out)


def test_depth_a_contradicting_family_is_not_averaged_away_by_another_budget():
    """Review: deep 0.95 against shallow 0.05 at 25k and deep 0.30 against shallow 0.60 at 100k averaged to +0.30 over
    the budgets and read "supported" in every table; the claim is about each iso-parameter family, and the 100k one
    says the opposite. Decided per family it is never supported, and a clearer contradiction decides against."""
    df = _two_budget_families(0.95, 0.05, 0.30, 0.60)
    out = depth(df)
    assert out.outcome != "supported", out.details["reason"]
    fam = out.details["by_split"]["length"]["budget_100000"]
    assert fam["diff"]["value"] == pytest.approx(-0.3, abs=0.03) and fam["diff"]["ci_low"] < 0
    assert out.details["family_used"]["budget"] == 100_000 and out.interval[0] < 0
    assert _engine(df, "deeper_composes_better_at_equal_params")["verdict"] != "supported"
    clear = depth(_two_budget_families(0.95, 0.05, 0.10, 0.80))
    assert clear.outcome == "not_supported" and clear.interval[2] < 0
    assert clear.details["family_used"]["budget"] == 100_000
    assert "at budget 100000 the deepest member does not beat the shallowest" in clear.details["reason"]
    both = depth(_two_budget_families(0.95, 0.05, 0.90, 0.10))
    assert both.outcome == "supported" and both.details["family_used"]["budget"] in (25_000, 100_000)


def test_depth_family_intervals_are_bonferroni_over_the_families_of_their_split():
    """Each family's interval is the bounded one at confidence 1 − 0.05/F, F the families of its split: 0.975 for the
    length split's two families here, 0.95 for add-jump's one; the verdict's number is the deciding family's."""
    from bindscale.verdicts.stats import bounded_strata_mean_ci

    df = _rows(_families(0.6, 0.5, base=0.2))
    out = depth(df)
    ok = V.prepare_rows(df)

    def member(split, budget, layers):
        m = ok[(ok["split"] == split) & (ok["budget"] == budget) & (ok["layers"] == layers)]
        return m.groupby("seed")["acc_test"].mean().to_numpy()

    for split, budget, level in (("length", 25_000, 0.975), ("length", 100_000, 0.975), ("addprim_jump", 100_000, 0.95)):
        want = bounded_strata_mean_ci([member(split, budget, 8), member(split, budget, 1)], [1, -1], confidence=level)
        got = out.details["by_split"][split][f"budget_{budget}"]["diff"]
        assert (got["value"], got["ci_low"], got["ci_high"]) == pytest.approx(want, rel=1e-12), (split, budget)
        assert out.details["by_split"][split]["confidence"] == level
    used = out.details["family_used"]
    assert out.interval == pytest.approx(tuple(out.details["by_split"][used["split"]][f"budget_{used['budget']}"]
                                               ["diff"][k] for k in ("value", "ci_low", "ci_high")))


# ----------------------------------------------------------- one model configuration, chosen before the gate --

def _two_head_configurations():
    """The review's table: a heads=2 family on the length split (deep 0.3 against shallow 0.6, 8 seeds, 3 deep seeds
    below the gate) beside a heads=4 family (deep 0.9 against shallow 0.1, 7 seeds)."""
    rng = np.random.default_rng(3)
    out = []
    for heads, n, members in ((2, 8, {1: 0.6, 8: 0.3}), (4, 7, {1: 0.1, 8: 0.9})):
        for layers, mean in members.items():
            params = shape_for_budget(100_000, layers, heads).n_params
            for s in range(n):
                out.append({"status": "ok", "trial_id": f"h{heads}-{layers}-{s}", "split": "length", "budget": 100_000,
                            "layers": layers, "pos": "rope", "heads": heads, "seed": s, "steps": 5000,
                            "train.batch_size": 32, "n_params_nonembed": params, "n_params": params + 1000 * layers,
                            "acc_test": float(np.clip(mean + 0.03 * rng.standard_normal(), 0, 1)),
                            "acc_id": 0.90 if (heads, layers) == (2, 8) and s >= 5 else 0.99})
    return pd.DataFrame(out)


def test_depth_the_gate_does_not_move_the_decision_to_another_head_count():
    """Review: the most common head count (2) was chosen, the gate left out three of its deep seeds and the rule's
    second pass chose 4 heads, whose family decided "supported". Several configurations decide nothing and are
    named; one configuration's cells are keyed by it, so the gate filters inside it."""
    df = _two_head_configurations()
    out = _engine(df, "deeper_composes_better_at_equal_params")
    assert out["verdict"] == "inconclusive" and math.isnan(out["value"]), out["details"]["reason"]
    assert "2 model configurations (heads 2 (16 trials); heads 4 (14 trials))" in out["details"]["reason"]
    assert out["details"]["model_configurations"] == [{"heads": 2}, {"heads": 4}]
    scale_out = _engine(df.assign(budget=200_000, layers=2, n_params_nonembed=[
        shape_for_budget(200_000, 2, h).n_params for h in df["heads"]]), "seq2seq_fails_scan_splits")
    assert scale_out["verdict"] == "inconclusive" and "model configurations" in scale_out["details"]["reason"]
    # One configuration: its deciding cells name it, and its own gate loss is counted there.
    alone = _engine(df[df["heads"] == 2], "deeper_composes_better_at_equal_params")
    assert {c["cell"].get("heads") for c in alone["details"]["deciding_cells"]} == {2}
    lost = alone["details"]["lost_to_gates_by_cell"]
    assert list(lost) == ["split length, budget 100000, layers 8, pos rope, heads 2, steps 5000, batch size 32"]
    assert lost[next(iter(lost))]["lost"] == 3


def test_depth_learned_positions_beside_the_planned_rotary_ones_do_not_count_as_a_second_configuration():
    """The study plans learned positions as a side comparison: the rotary rows decide, as before, even where the
    learned ones are more numerous."""
    good = _rows(_families(0.6, 0.5, base=0.2))
    learned = pd.concat([_rows(_families(-0.6, -0.6, base=0.7), pos="learned").assign(
        trial_id=lambda d, k=k: d["trial_id"] + f"-{k}", seed=lambda d, k=k: d["seed"] + 8 * k) for k in range(2)])
    out = depth(pd.concat([good, learned], ignore_index=True))
    assert out.outcome == "supported" and out.details["pos_used"] == "rope"
    assert {c["cell"]["pos"] for c in out.details["deciding_cells"]} == {"rope"}


# ----------------------------------------------------------- Lake & Baroni: every depth at the largest budget --

def _largest_budget_depths(length_by_depth, jump=0.05, seeds=8, noise=0.03, seed=2):
    """Depths at the largest budget (200k) and depth 2 at 100k on both splits; ``length_by_depth``: {depth: mean
    exact match on the length split at 200k}, add-jump at ``jump`` everywhere."""
    cells = {("length", 100_000, 2): 0.05, ("addprim_jump", 100_000, 2): jump}
    cells |= {("length", 200_000, L): a for L, a in length_by_depth.items()}
    cells |= {("addprim_jump", 200_000, L): jump for L in length_by_depth}
    return _rows(cells, seeds=seeds, noise=noise)


def test_scale_a_deeper_model_at_the_largest_budget_that_solves_a_split_is_not_ignored():
    """Review: depth 1 and depth 8 tied at the largest budget, ties went to the shallowest, and depth 8 solving the
    length split (0.9) was never read. Every depth there must fail."""
    df = _largest_budget_depths({1: 0.05, 8: 0.9})
    out = scale(df)
    assert out.outcome == "not_supported", out.details["reason"]
    assert out.details["layers_used"] == 8 and out.details["split_used"] == "length" and out.interval[1] > 0.5
    assert out.details["layers_at_largest"] == [1, 8] and out.details["confidence"] == 0.975
    assert "the depth-8 model solves the length split" in out.details["reason"]
    assert "(97.5% intervals, Bonferroni over 2 depths)" in out.details["reason"]
    fails = scale(_largest_budget_depths({1: 0.05, 8: 0.05}))
    assert fails.outcome == "supported" and "every depth fails both splits" in fails.details["reason"]
    assert len(fails.details["deciding_cells"]) == 4


def test_scale_a_planned_depth_at_the_largest_budget_without_a_usable_trial_decides_nothing():
    """The depth that would have solved the split failed to run: the rest failing is no answer."""
    from bindscale.verdicts.engine import compute_verdicts

    df = _largest_budget_depths({1: 0.05, 8: 0.9})
    df.loc[(df["budget"] == 200_000) & (df["layers"] == 8) & (df["split"] == "length"), "status"] = "failed"
    assert scale(df).outcome == "supported"  # the rule alone reads what survived
    out = compute_verdicts(df, {"verdicts": {"seq2seq_fails_scan_splits": {}}})[0]
    assert out["verdict"] == "inconclusive" and "split length, depth 8" in out["details"]["reason"], \
        out["details"]["reason"]


# ----------------------------------------------------------- Lake & Baroni: a bounded interval for one cell --

def test_scale_a_cell_without_its_rare_successes_is_not_read_as_certain_failure():
    """Review: at a threshold of 0.2, 8 seeds near 0.05 (a bimodal cell that happens to hold none of its successful
    seeds) gave Hall's t interval [0.04, 0.06] and "fails"; the bounded interval (one pseudo-seed at 0 and one at
    1) reaches 0.35, so the claim waits for more seeds there, and still decides at the default 0.5."""
    df = _sweep(0.05, 0.02, noise=0.01)
    low = scale(df, {"threshold": 0.2, "min_id_acc": 0.95})
    assert low.outcome == "inconclusive" and low.interval[2] > 0.2, low.details["reason"]
    assert scale(df).outcome == "supported"
    more = _sweep(0.05, 0.02, noise=0.01, seeds=24)
    assert scale(more, {"threshold": 0.2, "min_id_acc": 0.95}).outcome == "supported"
