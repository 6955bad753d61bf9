"""The subgraphs study's trial config: one transformer trained from scratch on one multi-step task."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from bindscale.kit import SeqTrainConfig, StrictModel, TransformerConfig, TrialBase


class SeqTaskConfig(StrictModel):
    """Multi-step tasks with computation graphs (Dziri et al. 2023, "Faith and Fate").

    ``multiplication``: operand digit counts are the sizes; in distribution both
    ≤ ``id_max``, out of distribution the cells with a larger operand up to ``ood_max``.
    ``maxsubseq`` (max-sum non-adjacent subsequence, dynamic programming): the
    sequence length is the size; in distribution ≤ ``id_max``, OOD up to ``ood_max``.
    ``reverse`` (multiplication only): numbers in the target written least significant
    digit first (:mod:`bindscale.studies.subgraphs.tasks.multiplication`).

    Raises (on validation):
        ValueError: ``ood_max < id_max``, or ``reverse`` with a family other than multiplication.
    """

    family: Literal["multiplication", "maxsubseq"] = "maxsubseq"
    scratchpad: bool = True
    n_train: int = Field(4000, ge=1, le=10_000_000, description="training examples (a fixed set)")
    id_max: int = Field(5, ge=1, le=20, description="largest in-distribution size (digits / sequence length)")
    ood_max: int = Field(7, ge=1, le=30, description="largest out-of-distribution size")
    n_test: int = Field(32, ge=1, le=100_000, description="test examples per size cell")
    reverse: bool = Field(False, description="multiplication: write partial products, sums and the answer "
                                             "least significant digit first")

    @model_validator(mode="after")
    def _sizes(self) -> "SeqTaskConfig":
        if self.ood_max < self.id_max:
            raise ValueError(f"ood_max={self.ood_max} must be at least id_max={self.id_max}")
        if self.reverse and self.family != "multiplication":
            # maxsubseq's values can be negative; a reversed "-3" has no reading.
            raise ValueError(f"reverse=True is a multiplication format; family is {self.family!r}")
        return self


class SubgraphsTrial(TrialBase):
    """A subgraphs trial: one transformer trained from scratch on one multi-step task."""

    AXES: ClassVar[dict[str, str]] = {
        "task": "task.family",
        "scratchpad": "task.scratchpad",
        "reverse": "task.reverse",
        "n_train": "task.n_train",
        "layers": "model.n_layers",
        "d_model": "model.d_model",
        "heads": "model.n_heads",
        "steps": "train.steps",
        "lr": "train.lr",
        "seed": "seed",
    }
    #: Per-trial tables (:mod:`bindscale.studies.subgraphs.trial`): depth / size keys are strings.
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
        "acc_by_size": (("size",), ("n", "acc")),
        "acc_by_depth": (("depth",), ("n", "acc")),
        "acc_by_depth_source": (("depth",), ("n", "acc")),
        "acc_by_width": (("width",), ("n", "acc")),
        "taxonomy_by_depth": (("depth", "label"), ("share",)),
        "taxonomy_dziri_by_depth": (("depth", "label"), ("share",)),
        "coverage_by_depth": (("depth", "label"), ("n", "share")),
        "rig_top": (("output", "order"), ("inputs", "gain")),
    }
    kind: Literal["subgraphs"] = "subgraphs"
    task: SeqTaskConfig = SeqTaskConfig()
    model: TransformerConfig = TransformerConfig()
    train: SeqTrainConfig = SeqTrainConfig()
    seed: int = Field(0, ge=0, le=2**31 - 1)


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = SubgraphsTrial
