"""`bindscale run all --quick` as a user runs it: every built-in study, the answer page, resume, report."""

import json
import re
import time

import pytest

from bindscale.core import registry
from bindscale.core.studyfile import resolve_study
from bindscale.report.browser import assert_fits

from .conftest import bindscale
from .reference import check


@pytest.mark.slow
def test_run_all_quick_answers_every_claim_and_resumes(tmp_path):
    out = tmp_path / "all"
    t0 = time.perf_counter()
    r = bindscale("run", "all", "--quick", "--out", out, timeout=1800)
    print(f"\nrun all --quick: {time.perf_counter() - t0:.0f} s")
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads((out / "answer.json").read_text())
    # the claims each default study file decides (a claim only its -lm file decides is not run by `run all`)
    expected = {(n, c) for n in registry.builtin() for c in resolve_study(n, quick=True).verdicts}
    assert {(c["study"], c["claim"]) for c in data["claims"]} == expected
    assert data["missing"]["studies_not_run"] == []
    # a quick run is a smoke test: listed, never counted
    assert set(data["missing"]["smoke_tests"]) == set(registry.builtin())
    assert all(not c["firm"] for c in data["claims"])
    assert all(not s["for"] and not s["against"] for s in data["synthesis"]["sides"].values())
    html = (out / "answer.html").read_text()
    assert "smoke test:" in html and "The rules that wrote this synthesis" in html
    assert_fits([out / "answer.html"] + [out / n / "report.html" for n in registry.builtin()], skip_if_missing=False)
    # every study's quick numbers agree with its committed reference at its current result version: a change
    # that moves a study's numbers fails here until the study's result_version is bumped
    problems = [check(n, out, int(getattr(p, "result_version", 1))) for n, p in registry.builtin().items()]
    assert not any(problems), "\n".join(x for x in problems if x)
    # resume: every finished study is reused, nothing re-runs
    r = bindscale("run", "all", "--quick", "--out", out, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    said = " ".join(r.stderr.split())  # rich wraps long lines
    for name in registry.builtin():
        assert re.search(rf"{name}: (\d+) trials, \1 already recorded, 0 to run →", said), r.stderr[-2000:]
    (out / "answer.html").unlink()
    r = bindscale("report", out, timeout=600)
    assert r.returncode == 0 and (out / "answer.html").exists(), r.stderr[-2000:]


def test_run_all_refuses_set(tmp_path):
    r = bindscale("run", "all", "--quick", "--set", "seed=[0]", "--out", tmp_path / "x")
    assert r.returncode == 2 and "--set applies to one study" in r.stderr
    assert not (tmp_path / "x").exists()


def test_run_all_dry_run_and_print_config_run_nothing(tmp_path):
    r = bindscale("run", "all", "--quick", "--dry-run", "--out", tmp_path / "x")
    assert r.returncode == 0, r.stderr
    assert [line.split(":")[0] for line in r.stdout.splitlines() if "trials" in line and not line.startswith(" ")
            and "stacked" not in line] == [f"{n} (quick)" for n in registry.run_order()]
    assert r.stdout.count("dry run: nothing was run or written") == len(registry.run_order())
    r = bindscale("run", "all", "--print-config")
    assert r.returncode == 0 and "# scaling\nname: scaling" in r.stdout
    assert not (tmp_path / "x").exists()
