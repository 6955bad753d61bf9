import numpy as np
import torch
from sklearn.metrics import r2_score

from bindscale.studies.scaling.metrics import r2_task_mean, r2_within_task


def test_single_task_equals_sklearn_variance_weighted():
    g = torch.Generator().manual_seed(0)
    y = torch.randn(1, 20, 3, generator=g, dtype=torch.float64)
    y_hat = y + 0.3 * torch.randn(1, 20, 3, generator=g, dtype=torch.float64)
    ours = float(r2_within_task(y, y_hat))
    ref = r2_score(y[0].numpy(), y_hat[0].numpy(), multioutput="variance_weighted")
    assert abs(ours - ref) < 1e-10


def test_pooled_r2_is_sst_weighted_mean_of_per_task_r2():
    g = torch.Generator().manual_seed(1)
    y = torch.randn(5, 12, 2, generator=g, dtype=torch.float64) * torch.arange(1, 6).view(5, 1, 1) + 3 * torch.arange(5).view(5, 1, 1)
    y_hat = y + torch.randn(5, 12, 2, generator=g, dtype=torch.float64)
    sst = np.array([((y[b] - y[b].mean(0)) ** 2).sum().item() for b in range(5)])
    per_task = np.array([r2_score(y[b].numpy(), y_hat[b].numpy(), multioutput="variance_weighted") for b in range(5)])
    assert abs(float(r2_within_task(y, y_hat)) - (sst * per_task).sum() / sst.sum()) < 1e-10


def test_hand_worked_and_task_means_do_not_count():
    y = torch.tensor([[[1.0], [3.0]], [[10.0], [14.0]]])  # two tasks, two samples, one output
    y_hat = torch.tensor([[[2.0], [2.0]], [[12.0], [12.0]]])  # predicts each task's mean
    assert float(r2_within_task(y, y_hat)) == 0.0  # knowing the task but not x scores 0
    y_hat2 = torch.tensor([[[1.0], [4.0]], [[10.0], [14.0]]])
    # SSE = 1, SST = 2 + 8 = 10
    assert abs(float(r2_within_task(y, y_hat2)) - 0.9) < 1e-12


def test_leading_dims_and_mask():
    y = torch.randn(3, 4, 5, 2)
    out = r2_within_task(y, y.clone())
    assert out.shape == (3,) and torch.all(out == 1)
    mask = torch.tensor([True, False, True, False])
    torch.testing.assert_close(r2_within_task(y[0], y[0] * 0.5, mask), r2_within_task(y[0, [0, 2]], y[0, [0, 2]] * 0.5))
    assert torch.isnan(r2_within_task(torch.ones(1, 3, 1), torch.ones(1, 3, 1)))


def test_task_mean_r2_is_the_mean_of_sklearn_r2_per_task():
    """Redhardt et al. 2025's R²: per task sklearn r2_score(uniform_average), then the mean over tasks."""
    g = torch.Generator().manual_seed(2)
    y = torch.randn(6, 10, 3, generator=g, dtype=torch.float64) * torch.arange(1, 7).view(6, 1, 1)
    y_hat = y + torch.randn(6, 10, 3, generator=g, dtype=torch.float64)
    ref = np.mean([r2_score(y[b].numpy(), y_hat[b].numpy(), multioutput="uniform_average") for b in range(6)])
    assert abs(float(r2_task_mean(y, y_hat)) - ref) < 1e-12
    # Tasks of small variance pull the task mean down but barely move the pooled R².
    assert float(r2_task_mean(y, y_hat)) < float(r2_within_task(y, y_hat))


def test_task_mean_r2_hand_worked_mask_and_leading_dims():
    y = torch.tensor([[[1.0], [3.0]], [[10.0], [14.0]]])  # two tasks, two samples, one output
    y_hat = torch.tensor([[[1.0], [4.0]], [[10.0], [14.0]]])
    # Task 0: SSE 1, SST 2 -> 0.5; task 1: 1. Mean 0.75 (the pooled R² is 0.9).
    assert float(r2_task_mean(y, y_hat)) == 0.75
    assert float(r2_task_mean(y, y_hat, torch.tensor([False, True]))) == 1.0
    out = r2_task_mean(torch.stack([y, y]), torch.stack([y_hat, y]))
    assert out.tolist() == [0.75, 1.0]


def test_task_mean_r2_leaves_out_constant_targets_and_is_nan_when_nothing_is_left():
    y = torch.tensor([[[1.0, 5.0], [3.0, 5.0]]])  # output 1 constant within the task
    y_hat = torch.tensor([[[1.0, 0.0], [4.0, 0.0]]])
    assert float(r2_task_mean(y, y_hat)) == 0.5
    assert torch.isnan(r2_task_mean(torch.ones(1, 3, 1), torch.ones(1, 3, 1)))
