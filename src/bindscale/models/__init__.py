"""Student models, registered by name. Every model is *stacked*: its parameters carry
a leading trial dimension ``T`` so that same-shape trials train as one model."""

from __future__ import annotations

import torch

from ..trials import ModelConfig
from .base import Dense, StackedModel
from .hooks import ActivationCache, HookPoint, UnknownHookPoint, hook_names, hooks, run_with_cache, run_with_hooks
from .hypernet import GeneratedDense, Hypernet, StackedHypernet
from .mlp import MLP, StackedMLP

MODELS: dict[str, type[StackedModel]] = {"mlp": StackedMLP, "hypernet": StackedHypernet}


def build_model(
    cfg: ModelConfig, code_dim: int, x_dim: int, out_dim: int, n_modules: int, gens: list[torch.Generator]
) -> StackedModel:
    """Build ``len(gens)`` stacked copies of the model ``cfg.kind``, trial ``t`` initialised from ``gens[t]``.

    Raises:
        KeyError: unknown model kind.
    """
    if cfg.kind not in MODELS:
        raise KeyError(f"unknown model {cfg.kind!r}; registered: {', '.join(MODELS)}")
    return MODELS[cfg.kind](cfg, code_dim, x_dim, out_dim, n_modules, gens)


__all__ = ["MODELS", "StackedModel", "StackedMLP", "StackedHypernet", "build_model", "MLP", "Hypernet", "Dense",
           "GeneratedDense", "HookPoint", "ActivationCache", "UnknownHookPoint", "hook_names", "hooks",
           "run_with_cache", "run_with_hooks"]
