"""A toy third-party study: the whole plugin in one folder (tests/toy_study/), registered through the
``bindscale.studies`` entry-point group by the test that installs it.

Trial: fit a line y = 2x + noise with ``model.width`` random features for ``train.steps`` steps of
plain gradient descent; metric ``score`` = R² on held-out points. Claim ``toy_fits``: the mean score
of the widest model lies above ``threshold``.
"""

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from bindscale.config import StrictModel, TrialBase
from bindscale.study import Claim, StudyPlugin


class ToyTask(StrictModel):
    n: int = Field(64, ge=4, le=100_000, description="training points")
    noise: float = Field(0.1, ge=0.0, le=10.0)


class ToyModel(StrictModel):
    width: int = Field(8, ge=1, le=4096, description="random features")


class ToyTrain(StrictModel):
    steps: int = Field(50, ge=1, le=100_000)
    lr: float = Field(0.1, gt=0.0, le=10.0)


class ToyTrial(TrialBase):
    AXES: ClassVar[dict[str, str]] = {"width": "model.width", "noise": "task.noise", "steps": "train.steps",
                                      "seed": "seed"}
    kind: Literal["toy"] = "toy"
    task: ToyTask = ToyTask()
    model: ToyModel = ToyModel()
    train: ToyTrain = ToyTrain()
    seed: int = Field(0, ge=0, le=2**31 - 1)


STUDY = StudyPlugin(
    name="toy",
    kind="toy",
    trial_config=ToyTrial,
    claims=(Claim(name="toy_fits", title="The toy model fits a line", source="a test fixture (no paper)",
                  statement="A random-feature model fits y = 2x on held-out points (mean R² of the widest model "
                            "above the threshold).",
                  statistic="mean held-out R² of the widest model", side="scale_suffices",
                  rule="bindscale_toy.rules:fits", thresholds={"threshold": (0.0, 1.0)},
                  defaults={"threshold": 0.5}, figures=("score_vs_width",)),),
    description="A toy study that lives in the tests (entry-point plugin example).",
    directory=Path(__file__).parent,
    trainer="bindscale_toy.rules:run_group",
    figure_set="bindscale_toy.rules:figures",
)
