"""The geometry rules' floors, ceilings and seeds: probes at the floor or ceiling, lost seeds of a deciding size."""

from __future__ import annotations

import pytest

from bindscale.verdicts.engine import compute_verdicts
from bindscale.studies.geometry.verdicts import geometry_grows_with_scale, polar_beats_structural

from .test_verdicts import SIZES, run, table

CLAIMS = ("polar_beats_structural", "geometry_grows_with_scale")


def through_engine(df) -> dict[str, dict]:
    return {v["claim"]: v for v in compute_verdicts(df, {"verdicts": dict.fromkeys(CLAIMS, {})}, n_boot=200)}


def test_true_and_false_still_decide():
    good = through_engine(table([.3, .4, .5, .6], [.2, .25, .3, .35]))
    assert {v["verdict"] for v in good.values()} == {"supported"}
    assert run(polar_beats_structural, table([.2, .25, .3, .35], [.3, .4, .5, .6])).outcome == "not_supported"


@pytest.mark.parametrize("bound,word", [(0.0, "floor"), (1.0, "ceiling")])
def test_both_probes_at_the_floor_or_ceiling_is_inconclusive(bound, word):
    """Both probes' scores at a bound in every seed of the largest model. The claim is decided on the gold-edge
    relation accuracy (rel_acc / rel_bacc), so that is the score set at the bound here, beside LAS."""
    df = table([.3, .4, .5, .6], [.2, .25, .3, .35])
    big = df["n_params"] == SIZES[-1]
    for col in [c for c in df.columns if c.endswith("_las_pp") and not c.startswith(("embed", "identity"))]:
        df.loc[big, col] = bound
    df["probe_layers"] = [[dict(r, las_pp=bound, rel_acc=bound, rel_bacc=bound)
                           if size == SIZES[-1] and r.get("probe") in ("polar", "structural")
                           else r for r in layers] for size, layers in zip(df["n_params"], df["probe_layers"])]
    v = run(polar_beats_structural, df)
    assert v.outcome == "inconclusive" and word in v.details["reason"], v.details["reason"]


def test_five_of_eight_failed_seeds_at_the_largest_size_are_inconclusive():
    df = table([.3, .4, .5, .6], [.2, .25, .3, .35])
    df.loc[(df["n_params"] == SIZES[-1]) & (df["seed"] < 5), "status"] = "failed"
    for claim, v in through_engine(df).items():
        assert v["verdict"] == "inconclusive", (claim, v["details"]["reason"])
        assert "5 of 8 seeds of the deciding cell" in v["details"]["reason"]
