import pytest
import torch

from bindscale.kit import ALIGN
from bindscale.studies.scaling.optim import StackedAdamW


def _run(shape, lrs, wds, steps=25, seed=0):
    """Train a (T, *shape) stack with StackedAdamW and each trial alone with torch's fused AdamW."""
    T = len(lrs)
    gens = [torch.Generator().manual_seed(1000 * seed + t) for t in range(T)]  # trial t's numbers whatever T
    draw = lambda: torch.stack([torch.randn(*shape, generator=g) for g in gens])  # noqa: E731
    stacked = torch.nn.Parameter(draw())
    singles = [torch.nn.Parameter(stacked[t].detach().clone()) for t in range(T)]
    opt = StackedAdamW([stacked], lr=lrs, weight_decay=wds)
    refs = [torch.optim.AdamW([p], lr=lr, weight_decay=wd, fused=True) for p, lr, wd in zip(singles, lrs, wds)]
    for _ in range(steps):
        grads = draw()
        stacked.grad = grads.clone()
        opt.step()
        for t, (p, ref) in enumerate(zip(singles, refs)):
            p.grad = grads[t].clone()
            ref.step()
    return opt, stacked.detach(), [p.detach() for p in singles]


@pytest.mark.parametrize("shape", [(5, 4), (1, 12), (7,), (2, ALIGN)])
@pytest.mark.parametrize("lrs,wds", [([1e-3, 3e-2, 1e-4], [0.0, 0.1, 3e-3]), ([1e-2] * 3, [0.01] * 3)])
def test_each_trial_gets_the_same_bits_as_torch_fused_adamw_on_it_alone(shape, lrs, wds):
    opt, stacked, singles = _run(shape, lrs, wds)
    # one call over the whole stack only where no trial's element can fall in the kernel's scalar tail
    assert opt.whole_params == [len(set(lrs)) == 1 and torch.Size(shape).numel() % ALIGN == 0]
    for t in range(len(lrs)):
        assert torch.equal(stacked[t], singles[t]), t


def test_a_trial_updates_the_same_alone_and_in_stacks_of_any_size():
    # 12 elements per trial: in one (T, 12) tensor, T decides which elements the kernel's
    # vectorized loop takes and which its scalar tail; measured to differ before slicing.
    alone = _run((1, 12), [1e-2], [0.01], steps=50)[1][0]
    for T in (2, 3, 5):
        assert torch.equal(_run((1, 12), [1e-2] * T, [0.01] * T, steps=50)[1][0], alone), T


def test_matches_unfused_torch_adamw_to_rounding():
    _, stacked, _ = _run((5, 4), [1e-3, 3e-2], [0.0, 0.1])
    gens = [torch.Generator().manual_seed(t) for t in range(2)]
    refs = [torch.nn.Parameter(torch.randn(5, 4, generator=g)) for g in gens]
    opts = [torch.optim.AdamW([p], lr=lr, weight_decay=wd, foreach=False) for p, lr, wd in zip(refs, [1e-3, 3e-2], [0.0, 0.1])]
    for _ in range(25):
        for t in range(2):
            refs[t].grad = torch.randn(5, 4, generator=gens[t])
            opts[t].step()
    for t in range(2):
        torch.testing.assert_close(stacked[t], refs[t].detach(), rtol=1e-6, atol=1e-7)


def test_zero_gradient_trial_only_decays():
    p = torch.nn.Parameter(torch.ones(2, 3))
    opt = StackedAdamW([p], lr=torch.tensor([0.1, 0.1]), weight_decay=torch.tensor([0.5, 0.0]))
    p.grad = torch.zeros(2, 3)
    opt.step()
    torch.testing.assert_close(p.detach(), torch.tensor([[0.95] * 3, [1.0] * 3]))


def test_parameter_without_gradient_is_left_alone_and_bad_arguments_are_refused():
    a, b = torch.nn.Parameter(torch.ones(2, 3)), torch.nn.Parameter(torch.ones(2, 4))
    opt = StackedAdamW([a, b], lr=0.1, weight_decay=0.0)
    a.grad = torch.ones(2, 3)
    opt.step()
    assert torch.equal(b.detach(), torch.ones(2, 4)) and not torch.equal(a.detach(), torch.ones(2, 3))
    with pytest.raises(ValueError, match="no parameters"):
        StackedAdamW([], lr=0.1, weight_decay=0.0)
    with pytest.raises(ValueError, match="3 values for 2 trials"):
        StackedAdamW([a], lr=[0.1, 0.2, 0.3], weight_decay=0.0)
    with pytest.raises(ValueError, match="leading trial dimension"):
        StackedAdamW([a, torch.nn.Parameter(torch.ones(3, 3))], lr=0.1, weight_decay=0.0)


def test_aligned_and_unaligned_parameters_mixed_in_one_stack():
    g = torch.Generator().manual_seed(3)
    shapes = [(4, ALIGN), (3, 5), (1, ALIGN)]
    stacked = [torch.nn.Parameter(torch.randn(3, *s, generator=g)) for s in shapes]
    singles = [[torch.nn.Parameter(p[t].detach().clone()) for p in stacked] for t in range(3)]
    opt = StackedAdamW(stacked, lr=1e-2, weight_decay=0.01)
    assert opt.whole_params == [True, False, True] and not opt.whole
    refs = [torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.01, fused=True) for ps in singles]
    for _ in range(20):
        grads = [torch.randn(3, *s, generator=g) for s in shapes]
        for p, gr in zip(stacked, grads):
            p.grad = gr.clone()
        opt.step()
        for t in range(3):
            for p, gr in zip(singles[t], grads):
                p.grad = gr[t].clone()
            refs[t].step()
    for t in range(3):
        for p, q in zip(stacked, singles[t]):
            assert torch.equal(p[t].detach(), q.detach())
