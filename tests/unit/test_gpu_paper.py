"""benchmarks/gpu_paper.py's CPU smoke path (so the GPU benchmark cannot rot between lent GPUs): a missing
variant is skipped with one line, a real study's smallest trial is trained for a few steps and timed."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gpu_paper():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("gpu_paper", ROOT / "benchmarks" / "gpu_paper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.path.remove(str(ROOT / "benchmarks"))


def test_the_tiny_cpu_path_times_a_real_trial(gpu_paper, tmp_path):
    out = gpu_paper.main(["--device", "cpu", "--tiny", "--variant", "", "--studies", "length_transfer",
                          "--json", str(tmp_path / "o.json")])
    assert json.loads((tmp_path / "o.json").read_text()) == json.loads(json.dumps(out))
    row = out["studies"]["length_transfer"]
    assert row["status"] == "ok" and row["stopped"], row  # stopped after its steps: evaluation never ran
    assert row["steps_timed"] >= 3 and row["steps_per_s"] > 0 and row["seconds_timed"] > 0
    assert row["steps_reported"] < row["trial_steps"]
    assert row["cpu_seconds"] > 0 and row["process_peak_rss_bytes"] > 0


def test_a_missing_paper_variant_is_skipped_not_a_crash(gpu_paper, monkeypatch):
    monkeypatch.setattr(gpu_paper, "builtin_studies", lambda: {})  # as before any -paper file exists
    lines = []
    out = gpu_paper.run(["depth", "ceiling"], "-paper", "cpu", [], 1, 3, 5.0, 60.0, True, say=lines.append)
    assert lines == ["depth: skipped, no depth-paper variant in the registry (not written yet?)",
                     "ceiling: skipped, no ceiling-paper variant in the registry (not written yet?)"]
    assert {r["status"] for r in out["studies"].values()} == {"skipped"}


def test_the_step_clock_times_bursts_of_reports(gpu_paper, monkeypatch):
    """Reports in bursts (one loss read per burst): a burst's first report is when its steps were done."""
    now = [0.0]
    monkeypatch.setattr(gpu_paper.time, "perf_counter", lambda: now[0])
    clock = gpu_paper.StepClock(warmup=25, steps=50, budget_s=1e9)
    with pytest.raises(gpu_paper._Enough):
        for burst in range(10):  # 25 steps a burst, 1 s of GPU time each
            now[0] = float(burst + 1)
            for _ in range(25):
                clock(1)
                now[0] += 1e-6
    r = clock.result()
    assert r["steps_timed"] == 50 and r["seconds_timed"] == pytest.approx(2.0) and r["steps_per_s"] == pytest.approx(25.0)


def test_the_json_holds_each_finished_study_when_the_run_is_stopped_later(gpu_paper, monkeypatch, tmp_path):
    # A lent GPU's lease ends a run from outside: the studies finished before must already be on disk.
    fake = {"steps_per_s": 1.0, "steps_timed": 3, "seconds_timed": 3.0, "setup_seconds": 0.1, "cpu_seconds": 1.0,
            "stopped": True, "process_peak_rss_bytes": 1}
    calls = []

    def timed(trial, device, warmup, steps, budget_s):
        calls.append(trial.trial_id)
        if len(calls) > 1:
            raise KeyboardInterrupt  # the second study is cut off
        return dict(fake)

    monkeypatch.setattr(gpu_paper, "time_trial", timed)
    path = tmp_path / "o.json"
    with pytest.raises(KeyboardInterrupt):
        gpu_paper.main(["--device", "cpu", "--tiny", "--variant", "", "--studies", "length_transfer,ceiling",
                        "--json", str(path)])
    kept = json.loads(path.read_text())
    assert list(kept["studies"]) == ["length_transfer"] and kept["studies"]["length_transfer"]["steps_per_s"] == 1.0


def test_a_misspelt_study_or_an_unwritable_json_is_refused_before_anything_runs(gpu_paper, tmp_path):
    with pytest.raises(SystemExit, match=r"unknown study 'celing' \(did you mean ceiling\?\)"):
        gpu_paper.main(["--device", "cpu", "--tiny", "--studies", "celing"])
    with pytest.raises(SystemExit, match="is not a writable directory"):
        gpu_paper.main(["--device", "cpu", "--tiny", "--studies", "ceiling", "--json", str(tmp_path / "no" / "x.json")])


def test_a_failed_study_makes_the_exit_status_non_zero(gpu_paper, tmp_path):
    with pytest.raises(SystemExit, match="1 of 1 studies failed: ceiling"):
        gpu_paper.main(["--device", "cpu", "--tiny", "--variant", "", "--studies", "ceiling", "--set", "train.stpes=3",
                        "--json", str(tmp_path / "o.json")])
    assert json.loads((tmp_path / "o.json").read_text())["studies"]["ceiling"]["status"] == "failed"
