"""The ceiling study's figures. The metrics-by-difficulty figure: drawn from a small synthetic table (each
trial's ``by_difficulty`` rows as the results table holds them), skipped (None, no exception) without them, and
registered with the claim so that the report shows it. The satisfaction figure: in a report it draws the
verdict's own fits and intervals, and nothing is bootstrapped twice."""

import base64
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes

from bindscale.report import build_report
from bindscale.studies.ceiling import CLAIMS
from bindscale.studies.ceiling import figures as F
from bindscale.studies.ceiling import fits, verdicts
from bindscale.studies.ceiling.figures import COLOURS, fig_by_difficulty, figures
from bindscale.studies.ceiling.fits import saturating

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


def _sweep_table(seeds=3, sizes=(1e4, 2e4, 4e4, 8e4)):
    """A quick-run-like size sweep: every metric column its own saturating curve plus noise (so each fit's data
    are told apart by their values), chance levels given."""
    rng = np.random.default_rng(0)
    curves = {"sat_colouring": (0.6, 0.3), "sat_knapsack": (0.97, 0.1), "optimal_knapsack": (0.3, 0.25),
              "sat_assignment": (0.7, 0.3), "optimal_colouring": (0.2, 0.1), "optimal_assignment": (0.25, 0.1)}
    rows = []
    for n in sizes:
        for s in range(seeds):
            r = {"trial_id": f"{n}-{s}", "status": "ok", "model.kind": "transformer", "budget": n,
                 "n_params_nonembed": n, "seed": s, "n_train": 60, "steps": 80, "layers": 2}
            for col, (a, b) in curves.items():
                r[col] = float(np.clip(saturating(n / sizes[0], a, b, 0.9) + rng.normal(0, 0.02), 0, 1))
            for f in ("colouring", "knapsack", "assignment"):
                r[f"feas_{f}"], r[f"gap_{f}"] = r[f"sat_{f}"] / 2, 0.1
                r[f"chance_sat_{f}"] = r[f"chance_feas_{f}"] = r[f"chance_optimal_{f}"] = 0.05
                # every model fitted its training instances (the competence gates read these per model)
                r[f"feas_{f}_train"] = r[f"sat_{f}_train"] = r[f"optimal_{f}_train"] = 1.0
            rows.append(r)
    return pd.DataFrame(rows)


def test_the_report_fits_each_family_metric_once_and_the_figure_draws_the_verdicts_intervals(tmp_path, monkeypatch):
    df = _sweep_table()
    calls, bands = [], []
    real_compare, real_axhspan = fits.compare, Axes.axhspan

    def counting_compare(x, y, n_boot=500, **kw):
        # Which column was fitted: the one whose values these are (each (size, seed) is one row here).
        [col] = [c for c in df if c.startswith(("sat_", "feas_", "optimal_")) and np.allclose(sorted(df[c]), sorted(y))]
        calls.append((col, n_boot))
        return real_compare(x, y, n_boot=n_boot, **kw)

    def recording_axhspan(ax, ymin, ymax, *args, **kw):
        if kw.get("xmin") == 0.93:  # the asymptote bands (the grey hypothesised span covers the whole width)
            bands.append((kw.get("color"), ymin, ymax))
        return real_axhspan(ax, ymin, ymax, *args, **kw)

    monkeypatch.setattr(verdicts, "compare", counting_compare)
    monkeypatch.setattr(F, "compare", counting_compare)
    monkeypatch.setattr(Axes, "axhspan", recording_axhspan)
    study = {"name": "ceiling", "base": {"kind": "ceiling"}, "verdicts": {CLAIMS[0].name: {}}}
    summary = build_report(tmp_path, df, study, n_boot=30)
    assert "ceiling_sat_vs_params" in summary["figures"] and "ceiling_feas_vs_params" in summary["figures"]
    # One fit per (family, metric) in the whole report; only the verdict's metrics are bootstrapped.
    assert Counter(c for c, _ in calls) == {"feas_colouring": 1, "optimal_knapsack": 1, "feas_assignment": 1,
                                            "feas_knapsack": 1, "sat_colouring": 1, "sat_knapsack": 1,
                                            "sat_assignment": 1}
    assert {c for c, n in calls if n > 0} == {"feas_colouring", "optimal_knapsack", "feas_assignment"}
    # The figure's band of each family is the interval its verdict prints (knapsack: its optimal rate).
    [v] = summary["verdicts"]
    by_family = v["details"]["by_family"]
    assert sorted(bands) == sorted((COLOURS[f], e["asymptote"]["ci_low"], e["asymptote"]["ci_high"])
                                   for f, e in by_family.items())
    assert by_family["knapsack"]["column"] == "optimal_knapsack"
    assert by_family["colouring"]["column"] == "feas_colouring"


def test_the_figures_draw_the_random_level_and_stop_the_curves_at_the_largest_model(monkeypatch):
    """The dotted uniform-random level the title promises is drawn from the trials' own
    columns (before, only when no chance column existed, i.e. never for a real run), and no fitted curve runs
    past the largest model (before: to 4x it)."""
    df = _sweep_table()
    for f, r in zip(COLOURS, (0.75, 0.51, 0.68)):
        df[f"random_sat_{f}"], df[f"random_feas_{f}"] = r, r / 10
    dotted, xmax = [], []
    real_axhline, real_plot = Axes.axhline, Axes.plot

    def axhline(ax, y=0, *a, **kw):
        if kw.get("linestyle") == ":":
            dotted.append(round(float(y), 4))
        return real_axhline(ax, y, *a, **kw)

    def plot(ax, *a, **kw):
        if len(a) >= 2 and np.size(a[0]) > 10:  # a fitted curve (80 points)
            xmax.append(float(np.max(a[0])))
        return real_plot(ax, *a, **kw)

    monkeypatch.setattr(Axes, "axhline", axhline)
    monkeypatch.setattr(Axes, "plot", plot)
    assert F.fig_sat_vs_params(df) is not None
    assert sorted(dotted) == [0.51, 0.68, 0.75]
    assert F.fig_feas_vs_params(df, fits={}) is not None  # own fits only: no bootstrap (speed)
    assert sorted(dotted)[:3] == [0.051, 0.068, 0.075]
    assert xmax and max(xmax) <= df["n_params_nonembed"].max() * 1.0001


def test_the_unparsable_share_is_drawn_beside_every_generated_answer_metric(monkeypatch):
    """A quick run's feasibility of 0.029 was once mostly unparsable output (81-93% of answers) and no
    figure said so. Each family's unparsable share is drawn (dash-dot, ×) beside satisfaction and feasibility,
    the title says so, and the by-difficulty figure has a row of it."""
    df = _sweep_table()
    for i, f in enumerate(COLOURS):
        df[f"unparsable_{f}"] = 0.81 + 0.06 * i
    drawn, titles = [], []
    real_plot = Axes.plot

    def plot(ax, *a, **kw):
        if kw.get("ls") == "-.":
            drawn.append((kw.get("color"), tuple(np.round(np.asarray(a[1], float), 2))))
        return real_plot(ax, *a, **kw)

    real_titled = F.titled
    monkeypatch.setattr(Axes, "plot", plot)
    monkeypatch.setattr(F, "titled", lambda ax, title, quals: titles.append(quals) or real_titled(ax, title, quals))
    for fig in (F.fig_sat_vs_params, lambda d: F.fig_feas_vs_params(d, fits={})):
        drawn.clear()
        assert fig(df) is not None
        assert sorted(drawn) == sorted((COLOURS[f], (round(0.81 + 0.06 * i, 2),) * 4) for i, f in enumerate(COLOURS))
        assert F.UNPARSABLE_NOTE in titles[-1]
    assert F.fig_sat_vs_params(df.drop(columns=[f"unparsable_{f}" for f in COLOURS])) is not None
    assert F.UNPARSABLE_NOTE not in titles[-1]  # no column, no promise
    rows_seen = []
    real_subplots = F.Figure.subplots
    monkeypatch.setattr(F.Figure, "subplots", lambda self, n, m, **kw: rows_seen.append(n) or real_subplots(self, n, m, **kw))
    assert fig_by_difficulty(table()) is not None
    assert rows_seen == [4]  # satisfaction, feasibility, gap, and the unparsable answers
    for name in ("ceiling_sat_vs_params", "ceiling_feas_vs_params", "ceiling_by_difficulty"):
        assert "unparsable answers" in figures()[name][1]


def test_the_unparsable_share_stands_beside_the_number_on_every_page(tmp_path, capsys):
    """The report's verdict row, the answer page's claim row and the terminal say how much of
    the answers behind the deciding number were unparsable."""
    from bindscale.report.answer import build_answer
    from bindscale.cli import _print_summary
    from bindscale.core.studyfile import resolve_study

    df = _sweep_table()
    for i, f in enumerate(COLOURS):
        df[f"unparsable_{f}"] = [0.7 + 0.1 * i + 0.001 * k for k in range(len(df))]
        df[f"unparsable_{f}_train"] = 0.0  # the training split's: not the test answers'
    summary = build_report(tmp_path / "ceiling", df, resolve_study("ceiling", quick=True), n_boot=50,
                           run_info={"quick": True, "n_planned": len(df), "n_missing": 0})
    u = summary["verdicts"][0]["unparsable"]
    assert u["min"] == pytest.approx(0.8) and u["max"] == pytest.approx(0.8 + 0.001 * (len(df) - 1))
    text = "unparsable answers: 0.805 of the test answers (0.800–0.811 by trial)"  # the test split's, not training's
    assert text in (tmp_path / "ceiling" / "report.html").read_text(encoding="utf-8")
    build_answer(tmp_path)
    assert text in (tmp_path / "answer.html").read_text(encoding="utf-8")
    _print_summary(summary, str(tmp_path / "ceiling"))
    assert text in capsys.readouterr().out
