"""The dry run says why and by how much a run's stacked jobs may outnumber its plan, without timing anything."""

import re

from bindscale.core.studyfile import resolve_study
from bindscale.run import dryrun


def test_the_dry_run_gives_the_range_of_jobs_a_run_may_train_and_times_nothing(monkeypatch):
    import bindscale.run.planner as planner

    def refuse(*a, **k):
        raise AssertionError("the dry run timed a step")

    monkeypatch.setattr(planner, "measured_stack_cap", refuse)
    text = dryrun.describe_plan(resolve_study("scaling", quick=True), workers=2)
    m = re.search(r"(\d+) stacked jobs .*\n.*may cut (\d+) of these stacks smaller .*: (\d+) to (\d+) jobs", text)
    assert m, text
    jobs, cut, low, high = map(int, m.groups())
    n_trials = len(resolve_study("scaling", quick=True).trials())
    assert low == jobs and jobs < high <= n_trials and cut <= jobs


def test_no_note_on_a_gpu_plan():
    assert dryrun.measured_cut_note([[object(), object()]], "cuda") is None
