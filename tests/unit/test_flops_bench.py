"""benchmarks/flops.py counts a training step's FLOPs right (a hand-worked tiny shape, and torch's own
FlopCounterMode on the same models), and its fraction of the peak refuses a rate above the peak."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "flops.py"


@pytest.fixture(scope="module")
def flops():
    sys.path.insert(0, str(BENCH.parent))  # its sibling modules (common, transformer_peer)
    try:
        spec = importlib.util.spec_from_file_location("flops_under_test", BENCH)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH.parent))
    return mod


def tiny():
    from bindscale.models.transformer import Transformer

    return Transformer(11, 2, 16, 2, max_len=16, d_ff=24, generator=torch.Generator().manual_seed(0))


def test_the_count_of_a_tiny_shape_by_hand(flops):
    # 2 layers, d 16, d_ff 24, vocabulary 11; 3 sequences of 7 positions: N = 21 rows.
    shape = flops.Shape.of(tiny())
    assert shape == flops.Shape(n_layers=2, d_model=16, n_heads=2, d_ff=24, vocab=11)
    assert shape.block_matrices == 2 * (3 * 16 * 16 + 16 * 16 + 2 * 16 * 24) == 3584
    got = flops.step_flops(shape, 3, 7)
    # forward per layer: qkv 2*21*16*48 = 32256, proj 2*21*16*16 = 10752, MLP 2 * 2*21*16*24 = 32256,
    # QK^T and PV 2 * 2*3*7*7*16 = 9408; head 2*21*16*11 = 7392. Backward twice the forward: total 3x.
    assert got["dense"] == 3 * 2 * (32256 + 10752 + 32256) == 451584
    assert got["attention"] == 3 * 2 * 9408 == 56448
    assert got["head"] == 3 * 7392 == 22176
    assert got["total"] == 530208


def test_the_count_matches_flop_counter_mode_on_the_models(flops):
    m = tiny()
    shape = flops.Shape.of(m)
    x = torch.randint(1, 11, (3, 7), generator=torch.Generator().manual_seed(1))
    assert flops.counted_flops(m, x) == flops.step_flops(shape, 3, 7)["total"]
    check = flops.count_check(m, flops.MiniGPT(shape, 16, "rope"), batch=3, n=7, T=2)
    assert check["ok"], check
    assert check["counted"]["stack_per_trial"] == check["formula"] == 530208


def test_the_fraction_assertion_fires_above_the_peak(flops):
    assert flops.fraction_of_peak(75.0, 150.0) == 0.5
    assert flops.fraction_of_peak(150.0, 150.0) == 1.0
    with pytest.raises(flops.FractionAboveOne, match="FLOP count"):
        flops.fraction_of_peak(151.0, 150.0, "a fabricated side")
    with pytest.raises(AssertionError):  # it is an AssertionError
        flops.fraction_of_peak(300.0, 150.0)
    with pytest.raises(ValueError):
        flops.fraction_of_peak(1.0, 0.0)


def test_a_window_sums_the_flops_of_its_own_steps(flops):
    w = flops.FlopWindow(0.0, 0.0, [10, 20, 30, 40, 50], min_steps=2, offset=3, min_warmup=2)
    with pytest.raises(flops.WindowDone):
        for _ in range(10):
            w()
    # calls 1-2 warm up (schedule steps 3, 4); the window is calls 3-4: schedule steps 0 and 1 (wrapped)
    assert w.done and w.steps == 2 and w.flops == 10 + 20
