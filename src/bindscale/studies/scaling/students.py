"""The scaling study's students, registered by name (``model.kind``): the plain MLP and two explicit-binding
students, the hypernetwork over module banks (:mod:`.hypernet`) and the tensor-product binding student
(:mod:`.tpr`), all stacked over trials."""

from __future__ import annotations

import torch

from bindscale.models import StackedModel
from bindscale.models.mlp import StackedMLP

from .config import ModelConfig
from .hypernet import StackedHypernet
from .tpr import StackedTPR

MODELS: dict[str, type[StackedModel]] = {"mlp": StackedMLP, "hypernet": StackedHypernet, "tpr": StackedTPR}


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
