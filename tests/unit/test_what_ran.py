"""A study report describes what ran, read from the run's own trials, not the full study's prose
(a quick run's report once said "three widths with 8 seeds" on two widths and 3 seeds)."""

from __future__ import annotations

import re

import pandas as pd

from bindscale.core.studyfile import resolve_study
from bindscale.report import build_report


def _table(study, **extra):
    return pd.DataFrame([{**t.flat(), "trial_id": t.trial_id, "study": study.name, "status": "ok",
                          "n_params": 1000 * t.model.d_model, **extra} for t in study.trials()])


def _visible(html: str) -> str:
    return re.sub(r"<details.*?</details>", "", html.replace("<wbr>", ""), flags=re.S)


def test_a_quick_reports_words_are_those_of_its_trials(tmp_path):
    study = resolve_study("length_transfer", quick=True)
    assert "two widths (2 x 32, 2 x 64) with 7 seeds" in " ".join(study.description.split())  # the full design's prose
    summary = build_report(tmp_path, _table(study), study, n_boot=50,
                           run_info={"quick": True, "n_planned": 24, "n_missing": 0, "steps": [150]})
    lines = ["18 trials: main caprev; aux cap+rev, copy, none; d_model 16, 32; 3 seeds; 150 steps; "
             "16.0k–32.0k parameters",
             "6 trials: main caprev; aux cap+rev, none; d_model 32; pos none; 3 seeds; 150 steps; 32.0k parameters"]
    assert summary["what_ran"] == lines
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    visible = " ".join(_visible(html).split())
    assert all(line in visible for line in lines)
    assert "7 seeds" not in visible and "two widths" not in visible  # the design's prose is folded away
    assert "The study file's description (its quick section's own where it has one)" in html and "two widths" in " ".join(html.split())


def test_a_full_runs_report_says_what_ran_and_labels_the_design(tmp_path):
    study = resolve_study("length_transfer", overrides=["seed=[0,1]"])  # a smaller run than the design
    df = _table(study)
    summary = build_report(tmp_path, df, study, n_boot=50,
                           run_info={"quick": False, "n_planned": len(df), "n_missing": 0})
    assert summary["what_ran"] == ["8 trials: main caprev; aux cap+rev, none; d_model 32, 64; 2 seeds; 3000 steps; "
                                   "32.0k–64.0k parameters",
                                   "2 trials: main caprev; aux copy; d_model 64; 2 seeds; 3000 steps; 64.0k parameters"]
    html = " ".join((tmp_path / "report.html").read_text(encoding="utf-8").replace("<wbr>", "").split())
    assert "What this run trained" in html and "The study as designed: Extrapolation by Association" in html
