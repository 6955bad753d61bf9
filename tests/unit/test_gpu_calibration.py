"""The calibrated ``--dry-run --device cuda`` estimate (:mod:`bindscale.run.gpucal`): its shipped measurements
agree with the benchmark result file, it reproduces the measured jobs, it names its source, and a study
without a measurement is said to be uncalibrated."""

import fnmatch
import json
import re
import tomllib
from pathlib import Path

import pytest

from bindscale.core.studyfile import resolve_study
from bindscale.run import gpucal
from bindscale.run.dryrun import describe_plan, gpu_calibration, gpu_job_seconds

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "results" / "gpu_paper_h200_2026-12-04.json"
#: A measured -paper trial's training seconds are reproduced to this relative error (by construction: float
#: rounding only).
TRIAL_TOLERANCE = 0.01
#: depth-full's 254 s run (its first three jobs and start-up) lies in the calibrated range, whose ends are
#: within this relative distance of it.
RUN_TOLERANCE = 0.15


@pytest.fixture(scope="module")
def cal():
    return gpu_calibration()


def test_the_shipped_trials_are_the_benchmark_files():
    shipped, bench = gpucal.measurements(), json.loads(BENCH.read_text())
    source = shipped["sources"]["gpu_paper"]
    assert (ROOT / source["file"]) == BENCH
    assert source["gpu"] == bench["machine"]["gpu"] and source["torch"] == bench["machine"]["torch"]
    assert source["date"] in BENCH.name
    ok = {k: v for k, v in bench["studies"].items() if v["status"] == "ok"}
    assert set(shipped["trials"]) == set(ok)
    for name, row in shipped["trials"].items():
        assert row["source"] == "gpu_paper"
        for key, value in row.items():
            if key != "source":
                assert value == ok[name][key], (name, key)


def test_the_measurements_ship_with_the_package():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["bindscale"]
    rel = gpucal.MEASURED_FILE.relative_to(ROOT / "src" / "bindscale").as_posix()
    assert any(fnmatch.fnmatch(rel, pattern) for pattern in data), (rel, data)


def test_every_measured_study_is_calibrated_and_the_overhead_is_bounded_from_both_sides(cal):
    assert set(cal.points) == {"depth", "subgraphs", "length_transfer", "ceiling", "geometry"}, cal.notes
    lo, hi = cal.per_layer_step_s
    assert 0 < lo < hi < 0.01, (lo, hi)  # seconds per layer and step: a few milliseconds
    assert "depth-full" in cal.bounds[0] and "measured step" in cal.bounds[1]
    assert not cal.notes


def test_the_calibration_reproduces_the_measured_jobs(cal):
    rows = gpucal.measured_jobs(cal, gpu_job_seconds)
    assert len(rows) == 6
    for row in rows[:-1]:  # the -paper trials
        for end in row["calibrated_s"]:
            assert end == pytest.approx(row["measured_s"], rel=TRIAL_TOLERANCE), row
    run = rows[-1]
    assert run["what"].startswith("depth-full")
    lo, hi = run["calibrated_s"]
    assert lo <= run["measured_s"] <= hi, run
    assert lo >= (1 - RUN_TOLERANCE) * run["measured_s"] and hi <= (1 + RUN_TOLERANCE) * run["measured_s"], run
    # The derived range, which the calibration replaces, missed most of them.
    missed = [r for r in rows if not r["derived_s"][0] <= r["measured_s"] <= r["derived_s"][1]]
    assert len(missed) >= 3, rows


def test_a_stack_of_larger_trials_takes_longer(cal):
    trials = resolve_study("depth-full").trials()
    small = [t for t in trials if t.model.n_layers == 2 and t.model.budget == 100000][:3]
    big = [t for t in trials if t.model.n_layers == 8][:3]
    (a, b), (c, d) = gpucal.calibrated_job_seconds(small, cal), gpucal.calibrated_job_seconds(big, cal)
    assert 0 < a <= b and 0 < c <= d and c > a


def test_the_dry_run_prints_both_ranges_and_names_the_source(cal):
    text = describe_plan(resolve_study("depth-full"), device="cuda")
    assert re.search(r"estimated time on a GPU: ~.+ to ~.+ wall on one GPU", text), text
    assert "derived from the plan, not measured on a GPU" in text
    m = re.search(r"calibrated on measured GPU jobs: ~(.+) to ~(.+) wall on one GPU", text)
    assert m, text
    for said in ("benchmarks/results/gpu_paper_h200_2026-12-04.json", "NVIDIA H200", "2026-12-04",
                 "docs/speed.md", "depth-paper's measured trial"):
        assert said in text, said


def test_a_study_without_a_measurement_is_said_to_be_uncalibrated():
    text = describe_plan(resolve_study("binding_scan-full"), device="cuda")
    assert re.search(r"estimated time on a GPU: ~", text), text  # the derived range stands
    assert ("calibrated on measured GPU jobs: none, uncalibrated for this study: no GPU measurement of study "
            "binding_scan") in text
    assert "gpu_paper_h200_2026-12-04.json" in text


def test_measurements_that_no_longer_match_leave_the_study_uncalibrated(monkeypatch):
    data = gpucal.measurements()
    data["trials"]["ceiling"]["trial_id"] = "0" * 16
    data["trials"]["ceiling"]["model"] = {"kind": "transformer", "n_layers": 99}
    monkeypatch.setattr(gpucal, "measurements", lambda: data)
    gpucal.calibration.cache_clear()
    try:
        cal = gpu_calibration()
        assert "ceiling" not in cal.points and any("ceiling" in n for n in cal.notes)
        job = resolve_study("ceiling-full").trials()[:2]
        assert gpucal.calibrated_job_seconds(job, cal) is None
        assert "no GPU measurement of study ceiling" in gpucal.uncalibrated_why([job], cal)
    finally:
        gpucal.calibration.cache_clear()
