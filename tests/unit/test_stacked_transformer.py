"""The stacked transformer and stacked sequence training: a stacked trial is the same trial trained alone.

fp32, one torch thread (conftest). "Equal up to float rounding": per-step losses within 1e-5 relative.
"""

import math

import pytest
import torch

from bindscale.train import loop as seqtrain
from bindscale.models.stacked_transformer import StackedTransformer
from bindscale.models.transformer import Transformer
from bindscale.train.loop import (
    PerTrialAdamW,
    batch_indices,
    clip_per_trial_,
    fit_stacked_minibatches,
    stacked_seq_loss,
    train_seq_model,
    train_stacked_seq_model,
)

V = 11  # 0 pads; 1..10 are symbols

#: Two shapes: rotary 2 layers x 32 x 4 heads; learned positions, 1 layer x 48 x 2 heads, explicit d_ff.
SHAPES = {
    "rope_2x32": dict(n_layers=2, d_model=32, n_heads=4, pos="rope"),
    "learned_1x48": dict(n_layers=1, d_model=48, n_heads=2, pos="learned", d_ff=80),
}
MAX_LEN = 24


def plain(seed: int, shape: str) -> Transformer:
    return Transformer(V, max_len=MAX_LEN, generator=torch.Generator().manual_seed(seed), **SHAPES[shape])


def data(seed: int, N: int = 48, L: int = 16):
    """A random copy-ish training set of its own per seed: variable lengths, loss on each sequence's tail."""
    g = torch.Generator().manual_seed(1000 + seed)
    tok = torch.randint(1, V, (N, L), generator=g)
    lens = torch.randint(6, L + 1, (N,), generator=g)
    mask = torch.zeros(N, L, dtype=torch.bool)
    for n, k in enumerate(lens.tolist()):
        tok[n, k:] = 0
        mask[n, 3:k - 1] = True
    return tok, mask


def alone(seed: int, shape: str, d, steps: int = 50, **kw) -> tuple[dict, list[float], Transformer]:
    m = plain(seed, shape)
    losses: list[float] = []
    args = dict(steps=steps, batch_size=8, lr=3e-3, weight_decay=0.1, warmup_steps=5, grad_clip=1.0,
                generator=torch.Generator().manual_seed(seed)) | kw
    out = train_seq_model(m, *d, on_step=lambda s, v: losses.append(v), **args)
    return out, losses, m


def stacked(seeds: list[int], shape: str, ds, steps: int = 50, **kw) -> tuple[list[dict], list[list[float]], StackedTransformer]:
    st = StackedTransformer.from_members([plain(s, shape) for s in seeds])
    losses: list[list[float]] = [[] for _ in seeds]
    args = dict(steps=steps, batch_size=8, lr=3e-3, weight_decay=0.1, warmup_steps=5, grad_clip=1.0,
                generators=[torch.Generator().manual_seed(s) for s in seeds]) | kw
    out = train_stacked_seq_model(st, ds, on_step=lambda t, s, v: losses[t].append(v), **args)
    return out, losses, st


def rel(a: list[float], b: list[float]) -> float:
    assert len(a) == len(b)
    return max(abs(x - y) / abs(x) for x, y in zip(a, b))


# --- the model -------------------------------------------------------------------------------------


@pytest.mark.parametrize("pos", ["rope", "learned", "none"])
def test_each_member_starts_as_the_plain_model_of_its_seed_and_computes_its_logits(pos):
    gens = [torch.Generator().manual_seed(s) for s in (3, 4, 5)]
    st = StackedTransformer(V, 2, 32, 4, max_len=MAX_LEN, generators=gens, pos=pos)
    tokens = torch.randint(0, V, (3, 5, 17))
    logits = st(tokens)
    assert logits.shape == (3, 5, 17, V)
    for i, s in enumerate((3, 4, 5)):
        ref = Transformer(V, 2, 32, 4, max_len=MAX_LEN, generator=torch.Generator().manual_seed(s), pos=pos)
        mem = st.member(i)
        assert isinstance(mem, Transformer) and mem.pos == pos
        for (k, a), (k2, b) in zip(ref.state_dict().items(), mem.state_dict().items()):
            assert k == k2 and torch.equal(a, b), k
        assert torch.allclose(logits[i], ref(tokens[i]), rtol=0, atol=1e-6)
    assert st.n_params() == ref.n_params()


def test_member_and_from_members_round_trip_and_the_member_is_a_full_plain_model():
    members = [plain(s, "rope_2x32") for s in range(3)]
    st = StackedTransformer.from_members(members)
    back = StackedTransformer.from_members([st.member(i) for i in range(3)])
    for (k, a), b in zip(st.state_dict().items(), back.state_dict().values()):
        assert torch.equal(a, b), k
    m1 = st.member(1)
    assert m1 is not members[1]
    m1.embed.weight.data.zero_()  # a copy: the stack is untouched
    assert torch.equal(st.embed.weight[1], members[1].embed.weight)
    # Generation and head ablation work on the member as on the plain model.
    mem, ref = st.member(2), members[2]
    prompts = [[1, 2, 3], [4, 5, 6, 7]]
    assert mem.generate(prompts, 5, stop_id=10) == ref.generate(prompts, 5, stop_id=10)
    x = torch.randint(1, V, (2, 9))
    assert torch.equal(mem(x, ablate={0: [1]}), ref(x, ablate={0: [1]}))
    # Rotary: a member may take its own trial's max_len (no weight depends on it).
    assert st.member(0, max_len=40).max_len == 40
    with pytest.raises(IndexError):
        st.member(3)


def test_from_members_refuses_members_of_different_shapes():
    with pytest.raises(ValueError, match="differ in shape"):
        StackedTransformer.from_members([plain(0, "rope_2x32"), plain(1, "learned_1x48")])


# --- the optimiser and clipping ---------------------------------------------------------------------


def test_per_trial_adamw_is_torch_adamw_on_each_trial_bit_for_bit():
    torch.manual_seed(0)
    T = 3
    shapes = [(5, 7), (7,), (13, 3)]  # sizes not multiples of a vector width: the fused kernel's tail
    stack = [torch.randn(T, *s, requires_grad=True) for s in shapes]
    alone = [[torch.nn.Parameter(p[t].detach().clone()) for p in stack] for t in range(T)]
    wds, lrs = [0.1, 0.0, 0.3], [1e-2, 3e-2, 1e-2]
    opt = PerTrialAdamW(stack, wds)
    refs = [torch.optim.AdamW([{"params": [q for q in ps if q.dim() >= 2], "weight_decay": wd},
                               {"params": [q for q in ps if q.dim() < 2], "weight_decay": 0.0}],
                              lr=lr, betas=(0.9, 0.95), fused=True) for ps, wd, lr in zip(alone, wds, lrs)]
    for _ in range(4):
        grads = [torch.randn(T, *s) for s in shapes]
        for p, g in zip(stack, grads):
            p.grad = g.clone()
        opt.step(lrs, [0, 1, 2])
        for t, (ps, ref) in enumerate(zip(alone, refs)):
            for q, g in zip(ps, grads):
                q.grad = g[t].clone()
            ref.step()
    for t in range(T):
        for p, q in zip(stack, alone[t]):
            assert torch.equal(p[t].detach(), q.detach())


def test_per_trial_adamw_goes_whole_then_sliced_and_stays_torch_adamw_bit_for_bit():
    """Aligned slices (multiples of ALIGN elements), one learning rate and weight decay: one kernel call per
    stacked tensor. Then trial 1 freezes at step 4 and trial 2 takes another rate from step 7: from then on
    slices, each trial's step count carried over; every trial still matches torch.optim.AdamW alone."""
    from bindscale.train.stacked_adamw import ALIGN

    torch.manual_seed(2)
    T = 3
    shapes = [(4, ALIGN), (ALIGN,), (2, 2 * ALIGN)]
    stack = [torch.randn(T, *s, requires_grad=True) for s in shapes]
    alone = [[torch.nn.Parameter(p[t].detach().clone()) for p in stack] for t in range(T)]
    opt = PerTrialAdamW(stack, 0.1)
    assert opt.whole
    refs = [torch.optim.AdamW([{"params": [q for q in ps if q.dim() >= 2], "weight_decay": 0.1},
                               {"params": [q for q in ps if q.dim() < 2], "weight_decay": 0.0}],
                              lr=1e-2, betas=(0.9, 0.95), fused=True) for ps in alone]
    for step in range(10):
        active = [0, 2] if step >= 4 else [0, 1, 2]
        lrs = [1e-2, 1e-2, 3e-2 if step >= 7 else 1e-2]
        grads = [torch.randn(T, *s) for s in shapes]
        for p, g in zip(stack, grads):
            p.grad = g.clone()
        opt.step(lrs, active)
        assert opt._sliced == (step >= 4)
        for t in active:
            for group in refs[t].param_groups:
                group["lr"] = lrs[t]
            for q, g in zip(alone[t], grads):
                q.grad = g[t].clone()
            refs[t].step()
    for t in range(T):
        for p, q in zip(stack, alone[t]):
            assert torch.equal(p[t].detach(), q.detach()), t


def test_per_trial_adamw_leaves_frozen_trials_alone():
    p = torch.zeros(2, 4, 4, requires_grad=True)
    opt = PerTrialAdamW([p], 0.1)
    p.grad = torch.ones(2, 4, 4)
    opt.step([1.0, 1.0], [1])
    assert torch.equal(p[0].detach(), torch.zeros(4, 4)) and not torch.equal(p[1].detach(), torch.zeros(4, 4))


def test_clipping_is_per_trial_each_trial_as_torch_clips_it_alone():
    torch.manual_seed(1)
    a = torch.zeros(3, 4, 5, requires_grad=True)
    b = torch.zeros(3, 5, requires_grad=True)
    scale = torch.tensor([100.0, 0.01, 3.0])  # trial 0 clipped hard, trial 1 under the limit, trial 2 unclipped
    a.grad = torch.randn(3, 4, 5) * scale.view(3, 1, 1)
    b.grad = torch.randn(3, 5) * scale.view(3, 1)
    before = [(a.grad[t].clone(), b.grad[t].clone()) for t in range(3)]
    norms = clip_per_trial_([a, b], [1.0, 1.0, None])
    for t, (ga, gb) in enumerate(before):
        ref = [torch.nn.Parameter(torch.zeros_like(ga)), torch.nn.Parameter(torch.zeros_like(gb))]
        ref[0].grad, ref[1].grad = ga.clone(), gb.clone()
        n = torch.nn.utils.clip_grad_norm_(ref, math.inf if t == 2 else 1.0)
        assert torch.allclose(norms[t], n, rtol=1e-6)
        assert torch.allclose(a.grad[t], ref[0].grad, rtol=1e-6, atol=0)
        assert torch.allclose(b.grad[t], ref[1].grad, rtol=1e-6, atol=0)
    # The small trial is untouched: a global norm over the stack (dominated by trial 0) would shrink it.
    assert norms[1] < 1 and torch.equal(a.grad[1], before[1][0]) and torch.equal(b.grad[1], before[1][1])
    assert norms[2] > 1 and torch.equal(a.grad[2], before[2][0])


# --- training: stacked equals alone -------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_stacked_trial_trains_as_it_would_alone(shape):
    """Loss curves within 1e-5 relative over 50 steps, for every member of a stack of 4 with different seeds,
    training sets (lengths included) and learning rates."""
    seeds, lrs = [0, 1, 2, 3], [3e-3, 1e-3, 5e-3, 3e-3]
    ds = [data(s, L=12 + 2 * s) for s in seeds]
    outs, curves, st = stacked(seeds, shape, ds, lr=lrs)
    for t, s in enumerate(seeds):
        ref, ref_curve, ref_model = alone(s, shape, ds[t], lr=lrs[t])
        assert len(curves[t]) == 50 and rel(ref_curve, curves[t]) < 1e-5, (s, rel(ref_curve, curves[t]))
        assert outs[t]["status"] == ref["status"] == "ok" and outs[t]["steps_done"] == 50
        assert [x for x, _ in outs[t]["loss_curve"]] == [x for x, _ in ref["loss_curve"]]
        assert abs(outs[t]["final_loss"] - ref["final_loss"]) < 1e-5 * ref["final_loss"]
        # The trained member computes what the model trained alone computes. (Weights are not compared one
        # by one: AdamW turns the float noise of a zero gradient, e.g. of the key biases, which cannot change
        # attention, into steps of size lr, so such weights differ at 1e-3 without changing any output.)
        x = ds[t][0][:8, :-1]
        assert torch.allclose(st.member(t)(x), ref_model(x), rtol=1e-4, atol=1e-4)


def test_trials_sharing_rate_and_decay_take_the_whole_tensor_path_and_still_train_as_alone():
    """One learning rate and weight decay, widths of whole ALIGN multiples: AdamW runs one call per stacked
    tensor (no per-trial slices) and every trial's curve is still its curve alone."""
    seeds = [0, 1, 2]
    assert PerTrialAdamW(list(StackedTransformer.from_members([plain(s, "rope_2x32") for s in seeds]).parameters()),
                         0.1).whole
    ds = [data(s) for s in seeds]
    _, curves, _ = stacked(seeds, "rope_2x32", ds)
    for t, s in enumerate(seeds):
        assert rel(alone(s, "rope_2x32", ds[t])[1], curves[t]) < 1e-5


def test_a_stack_of_one_and_a_stack_of_four_give_the_same_records():
    seeds, lrs = [5, 6, 7, 8], [2e-3, 4e-3, 2e-3, 1e-3]
    ds = [data(s) for s in seeds]
    four, curves4, st4 = stacked(seeds, "rope_2x32", ds, lr=lrs, weight_decay=[0.1, 0.0, 0.1, 0.2])
    for t, s in enumerate(seeds):
        one, curves1, st1 = stacked([s], "rope_2x32", [ds[t]], lr=[lrs[t]], weight_decay=[[0.1, 0.0, 0.1, 0.2][t]])
        assert rel(curves1[0], curves4[t]) < 1e-5
        drop = ("steps_per_s", "train_seconds", "tokens_per_s", "loss_curve", "final_loss")
        assert {k: v for k, v in one[0].items() if k not in drop} == {k: v for k, v in four[t].items() if k not in drop}
        assert rel([v for _, v in one[0]["loss_curve"]], [v for _, v in four[t]["loss_curve"]]) < 1e-5
        x = ds[t][0][:8, :-1]
        assert torch.allclose(st1.member(0)(x), st4.member(t)(x), rtol=1e-4, atol=1e-4)


def test_per_trial_clipping_keeps_trials_apart_where_global_clipping_would_couple_them(monkeypatch):
    """A trial with a high learning rate (large gradients) beside a quiet one, clipped at 0.05 every step:
    the quiet trial's curve is its curve alone. A global norm over the stack would shrink the quiet trial's
    gradient by the loud one's norm, moving its curve far more than 1e-5 (checked below by doing that)."""
    seeds, lrs = [0, 1], [3e-2, 1e-3]
    ds = [data(s) for s in seeds]
    _, curves, _ = stacked(seeds, "rope_2x32", ds, lr=lrs, grad_clip=0.05, steps=30)
    _, ref_curve, _ = alone(1, "rope_2x32", ds[1], lr=1e-3, grad_clip=0.05, steps=30)
    assert rel(ref_curve, curves[1]) < 1e-5

    # The same stack with one global norm (what clip_grad_norm_ over the stacked parameters does).
    st = StackedTransformer.from_members([plain(s, "rope_2x32") for s in seeds])
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    idx = torch.stack([batch_indices(ds[t][0].shape[0], 30, 8, gens[t]) for t in range(2)])
    tokens, mask = torch.stack([d[0] for d in ds]), torch.stack([d[1] for d in ds])
    params = list(st.parameters())
    glob: list[float] = []
    monkeypatch.setattr(seqtrain, "clip_per_trial_", lambda ps, clips: torch.nn.utils.clip_grad_norm_(ps, 0.05))
    ar = torch.arange(2)[:, None]
    fit_stacked_minibatches(params, lambda step, rows: stacked_seq_loss(st, tokens[ar, rows], mask[ar, rows]), idx,
                            lr=lrs, weight_decay=0.1, warmup_steps=5, grad_clip=0.05,
                            on_step=lambda t, s, v: glob.append(v) if t == 1 else None)
    assert rel(ref_curve, glob) > 1e-3


def test_a_diverging_member_is_recorded_and_frozen_and_the_others_are_undisturbed():
    seeds = [0, 1, 2]
    ds = [data(s) for s in seeds]
    lrs = [3e-3, 1e6, 2e-3]  # trial 1 blows up (no clipping, so its steps are huge)
    outs, curves, st = stacked(seeds, "rope_2x32", ds, lr=lrs, grad_clip=None, warmup_steps=0, steps=40)
    bad = outs[1]
    assert bad["status"] == "diverged" and bad["diverged_step"] is not None and bad["diverged_step"] < 40
    assert bad["steps_done"] == bad["diverged_step"] and not math.isfinite(bad["final_loss"])
    assert all(math.isfinite(v) for _, v in bad["loss_curve"])
    frozen = st.member(1).state_dict()
    for t in (0, 2):
        ref, ref_curve, _ = alone(seeds[t], "rope_2x32", ds[t], lr=lrs[t], grad_clip=None, warmup_steps=0, steps=40)
        assert outs[t]["status"] == "ok" and outs[t]["diverged_step"] is None
        assert rel(ref_curve, curves[t]) < 1e-5
    # Frozen from its diverged step: its weights are those before that step's update, all finite.
    assert all(bool(torch.isfinite(v).all()) for v in frozen.values())


def test_stacked_training_rejects_mismatched_inputs():
    st = StackedTransformer.from_members([plain(0, "rope_2x32"), plain(1, "rope_2x32")])
    d = data(0)
    with pytest.raises(ValueError, match="2 training sets"):
        train_stacked_seq_model(st, [d], steps=2, batch_size=4, lr=1e-3, weight_decay=0.0, warmup_steps=0,
                                grad_clip=None, generators=[torch.Generator()])
    with pytest.raises(ValueError, match="lr has 3 values"):
        train_stacked_seq_model(st, [d, d], steps=2, batch_size=4, lr=[1e-3] * 3, weight_decay=0.0, warmup_steps=0,
                                grad_clip=None, generators=[torch.Generator(), torch.Generator()])


# --- the subgraphs study, end to end ------------------------------------------------------------------


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN (a compounding fit of constant accuracies has R² NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_subgraphs_trials_stacked_give_the_records_they_give_alone():
    """Three tiny subgraphs trials (seeds 0 and 1 at one lr, seed 2 at another) share a stack key and train
    as one stack through the study's trainer; each record equals the trial's record alone: every metric
    (accuracies, taxonomies, coverage, examples...) identical, the losses within 1e-5 relative, only the
    timings differ. A trial of another shape trains alone in the same job."""
    from bindscale.studies.subgraphs import trial as sg
    from bindscale.studies.subgraphs.config import SubgraphsTrial
    from bindscale.studies.subgraphs.plan import group_key, stack_step_seconds

    base = {"task": {"n_train": 200, "id_max": 3, "ood_max": 4, "n_test": 4},
            "model": {"n_layers": 1, "d_model": 32, "n_heads": 2},
            "train": {"steps": 30, "batch_size": 16, "warmup_steps": 5}}
    trials = [SubgraphsTrial.model_validate(base | {"seed": s}) for s in (0, 1)]
    trials.append(SubgraphsTrial.model_validate(base | {"seed": 2, "train": base["train"] | {"lr": 3e-3}}))
    other = SubgraphsTrial.model_validate(base | {"model": {"n_layers": 1, "d_model": 16, "n_heads": 2}})
    assert len({group_key(t) for t in trials}) == 1 and group_key(other) != group_key(trials[0])
    stacked = sg.run_group([trials[0], other, *trials[1:]], return_models=True)
    stacked = [stacked[0], *stacked[2:], stacked[1]]
    for t, res in zip([*trials, other], stacked):
        ref = sg.run_trial(t, return_models=True)
        assert res.status == ref.status == "ok"
        a, b = dict(ref.metrics), dict(res.metrics)
        for m in (a, b):
            m.pop("timings"), m.pop("steps_per_s")
        assert rel(a.pop("curve_loss"), b.pop("curve_loss")) < 1e-5
        assert abs(a.pop("final_loss") - b.pop("final_loss")) < 1e-5 * ref.metrics["final_loss"]
        assert _same(a, b), [k for k in a if not _same(a[k], b.get(k))]
        assert isinstance(res.model, Transformer) and not res.model.training
        assert res.model_kwargs == ref.model_kwargs and res.model.max_len == ref.model.max_len
    assert stack_step_seconds(trials) > 0


def test_the_planner_stacks_subgraphs_trials_that_differ_in_seed_and_lr_only():
    from bindscale.studies.subgraphs.config import SubgraphsTrial
    from bindscale.run.planner import plan_jobs

    base = {"model": {"n_layers": 1, "d_model": 16, "n_heads": 2}, "train": {"steps": 15, "batch_size": 16}}
    trials = [SubgraphsTrial.model_validate(base | {"seed": s, "train": base["train"] | {"lr": lr}})
              for s in range(3) for lr in (1e-3, 3e-3)]
    trials.append(SubgraphsTrial.model_validate(base | {"train": base["train"] | {"steps": 20}}))  # other schedule
    trials.append(SubgraphsTrial.model_validate(base | {"task": {"scratchpad": False}}))  # other task format
    jobs = plan_jobs(trials, n_workers=1, memory=64 << 30)
    assert sorted(len(j) for j in jobs) == [1, 1, 6]
