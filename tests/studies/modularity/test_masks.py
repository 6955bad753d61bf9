import numpy as np
import pytest
import torch
from torch import nn

from bindscale.studies.modularity.masks import (
    MaskedModel,
    accuracy,
    accuracy_of,
    apply_mask,
    beta_schedule,
    find_mask,
    random_mask_like,
    task_loss,
)
from bindscale.models.mlp import MLPConfig, StackedMLP
from bindscale.studies.modularity.tasks import CompoundTask, make_datasets

S = C = 4
K = 4.0  # readout gain: logits ±K/2


def squeeze(f, x):
    return f(x).squeeze(-1)


def hand_built(task: CompoundTask, form: str = "violation") -> nn.Module:
    """A 2-branch ReLU net solving "same shape AND same colour" with known, disjoint weights.

    Hidden units 0..S-1 read only the shape columns (subroutine A), units S..S+C-1
    only the colour columns (B); the readout combines them.

    - "violation": unit v = ReLU(shape1_v − shape2_v) fires iff the shapes differ and
      object 1 has shape v; logit = K (1/2 − Σ units). Without one branch the other
      still decides alone (a missing branch reads as "no violation").
    - "and": unit v = ReLU(shape1_v + shape2_v − 1) fires iff both have shape v;
      logit = K (Σ units − 3/2): the output needs positive evidence from both branches.
    """
    S_, C_ = task.n_shapes, task.n_colours
    net = nn.Sequential(nn.Linear(task.dim, S_ + C_), nn.ReLU(), nn.Linear(S_ + C_, 1))
    cols = {"A": task.factor_columns("A"), "B": task.factor_columns("B")}
    sign = -1.0 if form == "violation" else 1.0
    with torch.no_grad():
        net[0].weight.zero_()
        net[0].bias.fill_(0.0 if form == "violation" else -1.0)
        for factor, units, V in (("A", range(S_), S_), ("B", range(S_, S_ + C_), C_)):
            for i, unit in enumerate(units):
                net[0].weight[unit, cols[factor][i]] = 1.0
                net[0].weight[unit, cols[factor][V + i]] = sign
        net[2].weight.fill_(-K if form == "violation" else K)
        net[2].bias.fill_(K / 2 if form == "violation" else -1.5 * K)
    return net


def block_of(net: nn.Module, factor: str) -> torch.Tensor:
    """Boolean (hidden, D) mask of the nonzero first-layer weights of one branch."""
    rows = torch.arange(S + C)[:, None]
    branch = rows < S if factor == "A" else rows >= S
    return (net[0].weight != 0) & branch


@pytest.fixture(scope="module")
def data():
    # Most of the tiny 4 x 4 scene space for the masks' training sets: every hand-built unit fires there.
    return make_datasets(CompoundTask(S, C), np.random.default_rng(0), 400, 400, fractions=(0.1, 0.6, 0.3))


def test_the_hand_built_nets_solve_the_compound_task(data):
    for form in ("violation", "and"):
        net = hand_built(CompoundTask(S, C), form)
        for key in ("compound_test", "sub_A_test", "sub_B_test"):
            assert accuracy(net, squeeze, data[key].xy()) == 1.0


def test_beta_is_annealed_geometrically_from_start_to_end():
    betas = [beta_schedule(t, 11, 1.0, 200.0) for t in range(11)]
    assert betas[0] == pytest.approx(1.0) and betas[-1] == pytest.approx(200.0)
    ratios = np.array(betas[1:]) / np.array(betas[:-1])
    np.testing.assert_allclose(ratios, 200.0 ** 0.1, rtol=1e-9)
    assert beta_schedule(0, 1, 1.0, 200.0) == 200.0
    with pytest.raises(ValueError):
        beta_schedule(0, 0)
    with pytest.raises(ValueError):
        beta_schedule(0, 5, beta_start=0.0)


def test_mask_search_recovers_the_subroutine_block_and_ends_binary(data):
    net = hand_built(CompoundTask(S, C))
    res = find_mask(net, ["0.weight", "2.weight"], squeeze, data["sub_A_train"].xy(), steps=200)
    m = res.masks["0.weight"]
    a_block, b_block = block_of(net, "A"), block_of(net, "B")
    assert (m & a_block).sum() == a_block.sum() == 2 * S  # every weight of A's branch kept
    assert (m & b_block).sum() == 0  # nothing of B's branch
    assert (m & (net[0].weight == 0)).sum() == 0  # no zero weight (they cannot matter)
    assert res.masks["2.weight"][0].tolist() == [True] * S + [False] * C
    assert res.accuracy == 1.0
    assert res.density == pytest.approx((3 * S) / (net[0].weight.numel() + S + C))
    assert res.densities["2.weight"] == 0.5
    # β ends at 200: the soft mask is effectively the hard one
    assert res.beta_end == pytest.approx(200.0)
    assert res.binary_fraction(1e-2) >= 0.99
    soft = res.soft_masks()["0.weight"]
    assert ((soft - m.float()).abs() <= 1e-2).float().mean() >= 0.99


def test_without_annealing_the_mask_is_not_binary(data):
    # the binarity check above can fail: at β = 1 the same search leaves soft values
    net = hand_built(CompoundTask(S, C))
    res = find_mask(net, ["0.weight", "2.weight"], squeeze, data["sub_A_train"].xy(), steps=30,
                    beta_start=1.0, beta_end=1.0)
    assert res.binary_fraction(1e-2) < 0.5


def test_base_weights_gradients_and_flags_are_untouched(data):
    net = hand_built(CompoundTask(S, C))
    net.train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    res = find_mask(net, ["0.weight", "2.weight"], squeeze, data["sub_A_train"].xy(), steps=20, lr=0.5)
    sub = apply_mask(net, res.masks)
    abl = apply_mask(net, res.masks, complement=True)
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k]), k  # bitwise
        assert v.data_ptr() != sub.state_dict()[k].data_ptr() != abl.state_dict()[k].data_ptr()
    assert all(p.grad is None and p.requires_grad for p in net.parameters())
    assert net.training and net[0].training


def test_apply_mask_keeps_the_subnetwork_or_zeroes_it(data):
    net = hand_built(CompoundTask(S, C))
    g = torch.Generator().manual_seed(1)
    masks = {"0.weight": torch.rand(net[0].weight.shape, generator=g) > 0.5}
    sub = apply_mask(net, masks)
    abl = apply_mask(net, masks, complement=True)
    w = net[0].weight
    assert torch.equal(sub[0].weight, torch.where(masks["0.weight"], w, torch.zeros_like(w)))
    assert torch.equal(abl[0].weight, torch.where(masks["0.weight"], torch.zeros_like(w), w))
    assert torch.equal(sub[0].weight + abl[0].weight, w)  # ablation = exactly the weights the mask removed
    for part in (sub, abl):  # unmasked parameters are copied as they are
        assert torch.equal(part[0].bias, net[0].bias) and torch.equal(part[2].weight, net[2].weight)
    x = data["compound_test"].onehot
    full = apply_mask(net, {"0.weight": torch.ones_like(w, dtype=torch.bool)})
    assert torch.equal(full(x), net(x))


def test_apply_mask_rejects_bad_masks():
    net = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="shape"):
        apply_mask(net, {"weight": torch.ones(3, 2, dtype=torch.bool)})
    with pytest.raises(ValueError, match="unknown"):
        apply_mask(net, {"weights": torch.ones(2, 3)})
    with pytest.raises(ValueError, match="binary"):
        apply_mask(net, {"weight": torch.full((2, 3), 0.5)})


def test_random_mask_keeps_the_same_count_per_parameter():
    g = torch.Generator().manual_seed(0)
    masks = {"a": torch.zeros(10, 20, dtype=torch.bool), "b": torch.ones(1, 7, 5, dtype=torch.bool)}
    masks["a"][:3] = True  # 60 kept, all in the first rows
    masks["b"][0, 0] = False  # 30 kept
    r = random_mask_like(masks, g)
    assert r["a"].shape == (10, 20) and r["b"].shape == (1, 7, 5) and r["a"].dtype == torch.bool
    assert int(r["a"].sum()) == 60 and int(r["b"].sum()) == 30
    assert not torch.equal(r["a"], masks["a"])
    again = random_mask_like(masks, torch.Generator().manual_seed(0))
    assert torch.equal(again["a"], r["a"]) and torch.equal(again["b"], r["b"])
    single = random_mask_like(masks["a"].float(), torch.Generator().manual_seed(1))
    assert single.shape == (10, 20) and int(single.sum()) == 60


def test_masked_model_trains_only_logits_and_rejects_unknown_names():
    net = nn.Linear(3, 2)
    mm = MaskedModel(net, ["weight"], init_logit=1.0)
    assert [p.shape for p in mm.parameters()] == [torch.Size([2, 3])]
    x = torch.randn(4, 3)
    assert torch.equal(mm(x, mode="hard"), net(x))  # all logits > 0: everything kept
    assert torch.equal(mm(x, mode="complement"), net.bias.detach().expand(4, 2))
    mm.beta = 1.0
    torch.testing.assert_close(mm(x), x @ (net.weight * torch.sigmoid(torch.tensor(1.0))).T + net.bias)
    with pytest.raises(ValueError, match="no parameter"):
        MaskedModel(net, ["weights"])
    with pytest.raises(ValueError, match="empty"):
        MaskedModel(net, [])
    with pytest.raises(ValueError, match="mode"):
        mm(x, mode="half")


def test_loss_and_accuracy_dispatch_on_the_logit_shape():
    y = torch.tensor([1, 0, 1])
    binary = torch.tensor([2.0, -1.0, -3.0])
    assert accuracy_of(binary, y) == pytest.approx(2 / 3)
    assert accuracy_of(binary[:, None], y) == pytest.approx(2 / 3)
    expected = nn.functional.binary_cross_entropy_with_logits(binary, y.float())
    torch.testing.assert_close(task_loss(binary[:, None], y), expected)
    multi = torch.tensor([[0.0, 1.0, 0.0], [3.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert accuracy_of(multi, y) == pytest.approx(2 / 3)
    torch.testing.assert_close(task_loss(multi, y), nn.functional.cross_entropy(multi, y))
    with pytest.raises(ValueError, match="forward_fn"):
        task_loss(torch.zeros(2), y)


def test_works_on_a_stacked_mlp_with_one_trial():
    torch.manual_seed(0)
    task = CompoundTask(S, C)
    ds = task.compound(256, np.random.default_rng(0))
    model = StackedMLP(MLPConfig(width=16, depth=2, init="torch_uniform"), code_dim=task.dim, x_dim=0,
                       out_dim=1,
                       n_modules=2, gens=[torch.Generator().manual_seed(0)])

    def fwd(f, x):  # (B, D) → code (1, B, D), x (1, B, 1, 0) → logits (B,)
        return f(x[None], x.new_zeros(1, len(x), 1, 0)).reshape(-1)

    x = ds.onehot
    with torch.no_grad():
        own = (fwd(model, x) > 0).long()  # the model's own decisions: the full mask scores 100%
    before = {k: v.clone() for k, v in model.state_dict().items()}
    names = ["weights.0", "weights.1", "weights.2"]
    res = find_mask(model, names, fwd, (x, own), steps=150, lambda_l0=0.01, batch_size=128,
                    generator=torch.Generator().manual_seed(0))
    assert {n: tuple(m.shape) for n, m in res.masks.items()} == {
        "weights.0": (1, task.dim, 16), "weights.1": (1, 16, 16), "weights.2": (1, 16, 1)}
    assert res.accuracy >= 0.95
    assert 0 < res.density < 1
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    abl = apply_mask(model, res.masks, complement=True)
    assert abl.weights[0].shape == (1, task.dim, 16)
    assert accuracy(apply_mask(model, res.masks), fwd, (x, own)) == res.accuracy
