"""Reruns of a seed are one seed in the ``scaling`` and ``hull`` rules, as in the binding rules.

A table without every axis column cannot tell a rerun of a configuration and seed from another setting of a
missing axis: the engine says so (``ambiguous_records``) but decides on the rule's own reading. Before, ``scaling``
and ``hull`` read every record as a seed: two runs of each of 2 seeds were 4 seeds, enough for an interval, and a
claim decided on 2 seeds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bindscale.studies.scaling.verdicts import one_record_per_seed
from bindscale.verdicts.engine import compute_verdicts

from .test_verdicts import _cell, _hull_rows, _row


def _rerun(df: pd.DataFrame, cols: tuple[str, ...], shift: float = 0.0, seed: int = 5) -> pd.DataFrame:
    """Each record again under another trial id, each of ``cols`` moved by ``shift`` plus noise; the table drops
    axis columns so that the engine cannot tell reruns from other settings."""
    rng = np.random.default_rng(seed)
    again = df.assign(trial_id=df["trial_id"] + "r",
                      **{c: df[c] + shift + rng.normal(0, 0.005, len(df)) for c in cols})
    return pd.concat([df, again], ignore_index=True).drop(columns=["lr", "weight_decay"])


def _scaling_table(n_seeds: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows: list[dict] = []
    _cell(rows, "mlp", 16, 0.25, list(0.5 + rng.normal(0, 0.01, n_seeds)))
    _cell(rows, "mlp", 256, 0.25, list(0.97 + rng.normal(0, 0.005, n_seeds)))
    _cell(rows, "mlp", 256, 0.75, list(0.80 + rng.normal(0, 0.01, n_seeds)))
    return pd.DataFrame(rows)


def _scaling(df: pd.DataFrame) -> dict:
    return compute_verdicts(df, {"verdicts": {"scaling": {"r2_threshold": 0.9}}})[0]


def test_scaling_reads_two_runs_of_two_seeds_as_two_seeds():
    df = _rerun(_scaling_table(2), ("r2_heldout",))
    v = _scaling(df)
    assert v["details"].get("ambiguous_records")  # the engine cannot tell them apart by itself
    assert v["verdict"] == "inconclusive" and v["details"]["n_seeds_top_cell"] == 2
    assert v["details"]["reason"].startswith("fewer than 3 seeds in a deciding cell")


def test_scaling_averages_reruns_into_their_seed():
    """4 seeds run twice: the same verdict and interval as the table holding each seed's mean once."""
    base = _scaling_table(4)
    df = _rerun(base, ("r2_heldout",), shift=0.002)
    v = _scaling(df)
    assert v["details"]["n_seeds_top_cell"] == 4 and v["verdict"] == "supported"
    means = df.groupby(["model", "width", "holdout", "seed"], as_index=False)["r2_heldout"].mean()
    once = pd.DataFrame([_row(i, model=r["model"], width=r["width"], holdout=r["holdout"], seed=r["seed"],
                              r2_heldout=r["r2_heldout"]) for i, r in means.iterrows()]).drop(
        columns=["lr", "weight_decay"])
    alone = _scaling(once)
    assert (v["value"], v["ci_low"], v["ci_high"]) == pytest.approx((alone["value"], alone["ci_low"],
                                                                       alone["ci_high"]))


def test_hull_reads_two_runs_of_two_seeds_as_two_seeds():
    cells = {16: ((0.5, 0.51), (0.30, 0.32)), 64: ((0.8, 0.79), (0.31, 0.31))}
    df = _hull_rows(cells)
    cols = tuple(c for c in df if c.startswith(("r2_inhull", "r2_outhull")))
    v = compute_verdicts(_rerun(df, cols), {"verdicts": {"hull": {}}})[0]
    assert v["verdict"] == "inconclusive" and v["details"]["seeds_per_cell"] == 2
    assert v["details"]["reason"].startswith("fewer than 3 seeds")


def test_hull_still_decides_on_three_seeds_run_twice():
    cells = {16: ((0.5, 0.51, 0.49), (0.30, 0.32, 0.31)), 64: ((0.8, 0.79, 0.81), (0.31, 0.31, 0.32))}
    df = _hull_rows(cells)
    cols = tuple(c for c in df if c.startswith(("r2_inhull", "r2_outhull")))
    v = compute_verdicts(_rerun(df, cols), {"verdicts": {"hull": {}}})[0]
    assert v["details"]["seeds_per_cell"] == 3 and v["verdict"] == "supported", v["details"]["reason"]


def test_one_record_per_seed_hand_worked():
    rows = pd.DataFrame([_row(0, width=16, seed=0, r2_heldout=0.2), _row(1, width=16, seed=0, r2_heldout=0.4),
                         _row(2, width=16, seed=1, r2_heldout=0.5), _row(3, width=64, seed=0, r2_heldout=0.9)])
    out = one_record_per_seed(rows)
    assert list(out["trial_id"]) == ["t0000", "t0002", "t0003"]
    assert list(out["r2_heldout"]) == pytest.approx([0.3, 0.5, 0.9])
    distinct = rows.assign(seed=[0, 1, 2, 3])
    assert one_record_per_seed(distinct) is distinct  # nothing repeated: the table as it was
    nan_axis = rows.assign(depth=np.nan)  # NaN equal to NaN: still one configuration
    assert len(one_record_per_seed(nan_axis)) == 3
