"""benchmarks/jax_peer.py's fractions of the fp32 peak are bounded by 1 (a fraction above 1 means a wrong peak or a wrong count)."""

import importlib.util
from pathlib import Path

import pytest

PEER = Path(__file__).resolve().parents[2] / "benchmarks" / "jax_peer.py"


@pytest.fixture(scope="module")
def jax_peer():
    spec = importlib.util.spec_from_file_location("jax_peer_under_test", PEER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # imports numpy only; torch and jax stay in the driver's and children's code
    return mod


def _side(rates):
    return {"steps_per_s": sorted(rates)[len(rates) // 2], "passes": [{"steps_per_s": r} for r in rates]}


def test_a_training_window_faster_than_every_matmul_sample_raises_the_peak(jax_peer):
    flops = jax_peer.step_flops(1024, 2) / 1e9  # GFLOP per trial-step
    # One pass of bindscale trained at 150 GFLOP/s, every matmul sample was slower (a slow moment).
    rows = [{"width": 1024, "depth": 2, "bs_t1": _side([100 / flops, 150 / flops, 120 / flops]),
             "jax_t1": _side([90 / flops, 95 / flops])}]
    out = jax_peer.bound_fractions(rows, {1: [110.0, 130.0, 125.0]})
    assert out["fp32_peak_gflops_t1"] == pytest.approx(150.0) and out["peak_raised_by_training_t1"]
    assert out["fp32_matmul_best_gflops_t1"] == 130.0
    for side in ("bs_t1", "jax_t1"):
        assert rows[0][side]["peak_fraction"] <= 1.0
        assert max(rows[0][side]["peak_fraction_range"]) <= 1.0
    assert rows[0]["bs_t1"]["peak_fraction_range"][1] == pytest.approx(1.0)
    assert rows[0]["bs_t1"]["peak_fraction"] == pytest.approx(120 / 150)


def test_the_matmul_peak_is_used_when_it_is_the_highest_rate(jax_peer):
    flops = jax_peer.step_flops(64, 2) / 1e9
    rows = [{"width": 64, "depth": 2, "bs_t2": _side([10 / flops, 20 / flops])}]
    out = jax_peer.bound_fractions(rows, {2: [200.0, 240.0]})
    assert out["fp32_peak_gflops_t2"] == 240.0 and not out["peak_raised_by_training_t2"]
    assert rows[0]["bs_t2"]["peak_fraction"] == pytest.approx(20 / 240)


def test_warm_and_time_counts_the_windows_steps_and_leaves_the_warm_up_out():
    import sys
    import time
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from windows import warm_and_time

    calls = []

    def run(n):  # 1 ms a step
        calls.append(n)
        time.sleep(n * 1e-3)

    out = warm_and_time(run, warm_steps=50, warm_s=5.0, window_s=0.3)
    assert out["warm_steps"] == 50 and sum(calls[:5]) == 50  # ten, then chunks of ten to the warm-up count
    assert out["steps"] == sum(calls[5:]) and out["wall_s"] >= 0.3
    assert 300 < out["steps_per_s"] <= 1000  # at most one step a millisecond
    assert out["cpu_share"] < 0.5  # sleeping is not CPU time


def test_sweep_ratios_are_the_peer_s_seconds_over_bindscale_s_wall_and_cpu(jax_peer):
    """The sweep's target is per CPU-second: ``ratio_ref2_cpu`` is the reference's median CPU seconds over
    bindscale's, beside the wall-clock ratio, and each pass's ratio."""
    out = {"bs_s": [40.0, 50.0, 45.0], "bs_cpu_s": [70.0, 80.0, 60.0], "ref2_s": [120.0, 110.0, 130.0],
           "ref2_cpu_s": [230.0, 240.0, 220.0]}
    got = jax_peer.sweep_ratios(out, ("ref2",))
    assert got["ratio_ref2"] == pytest.approx(120.0 / 45.0)
    assert got["ratio_ref2_cpu"] == pytest.approx(230.0 / 70.0)
    assert got["ratio_ref2_each"] == pytest.approx([3.0, 2.2, 130.0 / 45.0])
    assert got["ratio_ref2_cpu_each"] == pytest.approx([230.0 / 70.0, 3.0, 220.0 / 60.0])
