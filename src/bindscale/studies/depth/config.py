"""The depth study's trial config: one decoder-only transformer of a given depth and non-embedding
budget trained on one SCAN split (generated) or on a pair of data files (SCAN or COGS format).

The ``task`` section is the kit's :class:`bindscale.kit.ScanTaskConfig` (shared with ``binding_scan``): with
``data.train`` / ``data.test`` given its ``split`` is only the label the report and the verdicts use (e.g.
``length`` for the official length files; any ``[a-z0-9_]`` label for other data; ``simple`` marks
in-distribution data), without them a generated split (:data:`bindscale.kit.scan.SPLITS`)."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from bindscale.kit import ScanTaskConfig, StrictModel, TrialBase, SeqTrainConfig, scan
from bindscale.models.shapes import shape_for_budget


class DataConfig(StrictModel):
    """Data files replacing the generated split: both or neither (``format`` auto-detects SCAN / COGS)."""

    train: str | None = None
    test: str | None = None
    format: Literal["auto", "scan", "cogs"] = "auto"


class DepthModelConfig(StrictModel):
    """A decoder-only transformer (:class:`bindscale.models.transformer.Transformer`) given by depth and
    non-embedding budget; the width follows (:func:`bindscale.models.shapes.shape_for_budget`)."""

    kind: Literal["transformer"] = "transformer"
    n_layers: int = Field(2, ge=1, le=64)
    budget: int = Field(20_000, ge=100, le=1_000_000_000, description="non-embedding parameters")
    n_heads: int = Field(2, ge=1, le=64)
    pos: Literal["rope", "learned"] = "rope"

    @model_validator(mode="after")
    def _shape(self) -> "DepthModelConfig":
        shape_for_budget(self.budget, self.n_layers, self.n_heads)  # ValueError: budget too small
        return self


class DepthTrial(TrialBase):
    """A depth trial: one transformer (depth, budget, positions) trained on one SCAN split."""

    SECTIONS: ClassVar[tuple[str, ...]] = ("task", "data", "model", "train")
    AXES: ClassVar[dict[str, str]] = {
        "split": "task.split",
        "n_test": "task.n_test",
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
    kind: Literal["depth"] = "depth"
    task: ScanTaskConfig = ScanTaskConfig()
    data: DataConfig = DataConfig()
    model: DepthModelConfig = DepthModelConfig()
    train: SeqTrainConfig = SeqTrainConfig(steps=600, batch_size=64, lr=2e-3, weight_decay=0.1, warmup_steps=50)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _data(self) -> "DepthTrial":
        if (self.data.train is None) != (self.data.test is None):
            raise ValueError("data.train and data.test go together: give both files or neither")
        if self.data.train is None and self.task.split not in scan.SPLITS:
            raise ValueError(f"task.split {self.task.split!r} is not a generated SCAN split ({', '.join(scan.SPLITS)}); "
                             "other labels need data.train and data.test")
        if not re.fullmatch(r"[a-z0-9_]+", self.task.split):
            raise ValueError(f"task.split {self.task.split!r}: a label of lower-case letters, digits and _")
        return self


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = DepthTrial
