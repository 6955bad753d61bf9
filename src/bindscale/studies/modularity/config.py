"""The modularity study's trial config: a base network trained on the compound task, then its
subnetworks searched (Lepori, Serre, Pavlick 2023)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from bindscale.kit import SeqTrainConfig, StrictModel, TrialBase


class CompoundTaskConfig(StrictModel):
    """Compound "same shape AND same colour" scenes (bindscale.studies.modularity.tasks; Lepori et al. 2023)."""

    family: Literal["compound"] = "compound"
    n_shapes: int = Field(8, ge=2, le=1000, description="shape values (subroutine A: same shape)")
    n_colours: int = Field(8, ge=2, le=1000, description="colour values (subroutine B: same colour)")
    n_train: int = Field(2000, ge=2, le=1_000_000, description="rows of every training set (compound, subroutine, pretraining)")
    n_test: int = Field(1000, ge=2, le=1_000_000, description="rows of every test set")
    base_fraction: float = Field(0.5, gt=0.0, lt=1.0, description="share of the scene space (per kind) the base "
                                 "network's training and pretraining sets draw from")
    mask_fraction: float = Field(0.25, gt=0.0, lt=1.0, description="share the masks' training sets draw from; the "
                                 "rest (1 − base − mask) is the test sets' (bindscale.studies.modularity.tasks.partition_scenes)")

    @model_validator(mode="after")
    def _fractions(self) -> "CompoundTaskConfig":
        if self.base_fraction + self.mask_fraction >= 1.0:
            raise ValueError(f"base_fraction + mask_fraction = {self.base_fraction + self.mask_fraction} leaves "
                             "no scenes for the test sets")
        return self


class ModularityModelConfig(StrictModel):
    """The base network: a ReLU MLP on the one-hot view or a transformer on the tokens.

    ``width`` is the MLP hidden width or the transformer's ``d_model``; ``depth`` the
    MLP hidden layers or the transformer blocks. ``n_heads`` / ``mlp_ratio`` are used
    by the transformer only.
    """

    architecture: Literal["mlp", "transformer"] = "mlp"
    width: int = Field(64, ge=2, le=8192)
    depth: int = Field(3, ge=1, le=32)
    n_heads: int = Field(4, ge=1, le=128)
    mlp_ratio: int = Field(4, ge=1, le=16)
    activation: Literal["relu", "gelu", "tanh"] = Field("relu", description="MLP only (the transformer uses GELU)")

    @model_validator(mode="after")
    def _heads(self) -> "ModularityModelConfig":
        if self.architecture == "transformer" and (self.width % self.n_heads or (self.width // self.n_heads) % 2):
            raise ValueError(f"width={self.width} must split into n_heads={self.n_heads} heads of even size (RoPE)")
        return self


class PretrainConfig(StrictModel):
    """Pretraining before the compound task (then the whole network is trained on the compound task).

    - ``none``: from scratch.
    - ``match_count`` (the generic condition, which decides ``pretraining_reliability``):
      one 3-way head on the last hidden representation learns how many attributes the
      two objects share (0, 1 or 2, i.e. A + B) on the pretraining sets; see
      :func:`bindscale.studies.modularity.trial.pretrain`.
    - ``subroutines`` (a labelled extra, reported beside the verdict): the body learns
      A and B at once, each with its own linear head on the last hidden representation.

    Heads are dropped afterwards. Pretraining uses the ``train`` section's batch size,
    learning rate, weight decay, warm-up and gradient clip.
    """

    kind: Literal["none", "match_count", "subroutines"] = "none"
    steps: int = Field(1000, ge=1, le=10_000_000, description="pretraining steps (unused with kind none)")


class MaskConfig(StrictModel):
    """Continuous-sparsification mask search (bindscale.studies.modularity.masks) and its controls.

    ``params`` fixes which weights are masked — it decides the result (see
    bindscale.studies.modularity.analysis): ``hidden`` = every weight matrix that computes a
    hidden representation (MLP: input and hidden-to-hidden matrices; transformer:
    attention qkv/output and MLP fc/proj matrices of every block), never the
    readout, the token embedding, biases or LayerNorm; ``all`` adds the readout (and
    the transformer's embedding). A readout both subroutines need is kept by every
    mask, so its ablation breaks both and AblDiff is 0 whatever the hidden layers do.
    """

    params: Literal["hidden", "all"] = "hidden"
    lambda_l0: float = Field(1.0, gt=0.0, le=1000.0)
    steps: int = Field(1000, ge=1, le=1_000_000)
    lr: float = Field(0.05, gt=0.0, le=100.0)
    beta_end: float = Field(200.0, ge=1.0, le=1e6, description="final temperature (beta starts at 1)")
    batch_size: int = Field(256, ge=1, le=65536, description="rows per step; below n_train so mask seeds differ")
    n_mask_seeds: int = Field(3, ge=1, le=100)
    control_mask_seeds: int = Field(1, ge=0, le=100, description="mask seeds per subroutine on the untrained control network")


class ModularityTrial(TrialBase):
    """A modularity trial: one base network trained on the compound task, then its subnetworks searched."""

    SECTIONS: ClassVar[tuple[str, ...]] = ("task", "model", "pretrain", "train", "mask")
    AXES: ClassVar[dict[str, str]] = {
        "architecture": "model.architecture",
        "width": "model.width",
        "depth": "model.depth",
        "heads": "model.n_heads",
        "pretraining": "pretrain.kind",
        "pretrain_steps": "pretrain.steps",
        "n_shapes": "task.n_shapes",
        "n_colours": "task.n_colours",
        "n_train": "task.n_train",
        "steps": "train.steps",
        "lr": "train.lr",
        "mask_params": "mask.params",
        "lambda_l0": "mask.lambda_l0",
        "mask_steps": "mask.steps",
        "mask_seeds": "mask.n_mask_seeds",
        "seed": "seed",
    }
    kind: Literal["modularity"] = "modularity"
    task: CompoundTaskConfig = CompoundTaskConfig()
    model: ModularityModelConfig = ModularityModelConfig()
    pretrain: PretrainConfig = PretrainConfig()
    #: Compound training (and pretraining) with :func:`bindscale.train.loop.fit_minibatches`.
    train: SeqTrainConfig = SeqTrainConfig(steps=1000, batch_size=128, lr=3e-3, weight_decay=0.0, warmup_steps=50)
    mask: MaskConfig = MaskConfig()
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _no_packing(self) -> ModularityTrial:
        # Its MLPs and transformers take fixed-width scenes through fit_minibatches: nothing to pack, and a
        # field that would be silently ignored is refused instead.
        if self.train.pack:
            raise ValueError("train.pack: modularity trains its networks on fixed-width rows (fit_minibatches), which have "
                             "no padding to pack; leave it false")
        return self


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = ModularityTrial
