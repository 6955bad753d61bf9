"""The binding_scan study's trial config: one decoder-only model (plain, syntactic attention or
TP-Transformer) of a given depth and non-embedding budget trained on one generated SCAN split."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from bindscale.kit import ScanTaskConfig, SeqTrainConfig, StrictModel, TrialBase, scan
from bindscale.models.binding_shapes import shape_for_budget


class BindingTaskConfig(ScanTaskConfig):
    """The kit's SCAN task section (:class:`bindscale.kit.ScanTaskConfig`, shared with ``depth``) with this
    study's defaults: a generated split only (:data:`bindscale.kit.scan.SPLITS`; add-jump by default) and
    300 test examples scored."""

    split: Literal["simple", "length", "addprim_jump", "addprim_turn_left", "around_right"] = "addprim_jump"
    n_test: int = Field(300, ge=0, le=1_000_000, description="test examples scored (0: all)")


class BindingModelConfig(StrictModel):
    """A decoder-only model given by kind, depth and non-embedding budget; the width follows
    (:func:`bindscale.models.binding_shapes.shape_for_budget`): ``transformer`` is the plain model of the
    depth study's ladder, ``syntactic_attention`` (Russin et al. 2019) and ``tp_transformer`` (Schlag et al.
    2019) the explicit-binding ones (:mod:`bindscale.models.binding`)."""

    kind: Literal["transformer", "syntactic_attention", "tp_transformer"] = "transformer"
    n_layers: int = Field(2, ge=1, le=64)
    budget: int = Field(100_000, ge=100, le=1_000_000_000, description="non-embedding parameters")
    n_heads: int = Field(2, ge=1, le=64)
    pos: Literal["rope", "learned"] = "rope"

    @model_validator(mode="after")
    def _shape(self) -> BindingModelConfig:
        shape_for_budget(self.kind, self.budget, self.n_layers, self.n_heads)  # ValueError: budget too small
        return self


class BindingTrial(TrialBase):
    """A binding_scan trial: one model (kind, depth, budget) trained on one SCAN split."""

    SECTIONS: ClassVar[tuple[str, ...]] = ("task", "model", "train")
    AXES: ClassVar[dict[str, str]] = {
        "split": "task.split",
        "n_test": "task.n_test",
        "model": "model.kind",
        "layers": "model.n_layers",
        "budget": "model.budget",
        "heads": "model.n_heads",
        "pos": "model.pos",
        "steps": "train.steps",
        "lr": "train.lr",
        "seed": "seed",
    }
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
        "acc_by_length": (("length",), ("n", "acc")),
    }
    kind: Literal["binding_scan"] = "binding_scan"
    task: BindingTaskConfig = BindingTaskConfig()
    model: BindingModelConfig = BindingModelConfig()
    train: SeqTrainConfig = SeqTrainConfig(steps=1000, batch_size=32, lr=5e-3, weight_decay=0.1, warmup_steps=50)
    seed: int = Field(0, ge=0, le=2**31 - 1)


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = BindingTrial

assert set(scan.SPLITS) == set(BindingTaskConfig.model_fields["split"].annotation.__args__)
