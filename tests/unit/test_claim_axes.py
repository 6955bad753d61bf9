"""A claim needs the grid it speaks of. For every claim about an axis (width / size /
parameters, hold-out, depth, pretraining), a table with one value of it, or without its column, is
inconclusive and the reason names the axis. Tables from each study's ``tests/studies/<name>/test_verdicts.py``."""

from __future__ import annotations

import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts


def verdict(df: pd.DataFrame, claim: str) -> dict:
    return compute_verdicts(df, {"verdicts": {claim: {}}}, n_boot=100)[0]


def _cases():
    from tests.studies.ceiling.test_review import plateau
    from tests.studies.depth.test_verdicts import _families, _rows
    from tests.studies.geometry.test_verdicts import SIZES, table as geometry
    from tests.studies.length_transfer.test_verdicts import table as lengths
    from tests.studies.modularity.test_verdicts import _table as modular
    from tests.studies.scaling.test_verdicts import make_results
    from tests.studies.subgraphs.test_verdicts import EIGHT, SEEN_C, SEEN_W, _rows as subgraphs

    sc = make_results(problems=False)
    lt, d = lengths(), _rows(_families(0.3, 0.2))
    g = geometry([.3, .4, .5, .6], [.2, .25, .3, .35])
    sg = subgraphs(EIGHT, EIGHT[::-1], SEEN_C, SEEN_W)
    c = plateau()
    return [
        ("scaling", sc[sc["holdout"] == 0.25], "hold-out"),
        ("scaling", sc.drop(columns="holdout"), "hold-out"),
        ("scaling", sc[sc["width"] == 256], "width"),
        ("binding", sc[sc["width"].isin([256, 32])], "size"),
        ("binding", sc.drop(columns="width"), "width"),
        ("hull", sc[sc["width"] == 256], "width"),
        ("transfer_grows_with_size", lt[lt["d_model"] == 64], "model sizes"),
        ("transfer_grows_with_size", lt.drop(columns="d_model"), "d_model"),
        ("geometry_grows_with_scale", g[g["n_params"] == SIZES[-1]], "model size"),
        ("geometry_grows_with_scale", g.drop(columns="n_params"), "n_params"),
        ("structure_grows_with_width", modular(widths=(64,)), "two widths"),
        ("structure_grows_with_width", modular().drop(columns="width"), "width"),
        ("pretraining_reliability", modular(pre=("none",)), "from-scratch"),
        ("pretraining_reliability", modular().drop(columns="pretraining"), "pretraining"),
        ("deeper_composes_better_at_equal_params", d[d["layers"] == 8], "depths"),
        ("deeper_composes_better_at_equal_params", d.drop(columns="layers"), "layers"),
        ("scale_does_not_lift_ood", sg[sg["n_params"] == sg["n_params"].max()], "model sizes"),
        ("scale_does_not_lift_ood", sg.drop(columns="n_params"), "n_params"),
        ("constraint_satisfaction_plateaus", c[c["budget"] == 1.6e6], "sizes"),
        ("constraint_satisfaction_plateaus", c.drop(columns="budget"), "budget"),
    ]


@pytest.mark.parametrize("i", range(20))
def test_a_claim_without_its_axis_is_inconclusive_and_names_it(i):
    claim, df, axis = _cases()[i]
    v = verdict(df, claim)
    assert v["verdict"] == "inconclusive" and axis in v["details"]["reason"], (claim, v["details"]["reason"])
