import pytest
import torch

from bindscale.models import run_with_cache
from bindscale.studies.scaling.config import ModelConfig
from bindscale.studies.scaling.students import build_model


def gens(n, seed=0):
    return [torch.Generator().manual_seed(seed + i) for i in range(n)]


@pytest.mark.parametrize("kind", ["mlp", "hypernet"])
def test_activation_points_have_the_declared_shapes(kind):
    m = build_model(ModelConfig(kind=kind, width=12, depth=2), code_dim=8, x_dim=16, out_dim=16, n_modules=8, gens=gens(3))
    code, x = torch.randn(3, 5, 8), torch.randn(3, 5, 7, 16)
    y, acts = run_with_cache(m, code, x)
    assert y.shape == (3, 5, 7, 16)
    assert {k: tuple(v.shape) for k, v in acts.items()} == m.activation_shapes(5, 7)


def test_parameter_counts_hand_worked():
    mlp = build_model(ModelConfig(kind="mlp", width=10, depth=2), 8, 16, 16, 8, gens(2))
    assert mlp.n_params() == (24 * 10 + 10) + (10 * 10 + 10) + (10 * 16 + 16)
    hyp = build_model(ModelConfig(kind="hypernet", width=10, depth=1, n_banks=4), 8, 16, 16, 8, gens(2))
    target = (16 * 10 + 10) + (10 * 16 + 16)
    assert hyp.n_params() == (8 * 4 + 4) + target * (1 + 4)


@pytest.mark.parametrize("kind", ["mlp", "hypernet"])
def test_stacked_trials_are_independent(kind):
    cfg = ModelConfig(kind=kind, width=6, depth=2)
    stack = build_model(cfg, 8, 16, 16, 8, gens(3))
    alone = build_model(cfg, 8, 16, 16, 8, gens(1, seed=1))
    for p, q in zip(stack.parameters(), alone.parameters()):
        assert torch.equal(p[1], q[0])  # same generator → same init, whatever the stack
    code, x = torch.randn(3, 4, 8), torch.randn(3, 4, 5, 16)
    torch.testing.assert_close(stack(code, x)[1], alone(code[1:2], x[1:2])[0])
    # A change to another trial's input never reaches this trial.
    x2 = x.clone()
    x2[0] += 100
    torch.testing.assert_close(stack(code, x2)[1], stack(code, x)[1])


def test_hypernet_output_is_linear_in_the_mixing_for_a_linear_target():
    # depth-1 target with identity-free check: generated weights are affine in the code.
    m = build_model(ModelConfig(kind="hypernet", width=4, depth=1, activation="relu"), 3, 2, 2, 3, gens(1))
    _, acts = run_with_cache(m, torch.tensor([[[1.0, 0.0, 0.0]]]), torch.zeros(1, 1, 1, 2))
    alpha = acts["hook_mixing"][0, 0]
    torch.testing.assert_close(alpha, m.mix_W[0, 0] + m.mix_b[0, 0])


def test_default_init_is_lecun_normal_like_flax_dense():
    """MLP default (auto): flax Dense's init (the reference code of Redhardt et al. 2025): kernels truncated
    normal at ±2σ with variance 1/fan_in, biases zero. torch_uniform keeps PyTorch's U(±1/√fan_in)."""
    mlp = build_model(ModelConfig(kind="mlp", width=512, depth=2), 16, 16, 16, 16, gens(1))
    for W, b in zip(mlp.weights, mlp.biases):
        fan_in = W.shape[1]
        assert abs(W.var().item() * fan_in - 1) < 0.05
        assert W.abs().max().item() <= 2 / 0.87962566 / fan_in ** 0.5 + 1e-6
        assert torch.equal(b, torch.zeros_like(b))
    old = build_model(ModelConfig(kind="mlp", width=512, depth=2, init="torch_uniform"), 16, 16, 16, 16, gens(1))
    for W, b in zip(old.weights, old.biases):
        fan_in = W.shape[1]
        assert abs(W.var().item() * fan_in * 3 - 1) < 0.05  # U(±a) has variance a²/3
        assert W.abs().max().item() <= fan_in ** -0.5 and b.abs().max().item() > 0


def test_hypernet_init_auto_is_torch_uniform_and_lecun_on_request():
    """auto: the hypernet keeps PyTorch's init (LeCun-scaled banks slowed it: bindscale.models.base.AUTO_INIT)."""
    hyp = build_model(ModelConfig(kind="hypernet", width=64, depth=1), 16, 16, 16, 16, gens(1))
    old = build_model(ModelConfig(kind="hypernet", width=64, depth=1, init="torch_uniform"), 16, 16, 16, 16, gens(1))
    assert all(torch.equal(p, q) for p, q in zip(hyp.parameters(), old.parameters()))
    assert hyp.mix_b.abs().max() > 0
    lec = build_model(ModelConfig(kind="hypernet", width=64, depth=1, init="lecun_normal"), 16, 16, 16, 16, gens(1))
    assert torch.equal(lec.mix_b, torch.zeros_like(lec.mix_b))
    assert all(torch.equal(b, torch.zeros_like(b)) for b in lec.base_b)
    assert abs(lec.bank_W[0].var().item() * 16 - 1) < 0.05
