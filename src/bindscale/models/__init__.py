"""Building blocks of the stacked student models: every stacked model's parameters carry a leading
trial dimension ``T`` so that same-shape trials train as one model (:mod:`.base`), the stacked MLP
(:mod:`.mlp`), the decoder-only transformer (:mod:`.transformer`) and its stack over trials
(:mod:`.stacked_transformer`). Pretrained models from local files (a package's weights, a Hugging Face
folder, a ``.gguf`` file) load through one loader, :mod:`.pretrained`, for every study that reads a real
model. A study that picks among models by name keeps its own registry."""

from __future__ import annotations

from bindscale.models.base import Dense, StackedModel
from bindscale.models.hooks import (
    ActivationCache,
    HookPoint,
    UnknownHookPoint,
    hook_names,
    hooks,
    run_with_cache,
    run_with_hooks,
)
from bindscale.models.mlp import MLP, StackedMLP

__all__ = ["StackedModel", "StackedMLP", "MLP", "Dense", "HookPoint", "ActivationCache", "UnknownHookPoint",
           "hook_names", "hooks", "run_with_cache", "run_with_hooks"]
