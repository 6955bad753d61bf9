"""The toy study's trial config."""

from typing import ClassVar, Literal

from pydantic import Field

from bindscale.kit import StrictModel, TrialBase


class ToyTask(StrictModel):
    n: int = Field(64, ge=4, le=100_000, description="training points")
    noise: float = Field(0.1, ge=0.0, le=10.0)


class ToyModel(StrictModel):
    width: int = Field(8, ge=1, le=4096, description="random features")


class ToyTrain(StrictModel):
    steps: int = Field(50, ge=1, le=100_000)
    lr: float = Field(0.1, gt=0.0, le=10.0)


class TrialConfig(TrialBase):
    AXES: ClassVar[dict[str, str]] = {"width": "model.width", "noise": "task.noise", "steps": "train.steps",
                                      "seed": "seed"}
    kind: Literal["toy"] = "toy"
    task: ToyTask = ToyTask()
    model: ToyModel = ToyModel()
    train: ToyTrain = ToyTrain()
    seed: int = Field(0, ge=0, le=2**31 - 1)
