"""The scaling study's trial config: the hyperteacher task family (:class:`TaskConfig`), the student
(:class:`ModelConfig`: an MLP, a hypernetwork or a tensor-product binding student), the stacked trainer's
settings (:class:`TrainConfig`)
and the trial that holds them (:class:`TrialConfig`). Field defaults are part of every trial id.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from bindscale.kit import StrictModel, TrialBase

Encoding = Literal["identity", "orthogonal", "tokens", "invertible", "interval_shuffle", "fewshot"]
ENCODINGS: tuple[str, ...] = Encoding.__args__  # type: ignore[attr-defined]
#: Largest number of module combinations a task family may enumerate (splits redraw over all of them).
MAX_COMBINATIONS = 5000


class TaskConfig(StrictModel):
    """The hyperteacher task family (Schug et al. 2024)."""

    family: Literal["hyperteacher"] = "hyperteacher"
    M: int = Field(8, ge=2, le=64, description="number of modules")
    K: int = Field(3, ge=1, le=8, description="largest number of active modules per task")
    encoding: Encoding = "identity"
    split: Literal["random", "disconnected", "non_compositional"] = "random"
    holdout: float = Field(0.25, ge=0.0, lt=1.0, description="fraction of combinations held out")
    withheld_pairs: int = Field(0, ge=0, le=64, description="module pairs never seen together in training (split "
                                "random): their combinations are held out, out-of-hull by construction")
    input_dim: int = Field(16, ge=1, le=1024)
    hidden_dim: int = Field(16, ge=1, le=1024)
    output_dim: int = Field(16, ge=1, le=1024)
    samples_per_task: int = Field(16, ge=2, le=4096, description="inputs per task (R² needs within-task variance: at least 2)")
    n_shots: int = Field(8, ge=1, le=256, description="demonstrations per task (fewshot encoding)")
    teacher: Literal["reference", "per_task_scale"] = Field(
        "reference",
        description="teacher definition (bindscale.studies.scaling.tasks.hyperteacher): reference = the code of Redhardt, Schug, "
        "Akram 2025 (weights from {0.5,...,1.0}, mix scaled by 1/sqrt(K), truncated-normal modules, biases "
        "U[0,0.5), no readout bias); per_task_scale = bindscale's original teacher (weights U[0.5,1], mix scaled by "
        "1/sqrt(k) per task, Gaussian modules and biases, readout bias)",
    )

    @model_validator(mode="after")
    def _k_le_m(self) -> "TaskConfig":
        if self.K > self.M:
            raise ValueError(f"K={self.K} must be at most M={self.M}")
        n = sum(math.comb(self.M, k) for k in range(1, self.K + 1))
        if n > MAX_COMBINATIONS:
            raise ValueError(f"M={self.M}, K={self.K} give {n} module combinations; at most {MAX_COMBINATIONS} "
                             "are supported (lower M or K)")
        return self


class ModelConfig(StrictModel):
    """A student network; ``width`` is the MLP hidden width, the hypernet's target hidden width or the TPR
    student's bound (and hidden) width (:mod:`bindscale.studies.scaling.tpr`).

    A kind adds no field: every field here is part of every trial id, so a new student kind reads the
    existing ones (the ids of the trials already run stay as they were)."""

    kind: Literal["mlp", "hypernet", "tpr"] = "mlp"
    width: int = Field(256, ge=1, le=16384)
    depth: int = Field(3, ge=1, le=32, description="hidden layers (MLP) / target-net hidden layers (hypernet) / "
                       "hidden layers after the binding (tpr)")
    activation: Literal["relu", "gelu", "tanh"] = "relu"
    n_banks: int | None = Field(None, ge=1, le=1024, description="hypernet weight banks (default: M)")
    init: Literal["auto", "lecun_normal", "torch_uniform"] = Field(
        "auto",
        description="parameter init: lecun_normal = truncated normal, variance 1/fan_in, zero biases (flax Dense "
        "default, as the reference code of Redhardt et al. 2025); torch_uniform = U(±1/sqrt(fan_in)) for weights "
        "and biases (PyTorch nn.Linear default; bindscale's original initialisation); auto = lecun_normal for the mlp "
        "and the tpr, torch_uniform for the hypernet (benchmarks/reference_curve.py)",
    )

    #: What ``init: auto`` means per model kind. MLP: LeCun normal, the reference's init, with
    #: which it learns as fast as the reference code (benchmarks/reference_curve.py: 256 × 4 at
    #: 300 steps, held-out R² 0.44 → 0.56 from the init alone). Hypernet: PyTorch's uniform:
    #: its banks are not layers of fan-in ``fan_in`` (each generated weight sums L of them),
    #: and LeCun-scaled banks slowed it (M=8, width 16, 1000 steps: 0.85 → 0.60); the
    #: reference's hypernetwork is another architecture, so there is no init of its to match.
    #: TPR student: the MLP's LeCun normal (measured beside PyTorch's uniform: :mod:`bindscale.studies.scaling.tpr`).
    AUTO_INIT: ClassVar[dict[str, str]] = {"mlp": "lecun_normal", "hypernet": "torch_uniform", "tpr": "lecun_normal"}


class TrainConfig(StrictModel):
    """AdamW on online-sampled batches, with an evaluation schedule."""

    steps: int = Field(2000, ge=1, le=10_000_000)
    batch_tasks: int = Field(64, ge=1, le=65536, description="tasks per step (each with samples_per_task rows)")
    lr: float = Field(1e-3, gt=0.0, le=10.0)
    weight_decay: float = Field(3e-3, ge=0.0, le=10.0)
    grad_clip: float | None = Field(1.0, gt=0.0, description="per-trial gradient-norm clip; null = off")
    n_evals: int = Field(5, ge=1, le=1000, description="evaluations over training (the last at the end)")
    eval_tasks: int = Field(256, ge=1, le=100_000, description="tasks per evaluation set")
    probe_tasks: int = Field(256, ge=8, le=100_000, description="tasks for fitting / scoring probes")
    probe_samples: int = Field(4, ge=1, le=4096, description="inputs x per probe task")
    precision: Literal["fp32", "bf16", "tf32", "auto"] = Field(
        "fp32",
        description="training matmul precision: fp32; bf16 autocast; tf32 (CUDA only); auto = bf16 where "
        "benchmarks/training.py shows it pays (MLPs of width >= 64 on a CPU with AMX-BF16 or a bf16 CUDA device), else fp32",
    )
    compile: bool = Field(False, description="torch.compile the training forward pass")

class TrialConfig(TrialBase):
    """A hyperteacher trial (the headline study): everything that determines its result.
    Its hash is the trial id."""

    KIND: ClassVar[str] = "hyperteacher"
    #: Sweep axes by their short names → dotted path.
    AXES: ClassVar[dict[str, str]] = {
        "model": "model.kind",
        "width": "model.width",
        "depth": "model.depth",
        "activation": "model.activation",
        "encoding": "task.encoding",
        "split": "task.split",
        "holdout": "task.holdout",
        "withheld_pairs": "task.withheld_pairs",
        "M": "task.M",
        "K": "task.K",
        "steps": "train.steps",
        "lr": "train.lr",
        "weight_decay": "train.weight_decay",
        "batch_tasks": "train.batch_tasks",
        "seed": "seed",
    }
    #: Linear-probe R² per activation point (``input``, ``hidden.k``, ``random.hidden.k``).
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
        "decod_layers": (("layer",), ("r2",)),
        "decod_layers_cv": (("layer",), ("r2",)),
    }
    task: TaskConfig = TaskConfig()
    model: ModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()
    seed: int = Field(0, ge=0, le=2**31 - 1)
