import math

import pytest
import torch

from bindscale.core import seeding
from bindscale.studies.scaling.config import TaskConfig
from bindscale.studies.scaling.tasks import HyperTeacher


LEGACY = {"teacher": "per_task_scale"}


def test_teacher_matches_hand_computation():
    task = HyperTeacher(TaskConfig(M=4, K=2, holdout=0.25, **LEGACY), seed=0)
    z = torch.tensor([[0.6, 0.0, 0.8, 0.0]])
    x = torch.rand(1, 5, 16)
    W = (0.6 * task.W[0] + 0.8 * task.W[2]) / math.sqrt(2)
    b = (0.6 * task.b[0] + 0.8 * task.b[2]) / math.sqrt(2)
    expected = torch.relu(x[0] @ W.T + b) @ task.R.T + task.r
    torch.testing.assert_close(task.teacher(z, x)[0], expected, rtol=1e-5, atol=1e-5)


def test_teacher_of_a_batch_is_each_task_by_hand():
    task = HyperTeacher(TaskConfig(M=4, K=2, holdout=0.25, **LEGACY), seed=1)
    z = torch.tensor([[0.6, 0.0, 0.8, 0.0], [0.0, 0.9, 0.0, 0.0], [0.5, 0.0, 0.0, 0.7]])
    x = 2 * torch.rand(3, 7, 16) - 1
    y = task.teacher(z, x)
    assert y.shape == (3, 7, 16)
    for i in range(3):
        k = int((z[i] > 0).sum())
        W = torch.einsum("m,mhi->hi", z[i], task.W) / math.sqrt(k)
        b = z[i] @ task.b / math.sqrt(k)
        torch.testing.assert_close(y[i], torch.relu(x[i] @ W.T + b) @ task.R.T + task.r, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("teacher", ["reference", "per_task_scale"])
def test_samples_come_from_their_pool(teacher):
    task = HyperTeacher(TaskConfig(M=8, K=3, holdout=0.5, teacher=teacher), seed=1)
    for pool in ("train", "heldout"):
        batch = task.sample(200, torch.Generator().manual_seed(0), pool)
        combos = {tuple(torch.nonzero(r).flatten().tolist()) for r in batch.z}
        assert combos <= set(getattr(task.split, pool))
        w = batch.z[batch.z > 0]
        assert w.min() >= 0.5 and w.max() <= 1.0
        assert batch.x.shape == (200, 16, 16) and batch.y.shape == (200, 16, 16)
        assert batch.x.min() >= -1 and batch.x.max() <= 1


def test_cycled_eval_covers_every_heldout_combination():
    task = HyperTeacher(TaskConfig(M=8, K=3, holdout=0.25), seed=0)
    batch = task.sample(46, torch.Generator().manual_seed(0), "heldout", cycle=True)
    assert sorted(batch.combo.tolist()) == sorted(list(range(23)) * 2)


def test_streams_are_independent_and_seeded():
    names = seeding.STREAMS
    seeds = {seeding.stream_seed(0, s) for s in names}
    assert len(seeds) == len(names)
    assert seeding.stream_seed(0, "train") != seeding.stream_seed(1, "train")
    a = HyperTeacher(TaskConfig(), seed=5)
    b = HyperTeacher(TaskConfig(), seed=5)
    assert torch.equal(a.W, b.W) and a.split == b.split
    t = a.sample(4, seeding.generator(5, "train"))
    h = a.sample(4, seeding.generator(5, "test"))
    assert not torch.equal(t.x, h.x)


def test_reference_teacher_hand_worked():
    """Reference (Redhardt, Schug, Akram 2025): the mix is scaled by 1/√K for every task, the
    readout has no bias. K = 3 here, so a one-module task is scaled by 1/√3 (not 1/√1) and a
    two-module task by 1/√3 (not 1/√2)."""
    task = HyperTeacher(TaskConfig(M=4, K=3, holdout=0.25), seed=0)
    z = torch.tensor([[0.6, 0.0, 0.8, 0.0], [0.0, 0.9, 0.0, 0.0]])
    x = 2 * torch.rand(2, 5, 16) - 1
    y = task.teacher(z, x)
    W0 = (0.6 * task.W[0] + 0.8 * task.W[2]) / math.sqrt(3)
    b0 = (0.6 * task.b[0] + 0.8 * task.b[2]) / math.sqrt(3)
    torch.testing.assert_close(y[0], torch.relu(x[0] @ W0.T + b0) @ task.R.T, rtol=1e-5, atol=1e-5)
    W1, b1 = 0.9 * task.W[1] / math.sqrt(3), 0.9 * task.b[1] / math.sqrt(3)
    torch.testing.assert_close(y[1], torch.relu(x[1] @ W1.T + b1) @ task.R.T, rtol=1e-5, atol=1e-5)
    assert torch.equal(task.r, torch.zeros(16))


def test_reference_teacher_is_linear_in_the_code_and_per_task_scale_is_not():
    """Under the reference, W_task is linear in z: W(z1 + z2) = W(z1) + W(z2) for disjoint codes;
    per-task 1/√k scaling breaks that (a 2-module task is not the sum of its 1-module tasks)."""
    z1, z2 = torch.tensor([[0.6, 0.0, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 0.8, 0.0]])
    x = torch.zeros(1, 1, 16)  # x = 0: the pre-activation is the mixed bias alone
    for teacher, linear in (("reference", True), ("per_task_scale", False)):
        task = HyperTeacher(TaskConfig(M=4, K=2, teacher=teacher), seed=0)
        task.R = torch.eye(16)  # read the hidden layer out directly
        task.r = torch.zeros(16)
        task.b = task.b.abs() + 0.1  # keep every unit active, so ReLU is the identity
        h = lambda z: task.teacher(z, x)  # noqa: E731
        assert torch.allclose(h(z1 + z2), h(z1) + h(z2), atol=1e-5) == linear, teacher


def test_reference_weights_are_the_six_levels_uniformly():
    task = HyperTeacher(TaskConfig(M=8, K=3), seed=0)
    w = task.sample(4000, torch.Generator().manual_seed(0)).z
    levels, counts = torch.unique(w[w > 0], return_counts=True)
    torch.testing.assert_close(levels, torch.tensor([0.5, 0.6, 0.7, 0.8, 0.9, 1.0]))
    assert (counts / counts.sum() - 1 / 6).abs().max() < 0.02  # ~8000 draws: SE 0.004
    legacy = HyperTeacher(TaskConfig(M=8, K=3, **LEGACY), seed=0).sample(500, torch.Generator().manual_seed(0)).z
    assert len(torch.unique(legacy[legacy > 0])) > 500  # continuous U[0.5, 1]


def test_reference_teacher_initialisation_statistics():
    """Modules and readout: truncated normal (±2σ) with variance √3/fan_in; biases U[0, 0.5)."""
    task = HyperTeacher(TaskConfig(M=64, K=2, input_dim=64, hidden_dim=64, output_dim=64), seed=0)
    var = math.sqrt(3) / 64
    assert abs(task.W.var().item() / var - 1) < 0.02  # 262 144 draws
    assert task.W.abs().max() <= 2 * math.sqrt(var) / 0.87962566 + 1e-6
    assert abs(task.R.var().item() / var - 1) < 0.1
    assert task.b.min() >= 0 and task.b.max() < 0.5 and abs(task.b.mean().item() - 0.25) < 0.01


def test_a_single_row_leaves_the_readout_bias_alone():
    """B·S = 1: the expanded bias view counted as contiguous, and the in-place readout wrote into it."""
    task = HyperTeacher(TaskConfig(M=4, K=2, **LEGACY), seed=0)
    r = task.r.clone()
    z = torch.tensor([[0.6, 0.0, 0.0, 0.0]])
    y1 = task.teacher(z, torch.ones(1, 1, 16))
    assert torch.equal(task.r, r)
    torch.testing.assert_close(task.teacher(z, torch.ones(1, 1, 16)), y1)


@pytest.mark.parametrize("holdout", [0.0, 0.25])
def test_pool_masks_mark_each_combination_s_modules(holdout):
    """``_masks``: one row per combination of the pool, 1.0 at its modules, 0.0 elsewhere (an empty pool: no rows)."""
    from bindscale.studies.scaling.config import TaskConfig
    from bindscale.studies.scaling.tasks.hyperteacher import HyperTeacher

    ht = HyperTeacher(TaskConfig(M=16, K=3, holdout=holdout), seed=3)
    for pool in ("train", "heldout"):
        combos = getattr(ht.split, pool)
        want = torch.zeros(len(combos), 16)
        for i, c in enumerate(combos):
            for m in c:
                want[i, m] = 1.0
        got = ht._masks[pool]
        assert got.dtype == torch.float32 and got.shape == (len(combos), 16) and torch.equal(got, want)
    assert ht.n_combos("heldout") == (0 if holdout == 0 else round(0.25 * 696))
