"""Metrics of task performance.

R² for a task family (DESIGN §4; Redhardt, Schug, Akram 2025): one minus the
mean squared error over the *within-task* variance of the targets,

    R² = 1 − Σ_tasks Σ_samples Σ_outputs (y − ŷ)² / Σ_tasks Σ_samples Σ_outputs (y − ȳ_task)²,

where ȳ_task is the mean target of a task over its samples (per output). A
model that knows the task but not x scores 0; a perfect one scores 1. For a
single task it equals scikit-learn's ``r2_score(..., multioutput="variance_weighted")``.
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
