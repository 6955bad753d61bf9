"""Metrics of task performance.

Two R² for a task family (Redhardt, Schug, Akram 2025, "Scaling can
lead to compositional generalization"). Both measure error against the
*within-task* variance of the targets; they differ in how tasks are averaged.

Pooled (:func:`r2_within_task`, bindscale's ``r2_*`` columns): one minus the
pooled squared error over the pooled within-task variance,

    R² = 1 − Σ_tasks Σ_samples Σ_outputs (y − ŷ)² / Σ_tasks Σ_samples Σ_outputs (y − ȳ_task)²,

where ȳ_task is the mean target of a task over its samples (per output). A
model that knows the task but not x scores 0; a perfect one scores 1. For a
single task it equals scikit-learn's ``r2_score(..., multioutput="variance_weighted")``.
Tasks and outputs with larger within-task variance weigh more.

Task mean (:func:`r2_task_mean`, the ``r2_*_taskmean`` columns): the reference
code's R² (Redhardt et al. 2025, ``compscale/loss.py``): for every task ``t`` and
output ``o``, ``1 − MSE_{t,o} / Var_{t,o}`` (MSE and variance over the task's
samples), averaged over tasks and outputs with equal weight. A task whose
targets barely vary counts as much as any other.
"""

from __future__ import annotations

import torch


def r2_within_task(y: torch.Tensor, y_hat: torch.Tensor, task_mask: torch.Tensor | None = None) -> torch.Tensor:
    """R² pooled over tasks, with within-task target variance as the denominator.

    Args:
        y, y_hat: ``(..., B, S, O)`` targets and predictions: leading dims (e.g. trials T)
            are kept, B tasks × S samples × O outputs are pooled.
        task_mask: optional ``(B,)`` bool, the tasks to include.

    Returns:
        ``(...)`` tensor of R² (NaN where no task is selected or the targets have no within-task variance).
    """
    if y.shape != y_hat.shape:
        raise ValueError(f"shape mismatch: y {tuple(y.shape)} vs y_hat {tuple(y_hat.shape)}")
    if task_mask is not None:
        y, y_hat = y[..., task_mask, :, :], y_hat[..., task_mask, :, :]
    y, y_hat = y.double(), y_hat.double()
    sse = (y - y_hat).pow(2).sum(dim=(-3, -2, -1))
    sst = (y - y.mean(dim=-2, keepdim=True)).pow(2).sum(dim=(-3, -2, -1))
    return torch.where(sst > 0, 1 - sse / sst, torch.full_like(sst, float("nan")))


def r2_task_mean(y: torch.Tensor, y_hat: torch.Tensor, task_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The reference code's R²: the mean over tasks and outputs of per-(task, output) R².

    Redhardt, Schug, Akram 2025, "Scaling can lead to compositional generalization"
    (their ``MeanSquaredError`` loss: ``mean(1 − (y − ŷ)² / base_mse)`` with ``base_mse``
    the per-task, per-output variance of the targets over the task's samples). Per task it
    equals ``sklearn.metrics.r2_score(y_t, ŷ_t, multioutput="uniform_average")``, and the
    result is the mean of that over tasks.

    Args:
        y, y_hat: ``(..., B, S, O)`` targets and predictions; leading dims (e.g. trials T)
            are kept; the mean runs over B tasks and O outputs.
        task_mask: optional ``(B,)`` bool, the tasks to include.

    Returns:
        ``(...)`` tensor (float64). A (task, output) whose targets do not vary over the
        task's samples has no R² and is left out of the mean (the reference would divide
        by zero); NaN where no (task, output) is left.

    Raises:
        ValueError: ``y`` and ``y_hat`` differ in shape.
    """
    if y.shape != y_hat.shape:
        raise ValueError(f"shape mismatch: y {tuple(y.shape)} vs y_hat {tuple(y_hat.shape)}")
    if task_mask is not None:
        y, y_hat = y[..., task_mask, :, :], y_hat[..., task_mask, :, :]
    y, y_hat = y.double(), y_hat.double()
    sse = (y - y_hat).pow(2).sum(dim=-2)  # (..., B, O)
    sst = (y - y.mean(dim=-2, keepdim=True)).pow(2).sum(dim=-2)
    r2 = torch.where(sst > 0, 1 - sse / sst.clamp(min=torch.finfo(sst.dtype).tiny), torch.full_like(sst, float("nan")))
    return r2.flatten(-2).nanmean(dim=-1)
