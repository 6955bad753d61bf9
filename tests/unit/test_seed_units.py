"""The shared helpers every rule reads seeds through: floors and ceilings, lost seeds, one record per unit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import bindscale.kit as kit
from bindscale.verdicts.engine import MIN_SEEDS, deciding_cell, needed_seeds, seed_loss
from bindscale.core.rows import one_per_unit


def _table(seeds=4) -> pd.DataFrame:
    return pd.DataFrame([{"trial_id": f"w{w}s{s}", "status": "ok", "width": w, "seed": s, "acc": 0.5 + 0.01 * s}
                         for w in (16, 64) for s in range(seeds)])


def test_kit_exports_the_helpers_with_docstrings():
    for name in ("at_bound", "deciding_cell", "one_per_unit", "MIN_SEEDS"):
        assert name in kit.__all__
    assert kit.at_bound.__doc__ and kit.deciding_cell.__doc__ and kit.one_per_unit.__doc__
    assert kit.MIN_SEEDS == MIN_SEEDS == 0.75


def test_copies_under_new_trial_ids_are_one_unit():
    df = _table()
    copied = pd.concat([df, df.assign(trial_id=df["trial_id"] + "-copy")], ignore_index=True)
    out, dropped = one_per_unit(copied)  # no config known: exact copies
    assert dropped == len(df) and len(out) == len(df)
    rerun = pd.concat([df, df.assign(trial_id="x" + df["trial_id"], acc=df["acc"] + 0.1)], ignore_index=True)
    assert one_per_unit(rerun)[1] == 0  # other metrics, config unknown: not provably one unit
    out, dropped = one_per_unit(rerun, config=("width", "seed"), axes=("width", "seed"))
    assert dropped == len(df) and len(out) == len(df)  # config + seed known: a rerun is the same unit


def test_of_a_unit_an_ok_record_is_kept_and_repeated_index_labels_are_fine():
    df = _table(2)
    failed = df.assign(status="failed", acc=math.nan)
    both = pd.concat([df, failed])  # index labels repeat
    out, dropped = one_per_unit(both, config=("width", "seed"), axes=("width", "seed"))
    assert dropped == len(df) and (out["status"] == "ok").all()


def test_of_a_unit_the_record_with_finite_metrics_is_kept_over_a_nan_rerun():
    df = _table(2)
    nan_rerun = df.assign(trial_id="x" + df["trial_id"], acc=math.nan)  # ok records whose metric came out NaN
    for both in (pd.concat([df, nan_rerun]), pd.concat([nan_rerun, df])):
        out, dropped = one_per_unit(both, config=("width", "seed"), axes=("width", "seed"))
        assert dropped == len(df) and out["acc"].notna().all()


def test_records_without_a_seed_are_never_merged():
    df = _table(4).assign(seed=math.nan)  # the seeds were lost: nothing says two records repeat a unit
    out, dropped = one_per_unit(df, config=("width", "seed"), axes=("width", "seed"))
    assert dropped == 0 and len(out) == len(df)


def test_needed_seeds_share_or_count_never_below_min_replicates():
    assert needed_seeds(8, 0.75) == 6 and needed_seeds(8, 0.5) == 4 and needed_seeds(8, 7) == 7
    assert needed_seeds(8, 20) == 20 and needed_seeds(3, 0.5) == 3  # a count above the plan is not lowered


def test_a_min_seeds_count_above_the_plan_is_said_not_capped():
    df = _table(5)  # every seed ok and finite: nothing lost, but the plan is shorter than the claim asks
    cells = [deciding_cell({"width": 64}, 5)]
    reason, lost = seed_loss(df, cells, 8)
    assert reason == ("the deciding cell (width 64) planned 5 seeds and the claim needs at least 8 "
                      "(min_seeds 8): plan more seeds or lower min_seeds")
    assert lost == {}
    assert seed_loss(df, cells, 5)[0] is None and seed_loss(df, cells, 1.0)[0] is None


def test_seed_loss_counts_statuses_and_nan_and_says_it_in_words():
    df = _table(8)
    df.loc[(df["width"] == 64) & (df["seed"] < 2), "status"] = "failed"
    df.loc[(df["width"] == 64) & (df["seed"] == 2), "status"] = "diverged"
    cells = [deciding_cell({"width": np.int64(64)}, 3), deciding_cell({"width": 16}, 8)]  # 2 more ok but NaN
    reason, lost = seed_loss(df, cells, 0.75)
    assert lost == {"width 64": {"planned": 8, "used": 3, "lost": 5, "needed": 6,
                                 "statuses": {"failed": 2, "diverged": 1, "ok but NaN": 2}}}
    assert reason == ("5 of 8 seeds of the deciding cell (width 64) are NaN, failed, diverged or missing (2 failed, "
                      "1 diverged, 2 ok but NaN); at least 6 of 8 are needed, 3 remain")
    assert seed_loss(df, cells, 0.25)[0] is None  # enough left: reported, not blocking
    assert seed_loss(df, [], 0.75) == (None, {})


@pytest.mark.parametrize("bound,word", [(0.0, "floor"), (1.0, "ceiling")])
def test_at_bound_needs_every_seed_of_every_arm_at_the_same_bound(bound, word):
    arms = {"related": [bound] * 8, "alone": [bound] * 8}
    assert word in kit.at_bound(arms) and "related and alone" in kit.at_bound(arms)
    assert kit.at_bound({"related": [bound] * 7 + [0.5], "alone": [bound] * 8}) is None
    assert kit.at_bound({"a": [0.0] * 8, "b": [1.0] * 8}) is None  # one at the floor, one at the ceiling: decides
    assert kit.at_bound({"a": [0.0, math.nan], "b": [0.0]}) is not None  # NaN is the seed checks' business
    assert kit.at_bound({"a": [], "b": [0.0]}) is None
    assert kit.at_bound({"a": [1.0], "b": [1.0]}, high=None) is None  # unbounded above (a loss, say)


def test_a_study_file_may_set_min_seeds_for_any_claim():
    from bindscale.core.config import StudyConfig

    base = {"model": {"width": 16}}  # no kind: the scaling study (implicit kind)
    StudyConfig(name="x", base=base, verdicts={"scaling": {"min_seeds": 6}})
    with pytest.raises(ValueError, match="out of range"):
        StudyConfig(name="x", base=base, verdicts={"scaling": {"min_seeds": -1}})


def test_a_table_without_an_axis_cannot_count_perturbed_reruns_as_seeds():
    """A hand-built table that lacks an axis column merged only exact copies,
    so reruns with a perturbed metric counted as more seeds, silently."""
    from bindscale.core.rows import ambiguous_units

    df = _table()
    rerun = df.assign(trial_id="x" + df["trial_id"], acc=df["acc"] + 1e-6)
    both = pd.concat([df, rerun], ignore_index=True)
    assert one_per_unit(both, config=("width", "seed", "lr"), axes=("width", "lr", "seed"))[1] == 0
    assert ambiguous_units(both, config=("width", "seed", "lr"), axes=("width", "lr", "seed")) == (len(df), ["lr"])
    assert ambiguous_units(df, config=("width", "seed", "lr"), axes=("width", "lr", "seed")) == (0, ["lr"])
    full = both.assign(lr=1e-3)
    assert ambiguous_units(full, config=("width", "seed", "lr"), axes=("width", "lr", "seed")) == (0, [])
    assert ambiguous_units(both.drop(columns="seed"), ("width", "seed", "lr"), ("width", "lr", "seed")) == (0, [])


def test_copies_filed_under_new_seed_numbers_are_one_unit():
    """Review: records whose every measured value repeats another's under another seed number (a copy filed
    as new seeds, or a seed that changes nothing) count once; exact 0/1 records are left alone."""
    from bindscale.core.rows import copies_under_other_seeds

    rng = np.random.default_rng(0)
    df = _table(seeds=4).assign(final_loss=lambda d: rng.uniform(0.1, 0.2, len(d)),
                                train_seconds=lambda d: rng.uniform(10, 20, len(d)))
    copied = pd.concat([df, df.assign(seed=df["seed"] + 100, trial_id=df["trial_id"] + "-s100")], ignore_index=True)
    out, n = copies_under_other_seeds(copied, ("width", "seed"))
    assert n == 8 and len(out) == 8 and set(out["seed"]) == {0, 1, 2, 3}
    # a hand-built table of one metric (acc) can tie by chance: not enough measured values to call it a copy
    assert copies_under_other_seeds(copied.drop(columns=["final_loss", "train_seconds"]), ("width", "seed"))[1] == 0
    zeros = pd.DataFrame([{"trial_id": f"t{s}", "status": "ok", "width": 16, "seed": s, "acc": 0.0} for s in range(4)])
    assert copies_under_other_seeds(zeros, ("width", "seed"))[1] == 0  # SCAN's 0.0 in every seed: a measurement
    failed = copied.assign(status="failed")
    assert copies_under_other_seeds(failed, ("width", "seed"))[1] == 0  # only ok records are merged


def test_a_depth_table_of_four_seeds_filed_twice_as_eight_decides_nothing():
    """The same 4 seeds copied under seed numbers 4-7: dropping the copies would also shrink the planned seeds the
    cell is held to, so the table decides nothing until they are removed; its result without them is reported."""
    from bindscale.verdicts.engine import compute_verdicts

    from tests.studies.depth.test_verdicts import _families, _rows

    def verdict(df):
        return compute_verdicts(df, {"verdicts": {"deeper_composes_better_at_equal_params": {}}})[0]

    rng = np.random.default_rng(0)
    four = _rows(_families(0.85, 0.85, base=0.1), seeds=4, id_acc=0.999, noise=0.01)
    # One family per split (100k): at 4 seeds a family decides at 95%, not at the 97.5% of a split's two families.
    four = four[four["budget"] == 100_000]
    four = four.assign(final_loss=rng.uniform(0.1, 0.2, len(four)), train_seconds=rng.uniform(10, 20, len(four)))
    copied = pd.concat([four, four.assign(seed=four["seed"] + 4, trial_id=four["trial_id"] + "-copy")],
                       ignore_index=True)
    out, alone = verdict(copied), verdict(four)
    assert alone["verdict"] == "supported"
    assert out["verdict"] == "inconclusive" and out["details"]["copied_records"] == len(four)
    assert "copies filed as new seeds" in out["details"]["reason"]
    assert out["details"]["value_without_copies"]["ci_low"] == alone["ci_low"]
