"""benchmarks/sweep_cpu.py attributes a sweep's CPU to its components exclusively (a component's seconds leave
out the timed components it calls) and accounts for every second of the jobs it runs."""

import importlib.util
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "sweep_cpu.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("sweep_cpu_under_test", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    sys.path[:] = [p for p in sys.path if p != str(BENCH.parent)]


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_clock_times_each_component_without_its_callees(bench):
    clock = bench.Clock()
    inner = clock.wrap(lambda: _spin(0.05), "inner")

    def body():
        _spin(0.05)
        inner()
        inner()
        _spin(0.05)

    clock.wrap(body, "outer")()
    assert clock.seconds["inner"] == pytest.approx(0.10, abs=0.02)
    assert clock.seconds["outer"] == pytest.approx(0.10, abs=0.02)


def test_a_tiny_sweep_is_accounted_for_and_the_originals_come_back(bench, tmp_path):
    from bindscale.studies.scaling import trial

    before = trial._run_group
    study = bench.sweep_yaml(3, 1, 8, tmp_path / "sweep.yaml")
    out = bench.run_jobs(study, tmp_path / "jobs")
    assert trial._run_group is before  # instrumentation undone
    assert out["trials"] == 4 == sum(out["jobs"]) == len(list((tmp_path / "jobs" / "records").glob("*.json")))
    parts = out["components"]
    assert {c for _, _, c in bench.TIMED} <= set(parts)
    assert all(v >= -1e-3 for v in parts.values())
    assert sum(parts.values()) == pytest.approx(out["jobs_cpu_s"], abs=1e-6)
    assert parts["probes: ridge fits and scores"] > 0 and parts["training steps"] > 0
