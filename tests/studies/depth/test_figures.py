"""The depth study's figures and table render from a synthetic results table, and stay quiet without data."""

import pandas as pd

from bindscale.studies.depth import figures as F
from bindscale.studies.depth.table import config_table

from .test_verdicts import _families, _rows


def _table():
    df = pd.concat([_rows(_families(0.3, 0.2)), _rows({("length", 100_000, 2): 0.1}, pos="learned", seeds=5)])
    df["acc_by_length"] = [[{"length": "24", "n": 10, "acc": 0.5}, {"length": "30", "n": 5, "acc": 0.2}]] * len(df)
    return df.reset_index(drop=True)


def test_every_figure_renders_and_the_length_curves_compare_positions():
    df = _table()
    for name, (fn, caption) in F.figures({}).items():
        assert isinstance(fn(df), str) and caption, name
    curves = F.length_curves(df)
    assert {pos for _, pos in curves} == {"rope", "learned"}
    s = curves[(2, "learned")]
    assert list(s["length"]) == [24, 30] and list(s["mean"]) == [0.5, 0.2]


def test_figures_are_none_without_data():
    empty = pd.DataFrame({"status": ["failed"], "split": ["length"]})
    assert all(fn(empty) is None for fn, _ in F.figures({}).values())


def test_config_table_has_one_row_per_configuration():
    header, rows = config_table(_table())
    assert header[:4] == ["split", "budget", "layers", "pos"] and len(rows) == 2 * 4 + 4 + 1 + 1
