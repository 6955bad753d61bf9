"""AdamW over the scaling study's stacked parameters: the project's per-trial AdamW
(:class:`bindscale.train.stacked_adamw.StackedAdamW`), with torch's defaults (betas ``(0.9, 0.999)``, weight decay on
every parameter) and the fused kernel, as the study has always trained.

A trial's update is the same bits whatever its stack (the fused kernel runs on each trial's own slice
unless no element of any trial can fall in its scalar tail: see :mod:`bindscale.train.stacked_adamw`);
``tests/studies/scaling/test_optim.py`` checks it against ``torch.optim.AdamW``.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from bindscale.kit import StackedAdamW as _CoreAdamW


class StackedAdamW(_CoreAdamW):
    """:class:`bindscale.train.stacked_adamw.StackedAdamW` as the scaling study uses it: per-trial ``lr`` and
    ``weight_decay`` fixed for the run, decay on every parameter, always the fused kernel.

    Args:
        params: stacked parameters, each ``(T, ...)``, contiguous.
        lr, weight_decay: ``(T,)`` per-trial values (a float, sequence or tensor; one value is shared).
        betas, eps: as in ``torch.optim.AdamW``.

    Raises:
        ValueError: no parameters, parameters with different ``T``, or ``lr`` /
            ``weight_decay`` with neither 1 nor ``T`` values.
    """

    def __init__(self, params: Iterable[torch.Tensor], lr, weight_decay, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, lr, weight_decay, betas, eps, decay_min_dim=0, fused=True)
