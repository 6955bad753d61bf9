"""The planned-size guard reads the largest planned model over every setting of the deciding slice: a largest model
trained with other steps than the most common setting must not let a smaller one decide (a hostile review's table)."""

import pytest

from bindscale.verdicts.engine import compute_verdicts
from tests.studies.geometry.test_verdicts import SIZES, table


def _run(df, claim):
    return compute_verdicts(df, {"verdicts": {claim: {}}}, n_boot=100)[0]


def test_largest_model_at_the_common_setting_decides():
    # the largest model's polar probe behind the structural one: not supported (equal probes, the table below, were
    # not supported by the LAS ratio's 1.1 bar; the relation rule has no such bar and leaves them inconclusive)
    assert _run(table([.3, .4, .5, .25], [.2, .25, .3, .35]), "polar_beats_structural")["verdict"] == "not_supported"
    assert _run(table([.3, .4, .5, .3], [.2, .25, .3, .3]), "polar_beats_structural")["verdict"] != "supported"


@pytest.mark.parametrize("claim", ["polar_beats_structural", "geometry_grows_with_scale"])
def test_largest_model_trained_with_other_steps_makes_it_inconclusive(claim):
    df = table([.3, .4, .5, .3], [.2, .25, .3, .3])
    df.loc[df.n_params == SIZES[-1], "steps"] = 1600  # the mode stays 800: the largest model leaves the deciding rows
    v = _run(df, claim)
    assert v["verdict"] == "inconclusive"  # was "supported", decided at the second-largest model
    assert "trained only with other settings" in v["details"]["reason"] and "steps 1600" in v["details"]["reason"]
