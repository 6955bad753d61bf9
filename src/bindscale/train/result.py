"""The result a study's trainer hands back per trial (:class:`TrialResult`); it becomes part of the
trial's record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TrialResult:
    """What training and analysis produced for one trial (becomes part of its record).

    ``model`` (the trained single-trial ``nn.Module``, in eval mode) and ``model_kwargs``
    (what its study's model builder needs beyond the trial config to rebuild it) are set
    only when a trainer is asked for its models (``return_models=True``); they are not
    part of the record.
    """

    status: str = "ok"
    diverged_step: int | None = None
    metrics: dict = field(default_factory=dict)
    model: Any = field(default=None, repr=False, compare=False)
    model_kwargs: dict = field(default_factory=dict, repr=False, compare=False)
