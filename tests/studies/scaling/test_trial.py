import math
import threading

import pytest
import torch

import bindscale.studies.scaling.trial as train_mod
from bindscale.studies.scaling.config import ModelConfig, TaskConfig, TrainConfig, TrialConfig
from bindscale.studies.scaling.plan import group_key
from bindscale.studies.scaling.tasks import HyperTeacher
from bindscale.studies.scaling.trial import run_group

TINY = TrainConfig(steps=40, batch_tasks=16, n_evals=2, eval_tasks=32, probe_tasks=32, probe_samples=2)


def trial(seed, **model):
    return TrialConfig(task=TaskConfig(M=6, K=2, holdout=0.3), model=ModelConfig(**({"width": 16, "depth": 2} | model)),
                       train=TINY, seed=seed)


def test_same_config_and_seed_give_identical_metrics():
    a = run_group([trial(0), trial(1)])
    b = run_group([trial(0), trial(1)])
    for ra, rb in zip(a, b):
        for k in ("r2_id", "r2_heldout", "final_loss", "decod_best", "curve_r2_heldout"):
            assert ra.metrics[k] == rb.metrics[k]


EXACT = ("r2_id", "r2_heldout", "r2_inhull", "final_loss", "decod_best", "decod_input", "curve_r2_heldout")


def assert_same_bits(a, b, keys=EXACT):
    """A trial's metrics do not depend on its stack (one torch thread, as in the tests): same bits."""
    for k in keys:
        assert a.metrics[k] == b.metrics[k] or (a.metrics[k] != a.metrics[k] and b.metrics[k] != b.metrics[k]), k


# Width 12: 12-element biases put a trial's elements in the fused optimizer's scalar tail or not
# depending on the stack size (bindscale.studies.scaling.optim).
@pytest.mark.parametrize("width", [12, 16, 64])
@pytest.mark.parametrize("kind", ["mlp", "hypernet", "tpr"])
def test_a_trial_in_a_stack_equals_the_trial_alone(kind, width):
    stacked = run_group([trial(0, kind=kind, width=width), trial(1, kind=kind, width=width),
                           trial(2, kind=kind, width=width)])[1]
    alone = run_group([trial(1, kind=kind, width=width)])[0]
    assert_same_bits(stacked, alone)


def _poisoned_teacher(value: float, after_calls: int) -> type:
    """A HyperTeacher whose seed-1 training targets become ``value`` after ``after_calls`` training-pool samples."""

    class Poisoned(HyperTeacher):
        def __init__(self, cfg, seed, device="cpu"):
            super().__init__(cfg, seed, device)
            self.poison, self.calls = seed == 1, 0

        def sample(self, n_tasks, gen, pool="train", samples=None, cycle=False):
            b = super().sample(n_tasks, gen, pool, samples, cycle)
            if self.poison and pool == "train" and not cycle and samples is None:
                self.calls += 1
                if self.calls > after_calls:
                    b.y = torch.full_like(b.y, value)
            return b

    return Poisoned


def test_divergence_is_recorded_and_isolated(monkeypatch):
    # Seed 1's training data turn to NaN after the first chunk (call 1 is the evaluation set, 2 the first chunk).
    Poisoned = _poisoned_teacher(float("nan"), after_calls=2)

    monkeypatch.setattr(train_mod, "HyperTeacher", Poisoned)
    monkeypatch.setattr(train_mod, "CHUNK_ELEMENTS", 16 * 16 * 40 * 10)  # 10 steps per chunk
    res = run_group([trial(0), trial(1), trial(2)])
    assert [r.status for r in res] == ["ok", "diverged", "ok"]
    assert res[1].diverged_step == 11
    monkeypatch.setattr(train_mod, "HyperTeacher", HyperTeacher)
    alone = run_group([trial(2)])[0]
    assert_same_bits(res[2], alone)


def test_training_learns_and_reports_everything():
    cfg = TrialConfig(task=TaskConfig(M=6, K=2, holdout=0.3), model=ModelConfig(width=64, depth=2),
                      train=TrainConfig(steps=300, batch_tasks=32, lr=3e-3, n_evals=3, eval_tasks=64, probe_tasks=64))
    (r,) = run_group([cfg])
    m = r.metrics
    assert r.status == "ok"
    assert m["r2_id"] > 0.3 and m["r2_heldout"] > 0.2, m
    assert m["curve_steps"] == [100, 200, 300] and len(m["curve_r2_heldout"]) == 3
    assert m["n_train_combos"] + m["n_heldout_combos"] == 21
    assert set(m["decod_layers"]) >= {"input", "hidden.0", "hidden.1", "random.hidden.0"}
    assert m["decod_input"] > 0.99  # identity encoding: the code is the input


def test_a_tpr_trial_trains_end_to_end_and_counts_its_parameters():
    from bindscale.studies.scaling.tpr import TPR, tpr_params

    cfg = TrialConfig(task=TaskConfig(M=6, K=2, holdout=0.3), model=ModelConfig(kind="tpr", width=32, depth=1),
                      train=TrainConfig(steps=300, batch_tasks=32, lr=3e-3, n_evals=3, eval_tasks=64, probe_tasks=64))
    (r,) = run_group([cfg], return_models=True)
    m = r.metrics
    assert r.status == "ok" and m["r2_id"] > 0.3 and m["r2_heldout"] > 0.2, m
    assert m["curve_loss"][-1] < m["curve_loss"][0]
    assert isinstance(r.model, TPR)
    assert m["n_params"] == tpr_params(6, 16, 16, 32, 1) == sum(p.numel() for p in r.model.parameters())
    assert set(m["decod_layers"]) == {"input", "hidden.0", "random.hidden.0"}  # filler, role, bound: not probed


def test_per_trial_lr_weight_decay_and_clip_inside_one_stack():
    def t(seed, lr, wd, clip):
        return TrialConfig(task=TaskConfig(M=6, K=2, holdout=0.3), model=ModelConfig(width=16, depth=2),
                           train=TINY.model_copy(update={"lr": lr, "weight_decay": wd, "grad_clip": clip}), seed=seed)

    stack = [t(0, 1e-3, 0.0, 1.0), t(1, 3e-2, 0.1, None), t(2, 1e-4, 3e-3, 0.01)]
    assert len({group_key(x) for x in stack}) == 1
    together = run_group(stack)
    for i, trial in enumerate(stack):
        assert_same_bits(together[i], run_group([trial])[0])
    assert len({r.metrics["final_loss"] for r in together}) == 3


def test_encodings_of_one_width_share_a_stack_and_each_trial_equals_itself_alone():
    def t(seed, encoding):
        return TrialConfig(task=TaskConfig(M=6, K=2, holdout=0.3, encoding=encoding),
                           model=ModelConfig(width=16, depth=2), train=TINY, seed=seed)

    stack = [t(0, "identity"), t(1, "orthogonal"), t(2, "invertible"), t(3, "interval_shuffle")]
    assert len({group_key(x) for x in stack}) == 1
    assert group_key(t(0, "tokens")) != group_key(stack[0])  # code width K·M, not M
    together = run_group(stack)
    for i in (1, 3):
        assert_same_bits(together[i], run_group([stack[i]])[0])
    # each trial saw its own encoding: linear codes (identity, orthogonal) are decodable
    # exactly from the input, the non-linear ones (invertible, interval_shuffle) are not
    assert [r.metrics["decod_input"] > 0.99 for r in together] == [True, True, False, False]


def test_stacking_into_a_reused_buffer_equals_a_fresh_stack():
    task = HyperTeacher(TaskConfig(M=6, K=2, holdout=0.3), 0)
    gens = [torch.Generator().manual_seed(s) for s in (1, 2)]
    first = train_mod._stack([task.sample(8, g) for g in gens])
    batches = [task.sample(8, g) for g in gens]
    fresh = train_mod._stack(batches)
    reused = train_mod._stack(batches, out=first)
    assert reused is first and reused.x.data_ptr() == first.x.data_ptr()
    for f in train_mod.BATCH_FIELDS:
        assert torch.equal(getattr(reused, f), getattr(fresh, f))
    # A chunk of another size (the last one of a run) gets new tensors; the buffer is left alone.
    short = train_mod._stack([task.sample(3, g) for g in gens], out=first)
    assert short is not first and short.x.shape[1] == 3 and torch.equal(first.x, fresh.x)


def test_a_finite_blow_up_is_divergence_and_isolated():
    # lr 10 drives AdamW's loss up by orders of magnitude without ever reaching inf.
    wild = trial(1).model_copy(update={"train": TINY.model_copy(update={"lr": 10.0, "grad_clip": None})})
    res = run_group([trial(0), wild, trial(2)])
    assert [r.status for r in res] == ["ok", "diverged", "ok"]
    assert 1 < res[1].diverged_step <= TINY.steps
    # Once the guard trips the trial is frozen (no more updates): its recorded loss stays finite.
    assert math.isfinite(res[1].metrics["final_loss"])
    assert_same_bits(res[2], run_group([trial(2)])[0])


@pytest.mark.parametrize("name", ["scaling", "subgraphs", "modularity", "depth"])
@pytest.mark.parametrize("quick", [False, True])
def test_builtin_studies_train_in_the_same_precision_on_any_cpu(monkeypatch, name, quick):
    """A study's numbers must not depend on whether the CPU has AMX: every built-in trial resolves to one
    precision with and without bf16 matrix units."""
    from bindscale.core.studyfile import resolve_study
    from bindscale.train import speed

    trials = [t for t in resolve_study(name, quick=quick).trials() if hasattr(t.train, "precision")]
    cpu = torch.device("cpu")

    def resolved(t):
        if name == "scaling":
            return train_mod.resolve_precision(t.train.precision, cpu, t.model)
        # The sequence trainer's rule (bf16 only where it pays, d_model >= 128): read as if it always paid,
        # so that any "auto" in a study file would show here.
        return speed.training_precision(t.train.precision, cpu, bf16_pays=True)

    used = {}
    for amx in (False, True):
        monkeypatch.setattr(speed, "fast_bf16", lambda device, amx=amx: amx)
        used[amx] = [resolved(t) for t in trials]
    assert used[False] == used[True]


def test_reports_task_mean_and_per_arity_hull_r2():
    """r2_*_taskmean (the reference code's R²) beside every pooled R²; hull R² per number of active
    modules k, with the split's counts, NaN / 0 where a cell has no held-out combination."""
    cfg = TrialConfig(task=TaskConfig(M=8, K=3, holdout=0.5), model=ModelConfig(width=16, depth=2), train=TINY, seed=1)
    (r,) = run_group([cfg])
    m = r.metrics
    task = HyperTeacher(cfg.task, cfg.seed)
    for side in ("id", "heldout", "inhull", "outhull"):
        assert f"r2_{side}_taskmean" in m
    assert len(m["curve_r2_heldout_taskmean"]) == len(m["curve_r2_heldout"])
    for k in (1, 2, 3):
        for side, flag in (("inhull", True), ("outhull", False)):
            n = sum(1 for c, inh in zip(task.split.heldout, task.split.inhull) if len(c) == k and inh == flag)
            assert m[f"n_{side}_k{k}"] == n
            assert math.isnan(m[f"r2_{side}_k{k}"]) == (n == 0), (side, k)
    assert sum(m[f"n_inhull_k{k}"] for k in (1, 2, 3)) == m["n_inhull"]
    assert sum(m[f"n_outhull_k{k}"] for k in (1, 2, 3)) == m["n_outhull"]
    assert m["n_outhull_k1"] == 0  # a single module is never out of the hull of a compositional split


def test_per_arity_and_task_mean_r2_equal_a_direct_computation():
    from bindscale.studies.scaling.metrics import r2_task_mean, r2_within_task

    cfg = TrialConfig(task=TaskConfig(M=8, K=3, holdout=0.5), model=ModelConfig(width=16, depth=2), train=TINY, seed=1)
    task = HyperTeacher(cfg.task, cfg.seed)
    model = train_mod.build_model(cfg.model, task.code_dim, 16, 16, 8, [torch.Generator().manual_seed(0)])
    held = train_mod._stack([task.sample(64, torch.Generator().manual_seed(3), "heldout", cycle=True)])
    out = train_mod._final_metrics(model, [task], held, held)
    pred = train_mod._predict(model, held)[0]
    lab = task.inhull_mask(held.combo[0])
    k = (held.z[0] > 0).sum(-1)
    assert out["r2_heldout_taskmean"][0] == float(r2_task_mean(held.y[0], pred))
    for kk in (2, 3):
        m = lab & (k == kk)
        if bool(m.any()):
            assert out[f"r2_inhull_k{kk}"][0] == float(r2_within_task(held.y[0], pred, m))


def test_probe_fit_and_score_inputs_come_from_independent_streams():
    """The score set used to be drawn with the fit set's generator: 7 936 of 8 192 score inputs
    were fit inputs. Now no score input equals any fit input."""
    from bindscale.core import seeding

    task = HyperTeacher(TaskConfig(M=8, K=3, holdout=0.5), 0)
    fit = task.sample(64, seeding.generator(0, "probe"), samples=4)
    score = task.sample(64, seeding.generator(0, "probe_score"), "heldout", samples=4, cycle=True)
    f, s = fit.x.reshape(-1, 16), score.x.reshape(-1, 16)
    assert not (s[:, None, :] == f[None, :, :]).all(-1).any()
    assert seeding.stream_seed(0, "probe") != seeding.stream_seed(0, "probe_score")
    # The trainer draws them so: its score set is the probe_score stream's draw.
    seen = []
    orig = HyperTeacher.sample

    def spy(self, n, gen, pool="train", samples=None, cycle=False):
        b = orig(self, n, gen, pool, samples, cycle)
        if samples is not None:
            seen.append(b.x.reshape(-1, b.x.shape[-1]))
        return b

    cfg = TrialConfig(task=TaskConfig(M=8, K=3, holdout=0.5), model=ModelConfig(width=16, depth=1),
                      train=TINY.model_copy(update={"steps": 2}))
    import unittest.mock
    with unittest.mock.patch.object(HyperTeacher, "sample", spy):
        run_group([cfg])
    f, s = seen
    assert not (s[:, None, :] == f[None, :, :]).all(-1).any()


def test_probe_reports_the_cross_validated_layer_and_its_heldout_score():
    cfg = TrialConfig(task=TaskConfig(M=6, K=2, holdout=0.3), model=ModelConfig(width=16, depth=2), train=TINY)
    m = run_group([cfg])[0].metrics
    assert m["decod_cv_layer"] in {"hidden.0", "hidden.1"}
    assert m["decod_random_cv_layer"] in {"hidden.0", "hidden.1"}
    assert m["decod_cv"] == m["decod_layers"][m["decod_cv_layer"]]
    assert m["decod_random_cv"] == m["decod_layers"]["random." + m["decod_random_cv_layer"]]
    cv = m["decod_layers_cv"]
    assert m["decod_cv_layer"] == max(["hidden.0", "hidden.1"], key=cv.get)
    assert m["decod_best"] >= m["decod_cv"]


def _fake_timer(per_step: dict[int, float], slow: dict | None = None):
    """A ``timer(n, k)`` of steps costing ``per_step[n]`` s; ``slow[(n, call)]`` multiplies that call's window.
    Records the calls and the simulated seconds spent."""
    calls, spent = [], [0.0]

    def timer(n, k):
        t = k * per_step[n] * (slow or {}).get((n, sum(c[0] == n for c in calls)), 1.0)
        calls.append((n, k))
        spent[0] += t
        return t

    return timer, calls, spent


def test_two_threads_only_where_measured_clearly_faster():
    from bindscale.train.threads import choose_threads

    assert choose_threads(_fake_timer({1: 0.010, 2: 0.008})[0], 2) == 2  # 1.25x the steps/s
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.0095})[0], 2) == 1  # 5%: within the noise, one thread
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.030})[0], 2) == 1  # a busy machine: a waiter descheduled
    # Other work on the machine: where the windows of the two counts overlap (the slowest two-thread window
    # not 10% faster than the fastest one-thread one), no gain is trusted and the rounds are measured again;
    # one thread when every attempt overlaps.
    # Count n's calls: 0 warm-up, 1 sizing, 2-4 the first attempt's rounds, 5-7 the second's.
    busy = lambda n, f: {(n, 3): f, (n, 6): f}  # noqa: E731  (every attempt disturbed)
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.008}, slow=busy(2, 1.2))[0], 2) == 1
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.006}, slow=busy(1, 0.6))[0], 2) == 1
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.005}, slow=busy(2, 1.9))[0], 2) == 1
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.005}, slow=busy(2, 1.9))[0], 2, attempts=1) == 1
    # The load-4 windows that passed a round-by-round rule and collapsed in training (7.1/9.4/14.0 ms at one
    # thread, 6.1-7.5 at two): overlapping, one thread.
    assert choose_threads(_fake_timer({1: 0.0071, 2: 0.0061}, slow={(1, 3): 9.4 / 7.1, (1, 4): 14.0 / 7.1,
                                                                    (2, 3): 7.5 / 6.1, (1, 6): 9.4 / 7.1,
                                                                    (1, 7): 14.0 / 7.1, (2, 6): 7.5 / 6.1})[0], 2) == 1
    # A wandering machine with a clear gain (1024 x 2 on the virtual Xeon: one-thread windows 122-195 ms,
    # two-thread 66-88 ms) keeps two threads; a disturbance in one attempt only: the next decides.
    assert choose_threads(_fake_timer({1: 0.122, 2: 0.066}, slow={(1, 2): 1.6, (1, 4): 1.2, (2, 3): 1.33})[0],
                          2) == 2
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.005}, slow={(2, 3): 1.9})[0], 2) == 2
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.008}, slow={(1, 3): 1.1, (2, 4): 1.1})[0], 2) == 2  # quiet noise
    # The slow first steps (allocations, the thread pool's start) only warm up.
    assert choose_threads(_fake_timer({1: 0.010, 2: 0.008}, slow={(1, 0): 50.0, (2, 0): 50.0})[0], 2) == 2
    assert choose_threads(_fake_timer({1: 0.010, 4: 0.004})[0], 4) == 4  # a caller's 4 threads on a bigger machine
    assert choose_threads(lambda n, k: 1 / 0, 1) == 1  # one thread asked: nothing to time


def test_the_thread_timing_alternates_and_stays_within_its_budget():
    from bindscale.train.threads import choose_threads

    timer, calls, spent = _fake_timer({1: 0.002, 2: 0.0015})
    choose_threads(timer, 2, budget=1.5)
    assert calls[:4] == [(1, 1), (2, 1), (1, 1), (2, 1)]  # a warm-up step each, then one to size the windows
    assert [n for n, _ in calls[4:]] == [1, 2, 2, 1, 1, 2]  # three rounds, the first count alternating
    assert {k for _, k in calls[4:]} == {50} and spent[0] <= 1.5  # windows of at most 50 steps
    timer, calls, spent = _fake_timer({1: 0.02, 2: 0.015})
    choose_threads(timer, 2, budget=1.5)
    assert 1.2 < spent[0] <= 1.5  # windows as long as the budget allows
    # a step far longer than the budget: the single steps, then one round of MIN_WINDOW-step windows (single
    # slow steps vary by more than the noise rule allows on a quiet machine)
    timer, calls, spent = _fake_timer({1: 3.0, 2: 2.0})
    assert choose_threads(timer, 2, budget=1.5) == 2 and calls == [(1, 1), (2, 1)] * 2 + [(1, 3), (2, 3)]


def test_each_timed_window_follows_an_untimed_step_at_its_thread_count(monkeypatch):
    from bindscale.studies.scaling import steps

    seen = []
    monkeypatch.setattr(steps, "_stack_stepper", lambda trials: lambda: seen.append(steps.torch.get_num_threads()))
    before = steps.torch.get_num_threads()
    timer = steps.stack_step_timer([trial(0)])
    timer(2, 3)
    assert seen == [2, 2, 2, 2] and steps.torch.get_num_threads() == before  # 1 untimed + 3 timed, restored


def test_the_thread_choice_is_measured_once_per_stack_shape(monkeypatch):
    from bindscale.studies.scaling import trial as train
    from bindscale.train import speed

    monkeypatch.setattr(speed, "_thread_choices", {})
    timer, calls, _ = _fake_timer({1: 0.01, 2: 0.005})
    assert train.intra_op_threads([trial(0)], 2, timer) == 2
    n = len(calls)
    assert train.intra_op_threads([trial(1)], 2, timer) == 2 and len(calls) == n  # another seed: same shape
    longer = trial(0).model_copy(update={"train": TINY.model_copy(update={"steps": 400, "lr": 0.1})})
    assert train.intra_op_threads([longer], 2, timer) == 2 and len(calls) == n  # other steps and lr: same step
    train.intra_op_threads([trial(0), trial(1)], 2, timer)  # a stack of two is another shape
    train.intra_op_threads([trial(0, width=32)], 2, timer)
    assert len(calls) == 3 * n
    assert train.intra_op_threads([trial(0)], 1, lambda n, k: 1 / 0) == 1


def test_the_real_step_timer_times_steps_at_the_threads_asked():
    from bindscale.studies.scaling.steps import stack_step_timer

    before = torch.get_num_threads()
    t = stack_step_timer([trial(0), trial(1)])
    assert 0 < t(1, 2) < 10 and torch.get_num_threads() == before


def test_run_group_trains_on_the_measured_threads_and_restores_the_callers(monkeypatch):
    from bindscale.studies.scaling import trial as train

    before = torch.get_num_threads()
    seen, asked = [], []
    t = TrialConfig(task=TaskConfig(M=4, K=2), model=ModelConfig(width=8, depth=1),
                    train=TrainConfig(steps=25, n_evals=1, eval_tasks=8, probe_tasks=8, probe_samples=2))
    try:
        for choice in (1, 2):
            monkeypatch.setattr(train, "intra_op_threads", lambda trials, n, c=choice: asked.append(n) or c)
            torch.set_num_threads(2)
            seen.clear()
            run_group([t], progress=lambda n: seen.append(torch.get_num_threads()))
            assert seen == [choice] and torch.get_num_threads() == 2 and asked[-1] == 2
        asked.clear()
        torch.set_num_threads(1)  # one thread asked (every worker): nothing is measured
        run_group([t], progress=lambda n: seen.append(torch.get_num_threads()))
        assert asked == [] and seen[-1] == 1
    finally:
        torch.set_num_threads(before)


def test_results_do_not_depend_on_the_thread_choice_beyond_rounding(monkeypatch):
    from bindscale.studies.scaling import trial as train

    # Wide enough for the matrix products to split across threads; a few steps (a 2-thread test).
    t = [trial(s, width=128) for s in (0, 1)]
    t = [x.model_copy(update={"train": TINY.model_copy(update={"steps": 15, "batch_tasks": 32})}) for x in t]
    before = torch.get_num_threads()
    res = {}
    try:
        for choice in (1, 2):
            monkeypatch.setattr(train, "intra_op_threads", lambda trials, n, c=choice: c)
            torch.set_num_threads(2)
            res[choice] = run_group(t)
    finally:
        torch.set_num_threads(before)
    for a, b in zip(res[1], res[2]):
        for k in ("final_loss", "r2_id", "r2_heldout"):
            assert a.metrics[k] == pytest.approx(b.metrics[k], rel=1e-4, abs=1e-6), k
        assert a.metrics["curve_loss"] == pytest.approx(b.metrics["curve_loss"], rel=1e-4)


def test_a_trial_whose_first_loss_is_infinite_diverges_at_step_one(monkeypatch):
    # Seed 1's training targets are inf from the first chunk on (call 1 is the evaluation set).
    Infinite = _poisoned_teacher(float("inf"), after_calls=1)

    monkeypatch.setattr(train_mod, "HyperTeacher", Infinite)
    res = run_group([trial(0), trial(1), trial(2)])
    assert [r.status for r in res] == ["ok", "diverged", "ok"]
    assert res[1].diverged_step == 1
    monkeypatch.setattr(train_mod, "HyperTeacher", HyperTeacher)
    assert_same_bits(res[2], run_group([trial(2)])[0])


def _recording_teacher(log: list, fail_at: int | None = None) -> type:
    """A HyperTeacher that logs (thread name, tasks) of each training-pool sample; the ``fail_at``-th raises."""

    class Recording(HyperTeacher):
        def sample(self, n_tasks, gen, pool="train", samples=None, cycle=False):
            if pool == "train" and not cycle and samples is None:
                log.append((threading.current_thread().name, n_tasks))
                if len(log) == fail_at:
                    raise RuntimeError("sampler failed")
            return super().sample(n_tasks, gen, pool, samples, cycle)

    return Recording


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN, floats to the bit (lists and dicts element by element)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


class _SteadyWatch:
    """A ThreadWatch that never falls back: these tests check the path chosen, not the machine's load."""

    fell_back_at = None

    def __init__(self, *args, **kwargs):
        pass

    def step_done(self, step):
        pass

    def restart(self):
        pass


def _train_at(monkeypatch, trials, threads: int, choice: int = 1):
    """run_group with ``threads`` torch threads asked and ``choice`` measured for the step; the caller's restored."""
    from bindscale.studies.scaling import trial as train
    from bindscale.train import speed

    monkeypatch.setattr(train, "intra_op_threads", lambda trials, n: choice)
    monkeypatch.setattr(speed, "ThreadWatch", _SteadyWatch)  # no fall-back on a loaded machine (test_threadwatch)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return run_group(trials)
    finally:
        torch.set_num_threads(before)


def test_sampling_in_the_background_gives_the_serial_bits(monkeypatch):
    # Two threads asked, one chosen for the step: the next chunk is sampled on the sampler thread.
    # 40 steps in chunks of 15, 15 and 10: the last chunk is shorter, and nothing is sampled past it.
    monkeypatch.setattr(train_mod, "CHUNK_ELEMENTS", 16 * 16 * 40 * 15)
    for group in ([trial(0), trial(2)], [trial(1, kind="hypernet")]):  # an MLP stack, a hypernet alone
        logs, res = {}, {}
        for threads in (1, 2):
            logs[threads] = []
            monkeypatch.setattr(train_mod, "HyperTeacher", _recording_teacher(logs[threads]))
            before = threading.active_count()
            res[threads] = _train_at(monkeypatch, group, threads)
            assert threading.active_count() == before
        T = len(group)  # the first T samples: the in-distribution evaluation set (32 tasks), before training
        assert [n for _, n in logs[1]] == [n for _, n in logs[2]] == [32] * T + [16 * 15] * T * 2 + [16 * 10] * T
        assert {name for name, _ in logs[1]} == {name for name, _ in logs[2][:T]} == {threading.main_thread().name}
        assert all(name.startswith("bindscale-sampler") for name, _ in logs[2][T:])
        for a, b in zip(res[1], res[2]):
            assert (a.status, a.diverged_step) == (b.status, b.diverged_step)
            keys = [k for k in a.metrics if not k.endswith("_seconds") and k != "background_sampling"]
            assert _same({k: a.metrics[k] for k in keys}, {k: b.metrics[k] for k in keys})


def test_no_background_sampling_at_one_thread_or_when_the_step_takes_the_threads(monkeypatch):
    for threads, choice in ((1, 1), (2, 2)):
        log = []
        monkeypatch.setattr(train_mod, "HyperTeacher", _recording_teacher(log))
        _train_at(monkeypatch, [trial(0)], threads, choice)
        assert len(log) == 2 and {name for name, _ in log} == {threading.main_thread().name}


def test_an_error_in_the_sampler_thread_reaches_the_caller_and_no_thread_is_left(monkeypatch):
    monkeypatch.setattr(train_mod, "CHUNK_ELEMENTS", 16 * 16 * 40 * 10)  # chunks of 10 steps
    before = threading.active_count()
    log = []
    monkeypatch.setattr(train_mod, "HyperTeacher", _recording_teacher(log, fail_at=4))  # 1: evaluation set
    with pytest.raises(RuntimeError, match="sampler failed"):
        _train_at(monkeypatch, [trial(0)], 2)
    assert log[-1][0].startswith("bindscale-sampler") and threading.active_count() == before


def test_an_interrupt_in_training_shuts_the_sampler_thread_down(monkeypatch):
    from bindscale.studies.scaling import trial as train

    monkeypatch.setattr(train_mod, "CHUNK_ELEMENTS", 16 * 16 * 40 * 10)  # chunks of 10 steps
    monkeypatch.setattr(train, "intra_op_threads", lambda trials, n: 1)
    before, threads = threading.active_count(), torch.get_num_threads()

    def interrupt(n):  # at step 25, with chunk 4 (steps 31-40) sampled or being sampled
        assert threading.active_count() == before + 1
        raise KeyboardInterrupt

    torch.set_num_threads(2)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_group([trial(0)], progress=interrupt)
    finally:
        torch.set_num_threads(threads)
    assert threading.active_count() == before


def test_chunks_alternate_two_buffers_and_sample_in_order():
    from bindscale.studies.scaling.trial import _chunks

    calls = []

    def sample(n, out):
        calls.append((n, out))
        return out if out is not None and out[0] == n else [n]  # a buffer is reused where it fits

    got = []
    for data in _chunks(sample, [3, 3, 3, 3, 2], background=True):
        # The chunk handed out is never the buffer the next chunk is being sampled into.
        got.append(data)
        assert all(out is not data for _, out in calls[len(got):])
    assert [n for n, _ in calls] == [3, 3, 3, 3, 2]
    assert [out for _, out in calls[:2]] == [None, None]
    assert calls[2][1] is got[0] and calls[3][1] is got[1] and calls[4][1] is got[2]
    assert got[2] is got[0] and got[3] is got[1] and got[4] == [2]


def test_background_sampling_can_turn_on_mid_training_without_writing_the_chunk_in_use():
    """ThreadWatch fell back to one thread: from the next chunk on, sampling runs beside the step."""
    from bindscale.studies.scaling.trial import _chunks

    calls, got, flag = [], [], [False]

    def sample(n, out):
        calls.append((n, out, threading.current_thread().name))
        return out if out is not None and out[0] == n else [n]

    for k, data in enumerate(_chunks(sample, [3, 3, 3, 3, 2], background=lambda: flag[0])):
        got.append(data)
        for _, out, _ in calls[len(got):]:  # what is being sampled now is never the chunk handed out
            assert out is not data
        if k == 1:
            flag[0] = True  # the watch fell back during chunk 1
    assert [n for n, _, _ in calls] == [3, 3, 3, 3, 2]
    names = [name for _, _, name in calls]
    assert names[:2] == [threading.main_thread().name] * 2  # inline, one buffer reused
    assert got[0] is got[1]
    assert all(name.startswith("bindscale-sampler") for name in names[2:])
    # chunk 2 reuses chunk 1's buffer (trained on by then); chunk 3, sampled while chunk 2 trains, gets a
    # second buffer; chunk 4 is sampled into chunk 2's
    assert got[2] is got[1] and got[3] is not got[2] and calls[4][1] is got[2]
    assert not [t for t in threading.enumerate() if t.name.startswith("bindscale-sampler")]  # shut down


def test_a_trial_records_the_threads_its_step_ran_on_and_whether_sampling_ran_beside_it(monkeypatch):
    from bindscale.studies.scaling import trial as train
    from bindscale.train import speed

    before = train.torch.get_num_threads()
    try:
        train.torch.set_num_threads(1)
        m = train.run_group([trial(0)])[0].metrics
        assert (m["threads_used"], m["background_sampling"]) == (1, False)
        monkeypatch.setattr(train, "intra_op_threads", lambda trials, threads, timer=None: 1)
        train.torch.set_num_threads(2)
        m = train.run_group([trial(0)])[0].metrics
        assert (m["threads_used"], m["background_sampling"]) == (1, True)  # the second core samples
        monkeypatch.setattr(train, "intra_op_threads", lambda trials, threads, timer=None: threads)
        monkeypatch.setattr(speed, "ThreadWatch", _SteadyWatch)  # (its fall-back depends on the load)
        m = train.run_group([trial(0)])[0].metrics
        assert (m["threads_used"], m["background_sampling"]) == (2, False)
    finally:
        train.torch.set_num_threads(before)


def test_run_group_restores_the_callers_threads_after_a_fall_back(monkeypatch):
    """The watch switches the process's threads; run_group hands the caller's setting back and records
    the step it fell back at."""
    from bindscale.train import speed, threads as threadwatch
    from bindscale.studies.scaling import trial as train

    class FallsBackAtStep3(threadwatch.ThreadWatch):
        def step_done(self, step):
            if step == 3 and self.fell_back_at is None:
                self._switch(1)
                self.fell_back_at = step

    monkeypatch.setattr(speed, "ThreadWatch", FallsBackAtStep3)
    monkeypatch.setattr(train, "intra_op_threads", lambda trials, threads, timer=None: threads)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        m = train.run_group([trial(0)])[0].metrics
        assert (m["threads_used"], m["threads_fallback_step"]) == (2, 3)
        assert torch.get_num_threads() == 2
        # the real watch: whether it falls back depends on the machine's load now (timing), not asserted
        monkeypatch.setattr(speed, "ThreadWatch", threadwatch.ThreadWatch)
        m = train.run_group([trial(0)])[0].metrics
        assert m["threads_fallback_step"] is None or 1 < m["threads_fallback_step"] <= 40
        assert torch.get_num_threads() == 2
        torch.set_num_threads(1)
        assert train.run_group([trial(0)])[0].metrics["threads_fallback_step"] is None
    finally:
        torch.set_num_threads(before)
