"""benchmarks/gpu_full.sh, the lent GPU's one command for the transformer studies' -full tiers: it parses, its
``--dry-run`` lists the tiers with their GPU estimates and trains nothing, a tier past its time is stopped
with SIGINT, and a stopped call's run folders travel as an archive that a later call unpacks."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_full.sh"


@pytest.fixture(scope="module")
def gpu_full():
    spec = importlib.util.spec_from_file_location("gpu_full", ROOT / "benchmarks" / "gpu_full.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_the_dry_run_lists_every_tier_with_its_estimates_and_trains_nothing(tmp_path, gpu_full):
    out = tmp_path / "out"
    res = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--python", sys.executable, "--out", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    text = res.stdout
    rows = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    assert sorted(r[1] for r in rows) == sorted(gpu_full.TIERS), text
    assert [int(r[0]) for r in rows] == list(range(1, len(gpu_full.TIERS) + 1))
    depth = next(line for line in text.splitlines() if " depth-full " in line)
    assert depth.count(" min") >= 4, depth  # derived and calibrated ranges
    assert "uncalibrated" in next(line for line in text.splitlines() if " binding_scan-full " in line)
    assert "dry run: nothing was trained or written" in text
    assert not out.exists()


def test_open_claims_are_the_unpublished_stale_or_inconclusive_ones(tmp_path, gpu_full):
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"claims": [
        {"study": "depth", "claim": "a", "verdict": "supported", "stale": False},
        {"study": "depth", "claim": "b", "verdict": "inconclusive", "stale": False},
        {"study": "depth", "claim": "c", "verdict": "not_supported", "stale": True},
        {"study": "depth", "claim": "a", "verdict": "inconclusive", "variant": "depth-lm"},  # another arm
        {"study": "ceiling", "claim": "d", "verdict": "supported", "stale": False}]}))
    assert gpu_full.open_claims("depth-full", ["a", "b", "c", "d"], answer) == ["b", "c", "d"]
    assert gpu_full.open_claims("depth-full", ["a"], tmp_path / "none.json") == ["a"]


def test_a_tier_past_its_time_is_interrupted(tmp_path, gpu_full):
    fake = tmp_path / "python"  # stands in for `python -m bindscale run ...`: waits, exits 130 on SIGINT
    fake.write_text("#!/usr/bin/env bash\ntrap 'echo interrupted; exit 130' INT\necho started\n"
                    "sleep 60 & wait $!\n")
    fake.chmod(0o755)
    with open(tmp_path / "log.txt", "w") as log:
        code, stopped = gpu_full.run_tier("depth-full", tmp_path / "runs" / "depth-full", str(fake), 1.0, log,
                                          gpu_full.Stop())
    assert (code, stopped) == (130, True)
    assert "interrupted" in (tmp_path / "log.txt").read_text()


def test_the_run_folders_travel_as_an_archive(tmp_path, gpu_full):
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "runs" / "depth-full" / "records").mkdir(parents=True)
    (first / "runs" / "depth-full" / "records" / "abc.json").write_text("{}")
    archive = gpu_full.pack(first)
    assert archive.name == "runs.tar.gz" and not (first / "runs").exists()
    gpu_full.unpack(archive, second)
    assert (second / "runs" / "depth-full" / "records" / "abc.json").read_text() == "{}"


def test_a_call_runs_the_tiers_in_order_within_its_limit_and_summarises(tmp_path, gpu_full, monkeypatch):
    """main's loop with the training replaced: the first tier is stopped at its time, the second is not started
    with too little left, an unknown tier is said, and the summary and archive are written."""
    rows = [{"tier": "depth-full", "trials": 73, "recorded": 0, "derived_s": [300, 700], "calibrated_s": [540, 720],
             "uncalibrated": None, "open_claims": ["x"], "minutes": 10.5, "value_per_min": 0.1},
            {"tier": "ceiling-full", "trials": 49, "recorded": 0, "derived_s": [400, 600], "calibrated_s": [360, 420],
             "uncalibrated": None, "open_claims": [], "minutes": 6.5, "value_per_min": 0.0},
            {"tier": "nope-full", "missing": True}]
    calls = []

    def fake_run_tier(tier, run_dir, python, seconds, log, stop):
        calls.append((tier, seconds))
        (run_dir / "records").mkdir(parents=True)
        import time
        time.sleep(1.2)  # uses up the limit, as a long tier would
        return 130, True

    monkeypatch.setattr(gpu_full, "plan", lambda *a, **k: rows)
    monkeypatch.setattr(gpu_full, "cuda_ok", lambda: True)
    monkeypatch.setattr(gpu_full, "machine", lambda: {"gpu": "test"})
    monkeypatch.setattr(gpu_full, "run_tier", fake_run_tier)
    monkeypatch.setattr(gpu_full, "RESERVE_S", 0.0)
    monkeypatch.setattr(gpu_full, "MIN_START_S", 1.0)
    assert gpu_full.main(["--out", str(tmp_path), "--limit-s", "2", "--pack"]) == 0
    assert [c[0] for c in calls] == ["depth-full"] and 0 < calls[0][1] <= 2
    summary = json.loads((tmp_path / "summary.json").read_text())
    tiers = summary["tiers"]
    assert tiers["depth-full"]["status"] == "stopped" and tiers["depth-full"]["exit_code"] == 130
    assert tiers["depth-full"]["trials_planned"] == 73 and tiers["depth-full"]["trials_recorded"] == 0
    assert tiers["ceiling-full"]["status"].startswith("not started")
    assert tiers["nope-full"]["status"] == "no such study file"
    assert summary["order"] == ["depth-full", "ceiling-full", "nope-full"] and summary["limit_s"] == 2
    assert (tmp_path / "runs.tar.gz").is_file() and not (tmp_path / "runs").exists()


def test_a_tier_is_interrupted_even_when_the_script_started_with_sigint_ignored(tmp_path, gpu_full):
    """Started under nohup or as `cmd &` from a script, the script has SIGINT ignored and its children inherited
    that: the tier could not take the interrupt and was killed (-9) instead of stopping cleanly (130)."""
    import signal

    fake = tmp_path / "python"
    fake.write_text("#!/usr/bin/env bash\ntrap 'echo interrupted; exit 130' INT\necho started\n"
                    "sleep 60 & wait $!\n")
    fake.chmod(0o755)
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with open(tmp_path / "log.txt", "w") as log:
            code, stopped = gpu_full.run_tier("depth-full", tmp_path / "runs" / "depth-full", str(fake), 1.0, log,
                                              gpu_full.Stop())
    finally:
        signal.signal(signal.SIGINT, old)
    assert (code, stopped) == (130, True)
