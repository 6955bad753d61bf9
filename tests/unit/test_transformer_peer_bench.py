"""benchmarks/transformer_peer.py and the timing helpers it adds to benchmarks/common.py:
the smallest path of every side runs for a fraction of a second, so the benchmark cannot rot unseen."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str):
    sys.path.insert(0, str(BENCH))  # the benchmark imports its sibling common.py
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def tp():
    return _load("transformer_peer")


def tiny_case(tp, n_seeds: int = 2):
    """A 1-layer, d_model 16 transformer on random sequences of ragged length (so batches trim differently)."""
    from bindscale.models.transformer import Transformer

    data = []
    for s in range(n_seeds):
        g = torch.Generator().manual_seed(s)
        N, L = 48, 10
        tokens = torch.randint(1, 8, (N, L), generator=g)
        lengths = torch.randint(4, L + 1, (N,), generator=g)
        pos = torch.arange(L)
        tokens[pos >= lengths[:, None]] = 0
        mask = (pos >= 2) & (pos < lengths[:, None] - 1)
        data.append((tokens, mask))
    train = SimpleNamespace(steps=100, batch_size=8, lr=3e-3, weight_decay=0.1, warmup_steps=5, grad_clip=1.0)
    model = lambda t: Transformer(8, 1, 16, 2, max_len=16, generator=torch.Generator().manual_seed(t))  # noqa: E731
    return tp.Case("tiny", train, data, model, info={"n_params": model(0).n_params()})


def test_step_window_leaves_out_warmup_and_ends_the_loop():
    common = _load("common")
    w = common.StepWindow(seconds=0.05, warmup_s=0.02, min_warmup=3)
    n = 0
    with pytest.raises(common.WindowDone):
        while n < 10_000:
            time.sleep(0.002)
            n += 1
            w()
    assert w.done and w.steps >= 1 and n - w.steps >= 3  # warm-up steps are not counted
    assert 0.05 <= w.wall < 1.0 and w.rate() == pytest.approx(w.steps / w.wall)
    assert w.cpu < w.wall  # the loop slept: its CPU share is well below one core
    with pytest.raises(RuntimeError, match="ended before"):
        common.StepWindow(1.0, 0.0).rate()


def test_every_side_runs_and_reports_rates_shares_and_targets(tp):
    res = tp.run_case(tiny_case(tp), stacks=[1, 2], rounds=1, seconds=0.05, warmup=0.02, compile_=False)
    assert set(res["summary"]) == {"peer", "alone", "stack1", "stack2"}
    for name, runs in res["runs"].items():
        (r,) = runs
        assert r["per_trial_steps_per_s"] > 0 and r["stack_steps"] >= 1
        assert 0 < r["cpu_share"] <= 1.5, name  # one torch thread: at most about one core
        assert len(r["load"]) == 2
    s = res["summary"]
    assert s["peer"]["vs_peer"] == 1.0
    # a stack of 2 trains 2 trials a step: its per-trial rate is twice its stack step rate
    r2 = res["runs"]["stack2"][0]
    assert r2["per_trial_steps_per_s"] == pytest.approx(2 * r2["stack_steps"] / r2["wall_s"], rel=0.01)
    t = tp.targets(s)
    assert set(t) == {"stack1", "stack2"} and "meets_3x_peer" in t["stack2"] and "meets_compiled" not in t["stack2"]


def test_peer_loop_learns_and_feeds_the_trimmed_batches(tp):
    """The peer is a real training loop: its loss on a fixed batch falls, and each step feeds the batch trimmed
    to its longest sequence (as bindscale trims), not the padded length."""
    case = tiny_case(tp, 1)
    peer = tp.PeerLoop(case, compiled=False)
    assert peer.fused in (True, False)
    assert max(peer.lengths) <= case.data[0][0].shape[1] - 1 and len(set(peer.lengths)) > 1
    rows, L = peer.idx[0], peer.lengths[0]

    def loss() -> float:
        with torch.no_grad():
            return float(peer.fn(peer.inputs[rows, :L], peer.targets[rows, :L]))

    before = loss()
    for _ in range(60):
        peer.step()
    assert loss() < before - 0.1


def test_profile_splits_a_step_into_operator_and_other_time(tp):
    case = tiny_case(tp, 2)
    p = tp.profile_steps(lambda w, n: tp.bindscale_stack(case, 2, w, n), 50, trials=2, n=3, warmup=2)
    assert p["wall_ms"] > 0 and 0 < p["op_ms"] and p["matmul_ms"] <= p["op_ms"] and p["ops"] > 10
    assert p["per_trial_ms"]["ops"] == pytest.approx(p["ops"] / 2, abs=0.01) and p["top"]


@pytest.mark.slow
def test_compiled_side_compiles_once_and_runs(tp):
    res = tp.run_case(tiny_case(tp), stacks=[2], rounds=1, seconds=0.1, warmup=0.05, alone=False)
    assert res["facts"]["compiled"]["compile_s"] > 0 and res["summary"]["compiled"]["median"] > 0
    assert "vs_compiled" in res["summary"]["stack2"]


@pytest.mark.slow
def test_study_cases_build_from_the_study_files(tp):
    from bindscale.core.studyfile import resolve_study

    base = resolve_study("length_transfer").base  # the study file's default trial, whatever its recipe now
    case = tp.study_case("length_transfer", 2)
    assert (case.info["batch_size"], case.info["d_model"]) == (base.train.batch_size, base.model.d_model)
    assert len(case.data) == 2
    assert case.model(1).max_len == case.model(0).max_len
