"""Building blocks of the stacked student models: every stacked model's parameters carry a leading
trial dimension ``T`` so that same-shape trials train as one model (:mod:`.base`), the stacked MLP
(:mod:`.mlp`), the decoder-only transformer (:mod:`.transformer`) and its stack over trials
(:mod:`.stacked_transformer`). Pretrained models from local files (a package's weights, a Hugging Face
folder, a ``.gguf`` file) load through one loader, :mod:`.pretrained`, for every study that reads a real
model. Iso-parameter transformer shapes (the width of each depth at a fixed budget) are :mod:`.shapes`;
a transformer trial's training memory from its shapes (what the planner stacks by) is :mod:`.memory`.
A study that picks among models by name keeps its own registry. The names below are imported on first
use, so that importing :mod:`.shapes` (a trial config does, at planning time) does not import torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["StackedModel", "StackedMLP", "MLP", "Dense", "HookPoint", "ActivationCache", "UnknownHookPoint",
           "hook_names", "run_with_cache", "run_with_hooks", "Shape", "shape_for_budget", "nonembedding_params",
           "TrainingMemory", "transformer_training_memory", "transformer_memory_bytes"]

#: Public name -> its module here, imported on first access: every module but :mod:`.shapes` and :mod:`.memory`
#: imports torch, and a study's trial config sizes its model with :func:`~.shapes.shape_for_budget` (its plan, its
#: memory with :func:`~.memory.transformer_memory_bytes`) at planning time.
#: (``hooks``, the context manager, is :func:`bindscale.models.hooks.hooks`: its module's name is taken.)
_LAZY: dict[str, str] = {
    "StackedModel": "bindscale.models.base",
    "Dense": "bindscale.models.base",
    "HookPoint": "bindscale.models.hooks",
    "ActivationCache": "bindscale.models.hooks",
    "UnknownHookPoint": "bindscale.models.hooks",
    "hook_names": "bindscale.models.hooks",
    "run_with_cache": "bindscale.models.hooks",
    "run_with_hooks": "bindscale.models.hooks",
    "MLP": "bindscale.models.mlp",
    "StackedMLP": "bindscale.models.mlp",
    "Shape": "bindscale.models.shapes",
    "shape_for_budget": "bindscale.models.shapes",
    "nonembedding_params": "bindscale.models.shapes",
    "TrainingMemory": "bindscale.models.memory",
    "transformer_training_memory": "bindscale.models.memory",
    "transformer_memory_bytes": "bindscale.models.memory",
}

if TYPE_CHECKING:  # what type checkers see: exactly the objects __getattr__ hands out (_LAZY)
    from bindscale.models.base import Dense, StackedModel
    from bindscale.models.hooks import (
        ActivationCache,
        HookPoint,
        UnknownHookPoint,
        hook_names,
        run_with_cache,
        run_with_hooks,
    )
    from bindscale.models.memory import (
        TrainingMemory,
        transformer_memory_bytes,
        transformer_training_memory,
    )
    from bindscale.models.mlp import MLP, StackedMLP
    from bindscale.models.shapes import Shape, nonembedding_params, shape_for_budget


def __getattr__(name: str) -> Any:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
