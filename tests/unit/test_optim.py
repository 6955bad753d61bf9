import torch

from bindscale.optim import StackedAdamW


def test_matches_torch_adamw_per_trial_with_different_lr_and_wd():
    g = torch.Generator().manual_seed(0)
    lrs, wds = [1e-3, 3e-2, 1e-4], [0.0, 0.1, 3e-3]
    stacked = torch.nn.Parameter(torch.randn(3, 5, 4, generator=g))
    singles = [torch.nn.Parameter(stacked[t].detach().clone()) for t in range(3)]
    opt = StackedAdamW([stacked], lr=torch.tensor(lrs), weight_decay=torch.tensor(wds))
    refs = [torch.optim.AdamW([p], lr=lr, weight_decay=wd, foreach=False) for p, lr, wd in zip(singles, lrs, wds)]
    for _ in range(25):
        grads = torch.randn(3, 5, 4, generator=g)
        stacked.grad = grads.clone()
        opt.step()
        for t, (p, ref) in enumerate(zip(singles, refs)):
            p.grad = grads[t].clone()
            ref.step()
    for t in range(3):
        torch.testing.assert_close(stacked[t].detach(), singles[t].detach(), rtol=1e-6, atol=1e-7)


def test_zero_gradient_trial_only_decays():
    p = torch.nn.Parameter(torch.ones(2, 3))
    opt = StackedAdamW([p], lr=torch.tensor([0.1, 0.1]), weight_decay=torch.tensor([0.5, 0.0]))
    p.grad = torch.zeros(2, 3)
    opt.step()
    torch.testing.assert_close(p.detach(), torch.tensor([[0.95] * 3, [1.0] * 3]))
