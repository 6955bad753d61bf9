"""The ceiling study's metrics-by-difficulty figure: drawn from a small synthetic table (each trial's
``by_difficulty`` rows as the results table holds them), skipped (None, no exception) without them, and
registered with the claim so that the report shows it."""

import base64

import numpy as np
import pandas as pd
import pytest

from bindscale.studies.ceiling import CLAIMS
from bindscale.studies.ceiling.figures import fig_by_difficulty, figures

FAMS = ("colouring", "knapsack")


def _by_difficulty(budget, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for split, ds in (("test", (1, 2, 3)), ("heldout", (4,)), ("train", (1, 2, 3))):
        for f in FAMS:
            for d in ds:
                sat = float(np.clip(0.9 - 0.15 * d + budget / 1e7 + rng.normal(0, 0.02), 0, 1))
                rows.append({"split": split, "family": f, "difficulty": str(d), "n": 10, "sat": sat,
                             "feas": sat / 2, "gap": np.nan if d == 4 else 0.1 * d, "optimal": sat / 3,
                             "unparsable": 0.0})
    return rows


def table(by_difficulty=True):
    rows = []
    for b in (1e5, 4e5):
        for s in range(3):
            r = {"trial_id": f"{b}-{s}", "status": "ok", "model.kind": "transformer", "budget": b, "seed": s,
                 "n_train": 600, "steps": 400, "layers": 2, "n_params_nonembed": b * 1.01}
            if by_difficulty:
                r["by_difficulty"] = _by_difficulty(b, s)
            rows.append(r)
    return pd.DataFrame(rows)


def test_the_difficulty_figure_is_drawn_from_a_small_table():
    png = base64.b64decode(fig_by_difficulty(table()))
    assert png.startswith(b"\x89PNG")


@pytest.mark.parametrize("case", ["no_column", "all_none", "empty_lists", "no_test_rows"])
def test_the_difficulty_figure_is_skipped_without_its_tables(case):
    df = table(by_difficulty=case != "no_column")
    if case == "all_none":
        df["by_difficulty"] = None
    elif case == "empty_lists":
        df["by_difficulty"] = [[] for _ in range(len(df))]
    elif case == "no_test_rows":
        df["by_difficulty"] = [[r for r in cell if r["split"] == "train"] for cell in df["by_difficulty"]]
    assert fig_by_difficulty(df) is None
    assert fig_by_difficulty(df.iloc[0:0]) is None


def test_the_difficulty_figure_is_registered_with_the_claim():
    assert "ceiling_by_difficulty" in figures() and "ceiling_by_difficulty" in CLAIMS[0].figures
    fn, caption = figures()["ceiling_by_difficulty"]
    assert fn is fig_by_difficulty and "difficulty" in caption and "held-out" in caption
