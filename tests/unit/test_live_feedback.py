"""`run all` prints each study's verdicts as it finishes, in the page's words and numbers, and
`bindscale report` of a live `run all` directory is refused before any work."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

import bindscale.cli as cli
import bindscale.run.runner as runner
from bindscale.core import registry
from bindscale.cli import _print_summary, app
from bindscale.core.studyfile import resolve_study
from bindscale.core.fmt import fmt, fmt_ci, verdict_words
from bindscale.store.lock import RunLock, RunLocked


def _summary(name, quick=True):
    return {"study": name, "quick": quick, "n_trials": 6, "n_planned": 6, "n_missing": 0, "n_failed": 0,
            "n_diverged": 0, "verdicts": [{"claim": f"{name}_claim", "verdict": "not_supported", "statistic": "s",
                                          "value": 0.0294, "ci_low": 0.022, "ci_high": 0.14, "n_trials": 6,
                                          "details": {"reason": "gain 0.0294 lies below the margin"}}]}


# ------------------------------------------------------------- item 5 --

@pytest.mark.parametrize("value, text", [(0.0294, "0.0294"), (0.022, "0.0220"), (0.14, "0.140"), (0.953, "0.953"),
                                         (12.3456, "12.3"), (1234.5, "1230"), (102272.0, "102272"), (7, "7"),
                                         (2.94e-05, "2.94e-05"), (0.0, "0"), (-0.115, "-0.115"), (None, "—"),
                                         (float("nan"), "—")])
def test_numbers_have_three_significant_figures(value, text):
    assert fmt(value) == text


def test_the_terminal_uses_the_pages_words_and_numbers(capsys):
    _print_summary(_summary("x", quick=True), "/tmp/nowhere")
    out = capsys.readouterr().out
    assert "smoke test: not supported" in out and "not_supported" not in out
    assert "0.0294 [0.0220, 0.140]" in out
    assert verdict_words("not_supported", True) == "smoke test: not supported"
    assert fmt_ci(0.0294, 0.022, 0.14) == "0.0294 [0.0220, 0.140]"
    _print_summary(_summary("x", quick=False), "/tmp/nowhere")
    out = capsys.readouterr().out
    assert "not supported" in out and "smoke test" not in out


def test_the_terminal_shows_the_source_headline_and_relation_when_known(capsys):
    s = _summary("x", quick=False)
    s["verdicts"][0].update(anchor={"number": 57.5, "unit": "%", "metric": "constraint satisfaction",
                                    "model_size": "GPT-4", "citation": "Bernier et al. 2026"},
                            relation={"word": "different scale", "why": "models 10^4 times smaller"})
    _print_summary(s, "/tmp/nowhere")
    out = capsys.readouterr().out
    assert "source's headline: 57.5%, constraint satisfaction, GPT-4 (Bernier et al. 2026)" in out
    assert "relation: different scale (models 10^4 times smaller)" in out


def test_run_all_prints_each_studys_verdicts_when_it_finishes(tmp_path, monkeypatch):
    events = []

    def run_study(study, out, **kwargs):
        with pytest.raises(RunLocked):  # `run all` holds its directory while the studies run
            with RunLock(tmp_path):
                pass
        events.append(("ran", study.name))
        return _summary(study.name)

    monkeypatch.setattr(runner, "run_study", run_study)
    monkeypatch.setattr(runner, "build_answer", lambda out: {"question": "q?", "claims": [],
                                                             "synthesis": {"answer": ["a."]},
                                                             "missing": {"smoke_tests": []}})
    monkeypatch.setattr(cli, "_print_summary", lambda summary, out: events.append(("printed", summary["study"])))
    result = CliRunner().invoke(app, ["run", "all", "--quick", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    names = registry.run_order()
    assert events == [e for n in names for e in (("ran", n), ("printed", n))]  # printed before the next runs


# ------------------------------------------------------------- item 7 --

@pytest.fixture
def run_all_dir(tmp_path):
    """A `run all` directory of two studies (their study files; what is in them does not matter here)."""
    names = list(registry.builtin())
    chosen = [names[0], names[-1]]
    for name in chosen:
        (tmp_path / name).mkdir()
        (tmp_path / name / "study.yaml").write_text(
            yaml.safe_dump(resolve_study(name, quick=True).model_dump(mode="json"), sort_keys=False))
        (tmp_path / name / "records").mkdir()
        (tmp_path / name / "records" / "t0.json").write_text("{}")  # one finished trial (not read here)
    return tmp_path, chosen


def test_report_of_a_run_all_leaves_a_study_without_records_and_says_so(run_all_dir, monkeypatch):
    root, (first, last) = run_all_dir
    (root / last / "records" / "t0.json").unlink()  # the run reached it, but no trial of it finished
    work = []
    monkeypatch.setattr(runner, "build_outputs", lambda where, study, trials: work.append(where) or {"study": "x"})
    monkeypatch.setattr(runner, "build_answer", lambda where: work.append("answer") or {})
    assert runner.rebuild_all(root)["unrecorded"] == [last]
    assert work == [str(root / first), "answer"]
    monkeypatch.setattr(cli, "_print_summary", lambda summary, out: None)
    monkeypatch.setattr(cli, "_print_answer", lambda answer, out: None)
    result = CliRunner().invoke(app, ["report", str(root)])
    assert result.exit_code == 0 and f"{last}: nothing recorded yet" in result.output


@pytest.mark.parametrize("held", ["last study", "directory"])
def test_report_of_a_live_run_all_is_refused_before_any_work(run_all_dir, monkeypatch, held):
    root, (first, last) = run_all_dir
    work = []
    monkeypatch.setattr(runner, "build_outputs", lambda where, study, trials: work.append(where) or {})
    monkeypatch.setattr(runner, "build_answer", lambda where: work.append("answer") or {})
    # A live `run all` training its last study holds that study's lock (and, from now on, the directory's):
    # the report must not rebuild the first study's outputs before it finds out.
    with RunLock(root / last if held == "last study" else root):
        with pytest.raises(RunLocked):
            runner.rebuild_all(root)
        assert work == []
        result = CliRunner().invoke(app, ["report", str(root)])
    assert result.exit_code == 2 and "being written by a live bindscale run" in result.output
    assert work == []
    runner.rebuild_all(root)  # once the run has finished, the report is made
    assert work == [str(root / first), str(root / last), "answer"]


def test_a_dry_run_says_when_a_live_run_holds_its_directory_and_writes_nothing(tmp_path):
    from bindscale.store.lock import live_holder

    out = tmp_path / "run"
    assert live_holder(out) is None and not out.exists()  # nothing there: not held, nothing created
    out.mkdir()
    with RunLock(out):
        assert "pid" in live_holder(out)
        result = CliRunner().invoke(app, ["run", "depth", "--quick", "--dry-run", "--out", str(out)])
        assert result.exit_code == 0 and "is being written by a live bindscale run" in result.output
    assert live_holder(out) is None
    result = CliRunner().invoke(app, ["run", "depth", "--quick", "--dry-run", "--out", str(out)])
    assert result.exit_code == 0 and "live bindscale run" not in result.output
    assert sorted(p.name for p in out.iterdir()) == [".lock"]  # the dry runs wrote nothing


def test_run_all_dry_run_adds_the_studies_estimates_into_one_total(tmp_path):
    import re

    result = CliRunner().invoke(app, ["run", "all", "--dry-run", "--workers", "2", "--out", str(tmp_path / "all")])
    assert result.exit_code == 0, result.output
    per_study = re.findall(r"^estimated time: ~(.+?) wall on", result.output, flags=re.M)
    # every study run all runs (the registry's, however many) gets an estimate, unless it gives no cost-to-seconds
    # factor (StudyPlugin.seconds_per_cost is optional): then the dry run says so and no total is printed
    timed = [n for n in registry.run_order() if getattr(registry.get(n), "seconds_per_cost", None)]
    assert len(per_study) == len(timed)
    untimed = set(registry.run_order()) - set(timed)
    assert {f"no time estimate: study {n} gives no cost-to-seconds factor" for n in untimed} <= set(result.output.splitlines())
    totals = re.findall(r"^run all: ~(.+?) wall in all", result.output, flags=re.M)
    if untimed:
        assert totals == []
        return
    (total,) = totals

    def minutes(text):  # "14 min", "1 h 34 min", "45 s"
        h = re.search(r"(\d+) h", text)
        m = re.search(r"(\d+) min", text)
        s = re.search(r"(\d+) s", text)
        return (int(h[1]) * 60 if h else 0) + (int(m[1]) if m else 0) + (int(s[1]) / 60 if s else 0)

    assert abs(minutes(total) - sum(minutes(t) for t in per_study)) <= len(per_study)  # each clock rounds to a minute
    assert not (tmp_path / "all").exists()
