import pytest
import torch

from bindscale.models import run_with_cache
from bindscale.studies.scaling.config import ModelConfig
from bindscale.studies.scaling.students import build_model


def gens(n, seed=0):
    return [torch.Generator().manual_seed(seed + i) for i in range(n)]


@pytest.mark.parametrize("kind", ["mlp", "hypernet", "tpr"])
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


@pytest.mark.parametrize("kind", ["mlp", "hypernet", "tpr"])
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


# ------------------------------------------------------------------ the tensor-product binding student --


def test_tpr_forward_shapes_and_the_binding_is_the_hadamard_product_of_filler_and_role():
    E, I, O, w, T, B, S = 8, 16, 16, 12, 3, 5, 7
    m = build_model(ModelConfig(kind="tpr", width=w, depth=2), E, I, O, 8, gens(T))
    code, x = torch.randn(T, B, E), torch.randn(T, B, S, I)
    y, acts = run_with_cache(m, code, x)
    assert y.shape == (T, B, S, O)
    assert acts["hook_filler"].shape == (T, B, w) and acts["hook_role"].shape == (T, B, S, w)
    assert acts["hook_bound"].shape == (T, B, S, w) and acts["hook_hidden.1"].shape == (T, B, S, w)
    # f = code F + f_0, r = x W_r + r_0, u = f ⊙ r (broadcast over the task's inputs)
    f = code @ m.filler_W + m.filler_b
    r = x @ m.role_W.unsqueeze(1) + m.role_b.unsqueeze(1)
    torch.testing.assert_close(acts["hook_filler"], f)
    torch.testing.assert_close(acts["hook_role"], r)
    torch.testing.assert_close(acts["hook_bound"], f.unsqueeze(2) * r)
    # The filler depends on the task only: two inputs of one task see the same filler, and a task
    # whose code is zero binds its inputs to f_0 alone.
    _, zero = run_with_cache(m, torch.zeros(T, B, E), x)
    torch.testing.assert_close(zero["hook_filler"], m.filler_b.expand(T, B, w))


@pytest.mark.parametrize("width,depth,code_dim", [(10, 1, 8), (12, 2, 8), (7, 3, 24)])
def test_tpr_parameter_count_formula_against_the_parameters(width, depth, code_dim):
    from bindscale.studies.scaling.tpr import tpr_params

    m = build_model(ModelConfig(kind="tpr", width=width, depth=depth), code_dim, 16, 16, 8, gens(3))
    formula = (code_dim + 1) * width + (16 + 1) * width + depth * (width * width + width) + (width + 1) * 16
    assert tpr_params(code_dim, 16, 16, width, depth) == formula
    assert m.n_params() == formula == sum(p[0].numel() for p in m.parameters())
    one = m.member(2)
    assert one.n_params() == formula == sum(p.numel() for p in one.parameters())
    # E=8, I=O=16, depth 1: w² + 43 w + 16, the README's formula
    assert tpr_params(8, 16, 16, 64, 1) == 64 * 64 + 43 * 64 + 16 == 6864


def test_tpr_member_is_the_stack_slice_with_the_same_hook_points():
    stack = build_model(ModelConfig(kind="tpr", width=9, depth=2), 8, 16, 16, 8, gens(3))
    code, x = torch.randn(3, 4, 8), torch.randn(3, 4, 5, 16)
    y, acts = run_with_cache(stack, code, x)
    one = stack.member(1)
    y1, acts1 = run_with_cache(one, code[1], x[1])
    torch.testing.assert_close(y1, y[1])
    assert set(acts1) == set(acts)
    for name, a in acts1.items():
        torch.testing.assert_close(a, acts[name][1])
    with pytest.raises(IndexError):
        stack.member(3)


def test_tpr_init_auto_is_the_mlps_lecun_normal_with_zero_biases():
    m = build_model(ModelConfig(kind="tpr", width=512, depth=1), 16, 16, 16, 16, gens(1))
    assert abs(m.role_W.var().item() * 16 - 1) < 0.05 and abs(m.weights[0].var().item() * 512 - 1) < 0.05
    assert all(torch.equal(b, torch.zeros_like(b)) for b in (m.filler_b, m.role_b, *m.biases))
    u = build_model(ModelConfig(kind="tpr", width=512, depth=1, init="torch_uniform"), 16, 16, 16, 16, gens(1))
    assert u.filler_b.abs().max() > 0 and u.role_W.abs().max().item() <= 16 ** -0.5


def test_tpr_learns_a_tiny_hyperteacher_task_with_the_study_optimizer():
    """A few hundred AdamW steps on one small teacher (M=4, K=2) lower the loss several-fold."""
    from bindscale.kit import generator
    from bindscale.studies.scaling.config import TaskConfig, TrainConfig
    from bindscale.studies.scaling.steps import make_optimizer
    from bindscale.studies.scaling.tasks import HyperTeacher

    torch.manual_seed(0)
    task = HyperTeacher(TaskConfig(M=4, K=2, holdout=0.0, input_dim=4, hidden_dim=4, output_dim=4), seed=0)
    m = build_model(ModelConfig(kind="tpr", width=32, depth=1), task.code_dim, 4, 4, 4, gens(1))
    opt = make_optimizer(m, [TrainConfig(lr=1e-2, weight_decay=0.0)])
    g = generator(0, "train")
    test = task.sample(64, generator(0, "test"))

    def loss_on(b):
        return (m(b.code.unsqueeze(0), b.x.unsqueeze(0))[0] - b.y).pow(2).mean()

    with torch.no_grad():
        before = float(loss_on(test))
    for _ in range(300):
        loss = loss_on(task.sample(32, g))
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        after = float(loss_on(test))
    assert after < before / 5, (before, after)


@pytest.mark.parametrize("kind", ["mlp", "hypernet", "tpr"])
@pytest.mark.parametrize("encoding,n_banks", [("identity", None), ("tokens", 3), ("fewshot", None)])
def test_the_verdicts_parameter_counter_is_the_built_students_count(kind, encoding, n_banks):
    """The binding claims check each record's n_params against its config (expected_n_params, torch-free): the
    count must be the one the trial's untrained student has, for every kind and task-input width."""
    from bindscale.studies.scaling.config import TrialConfig
    from bindscale.studies.scaling.trial import untrained_model
    from bindscale.studies.scaling.verdicts import expected_n_params

    trial = TrialConfig(model={"kind": kind, "width": 9, "depth": 2, "n_banks": n_banks},
                        task={"encoding": encoding, "M": 5, "K": 2, "input_dim": 6, "output_dim": 4, "n_shots": 3})
    row = {k: v for k, v in trial.flat().items() if v is not None}
    assert expected_n_params(row) == untrained_model(trial).n_params()
