import math

import torch

from bindscale import seeding
from bindscale.config import TaskConfig
from bindscale.tasks import HyperTeacher


def test_teacher_matches_hand_computation():
    task = HyperTeacher(TaskConfig(M=4, K=2, holdout=0.25), seed=0)
    z = torch.tensor([[0.6, 0.0, 0.8, 0.0]])
    x = torch.rand(1, 5, 16)
    W = (0.6 * task.W[0] + 0.8 * task.W[2]) / math.sqrt(2)
    b = (0.6 * task.b[0] + 0.8 * task.b[2]) / math.sqrt(2)
    expected = torch.relu(x[0] @ W.T + b) @ task.R.T + task.r
    torch.testing.assert_close(task.teacher(z, x)[0], expected, rtol=1e-5, atol=1e-5)


def test_teacher_of_a_batch_is_each_task_by_hand():
    task = HyperTeacher(TaskConfig(M=4, K=2, holdout=0.25), seed=1)
    z = torch.tensor([[0.6, 0.0, 0.8, 0.0], [0.0, 0.9, 0.0, 0.0], [0.5, 0.0, 0.0, 0.7]])
    x = 2 * torch.rand(3, 7, 16) - 1
    y = task.teacher(z, x)
    assert y.shape == (3, 7, 16)
    for i in range(3):
        k = int((z[i] > 0).sum())
        W = torch.einsum("m,mhi->hi", z[i], task.W) / math.sqrt(k)
        b = z[i] @ task.b / math.sqrt(k)
        torch.testing.assert_close(y[i], torch.relu(x[i] @ W.T + b) @ task.R.T + task.r, rtol=1e-5, atol=1e-5)


def test_samples_come_from_their_pool():
    task = HyperTeacher(TaskConfig(M=8, K=3, holdout=0.5), seed=1)
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
